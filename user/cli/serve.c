/* `hprof serve`: samples the host (or -p processes) until stopped, and serves what
 * continuous profilers pull: a gzip pprof profile of the next N seconds per request
 * (/debug/pprof/profile, as Go's net/http/pprof), hprof's counters for Prometheus
 * (/metrics), and with --every back-to-back windows written to files. The recorder's
 * thread samples, unwinds and names; the HTTP threads (user/serve/http.c) only wait for
 * what it hands them. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "binary/debuginfod.h"
#include "binary/fetch_background.h"
#include "cli/commands.h"
#include "record/child.h"
#include "record/recorder.h"
#include "sample.h"
#include "serve/http.h"
#include "serve/metrics.h"
#include "serve/windows.h"
#include "session.h"
#include "util/text.h"

/* Continuous profilers sample at 19-20 Hz: an odd rate, so as not to beat with timers. */
#define SERVE_DEFAULT_FREQUENCY 19
#define SERVE_DEFAULT_LISTEN "127.0.0.1:6060"
/* Samples are read twice a second, not ten times: each read handles what came since with
 * caches the host's work has evicted meanwhile, and under process churn five times fewer
 * reads took hprof serve's CPU from 0.45% of a core to 0.32% (bench/b_serve.sh). The
 * buffers hold several seconds at the default rate; windows still end on time. */
#define SERVE_POLL_MS 500
/* How long a /metrics request waits for the recorder's thread (it answers within
 * SERVE_POLL_MS). */
#define METRICS_WAIT_S 5

struct serve_opts {
	const char *listen;
	struct sockaddr_storage listen_addr;
	socklen_t listen_len;
	unsigned frequency;
	pid_t *pids;
	size_t nr_pids;
	bool no_dwarf;
	bool no_inline, no_lines; /* --no-inline, --no-lines */
	bool no_debuginfod;       /* --no-debuginfod */
	unsigned stack_size;
	uint64_t every_ns;
	unsigned keep;
	struct output_opts out;
	bool quiet;
};

/* What the HTTP threads and the recorder's thread share for /metrics: a request counts up
 * wanted, the recorder's thread writes the text and counts made up to it. */
struct metrics_box {
	pthread_mutex_t lock;
	pthread_cond_t made_cond;
	uint64_t wanted, made;
	char *text;
	size_t len;
	bool stopping;
};

struct server {
	struct serve_opts *o;
	struct session *session;
	struct recorder *rec;
	struct serve_windows *windows;
	struct metrics_box metrics;
	struct timespec started;
	int tick_err;
	/* debug files fetched while serving: NULL when debuginfod is off */
	struct fetch_background *fetcher;
	struct fetch_debug_report debug_files;
	uint64_t windows_ended; /* served and written, when the fetcher was last asked */
};

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

/* The recorder's thread reads the buffers every SERVE_POLL_MS; an HTTP thread that asks it
 * for a window or the metrics wakes it at once: SIGURG ends its wait (and restarts any
 * other system call it is in). */
static pthread_t recorder_thread;
/* Set with the signal: one that lands between the tick and the wait is not lost. */
static atomic_bool wake_pending;

static void on_wake(int sig)
{
	(void)sig;
}

static void wake_recorder(void *ctx)
{
	(void)ctx;
	atomic_store(&wake_pending, true);
	pthread_kill(recorder_thread, SIGURG);
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: hprof serve [OPTIONS]\n"
		"Samples every CPU (or the -p processes) until stopped, and serves:\n"
		"  GET /debug/pprof/profile?seconds=N  the next N seconds (default %d, 1-%d) as a\n"
		"                                      gzip pprof profile with labels pid, tid,\n"
		"                                      comm, thread_name and cgroup\n"
		"  GET /metrics                        hprof's counters for Prometheus\n"
		"  GET /                               this list\n"
		"\n"
		"  --listen ADDR:PORT    where to listen (default %s; another address only\n"
		"                        when given: the endpoints show every process's\n"
		"                        function and command names)\n"
		"  -F, --frequency HZ    samples per second per CPU (default %d)\n"
		"  -p, --pid PID         profile only this process (repeatable)\n"
		"  --no-dwarf            frame pointers only: copy no user stack\n"
		"  --stack-size BYTES    user stack bytes copied per sample (default %d)\n"
		"  --no-inline           no frames for inlined calls (from the binaries' DWARF)\n"
		"  --no-lines            no source lines (from the binaries' DWARF)\n"
		"  --no-debuginfod       fetch no debug files from DEBUGINFOD_URLS' servers (else\n"
		"                        fetched after a window, the next windows named by them)\n"
		"  --every DURATION      also write one file per window of DURATION (Ns, Nm or\n"
		"                        Nh, at least 1s) to each of --pprof, --folded, --svg,\n"
		"                        --json FILE, a pattern: strftime of the window's start,\n"
		"                        else the start put in before the first extension; the\n"
		"                        JSON summary's figures are the window's\n"
		"  --keep N              keep the newest N files of each output (default: all)\n"
		"  -q, --quiet           print only errors\n"
		"  -h, --help            show this help\n"
		"\n"
		"SIGTERM or Ctrl-C stops it: open windows are cut and served, and the --every\n"
		"file in progress is written.\n",
		SERVE_SECONDS_DEFAULT, SERVE_SECONDS_MAX, SERVE_DEFAULT_LISTEN,
		SERVE_DEFAULT_FREQUENCY, HPROF_DEFAULT_STACK_COPY);
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "hprof serve: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see hprof serve --help)\n");
	return -EINVAL;
}

/* "30s", "5m", "1h" (a whole number and a unit), at least a second, at most a day. */
static bool parse_duration(const char *s, uint64_t *ns)
{
	char number[32];
	size_t len = strlen(s);
	long long v, unit;

	if (len < 2 || len >= sizeof(number))
		return false;
	switch (s[len - 1]) {
	case 's':
		unit = 1;
		break;
	case 'm':
		unit = 60;
		break;
	case 'h':
		unit = 3600;
		break;
	default:
		return false;
	}
	memcpy(number, s, len - 1);
	number[len - 1] = '\0';
	if (!text__parse_number(number, 1, 24 * 3600 / unit, &v))
		return false;
	*ns = (uint64_t)(v * unit) * 1000000000ull;
	return true;
}

enum { OPT_LISTEN = 256, OPT_NO_DWARF, OPT_NO_INLINE, OPT_NO_LINES, OPT_NO_DEBUGINFOD, OPT_STACK_SIZE, OPT_EVERY, OPT_KEEP, OPT_PPROF,
       OPT_FOLDED, OPT_SVG, OPT_JSON };

static int parse_option(struct serve_opts *o, int opt, const char *arg)
{
	long long v;
	pid_t *pids;

	switch (opt) {
	case OPT_LISTEN:
		o->listen = arg;
		return 0;
	case 'F':
		if (!text__parse_number(arg, 1, 100000, &v))
			return usage_error("--frequency takes samples per second, got '%s'", arg);
		o->frequency = (unsigned)v;
		return 0;
	case 'p':
		pids = realloc(o->pids, (o->nr_pids + 1) * sizeof(*pids));
		if (!pids)
			return -ENOMEM;
		o->pids = pids;
		if (!text__parse_number(arg, 1, INT32_MAX, &v))
			return usage_error("--pid takes a process id, got '%s'", arg);
		o->pids[o->nr_pids++] = (pid_t)v;
		return 0;
	case OPT_NO_INLINE:
		o->no_inline = true;
		return 0;
	case OPT_NO_LINES:
		o->no_lines = true;
		return 0;
	case OPT_NO_DEBUGINFOD:
		o->no_debuginfod = true;
		return 0;
	case OPT_NO_DWARF:
		o->no_dwarf = true;
		return 0;
	case OPT_STACK_SIZE:
		if (!text__parse_number(arg, 8, HPROF_MAX_STACK_COPY, &v) || v % 8)
			return usage_error("--stack-size takes a multiple of 8 from 8 to "
					   HPROF_MAX_STACK_COPY_TEXT ", got '%s'", arg);
		o->stack_size = (unsigned)v;
		return 0;
	case OPT_EVERY:
		if (!parse_duration(arg, &o->every_ns))
			return usage_error("--every takes a duration such as 30s, 5m or 1h (1s to 24h), got '%s'",
					   arg);
		return 0;
	case OPT_KEEP:
		if (!text__parse_number(arg, 1, 1000000, &v))
			return usage_error("--keep takes a positive number of files, got '%s'", arg);
		o->keep = (unsigned)v;
		return 0;
	case OPT_PPROF:
		o->out.pprof_path = arg;
		return 0;
	case OPT_FOLDED:
		o->out.folded_path = arg;
		return 0;
	case OPT_SVG:
		o->out.svg_path = arg;
		return 0;
	case OPT_JSON:
		o->out.json_path = arg;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	}
	return -EINVAL;
}

/* Returns 0, 1 for --help (exit 0), or -EINVAL. */
static int parse_args(int argc, char **argv, struct serve_opts *o)
{
	static const struct option long_opts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "frequency", required_argument, NULL, 'F' },
		{ "pid", required_argument, NULL, 'p' },
		{ "no-dwarf", no_argument, NULL, OPT_NO_DWARF },
		{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
		{ "no-lines", no_argument, NULL, OPT_NO_LINES },
		{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
		{ "stack-size", required_argument, NULL, OPT_STACK_SIZE },
		{ "every", required_argument, NULL, OPT_EVERY },
		{ "keep", required_argument, NULL, OPT_KEEP },
		{ "pprof", required_argument, NULL, OPT_PPROF },
		{ "folded", required_argument, NULL, OPT_FOLDED },
		{ "svg", required_argument, NULL, OPT_SVG },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt, err;

	o->listen = SERVE_DEFAULT_LISTEN;
	o->frequency = SERVE_DEFAULT_FREQUENCY;
	o->stack_size = HPROF_DEFAULT_STACK_COPY;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+F:p:qh", long_opts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 1;
		}
		if (opt == '?')
			return usage_error("unknown option or missing argument: '%s'", argv[optind - 1]);
		err = parse_option(o, opt, optarg);
		if (err)
			return err;
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (serve_http__parse_listen(o->listen, &o->listen_addr, &o->listen_len) != 0)
		return usage_error("--listen takes ADDR:PORT with a numeric address, got '%s'",
				   o->listen);
	if (o->every_ns && !o->out.pprof_path && !o->out.folded_path && !o->out.svg_path &&
	    !o->out.json_path)
		return usage_error("%s needs --pprof, --folded, --svg or --json FILE to write", "--every");
	if (!o->every_ns && (o->out.pprof_path || o->out.folded_path || o->out.svg_path ||
			     o->out.json_path))
		return usage_error("%s: output files are written per --every window",
				   "--pprof, --folded, --svg, --json");
	if (o->keep && !o->every_ns)
		return usage_error("%s goes with --every", "--keep");
	return 0;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- /metrics: made on the recorder's thread, handed to the HTTP thread that asked ---- */

static int make_metrics(struct server *sv, char **text, size_t *len)
{
	struct memory_stats mem;
	struct serve_windows_stats ws;
	uint64_t kc[KC_NR];
	struct timespec now;

	recorder__read_counters(sv->rec, kc);
	session__memory(sv->session, &mem);
	serve_windows__stats(sv->windows, &ws);
	clock_gettime(CLOCK_MONOTONIC, &now);
	return serve_metrics__format(&(struct serve_metrics){
					     .stats = session__stats(sv->session),
					     .kernel_counters = kc,
					     .processes = session__process_stats(sv->session),
					     .sideband_lost = recorder__sideband_lost(sv->rec),
					     .received_bytes = recorder__received_bytes(sv->rec),
					     .memory = &mem,
					     .windows = &ws,
					     .frequency = sv->o->frequency,
					     .uptime_s = (double)(now.tv_sec - sv->started.tv_sec) +
							 (double)(now.tv_nsec - sv->started.tv_nsec) / 1e9,
				     },
				     text, len);
}

/* ---- --every --json: a window's summary, its figures counted since it began ---- */

/* The counters a window's JSON summary is made of. Every field is a uint64_t (struct
 * sample_stats and struct process_table_stats too), so a window's are end less start. */
struct counters {
	struct sample_stats stats;
	struct process_table_stats processes;
	uint64_t kernel[KC_NR];
	uint64_t sideband_lost, received_bytes;
};
_Static_assert(sizeof(struct counters) % sizeof(uint64_t) == 0, "counters are uint64_t words");

static void read_counters(struct server *sv, struct counters *c)
{
	c->stats = *session__stats(sv->session);
	c->processes = *session__process_stats(sv->session);
	recorder__read_counters(sv->rec, c->kernel);
	c->sideband_lost = recorder__sideband_lost(sv->rec);
	c->received_bytes = recorder__received_bytes(sv->rec);
}

static void *counters_snapshot(void *ctx)
{
	struct counters *c = malloc(sizeof(*c));

	if (c)
		read_counters(ctx, c);
	return c;
}

static int write_window_json(void *ctx, const char *path, struct profile *profile,
			     uint64_t duration_ns, void *snapshot)
{
	struct server *sv = ctx;
	struct counters now, *start = snapshot;
	uint64_t *n = (uint64_t *)&now;
	const uint64_t *s = (const uint64_t *)start;
	int err;

	read_counters(sv, &now);
	for (size_t i = 0; start && i < sizeof(now) / sizeof(uint64_t); i++)
		n[i] -= s[i];
	err = summary__write_json_file(path, &(struct run_summary){
						     .what = "hprof serve window",
						     .stats = &now.stats,
						     .processes = &now.processes,
						     .profile = profile,
						     .modules = session__modules(sv->session),
						     .duration_s = (double)duration_ns / 1e9,
						     .frequency = sv->o->frequency,
						     .no_dwarf = sv->o->no_dwarf,
						     .kernel_counters = now.kernel,
						     .sideband_lost = now.sideband_lost,
						     .received_bytes = now.received_bytes,
					     });
	free(start);
	return err;
}

/* The recorder's thread: answers the /metrics requests waiting. */
static void serve_metrics(struct server *sv)
{
	struct metrics_box *b = &sv->metrics;
	uint64_t wanted;
	char *text = NULL;
	size_t len = 0;

	pthread_mutex_lock(&b->lock);
	wanted = b->wanted;
	pthread_mutex_unlock(&b->lock);
	if (wanted == b->made)
		return;
	if (make_metrics(sv, &text, &len) != 0)
		text = NULL;
	pthread_mutex_lock(&b->lock);
	free(b->text);
	b->text = text;
	b->len = text ? len : 0;
	b->made = wanted;
	pthread_cond_broadcast(&b->made_cond);
	pthread_mutex_unlock(&b->lock);
}

/* An HTTP thread: the metrics as of a moment after the request. */
static int http_metrics(void *ctx, char **body, size_t *len)
{
	struct server *sv = ctx;
	struct metrics_box *b = &sv->metrics;
	struct timespec deadline;
	uint64_t want;
	int err = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += METRICS_WAIT_S;
	pthread_mutex_lock(&b->lock);
	want = ++b->wanted;
	wake_recorder(sv);
	while (b->made < want && !b->stopping && err == 0)
		err = pthread_cond_timedwait(&b->made_cond, &b->lock, &deadline);
	if (b->made >= want && b->text) {
		*body = malloc(b->len ? b->len : 1);
		if (*body)
			memcpy(*body, b->text, b->len);
		*len = b->len;
		err = *body ? 0 : -ENOMEM;
	} else {
		err = b->stopping ? -ESHUTDOWN : -ETIMEDOUT;
	}
	pthread_mutex_unlock(&b->lock);
	return err;
}

static int http_profile(void *ctx, unsigned seconds, const char *client, uint8_t **body,
			size_t *len)
{
	struct server *sv = ctx;

	return serve_windows__request(sv->windows, seconds, client, body, len);
}

/* The debug files fetched since the last tick taken in, and once a window has ended, the
 * ones its binaries want asked for: the fetching thread never holds up sampling. */
static void fetch_debug_files(struct server *sv)
{
	struct serve_windows_stats ws;
	int err;

	if (!sv->fetcher)
		return;
	err = fetch_background__take(sv->fetcher, session__modules(sv->session), &sv->debug_files);
	serve_windows__stats(sv->windows, &ws);
	if (err >= 0 && ws.served + ws.written != sv->windows_ended) {
		sv->windows_ended = ws.served + ws.written;
		err = fetch_background__ask(sv->fetcher, session__modules(sv->session));
	}
	if (err < 0) {
		fprintf(stderr, "hprof serve: debuginfod: %s; no more debug files fetched\n",
			strerror(-err));
		fetch_background__free(sv->fetcher);
		sv->fetcher = NULL;
	}
}

/* The recorder's progress hook: windows opened and ended, metrics answered. */
static void tick(void *ctx, struct recorder *rec, double elapsed_s, bool running)
{
	struct server *sv = ctx;
	int err;

	uint64_t now = monotonic_ns();

	(void)elapsed_s;
	if (!running)
		return;
	err = serve_windows__tick(sv->windows, now);
	if (err && !sv->tick_err)
		sv->tick_err = err;
	fetch_debug_files(sv);
	serve_metrics(sv);
	/* a window ends on time, not at the next half-second read */
	recorder__read_within(rec, serve_windows__ms_to_next_end(sv->windows, now));
	/* asked for during this tick: the next read comes at once (at worst, one read more) */
	if (atomic_exchange(&wake_pending, false))
		recorder__read_within(rec, 0);
}

static void install_signal_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct sigaction wake = { .sa_handler = on_wake, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	child__catch_hangup(on_signal);
	sigemptyset(&wake.sa_mask);
	sigaction(SIGURG, &wake, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int start_http(struct server *sv, struct serve_http **http)
{
	char err[256];
	int ret;

	ret = serve_http__start(&sv->o->listen_addr, sv->o->listen_len,
				&(struct serve_http_handlers){ .profile = http_profile,
							       .metrics = http_metrics,
							       .ctx = sv },
				http, err, sizeof(err));
	if (ret)
		fprintf(stderr, "hprof serve: %s\n", err);
	return ret;
}

/* Tells the HTTP threads waiting for metrics that no more will come. */
static void stop_metrics(struct metrics_box *b)
{
	pthread_mutex_lock(&b->lock);
	b->stopping = true;
	pthread_cond_broadcast(&b->made_cond);
	pthread_mutex_unlock(&b->lock);
}

static int run(struct serve_opts *o)
{
	struct server sv = { .o = o };
	struct serve_http *http = NULL;
	int err;

	recorder_thread = pthread_self();
	pthread_mutex_init(&sv.metrics.lock, NULL);
	pthread_cond_init(&sv.metrics.made_cond, NULL);
	err = session__new(!o->no_dwarf, &sv.session);
	if (!err)
		err = serve_windows__new(&(struct serve_windows_opts){
						 .modules = session__modules(sv.session),
						 .ksyms = session__ksyms(sv.session),
						 .frequency = o->frequency,
						 .every_ns = o->every_ns,
						 .inlines = !o->no_inline,
						 .lines = !o->no_lines,
						 .out = o->out,
						 .keep = o->keep,
						 .snapshot = counters_snapshot,
						 .requested = wake_recorder,
						 .write_json = write_window_json,
						 .ctx = &sv,
					 },
					 &sv.windows);
	if (err) {
		fprintf(stderr, "hprof serve: %s\n", strerror(-err));
		goto cleanup;
	}
	session__set_sample_sink(sv.session, serve_windows__add, sv.windows);
	if (!o->no_debuginfod && debuginfod__wanted()) {
		/* frames no symbol names stay apart, named again once their file comes */
		session__set_debuginfod(sv.session, true);
		err = fetch_background__new(&sv.fetcher);
		if (err)
			goto cleanup;
	}
	err = recorder__open(&(struct recorder_opts){
				     .sampler = {
					     .frequency = o->frequency,
					     .stack_size = o->no_dwarf ? 0 : o->stack_size,
					     .filter_pids = o->nr_pids > 0,
					     .stack_deltas = true,
					     .lazy_wakeups = true,
					     /* CPython's frames, as a recording reads them */
					     .python_frames = true,
				     },
				     .poll_ms = SERVE_POLL_MS,
				     .pids = o->pids,
				     .nr_pids = o->nr_pids,
				     .progress = tick,
				     .progress_ctx = &sv,
			     },
			     sv.session, NULL, &sv.rec);
	/* listening before capabilities go: a port below 1024 needs them */
	if (!err)
		err = start_http(&sv, &http);
	if (!err)
		err = recorder__start(sv.rec);
	if (err)
		goto cleanup;
	clock_gettime(CLOCK_MONOTONIC, &sv.started);
	install_signal_handlers();
	if (!o->quiet)
		fprintf(stderr, "hprof serve: sampling at %u Hz, serving http://%s/ (port %u)\n",
			o->frequency, o->listen, serve_http__port(http));
	err = recorder__run(sv.rec, &exiting);
	/* windows cut and served, the --every file in progress written, then the threads */
	if (serve_windows__stop(sv.windows, monotonic_ns()) && !err)
		err = -EIO;
	stop_metrics(&sv.metrics);
	serve_http__stop(http);
	http = NULL;
	if (!err && sv.tick_err)
		err = sv.tick_err;
	/* a fetch under way ends, and is told in the summary */
	fetch_background__stop(sv.fetcher);
	if (sv.fetcher)
		fetch_background__take(sv.fetcher, session__modules(sv.session), &sv.debug_files);
	fetch_background__free(sv.fetcher);
	sv.fetcher = NULL;
	if (!o->quiet)
		summary__print_debug_files(&sv.debug_files, false, stderr);
cleanup:
	stop_metrics(&sv.metrics);
	serve_http__stop(http);
	recorder__free(sv.rec);
	fetch_background__free(sv.fetcher);
	fetch_debug__free_report(&sv.debug_files);
	serve_windows__free(sv.windows);
	session__free(sv.session);
	free(sv.metrics.text);
	pthread_cond_destroy(&sv.metrics.made_cond);
	pthread_mutex_destroy(&sv.metrics.lock);
	return err;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_opts o = { 0 };
	int err = parse_args(argc, argv, &o);

	if (err) {
		free(o.pids);
		return err > 0 ? 0 : 2;
	}
	err = run(&o);
	free(o.pids);
	return err ? 1 : 0;
}
