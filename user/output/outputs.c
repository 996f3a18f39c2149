#include "output/outputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "output/pprof.h"
#include "util/atomic_file.h"

static int write_folded_file(struct profile *p, const char *path)
{
	struct atomic_file *f;
	int err;

	if (strcmp(path, "-") == 0) {
		err = profile__write_folded(p, stdout);
		if (!err && fflush(stdout))
			err = -errno;
		/* the reader has all it wanted (hprof | head) */
		return err == -EPIPE || (err && errno == EPIPE) ? 0 : err;
	}
	err = atomic_file__open(path, 0644, &f);
	if (err)
		return err;
	err = profile__write_folded(p, atomic_file__stream(f));
	if (err) {
		atomic_file__abort(f);
		return err;
	}
	return atomic_file__commit(f);
}

static int write_svg_file(struct profile *p, const struct output_opts *opts)
{
	struct flamegraph_opts fg_opts = { .title = opts->title, .subtitle = opts->subtitle };
	char *folded = NULL, msg[256] = "";
	size_t folded_len = 0;
	struct atomic_file *f = NULL;
	FILE *mem, *in = NULL;
	int err;

	mem = open_memstream(&folded, &folded_len);
	if (!mem)
		return -errno;
	err = profile__write_folded(p, mem);
	if (fclose(mem) && !err)
		err = -errno;
	if (err)
		goto cleanup;
	in = fmemopen(folded, folded_len ? folded_len : 1, "r");
	if (!in) {
		err = -errno;
		goto cleanup;
	}
	if (!folded_len)
		fgetc(in); /* fmemopen wants a non-empty buffer: step over its only byte */
	err = atomic_file__open(opts->svg_path, 0644, &f);
	if (err)
		goto cleanup;
	err = flamegraph__render(in, atomic_file__stream(f), &fg_opts, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "hprof: rendering %s: %s\n", opts->svg_path, msg);
		atomic_file__abort(f);
		goto cleanup;
	}
	err = atomic_file__commit(f);
cleanup:
	if (in)
		fclose(in);
	free(folded);
	return err;
}

int outputs__write(struct profile *p, struct module_registry *modules,
		   const struct output_opts *opts)
{
	int err;

	if (opts->folded_path) {
		err = write_folded_file(p, opts->folded_path);
		if (err) {
			fprintf(stderr, "hprof: cannot write %s: %s\n", opts->folded_path,
				strerror(-err));
			return err;
		}
	}
	if (opts->svg_path) {
		err = write_svg_file(p, opts);
		if (err) {
			fprintf(stderr, "hprof: cannot write %s: %s\n", opts->svg_path,
				strerror(-err));
			return err;
		}
	}
	if (opts->pprof_path) {
		struct pprof_opts po = { opts->frequency, opts->duration_ns };

		err = pprof__write_file(opts->pprof_path, p, modules, &po);
		if (err) {
			fprintf(stderr, "hprof: cannot write %s: %s\n", opts->pprof_path,
				strerror(-err));
			return err;
		}
	}
	return 0;
}
