/* `hprof flamegraph`: folded stacks (a file or stdin) to an SVG file. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/atomic_file.h"
#include "cli/commands.h"
#include "flamegraph.h"

static const char usage[] =
	"usage: hprof flamegraph [--title T] [--subtitle S] [--width N] IN.folded OUT.svg\n"
	"Renders folded stacks (`comm;outer;...;inner COUNT` lines; IN may be - for stdin)\n"
	"as an interactive SVG: click to zoom, Ctrl-F to search.\n"
	"  -t, --title T      title line (default \"Flame Graph\")\n"
	"  -s, --subtitle S   second line, e.g. \"4950 samples, 99 Hz, 5.0 s\"\n"
	"  -w, --width N      image width in px, 100..1000000 (default 1200)\n"
	"  -h, --help         show this help\n";

static int usage_error(const char *msg)
{
	fprintf(stderr, "hprof: flamegraph: %s\n%s", msg, usage);
	return 2;
}

static int parse_width(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < 100 || v > 1000000)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/* Renders into a temporary file beside `path` that replaces it only when complete. */
static int render_to(FILE *in, const char *path, const struct flamegraph_opts *opts)
{
	struct atomic_file *af = NULL;
	char msg[256] = "";
	int err;

	err = atomic_file__open(path, 0644, &af);
	if (err) {
		fprintf(stderr, "hprof: flamegraph: %s: %s\n", path, strerror(-err));
		goto cleanup;
	}
	err = flamegraph__render(in, atomic_file__stream(af), opts, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "hprof: flamegraph: %s\n", msg);
		goto cleanup;
	}
	err = atomic_file__commit(af);
	af = NULL; /* commit frees it, also on failure */
	if (err)
		fprintf(stderr, "hprof: flamegraph: %s: %s\n", path, strerror(-err));
cleanup:
	atomic_file__abort(af);
	return err;
}

int cmd_flamegraph(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "title", required_argument, NULL, 't' },
		{ "subtitle", required_argument, NULL, 's' },
		{ "width", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct flamegraph_opts opts = { 0 };
	const char *in_path;
	FILE *in;
	int c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "t:s:w:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			opts.title = optarg;
			break;
		case 's':
			opts.subtitle = optarg;
			break;
		case 'w':
			if (parse_width(optarg, &opts.width))
				return usage_error("--width wants a number of px from 100 to 1000000");
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return usage_error("bad option");
		}
	}
	if (argc - optind != 2)
		return usage_error("want an input and an output path");
	in_path = argv[optind];
	if (strcmp(in_path, "-") == 0) {
		in = stdin;
	} else {
		in = fopen(in_path, "r");
		if (!in) {
			fprintf(stderr, "hprof: flamegraph: %s: %s\n", in_path, strerror(errno));
			return 1;
		}
	}
	err = render_to(in, argv[optind + 1], &opts);
	if (in != stdin)
		fclose(in);
	return err ? 1 : 0;
}
