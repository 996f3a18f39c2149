/* `hprof report CAPTURE`: unwinds and renders a raw capture (--raw) later, on the same
 * machine, with the same code a live recording uses. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary/debug_files.h"
#include "binary/debuginfod.h"
#include "capture/replay.h"
#include "cli/commands.h"
#include "output/summary.h"
#include "session.h"
#include "output/outputs.h"

struct report {
	struct output_opts out;
	struct replay_opts replay;
	const char *capture_path;
	bool verbose; /* -v: every figure of the summary */
	bool quiet;   /* -q: only errors */
	bool no_debuginfod; /* --no-debuginfod: fetch no debug files */
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: hprof report CAPTURE [--svg FILE] [--folded FILE] [--pprof FILE]\n"
		     "                    [--json FILE] [--no-dwarf] [--stack-size BYTES]\n"
		     "                    [--no-inline] [--no-lines] [-v|-q]\n"
		     "Unwinds and renders the samples hprof --raw saved. With no output named,\n"
		     "folded stacks go to stdout. --pprof writes a gzip-compressed pprof profile,\n"
		     "--json the summary and top functions. --no-dwarf replays frame pointers\n"
		     "only; --stack-size replays as if each stack copy had been at most BYTES long.\n"
		     "--no-inline leaves out frames of inlined calls, --no-lines source lines.\n"
		     "-v (--verbose) ends with every figure of the summary, -q (--quiet) prints\n"
		     "only errors.\n"
		     "--top N prints the N functions with the most self samples (self and\n"
		     "inclusive share, samples, module) on stdout, where folded stacks then go\n"
		     "only with --folded - (and the table to stderr).\n"
		     "--debug-dir DIR (repeatable) is searched first for separate debug files;\n"
		     "--no-debuginfod fetches none from DEBUGINFOD_URLS' servers.\n");
}

/* --top N: a whole number of rows from 1 on. Returns 0 or -EINVAL after saying why. */
static int parse_top(const char *arg, size_t *top)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v < 1 || v > INT32_MAX) {
		fprintf(stderr, "hprof: report: --top takes a positive number of functions, got '%s' (see hprof report --help)\n",
			arg);
		return -EINVAL;
	}
	*top = (size_t)v;
	return 0;
}

/* Returns 0, 1 for --help, or -EINVAL. */
static int parse_args(int argc, char **argv, struct report *rep)
{
	static const struct option long_opts[] = {
		{ "svg", required_argument, NULL, 's' },
		{ "folded", required_argument, NULL, 'f' },
		{ "pprof", required_argument, NULL, 'p' },
		{ "json", required_argument, NULL, 'j' },
		{ "no-dwarf", no_argument, NULL, 'n' },
		{ "no-inline", no_argument, NULL, 'I' },
		{ "no-lines", no_argument, NULL, 'L' },
		{ "stack-size", required_argument, NULL, 'S' },
		{ "top", required_argument, NULL, 't' },
		{ "debug-dir", required_argument, NULL, 'd' },
		{ "no-debuginfod", no_argument, NULL, 'D' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "hvq", long_opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			rep->out.svg_path = optarg;
			break;
		case 'f':
			rep->out.folded_path = optarg;
			break;
		case 'p':
			rep->out.pprof_path = optarg;
			break;
		case 'j':
			rep->out.json_path = optarg;
			break;
		case 'n':
			rep->replay.no_dwarf = true;
			break;
		case 'I':
			rep->replay.no_inline = true;
			break;
		case 'L':
			rep->replay.no_lines = true;
			break;
		case 'S': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || end == optarg || v == 0 || v > HPROF_MAX_STACK_COPY) {
				fprintf(stderr, "hprof: report: --stack-size takes 1 to %d bytes, got '%s'\n",
					HPROF_MAX_STACK_COPY, optarg);
				return -EINVAL;
			}
			rep->replay.stack_limit = (uint32_t)v;
			break;
		}
		case 't':
			if (parse_top(optarg, &rep->out.top))
				return -EINVAL;
			break;
		case 'd': {
			int err = debug_files__add_dir(optarg);

			if (err) {
				fprintf(stderr, "hprof: report: --debug-dir %s: %s\n", optarg,
					err == -E2BIG ? "too many directories" : strerror(-err));
				return -EINVAL;
			}
			break;
		}
		case 'D':
			rep->no_debuginfod = true;
			break;
		case 'v': /* the last of -v and -q wins */
			rep->verbose = true;
			rep->quiet = false;
			break;
		case 'q':
			rep->quiet = true;
			rep->verbose = false;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			fprintf(stderr, "hprof: report: unknown option or missing value: '%s' (see hprof report --help)\n",
				argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "hprof: report: expected one capture file (see hprof report --help)\n");
		return -EINVAL;
	}
	rep->capture_path = argv[optind];
	if (!rep->out.svg_path && !rep->out.folded_path && !rep->out.pprof_path &&
	    !rep->out.json_path && !rep->out.top)
		rep->out.folded_path = "-";
	return 0;
}

/* A binary rebuilt since the capture gives wrong names and rows: say so. */
static void warn_changed(void *ctx, const char *path)
{
	(void)ctx;
	fprintf(stderr, "hprof: report: warning: %s changed since the capture; its frames may be misnamed\n",
		path);
}

int cmd_report(int argc, char **argv)
{
	struct report rep = { 0 };
	struct replay *replay = NULL;
	const struct capture_info *info;
	struct session *s;
	struct run_summary summary;
	char err_msg[512] = "", what[PATH_MAX + 32];
	bool no_dwarf;
	int err;

	err = parse_args(argc, argv, &rep);
	if (err)
		return err > 0 ? 0 : 2;
	rep.out.title = "hprof CPU flame graph";
	rep.replay.frame_addresses = rep.out.pprof_path != NULL;
	rep.replay.debuginfod = !rep.no_debuginfod && debuginfod__wanted();
	err = replay__run(rep.capture_path, &rep.replay, &replay, err_msg, sizeof(err_msg));
	if (err)
		goto cleanup;
	replay__for_each_changed(replay, warn_changed, NULL);
	s = replay__session(replay);
	info = replay__info(replay);
	if (rep.replay.debuginfod) {
		err = session__fetch_debug_files(s, 0, rep.quiet ? NULL : stderr);
		if (err)
			goto cleanup;
		session__settle_names(s);
	}
	no_dwarf = rep.replay.no_dwarf || info->stack_size == 0;
	rep.out.frequency = info->frequency;
	rep.out.duration_ns = info->duration_ns;
	summary = session__summary(s, info->duration_ns / 1e9, info->frequency, no_dwarf, NULL, 0);
	snprintf(what, sizeof(what), "replayed %s, recorded", rep.capture_path);
	summary.what = what;
	err = outputs__write(session__profile(s), session__modules(s), &rep.out);
	if (err)
		goto cleanup;
	if (rep.verbose)
		summary__print(&summary, stderr);
	else if (!rep.quiet)
		summary__print_brief(&summary, stderr);
	if (rep.out.json_path)
		err = summary__write_json_file(rep.out.json_path, &summary);
	if (!err && !rep.quiet)
		summary__print_written(&rep.out, NULL, rep.verbose, stderr);
cleanup:
	if (err && err_msg[0])
		fprintf(stderr, "hprof: report: %s\n", err_msg);
	replay__free(replay);
	return err ? 1 : 0;
}
