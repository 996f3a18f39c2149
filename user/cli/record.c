/* `hprof [options] [-- COMMAND ARGS]`: samples every CPU with the BPF program, turns the
 * samples into stacks and writes folded stacks, a flamegraph, a pprof profile, a JSON
 * summary and/or a raw capture. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binary/code.h"
#include "binary/debug_files.h"
#include "binary/debuginfod.h"
#include "binary/gdb_jit.h"
#include "binary/jitdump.h"
#include "binary/modules.h"
#include "binary/perfmap.h"
#include "capture/writer.h"
#include "cli/commands.h"
#include "output/outputs.h"
#include "output/profile.h"
#include "output/status_line.h"
#include "output/summary.h"
#include "record/capabilities.h"
#include "record/child.h"
#include "record/recorder.h"
#include "sample.h"
#include "session.h"
#include "util/text.h"
#include "util/atomic_file.h"

#define DEFAULT_FREQUENCY 99

struct record_opts {
	struct output_opts out;
	long time_ms;        /* 0: until Ctrl-C, the command's exit or the pids' exit */
	unsigned frequency;  /* Hz */
	pid_t *pids;
	size_t nr_pids;
	bool no_dwarf;
	bool no_stack_delta; /* --no-stack-delta: every copy sent whole */
	bool no_scan;        /* --no-scan: code without CFI by exact methods only */
	bool no_inline;      /* --no-inline: no inline frames from DWARF */
	bool no_lines;       /* --no-lines: no source lines from DWARF */
	enum session_python python; /* --python */
	unsigned stack_size; /* bytes */
	char **command;      /* NULL or argv of the command to run */
	const char *raw_path; /* --raw: capture file for hprof report */
	unsigned ring_size;   /* --ring-size: bytes of the kernel's sample buffer; 0 = sized to -F */
	bool verbose;         /* -v: every figure of the summary */
	bool quiet;           /* -q: no status line, no summary, only errors */
	bool no_debuginfod;   /* --no-debuginfod: fetch no debug files */
};

static volatile sig_atomic_t exiting;
static volatile sig_atomic_t exit_signal;

static void on_signal(int sig)
{
	exiting = 1;
	exit_signal = sig;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: hprof [OPTIONS] [-- COMMAND [ARGS...]]\n"
		"       hprof report CAPTURE [--svg FILE] [--folded FILE] [--pprof FILE] [--json FILE]\n"
		"       hprof diff BASE NEW [--threshold PCT] [--svg FILE] [--json FILE]\n"
		"       hprof stack PID | hprof table FILE | hprof flamegraph IN.folded OUT.svg\n"
		"       hprof serve [--listen ADDR:PORT] (an always-on agent: see hprof serve --help)\n"
		"Samples user and kernel stacks on every CPU and writes a flamegraph.\n"
		"\n"
		"  --svg FILE            write an interactive flamegraph\n"
		"  --folded FILE         write folded stacks (- for stdout; the default when\n"
		"                        no output is named)\n"
		"  --pprof FILE          write a gzip-compressed pprof profile (go tool pprof)\n"
		"  --json FILE           write the end-of-run summary and top functions as JSON\n"
		"  --top N               print the N functions with the most self samples, with\n"
		"                        self and inclusive share, samples and module, on stdout\n"
		"                        (folded stacks go there only with --folded -, and the\n"
		"                        table then to stderr)\n"
		"  --time MS             sample for MS milliseconds (default: until Ctrl-C,\n"
		"                        or until COMMAND or every --pid exits)\n"
		"  -F, --frequency HZ    samples per second per CPU (default %d)\n"
		"  -p, --pid PID         profile only this process (repeatable)\n"
		"  --no-dwarf            frame pointers only: copy no user stack\n"
		"  --stack-size BYTES    user stack bytes copied per sample (default %d,\n"
		"                        at most %d)\n"
		"  --no-stack-delta      send every stack copy whole, not only the parts\n"
		"                        that changed since the thread's previous one\n"
		"  --no-scan             never scan the stack for a return address through\n"
		"                        code without CFI (instruction analysis and frame\n"
		"                        records only)\n"
		"  --no-inline           no frames for inlined calls (from the binaries' DWARF)\n"
		"  --no-lines            no source lines (from the binaries' DWARF)\n"
		"  --python MODE         CPython's frames in its stacks: on (the default:\n"
		"                        each evaluator frame replaced by the Python frames\n"
		"                        it ran), native (keeping the interpreter's frames\n"
		"                        between them), off (native frames only)\n"
		"  --raw FILE            also save the raw samples (mode 0600: stack bytes\n"
		"                        can hold secrets) for hprof report\n"
		"  --debug-dir DIR       a directory of separate debug files, searched first:\n"
		"                        DIR/.build-id/xx/yyyy.debug and by .gnu_debuglink\n"
		"                        name (repeatable)\n"
		"  --no-debuginfod       fetch no debug files from DEBUGINFOD_URLS' servers\n"
		"                        (fetched at the end, for binaries without symbols)\n"
		"  --ring-size BYTES     the kernel's sample buffer: a power of two from 4096\n"
		"                        to 1 GiB (default: 50 ms of the largest samples\n"
		"                        from every CPU at -F, 2 MiB to 256 MiB)\n"
		"  -v, --verbose         end with every figure of the summary\n"
		"  -q, --quiet           print only errors: no status line, no summary\n"
		"  -h, --help            show this help\n"
		"  -V, --version         show the version\n"
		"\n"
		"With -- COMMAND, profiles COMMAND and its children until it exits and exits\n"
		"with its status.\n",
		DEFAULT_FREQUENCY, HPROF_DEFAULT_STACK_COPY, HPROF_MAX_STACK_COPY);
}

static long long max_sample_rate(void)
{
	long long rate = 100000;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");

	if (f) {
		if (fscanf(f, "%lld", &rate) != 1)
			rate = 100000;
		fclose(f);
	}
	return rate;
}

enum { OPT_SVG = 256, OPT_FOLDED, OPT_TIME, OPT_NO_DWARF, OPT_STACK_SIZE, OPT_RAW, OPT_PPROF,
       OPT_JSON, OPT_RING_SIZE, OPT_NO_STACK_DELTA, OPT_NO_SCAN, OPT_TOP,
       OPT_PYTHON, OPT_DEBUG_DIR, OPT_NO_DEBUGINFOD, OPT_NO_INLINE, OPT_NO_LINES };

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "hprof: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see hprof --help)\n");
	return -EINVAL;
}

/* --debug-dir DIR: searched before the system's debug files. */
static int add_debug_dir(const char *dir)
{
	int err = debug_files__add_dir(dir);

	if (err == -E2BIG)
		fprintf(stderr, "hprof: at most %d --debug-dir directories\n", DEBUG_DIRS_MAX);
	else if (err)
		fprintf(stderr, "hprof: --debug-dir %s: %s\n", dir, strerror(-err));
	return err;
}

static int parse_option(struct record_opts *o, int opt, const char *arg)
{
	long long v, max_rate;

	switch (opt) {
	case OPT_SVG:
		o->out.svg_path = arg;
		return 0;
	case OPT_FOLDED:
		o->out.folded_path = arg;
		return 0;
	case OPT_PPROF:
		o->out.pprof_path = arg;
		return 0;
	case OPT_JSON:
		o->out.json_path = arg;
		return 0;
	case OPT_TOP:
		if (!text__parse_number(arg, 1, INT32_MAX, &v))
			return usage_error("--top takes a positive number of functions, got '%s'", arg);
		o->out.top = (size_t)v;
		return 0;
	case OPT_TIME:
		if (!text__parse_number(arg, 1, 365LL * 24 * 3600 * 1000, &v))
			return usage_error("--time takes a positive number of milliseconds, got '%s'", arg);
		o->time_ms = v;
		return 0;
	case 'F':
		max_rate = max_sample_rate();
		if (!text__parse_number(arg, 1, max_rate, &v)) {
			fprintf(stderr, "hprof: --frequency must be between 1 and %lld "
					"(kernel.perf_event_max_sample_rate), got '%s'\n", max_rate, arg);
			return -EINVAL;
		}
		o->frequency = v;
		return 0;
	case 'p': {
		pid_t *pids = realloc(o->pids, (o->nr_pids + 1) * sizeof(*pids));

		if (!text__parse_number(arg, 1, INT32_MAX, &v))
			return usage_error("--pid takes a process id, got '%s'", arg);
		if (!pids)
			return -ENOMEM;
		o->pids = pids;
		o->pids[o->nr_pids++] = (pid_t)v;
		return 0;
	}
	case OPT_NO_DWARF:
		o->no_dwarf = true;
		return 0;
	case OPT_NO_STACK_DELTA:
		o->no_stack_delta = true;
		return 0;
	case OPT_NO_SCAN:
		o->no_scan = true;
		return 0;
	case OPT_NO_INLINE:
		o->no_inline = true;
		return 0;
	case OPT_NO_LINES:
		o->no_lines = true;
		return 0;
	case OPT_RAW:
		o->raw_path = arg;
		return 0;
	case OPT_DEBUG_DIR:
		return add_debug_dir(arg);
	case OPT_NO_DEBUGINFOD:
		o->no_debuginfod = true;
		return 0;
	case OPT_PYTHON:
		if (strcmp(arg, "on") == 0)
			o->python = SESSION_PYTHON_ON;
		else if (strcmp(arg, "native") == 0)
			o->python = SESSION_PYTHON_NATIVE;
		else if (strcmp(arg, "off") == 0)
			o->python = SESSION_PYTHON_OFF;
		else
			return usage_error("--python takes on, native or off, got '%s'", arg);
		return 0;
	case 'v': /* the last of -v and -q wins */
		o->verbose = true;
		o->quiet = false;
		return 0;
	case 'q':
		o->quiet = true;
		o->verbose = false;
		return 0;
	case OPT_RING_SIZE:
		if (!text__parse_number(arg, 4096, 1 << 30, &v) || (v & (v - 1)))
			return usage_error("--ring-size takes a power of two from 4096 to 1073741824, got '%s'",
					   arg);
		o->ring_size = (unsigned)v;
		return 0;
	case OPT_STACK_SIZE:
		if (!text__parse_number(arg, 8, HPROF_MAX_STACK_COPY, &v) || v % 8)
			return usage_error("--stack-size takes a multiple of 8 from 8 to "
					   HPROF_MAX_STACK_COPY_TEXT ", got '%s'", arg);
		o->stack_size = v;
		return 0;
	}
	return -EINVAL;
}

/* Returns 0, 1 for --help/--version (exit 0), or -EINVAL. */
static int parse_args(int argc, char **argv, struct record_opts *o)
{
	static const struct option long_opts[] = {
		{ "svg", required_argument, NULL, OPT_SVG },
		{ "folded", required_argument, NULL, OPT_FOLDED },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "frequency", required_argument, NULL, 'F' },
		{ "pid", required_argument, NULL, 'p' },
		{ "no-dwarf", no_argument, NULL, OPT_NO_DWARF },
		{ "stack-size", required_argument, NULL, OPT_STACK_SIZE },
		{ "no-stack-delta", no_argument, NULL, OPT_NO_STACK_DELTA },
		{ "no-scan", no_argument, NULL, OPT_NO_SCAN },
		{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
		{ "no-lines", no_argument, NULL, OPT_NO_LINES },
		{ "python", required_argument, NULL, OPT_PYTHON },
		{ "raw", required_argument, NULL, OPT_RAW },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
		{ "pprof", required_argument, NULL, OPT_PPROF },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "ring-size", required_argument, NULL, OPT_RING_SIZE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int opt, err;

	o->frequency = DEFAULT_FREQUENCY;
	o->stack_size = HPROF_DEFAULT_STACK_COPY;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+F:p:hVvq", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("hprof %s\n", HPROF_VERSION);
			return 1;
		case '?':
			if (optopt)
				fprintf(stderr, "hprof: option '-%c' %s (see hprof --help)\n", optopt,
					strchr("Fp", optopt) ? "needs a value" : "is unknown");
			else
				fprintf(stderr, "hprof: unknown option or missing value: '%s' (see hprof --help)\n",
					argv[optind - 1]);
			return -EINVAL;
		default:
			err = parse_option(o, opt, optarg);
			if (err)
				return err;
		}
	}
	if (optind < argc)
		o->command = argv + optind;
	if (o->command && o->nr_pids)
		return usage_error("%s", "--pid and a COMMAND cannot be combined");
	return 0;
}

/* Checks what can be checked before sampling starts, so a long run does not end in an
 * error. Returns 0 or -errno after printing the reason. */
static int validate(const struct record_opts *o)
{
	const char *paths[] = { o->out.svg_path, o->out.folded_path, o->raw_path, o->out.pprof_path,
				o->out.json_path };
	int err;

	for (size_t i = 0; i < o->nr_pids; i++) {
		if (kill(o->pids[i], 0) != 0 && errno == ESRCH) {
			fprintf(stderr, "hprof: no process with pid %d\n", o->pids[i]);
			return -ESRCH;
		}
	}
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (!paths[i] || strcmp(paths[i], "-") == 0)
			continue;
		err = atomic_file__check_writable(paths[i]);
		if (err) {
			fprintf(stderr, "hprof: cannot write %s: %s\n", paths[i], strerror(-err));
			return err;
		}
	}
	return capabilities__check_for_profiling();
}

/* HPROF_DEBUG=delta-verify: every delta carries the whole copy too, and the summary says
 * whether each rebuilt copy equals it. */
static bool debug_delta_verify(void)
{
	const char *debug = getenv("HPROF_DEBUG");

	return debug && strstr(debug, "delta-verify");
}

/* HPROF_DEBUG=delta-drop:N: every Nth image of a thread's last copy is dropped, to check
 * that the deltas against it are counted lost and the thread's copies start again. */
static unsigned debug_delta_drop_every(void)
{
	const char *debug = getenv("HPROF_DEBUG"), *opt;

	if (!debug || !(opt = strstr(debug, "delta-drop:")))
		return 0;
	return (unsigned)strtoul(opt + strlen("delta-drop:"), NULL, 10);
}

/* HPROF_DEBUG=pid-filter:N: room for N processes in the kernel's pid filter, to check that
 * children it cannot hold are counted. */
static unsigned debug_pid_filter_size(void)
{
	const char *debug = getenv("HPROF_DEBUG"), *opt;

	if (!debug || !(opt = strstr(debug, "pid-filter:")))
		return 0;
	return (unsigned)strtoul(opt + strlen("pid-filter:"), NULL, 10);
}

static void install_signal_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	child__catch_hangup(on_signal);
	/* a reader that stops early (hprof | head) is an EPIPE on stdout, not a kill */
	signal(SIGPIPE, SIG_IGN);
}

static void set_subtitle(struct record_opts *o, struct session *s, double duration_s, char *buf,
			 size_t len)
{
	snprintf(buf, len, "%" PRIu64 " samples, %u Hz, %.1f s%s", session__stats(s)->samples,
		 o->frequency, duration_s, o->no_dwarf ? ", frame pointers only" : "");
	o->out.subtitle = buf;
}

/* What was profiled, for the summary's first line. */
static void describe_target(const struct record_opts *o, char *buf, size_t len)
{
	int n;

	if (o->command) {
		snprintf(buf, len, "profiled %s", o->command[0]);
	} else if (o->nr_pids > 3) {
		snprintf(buf, len, "profiled %zu pids", o->nr_pids);
	} else if (o->nr_pids) {
		n = snprintf(buf, len, "profiled pid%s", o->nr_pids > 1 ? "s" : "");
		for (size_t i = 0; i < o->nr_pids && n > 0 && (size_t)n < len; i++)
			n += snprintf(buf + n, len - n, "%s %d", i ? "," : "", o->pids[i]);
	} else {
		snprintf(buf, len, "profiled every CPU");
	}
}

/* On a terminal only: a log or a pipe gets no line rewritten in place, and a dumb terminal
 * (an editor's shell buffer) would print the escape sequence. */
static bool status_line_wanted(void)
{
	const char *term = getenv("TERM");

	return isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0);
}

/* The live status line: figures the session and the kernel keep anyway, read twice a
 * second. */
struct status {
	struct status_line *line;
	struct session *session;
	double time_s; /* --time; 0: none */
};

static void show_status(void *ctx, struct recorder *rec, double elapsed_s, bool running)
{
	struct status *st = ctx;
	const struct sample_stats *ss = session__stats(st->session);
	uint64_t kc[KC_NR], user = summary__user_samples(ss);

	if (!running) {
		status_line__clear(st->line);
		return;
	}
	if (!status_line__due(st->line, elapsed_s))
		return;
	recorder__read_counters(rec, kc);
	status_line__show(st->line, &(struct status_figures){
		.elapsed_s = elapsed_s,
		.left_s = !st->time_s ? -1 : elapsed_s < st->time_s ? st->time_s - elapsed_s : 0,
		.samples = ss->samples,
		.user_stacks = user,
		.complete = user - ss->methods[METHOD_TRUNCATED],
		.lost = summary__lost_samples(ss, kc),
	});
}

/* So do the JIT code the walks read, the perf maps and jitdumps, BEAM's exit and what was
 * registered through gdb's JIT interface: a replay has no process to read them from. */
static void write_raw_code(void *ctx, uint32_t pid, uint64_t addr, const uint8_t *bytes,
			   size_t len)
{
	capture_writer__code(ctx, pid, addr, bytes, len);
}

static void write_raw_perf_map(void *ctx, uint32_t pid, const char *text, size_t len)
{
	capture_writer__perf_map(ctx, pid, text, len);
}

static void write_raw_beam_exit(void *ctx, uint32_t pid, uint64_t exit)
{
	capture_writer__beam_exit(ctx, pid, exit);
}

static void write_raw_gdb_jit_object(void *ctx, uint32_t pid, uint64_t addr,
				     const uint8_t *bytes, size_t len)
{
	capture_writer__gdb_jit_object(ctx, pid, addr, bytes, len);
}

static void write_raw_jitdump(void *ctx, uint32_t pid, uint64_t offset, const uint8_t *bytes,
			      size_t len)
{
	capture_writer__jitdump(ctx, pid, offset, bytes, len);
}

static void write_raw_gdb_jit_drop(void *ctx, uint32_t pid, uint64_t addr, uint64_t size)
{
	capture_writer__gdb_jit_drop(ctx, pid, addr, size);
}

static void write_raw_python_memory(void *ctx, uint32_t pid, uint64_t addr, const void *bytes,
				    size_t len)
{
	capture_writer__python_memory(ctx, pid, addr, bytes, len);
}

/* The hooks that write into raw (NULL: none). */
static void set_raw_hooks(struct session *session, struct capture_writer *raw)
{
	code__set_jit_read_hook(raw ? write_raw_code : NULL, raw);
	perf_map__set_read_hook(raw ? write_raw_perf_map : NULL, raw);
	jitdump__set_read_hook(raw ? write_raw_jitdump : NULL, raw);
	gdb_jit__set_hooks(raw ? write_raw_gdb_jit_object : NULL, raw ? write_raw_gdb_jit_drop : NULL,
			   raw);
	if (session) {
		module_registry__set_beam_exit_hook(session__modules(session),
						    raw ? write_raw_beam_exit : NULL, raw);
		session__set_python_memory_hook(session, raw ? write_raw_python_memory : NULL, raw);
	}
}

/* After recording: the outputs, the capture, the summary. Returns 0 or -errno. */
static int finish(struct record_opts *o, struct session *session, struct recorder *rec,
		  struct capture_writer **raw)
{
	double duration_s = recorder__duration_s(rec);
	struct run_summary summary =
		session__summary(session, duration_s, o->frequency, o->no_dwarf,
				 recorder__kernel_counters(rec), recorder__sideband_lost(rec));
	char subtitle[128], what[160];
	int err;

	/* after sampling, before the names are settled for the outputs */
	err = session__fetch_debug_files(session, 0, o->quiet ? NULL : stderr);
	if (err)
		return err;
	describe_target(o, what, sizeof(what));
	summary.what = what;
	summary.received_bytes = recorder__received_bytes(rec);
	summary.deltas = recorder__delta_stats(rec);
	set_subtitle(o, session, duration_s, subtitle, sizeof(subtitle));
	o->out.frequency = o->frequency;
	o->out.duration_ns = (uint64_t)(duration_s * 1e9);
	session__settle_names(session);
	err = outputs__write(session__profile(session), session__modules(session), &o->out);
	if (!err && *raw) {
		struct capture_info info = {
			.frequency = o->frequency,
			.stack_size = o->no_dwarf ? 0 : o->stack_size,
			.duration_ns = o->out.duration_ns,
		};

		set_raw_hooks(session, NULL); /* the writer goes */
		err = capture_writer__finish(*raw, session__modules(session),
					     session__ksyms(session), &info);
		*raw = NULL;
	}
	if (o->verbose)
		summary__print(&summary, stderr);
	else if (!o->quiet)
		summary__print_brief(&summary, stderr);
	if (!err && o->out.json_path)
		err = summary__write_json_file(o->out.json_path, &summary);
	if (!err && !o->quiet)
		summary__print_written(&o->out, o->raw_path, o->verbose, stderr);
	return err;
}

/* Every /proc/PID/maps the session reads goes into the capture, for replays. */
static void write_raw_maps(void *ctx, uint32_t pid, const char *text, size_t len)
{
	capture_writer__maps(ctx, pid, text, len);
}


int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct child child = { .go_fd = -1, .exec_err_fd = -1 };
	struct session *session = NULL;
	struct capture_writer *raw = NULL;
	struct recorder *rec = NULL;
	struct status status = { 0 };
	int err;

	err = parse_args(argc, argv, &o);
	if (err) {
		free(o.pids);
		return err > 0 ? 0 : 2;
	}
	if (!o.out.svg_path && !o.out.folded_path && !o.raw_path && !o.out.pprof_path &&
	    !o.out.json_path && !o.out.top)
		o.out.folded_path = "-";
	o.out.title = "hprof CPU flame graph";
	err = validate(&o);
	if (!err)
		err = session__new(!o.no_dwarf, &session);
	if (!err) {
		session__set_debuginfod(session, !o.no_debuginfod && debuginfod__wanted());
		session__set_no_scan(session, o.no_scan);
		session__set_python(session, o.python);
	}
	/* pprof shows addresses; every other output names functions */
	if (!err && !o.out.pprof_path)
		err = profile__key_by_name(session__profile(session));
	if (!err && !(o.no_inline && o.no_lines))
		err = profile__expand_inline(session__profile(session), !o.no_inline, !o.no_lines);
	if (!err && o.raw_path)
		err = capture_writer__open(o.raw_path, &raw);
	if (!err && !o.quiet && status_line_wanted())
		err = status_line__new(STDERR_FILENO, &status.line);
	if (err)
		goto cleanup;
	status.session = session;
	status.time_s = o.time_ms / 1000.0;
	if (raw) {
		session__set_maps_hook(session, write_raw_maps, raw);
		set_raw_hooks(session, raw);
	}
	if (o.command) {
		err = child__spawn(&child, o.command);
		if (err) {
			fprintf(stderr, "hprof: cannot start '%s': %s\n", o.command[0], strerror(-err));
			goto cleanup;
		}
		/* The child was forked before the mapping events were open, and its samples
		 * before exec run hprof's code: read its maps while it is held, not after. */
		session__track_process(session, child.pid);
	}
	err = recorder__open(&(struct recorder_opts){
				     .sampler = {
					     .frequency = o.frequency,
					     .stack_size = o.no_dwarf ? 0 : o.stack_size,
					     .ring_size = o.ring_size,
					     .filter_pids = o.nr_pids > 0 || o.command,
					     .follow_forks = o.command != NULL,
					     .stack_deltas = !o.no_stack_delta,
					     .delta_verify = debug_delta_verify(),
					     .max_pids = debug_pid_filter_size(),
					     .python_frames = o.python != SESSION_PYTHON_OFF,
				     },
				     .time_ms = o.time_ms,
				     .pids = o.pids,
				     .nr_pids = o.nr_pids,
				     .child = o.command ? &child : NULL,
				     .delta_drop_every = debug_delta_drop_every(),
				     .progress = status.line ? show_status : NULL,
				     .progress_ctx = &status,
			     },
			     session, raw, &rec);
	if (!err)
		err = recorder__start(rec);
	if (err)
		goto cleanup;
	install_signal_handlers();
	if (child.pid) {
		err = child__release(&child, o.command[0]);
		/* a Go command collects within milliseconds: before its exec is handled */
		if (!err)
			err = session__look_go_command(session, (uint32_t)child.pid);
		if (err)
			goto cleanup;
	}
	err = recorder__run(rec, &exiting);
	if (!err)
		err = finish(&o, session, rec, &raw);
cleanup:
	child__close_pipes(&child); /* a command still held sees EOF and exits 127 */
	if (child.pid && !child.exited)
		child__wait(&child, &exit_signal);
	set_raw_hooks(session, NULL);
	capture_writer__free(raw);
	status_line__free(status.line);
	recorder__free(rec);
	session__free(session);
	free(o.pids);
	if (err)
		return 1;
	return child.pid ? child__exit_status(&child) : 0;
}
