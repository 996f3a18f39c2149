/* Makes a replay corpus case (tests/replay/CASE/) of a capture, while the binaries it was
 * recorded with are still on the machine (tests/replay/record.sh runs it):
 *
 *   replay_case record CAPTURE CASEDIR
 *
 * replays CAPTURE from the binaries' files, noting every address its samples hold in each
 * binary (every 8-byte word of a sample: registers, FP chain, stack copies) and every code
 * byte the replay reads (binary/slice_writer.h); writes the slices to CASEDIR/slices.gz;
 * replays CAPTURE again from the slices alone; and writes CASEDIR/expected.folded only if
 * both replays give the same folded stacks (else CASEDIR/files.folded and
 * CASEDIR/slices.folded, to compare, and exit status 1).
 *
 *   replay_case fold CAPTURE SLICES    the folded stacks of a replay from slices, on stdout
 *   replay_case check FOLDED CHECKS    applies checks (tests/unit/replay_case.h) to folded
 *                                      stacks (normalized first): exit status 1 if any fails */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary/code.h"
#include "binary/slice_writer.h"
#include "../unit/replay_case.h"

struct recording {
	struct slice_writer *w;
	int err;
};

/* value, if an executable mapping of the sample's process holds it, as an address in a
 * binary. */
static void note_word(struct recording *rec, struct session *s, uint32_t pid, uint64_t value)
{
	struct frame f;
	struct module *mod;

	if (value < 4096 || session__resolve_frame(s, pid, value, false, &f) != 0 ||
	    f.module < MODULE_FIRST_FILE)
		return;
	mod = module_registry__by_id(session__modules(s), f.module);
	if (mod && !mod->anon_code && !rec->err)
		rec->err = slice_writer__address(rec->w, mod, f.addr);
}

static void note_bytes(struct recording *rec, struct session *s, uint32_t pid, const uint8_t *p,
		       size_t len)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v;

		memcpy(&v, p + i, 8);
		note_word(rec, s, pid, v);
	}
}

/* Every word of the record, and of its stack copy at the alignment of its addresses. */
static int on_sample(void *ctx, struct session *s, const struct hprof_sample *sample, size_t size)
{
	struct recording *rec = ctx;
	const uint8_t *stack;
	size_t shift;

	note_bytes(rec, s, sample->pid, (const uint8_t *)sample, size);
	if (!hprof_sample__well_formed(sample, size) || sample->user_sp % 8 == 0)
		return rec->err;
	stack = hprof_sample__stack(sample);
	shift = (8 - sample->user_sp % 8) % 8;
	if (sample->stack_len > shift)
		note_bytes(rec, s, sample->pid, stack + shift, sample->stack_len - shift);
	return rec->err;
}

static void on_code(void *ctx, const struct module *mod, uint64_t offset, const uint8_t *bytes,
		    size_t len)
{
	slice_writer__code(((struct recording *)ctx)->w, mod, offset, bytes, len);
}

static int write_text(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		fprintf(stderr, "replay_case: cannot write %s\n", path);
		return 1;
	}
	return 0;
}

static int record(const char *capture, const char *dir)
{
	struct recording rec = { .w = slice_writer__new() };
	/* as replay_case__folded replays: no inline frames or lines */
	struct replay_opts o = { .on_sample = on_sample, .on_sample_ctx = &rec, .no_inline = true,
				 .no_lines = true };
	struct module_slices *slices = NULL;
	struct replay *r = NULL;
	char err[512] = "", path[PATH_MAX + 32];
	char *from_files = NULL, *from_slices = NULL, *raw = NULL;
	size_t size = 0;
	FILE *f;
	int ret;

	if (!rec.w)
		return 1;
	code__set_file_read_hook(on_code, &rec);
	ret = replay__run(capture, &o, &r, err, sizeof(err));
	code__set_file_read_hook(NULL, NULL);
	if (!ret && (f = open_memstream(&raw, &size))) {
		ret = profile__write_folded(session__profile(replay__session(r)), f);
		fclose(f);
	}
	if (!ret)
		ret = normalize_folded(raw, &from_files);
	if (!ret)
		ret = slice_writer__finish(rec.w, session__modules(replay__session(r)), &slices);
	snprintf(path, sizeof(path), "%s/%s", dir, REPLAY_CASE_SLICES);
	if (!ret)
		ret = module_slices__write(path, slices, err, sizeof(err));
	if (!ret)
		ret = replay_case__folded(capture, path, NULL, &from_slices, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "replay_case: %s\n", err[0] ? err : strerror(-ret));
		ret = 1;
	} else if (strcmp(from_files, from_slices) != 0) {
		fprintf(stderr, "replay_case: the replay from slices differs from the one from files "
				"(see %s/files.folded and slices.folded)\n", dir);
		write_text(dir, "files.folded", from_files);
		write_text(dir, "slices.folded", from_slices);
		ret = 1;
	} else {
		ret = write_text(dir, REPLAY_CASE_EXPECTED, from_slices);
	}
	free(raw);
	free(from_files);
	free(from_slices);
	module_slices__free(slices);
	replay__free(r);
	slice_writer__free(rec.w);
	return ret;
}

static int fold(const char *capture, const char *slices)
{
	char err[512] = "", *out = NULL;
	int ret = replay_case__folded(capture, slices, NULL, &out, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "replay_case: %s\n", err);
		return 1;
	}
	fputs(out, stdout);
	free(out);
	return 0;
}

static int check_folded(const char *folded_path, const char *checks_path)
{
	char *folded = NULL, *normal = NULL, *checks = NULL, why[512] = "";
	int failed;

	if (read_text(folded_path, &folded) || read_text(checks_path, &checks) ||
	    normalize_folded(folded, &normal)) {
		fprintf(stderr, "replay_case: cannot read %s or %s\n", folded_path, checks_path);
		return 1;
	}
	failed = replay_case__check(normal, checks, why, sizeof(why));
	if (failed)
		fprintf(stderr, "replay_case: %s: %d check(s) failed; last: %s\n", folded_path,
			failed, why);
	free(folded);
	free(normal);
	free(checks);
	return failed != 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "record") == 0)
		return record(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "fold") == 0)
		return fold(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "check") == 0)
		return check_folded(argv[2], argv[3]);
	fprintf(stderr, "usage: replay_case record CAPTURE CASEDIR | fold CAPTURE SLICES | "
			"check FOLDED CHECKS\n");
	return 2;
}
