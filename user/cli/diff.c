/* `hprof diff BASE NEW`: compares two profiles function by function and, with
 * --threshold, fails (exit 3) when a function's share grew by more than that, beyond
 * sampling noise: a CI job's performance-regression gate. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/atomic_file.h"
#include "binary/debuginfod.h"
#include "capture/replay.h"
#include "cli/commands.h"
#include "output/diff.h"
#include "output/pprof.h"
#include "output/stack_set.h"
#include "output/summary.h"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2, EXIT_REGRESSION = 3 };

#define DEFAULT_CONFIDENCE 0.99
#define MAX_FUNCTION_REGEXES 64

struct diff_cli {
	struct diff_opts opts;
	regex_t regexes[MAX_FUNCTION_REGEXES];
	const char *base_path, *new_path;
	const char *svg_path, *json_path;
	bool no_debuginfod; /* --no-debuginfod: a capture's binaries get no fetched debug files */
};

static const char usage_text[] =
	"Usage: hprof diff BASE NEW [--threshold PCT] [--confidence PCT] [--self]\n"
	"                  [--function REGEX]... [--min-samples N] [--top N]\n"
	"                  [--svg FILE] [--json FILE] [--no-debuginfod]\n"
	"Compares two profiles function by function: each function's inclusive share (samples\n"
	"with it anywhere on the stack, once per sample) and self share (samples with it\n"
	"innermost) of its profile's samples, and the change in percentage points (pp).\n"
	"BASE and NEW are folded stacks, raw captures (hprof --raw, replayed as hprof report\n"
	"does, on the machine that recorded them) or pprof files hprof wrote; the kind is told\n"
	"by content. Addresses of code outside files ([jit]+0x.., [unmapped]+0x..) are\n"
	"dropped from names, as they differ from run to run.\n"
	"\n"
	"A change is significant when a pooled two-proportion z-test (two-sided) rejects\n"
	"\"same share\" at the confidence, Bonferroni-corrected for the number of functions\n"
	"the gate tests, so the chance of any false alarm in a run stays below 1 - confidence.\n"
	"A function with fewer than 5 expected samples on either side of either profile (as\n"
	"0 against 1 sample) is never significant: the test's normal approximation needs them.\n"
	"\n"
	"  --threshold PCT     exit 3 when a function's share grew by more than PCT points\n"
	"                      and significantly; those functions are printed last, one a line\n"
	"  --confidence PCT    of the test, 50 to 99.9999 (default 99)\n"
	"  --self              gate and sort on self shares instead of inclusive ones\n"
	"  --function REGEX    gate only functions matching this POSIX extended regular\n"
	"                      expression (repeatable; the table still shows every function)\n"
	"  --min-samples N     leave out functions with fewer than N samples in both profiles\n"
	"  --top N             show only the N largest changes either way in the table\n"
	"  --svg FILE          differential flamegraph: NEW's frames, red where their share\n"
	"                      grew against BASE, blue where it shrank\n"
	"  --json FILE         the table as JSON\n"
	"  --no-debuginfod     fetch no debug files for a capture's binaries from\n"
	"                      DEBUGINFOD_URLS' servers (fetched as hprof report does)\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 no regression, 1 error, 2 bad usage, 3 regression.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "hprof: diff: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see hprof diff --help)\n");
	return -EINVAL;
}

/* A number of percent, with or without a trailing '%'. */
static bool parse_percent(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end != s && *end == '%')
		end++;
	if (errno || end == s || *end || !isfinite(v) || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return false;
	*out = v;
	return true;
}

static int add_function(struct diff_cli *c, const char *re)
{
	char msg[160];
	int ret;

	if (c->opts.nr_functions == MAX_FUNCTION_REGEXES)
		return usage_error("more than 64 --function expressions%s", "");
	ret = regcomp(&c->regexes[c->opts.nr_functions], re, REG_EXTENDED | REG_NOSUB);
	if (ret) {
		regerror(ret, NULL, msg, sizeof(msg));
		fprintf(stderr, "hprof: diff: --function '%s': %s (see hprof diff --help)\n", re, msg);
		return -EINVAL;
	}
	c->opts.functions = c->regexes;
	c->opts.nr_functions++;
	return 0;
}

static int parse_option(struct diff_cli *c, int opt, const char *arg)
{
	double v;
	uint64_t n;

	switch (opt) {
	case 't':
		if (!parse_percent(arg, 0, 100, &v))
			return usage_error("--threshold takes percentage points from 0 to 100, got '%s'", arg);
		c->opts.gate = true;
		c->opts.threshold = v;
		return 0;
	case 'c':
		if (!parse_percent(arg, 50, 99.9999, &v))
			return usage_error("--confidence takes a percentage from 50 to 99.9999, got '%s'", arg);
		c->opts.confidence = v / 100;
		return 0;
	case 'S':
		c->opts.measure = DIFF_SELF;
		return 0;
	case 'f':
		return add_function(c, arg);
	case 'm':
		if (!parse_count(arg, &n))
			return usage_error("--min-samples takes a number of samples, got '%s'", arg);
		c->opts.min_samples = n;
		return 0;
	case 'T':
		if (!parse_count(arg, &n) || n > SIZE_MAX)
			return usage_error("--top takes a number of rows, got '%s'", arg);
		c->opts.top = (size_t)n;
		return 0;
	case 's':
		c->svg_path = arg;
		return 0;
	case 'j':
		c->json_path = arg;
		return 0;
	case 'D':
		c->no_debuginfod = true;
		return 0;
	}
	return -EINVAL;
}

/* Returns 0, 1 for --help, or -EINVAL. */
static int parse_args(int argc, char **argv, struct diff_cli *c)
{
	static const struct option long_opts[] = {
		{ "threshold", required_argument, NULL, 't' },
		{ "confidence", required_argument, NULL, 'c' },
		{ "self", no_argument, NULL, 'S' },
		{ "function", required_argument, NULL, 'f' },
		{ "min-samples", required_argument, NULL, 'm' },
		{ "top", required_argument, NULL, 'T' },
		{ "svg", required_argument, NULL, 's' },
		{ "json", required_argument, NULL, 'j' },
		{ "no-debuginfod", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt, err;

	c->opts.confidence = DEFAULT_CONFIDENCE;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(usage_text, stdout);
			return 1;
		}
		if (opt == '?')
			return usage_error("unknown option or missing value: '%s'", argv[optind - 1]);
		err = parse_option(c, opt, optarg);
		if (err)
			return err;
	}
	if (argc - optind != 2)
		return usage_error("%s", "expected two profiles, BASE and NEW");
	c->base_path = argv[optind];
	c->new_path = argv[optind + 1];
	return 0;
}

enum input_kind { INPUT_FOLDED, INPUT_CAPTURE, INPUT_PPROF };

/* By content: a capture's magic, gzip's (pprof), else folded text. */
static enum input_kind input_kind(FILE *f)
{
	unsigned char magic[8] = { 0 };
	size_t n = fread(magic, 1, sizeof(magic), f);

	rewind(f);
	if (n == sizeof(magic) && memcmp(magic, CAPTURE_MAGIC, 8) == 0)
		return INPUT_CAPTURE;
	if (n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b)
		return INPUT_PPROF;
	return INPUT_FOLDED;
}

/* Reads the rest of f into memory, at most max bytes. Returns 0 or -errno (-EFBIG). */
static int read_all(FILE *f, size_t max, uint8_t **data, size_t *len)
{
	size_t cap = 0;
	uint8_t *buf = NULL;

	*len = 0;
	for (;;) {
		size_t got;

		if (*len == cap) {
			uint8_t *bigger;

			if (cap >= max) {
				free(buf);
				return -EFBIG;
			}
			cap = cap ? (cap > max / 2 ? max : cap * 2) : 64 * 1024;
			bigger = realloc(buf, cap);
			if (!bigger) {
				free(buf);
				return -ENOMEM;
			}
			buf = bigger;
		}
		got = fread(buf + *len, 1, cap - *len, f);
		*len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		return -EIO;
	}
	*data = buf;
	return 0;
}

static int load_pprof(FILE *f, struct stack_set *set, char *err, size_t errlen)
{
	uint8_t *data;
	size_t len;
	int ret = read_all(f, PPROF_MAX_BYTES, &data, &len);

	if (ret == -EFBIG)
		snprintf(err, errlen, "larger than %u MiB", PPROF_MAX_BYTES >> 20);
	if (ret)
		return ret;
	ret = pprof__read(data, len, set, err, errlen);
	free(data);
	return ret;
}

static void warn_changed(void *ctx, const char *binary)
{
	fprintf(stderr, "hprof: diff: warning: %s changed since %s was captured; its frames may be misnamed\n",
		binary, (const char *)ctx);
}

/* A capture is replayed as hprof report replays it, its binaries' debug files fetched
 * when debuginfod (and the summary's line on them printed), then read as its folded
 * output. */
static int load_capture(const char *path, bool debuginfod, struct stack_set *set, char *err,
			size_t errlen)
{
	struct replay_opts ro = { .debuginfod = debuginfod };
	struct replay *r = NULL;
	struct session *s;
	int ret;

	ret = replay__run(path, &ro, &r, err, errlen);
	if (ret)
		return ret;
	replay__for_each_changed(r, warn_changed, (void *)path);
	s = replay__session(r);
	if (debuginfod) {
		ret = session__fetch_debug_files(s, 0, stderr);
		if (ret) {
			snprintf(err, errlen, "%s: fetching debug files: %s", path, strerror(-ret));
			replay__free(r);
			return ret;
		}
		session__settle_names(s);
		summary__print_debug_files(session__debug_files(s), false, stderr);
	}
	ret = stack_set__add_profile(set, session__profile(s), err, errlen);
	replay__free(r);
	return ret;
}

/* A pipe (a shell's <(...)) cannot be rewound after its first bytes are looked at: it is
 * read into memory, up to a limit, and parsed from there. */
#define MAX_PIPE_INPUT (1ull << 31)

static int open_input(const char *path, FILE **f, uint8_t **copy, bool *is_pipe)
{
	struct stat st;
	size_t len;
	int ret;

	*f = fopen(path, "re");
	if (!*f)
		return -errno;
	ret = fstat(fileno(*f), &st) != 0 ? -errno : S_ISDIR(st.st_mode) ? -EISDIR : 0;
	if (ret) {
		fclose(*f);
		*f = NULL;
		return ret;
	}
	*is_pipe = !S_ISREG(st.st_mode);
	if (!*is_pipe)
		return 0;
	ret = read_all(*f, MAX_PIPE_INPUT, copy, &len);
	fclose(*f);
	*f = NULL;
	if (ret)
		return ret;
	/* fmemopen wants a non-empty buffer; an empty one reads as no samples */
	*f = fmemopen(*copy, len ? len : 1, "r");
	if (*f && !len)
		fgetc(*f);
	return *f ? 0 : -errno;
}

/* Loads one profile; on error prints one line naming the file (and line) and returns
 * -errno. */
static int load(const char *path, bool debuginfod, struct stack_set *set)
{
	char err[512] = "";
	uint8_t *copy = NULL;
	bool is_pipe = false;
	FILE *f;
	int ret;

	ret = open_input(path, &f, &copy, &is_pipe);
	if (ret) {
		fprintf(stderr, "hprof: diff: %s: %s\n", path, ret == -EFBIG ? "more than 2 GiB" : strerror(-ret));
		free(copy);
		return ret;
	}
	switch (input_kind(f)) {
	case INPUT_CAPTURE:
		if (is_pipe) {
			snprintf(err, sizeof(err), "a capture must be a file (it is replayed by path)");
			ret = -EINVAL;
			break;
		}
		ret = load_capture(path, debuginfod, set, err, sizeof(err));
		break;
	case INPUT_PPROF:
		ret = load_pprof(f, set, err, sizeof(err));
		break;
	default:
		ret = stack_set__read_folded(set, f, err, sizeof(err));
		break;
	}
	fclose(f);
	free(copy);
	/* a capture's messages name the file already */
	if (ret && err[0] && strncmp(err, path, strlen(path)) == 0)
		fprintf(stderr, "hprof: diff: %s\n", err);
	else if (ret)
		fprintf(stderr, "hprof: diff: %s: %s\n", path, err[0] ? err : strerror(-ret));
	if (!ret && stack_set__total(set) == 0) {
		fprintf(stderr, "hprof: diff: %s: no samples\n", path);
		ret = -ENODATA;
	}
	return ret;
}

struct outputs {
	const struct diff_cli *c;
	const struct stack_set *base, *new;
	const struct diff_result *r;
};

static int write_svg(FILE *out, void *ctx)
{
	const struct outputs *o = ctx;

	return diff__write_svg(o->base, o->new, o->r, o->c->base_path, o->c->new_path, out);
}

static int write_json(FILE *out, void *ctx)
{
	const struct outputs *o = ctx;

	return diff__write_json(o->r, &o->c->opts, o->c->base_path, o->c->new_path, out);
}

static int write_files(const struct outputs *o)
{
	int err = 0;

	if (o->c->svg_path && (err = atomic_file__write(o->c->svg_path, 0644, write_svg, (void *)o))) {
		fprintf(stderr, "hprof: diff: cannot write %s: %s\n", o->c->svg_path, strerror(-err));
		return err;
	}
	if (o->c->json_path &&
	    (err = atomic_file__write(o->c->json_path, 0644, write_json, (void *)o))) {
		fprintf(stderr, "hprof: diff: cannot write %s: %s\n", o->c->json_path, strerror(-err));
		return err;
	}
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_cli c = { .opts.confidence = DEFAULT_CONFIDENCE };
	struct name_table *names = NULL;
	struct stack_set *base = NULL, *new = NULL;
	struct diff_result r = { 0 };
	int err, status = EXIT_ERROR;
	bool debuginfod;

	err = parse_args(argc, argv, &c);
	if (err) {
		status = err > 0 ? EXIT_OK : EXIT_USAGE;
		goto cleanup;
	}
	err = name_table__new(&names);
	if (!err)
		err = stack_set__new(names, true, &base);
	if (!err)
		err = stack_set__new(names, true, &new);
	if (err) {
		fprintf(stderr, "hprof: diff: %s\n", strerror(-err));
		goto cleanup;
	}
	debuginfod = !c.no_debuginfod && debuginfod__wanted();
	if (load(c.base_path, debuginfod, base) || load(c.new_path, debuginfod, new))
		goto cleanup;
	err = diff__compute(base, new, &c.opts, &r);
	if (!err)
		err = write_files(&(struct outputs){ &c, base, new, &r });
	else
		fprintf(stderr, "hprof: diff: %s\n", strerror(-err));
	if (!err && (err = diff__write_table(&r, &c.opts, c.base_path, c.new_path, stdout)))
		fprintf(stderr, "hprof: diff: writing the table: %s\n", strerror(-err));
	if (!err)
		status = r.nr_regressed ? EXIT_REGRESSION : EXIT_OK;
cleanup:
	diff_result__free(&r);
	stack_set__free(base);
	stack_set__free(new);
	name_table__free(names);
	for (size_t i = 0; i < c.opts.nr_functions; i++)
		regfree(&c.regexes[i]);
	return status;
}
