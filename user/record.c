/* `hprof [options] [-- COMMAND ARGS]`: samples every CPU with the BPF program, turns the
 * samples into stacks and writes folded stacks and/or a flamegraph. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/atomic_file.h"
#include "capture/format.h"
#include "cli/commands.h"
#include "flamegraph.h"
#include "hprof.skel.h"
#include "output/pprof.h"
#include "output/summary.h"
#include "record.h"
#include "record/capabilities.h"
#include "record/reorder.h"
#include "record/sideband.h"
#include "sample.h"
#include "session.h"

#define DEFAULT_FREQUENCY 99
#define POLL_TIMEOUT_MS 100
/* A record is written a little after its timestamp is taken (the BPF program stamps the
 * sample before it copies the stack): records are put in order only once they are older
 * than the last drain of every buffer by this much. */
#define REORDER_SLACK_NS (10 * 1000 * 1000ull)

static volatile sig_atomic_t exiting;
static volatile sig_atomic_t exit_signal;

struct recorder {
	struct record_opts opts;
	struct hprof_bpf *skel;
	struct bpf_link **links;
	int nr_links;
	struct bpf_link *fork_link;
	struct bpf_link *exit_link;
	struct ring_buffer *rb;
	struct sideband *sideband;
	struct reorder *queue;
	struct session *session;
	pid_t child;
	int child_status;
	bool child_exited;
	double duration_s;
	uint64_t kernel_counters[KC_NR];
	struct atomic_file *raw;
	int raw_err;
};

static void on_signal(int sig)
{
	exiting = 1;
	exit_signal = sig;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || !getenv("HPROF_DEBUG_LIBBPF"))
		return 0;
	return vfprintf(stderr, fmt, args);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Says which of the capabilities BPF profiling needs are missing; 0 when none are. */
static int check_capabilities(void)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	bool sys_admin, bpf, perfmon;

	if (syscall(SYS_capget, &header, data) != 0)
		return 0; /* cannot tell: let the load report what fails */
#define HAS_CAP(c) (data[(c) / 32].effective & (1u << ((c) % 32)))
	sys_admin = HAS_CAP(CAP_SYS_ADMIN);
	bpf = sys_admin || HAS_CAP(CAP_BPF);
	perfmon = sys_admin || HAS_CAP(CAP_PERFMON);
#undef HAS_CAP
	if (bpf && perfmon)
		return 0;
	fprintf(stderr, "hprof: missing capability %s%s%s (run as root, or grant CAP_BPF and CAP_PERFMON)\n",
		bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "", perfmon ? "" : "CAP_PERFMON");
	return -EPERM;
}

static int open_cpu_clock_event(int cpu, unsigned frequency)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = frequency,
	};

	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* One cpu-clock event per online CPU, each running the sampling program. */
static int attach_perf_events(struct recorder *r)
{
	int nr_cpus = libbpf_num_possible_cpus();

	if (nr_cpus <= 0)
		return nr_cpus ? nr_cpus : -ENODEV;
	r->links = calloc(nr_cpus, sizeof(*r->links));
	if (!r->links)
		return -ENOMEM;
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		struct bpf_link *link;
		int fd = open_cpu_clock_event(cpu, r->opts.frequency);
		int err;

		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline CPU */
			err = -errno;
			fprintf(stderr, "hprof: perf_event_open(cpu-clock) failed on CPU %d: %s\n",
				cpu, strerror(errno));
			return err;
		}
		link = bpf_program__attach_perf_event(r->skel->progs.on_cpu_sample, fd);
		if (!link) {
			err = -errno;
			close(fd);
			fprintf(stderr, "hprof: cannot attach the sampler to CPU %d: %s\n", cpu,
				strerror(-err));
			return err;
		}
		r->links[r->nr_links++] = link;
	}
	return r->nr_links ? 0 : -ENODEV;
}

static int add_pid_filter(struct recorder *r, pid_t pid)
{
	__u32 key = (__u32)pid;
	__u8 one = 1;

	if (bpf_map__update_elem(r->skel->maps.pids, &key, sizeof(key), &one, sizeof(one), 0)) {
		fprintf(stderr, "hprof: cannot add pid %d to the filter: %s\n", pid,
			strerror(errno));
		return -errno;
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Ring buffer callback: samples wait in the queue for the mapping events before them. */
static int queue_sample(void *ctx, void *data, size_t size)
{
	struct recorder *r = ctx;
	const struct hprof_sample *sample = data;
	/* A record too short to hold its time is counted as malformed when it is handled. */
	uint64_t time = size >= sizeof(*sample) ? sample->timestamp_ns : 0;

	return reorder__push(r->queue, time, REORDER_SAMPLE, data, size);
}

/* Side-band callback: the event and its path, as one queued record. */
static int queue_map_event(void *ctx, const struct map_event *e, const char *path)
{
	struct recorder *r = ctx;
	size_t path_len = strnlen(path, MAP_EVENT_PATH_MAX - 1);
	uint8_t record[sizeof(*e) + MAP_EVENT_PATH_MAX];

	session__pin_mapped_file(r->session, e, path);
	memcpy(record, e, sizeof(*e));
	memcpy(record + sizeof(*e), path, path_len);
	record[sizeof(*e) + path_len] = '\0';
	return reorder__push(r->queue, e->time_ns, REORDER_EVENT, record, sizeof(*e) + path_len + 1);
}

/* Records leave the queue in time order: handled, then written to the capture (after
 * handling, so that maps read for a record are written before it). */
static int handle_record(void *ctx, enum reorder_kind kind, const void *data, size_t len)
{
	struct recorder *r = ctx;
	int err;

	if (kind == REORDER_SAMPLE)
		err = session__handle_sample(r->session, data, len);
	else
		err = session__handle_map_event(r->session, data,
						(const char *)data + sizeof(struct map_event));
	if (!err && r->raw && !r->raw_err)
		r->raw_err = capture__write_record(atomic_file__stream(r->raw),
						   kind == REORDER_SAMPLE ? CAPTURE_SAMPLE
									  : CAPTURE_MAP_EVENT,
						   data, len, NULL, 0);
	return err;
}

/* Reads every buffer, then handles what is now certainly in order (everything when
 * final). Returns 0 or -errno. */
static int drain_and_handle(struct recorder *r, bool final)
{
	uint64_t drained_at = now_ns();
	int err;

	err = ring_buffer__consume(r->rb);
	if (err >= 0)
		err = sideband__drain(r->sideband, queue_map_event, r);
	if (err < 0)
		return err;
	return reorder__flush(r->queue, final ? UINT64_MAX : drained_at - REORDER_SLACK_NS,
			      handle_record, r);
}

static void write_raw_maps(void *ctx, uint32_t pid, const char *text, size_t len)
{
	struct recorder *r = ctx;
	uint32_t header[2] = { pid, 0 };

	if (!r->raw_err)
		r->raw_err = capture__write_record(atomic_file__stream(r->raw), CAPTURE_MAPS, header,
						   sizeof(header), text, len);
}

static int open_raw(struct recorder *r)
{
	int err = atomic_file__open(r->opts.raw_path, 0600, &r->raw);

	if (!err)
		err = capture__write_header(atomic_file__stream(r->raw));
	if (err) {
		fprintf(stderr, "hprof: cannot write %s: %s\n", r->opts.raw_path, strerror(-err));
		return err;
	}
	session__set_maps_hook(r->session, write_raw_maps, r);
	return 0;
}

/* Build-ids of every binary the samples touched, so a report can tell when a file
 * changed since the capture; then the capture's settings. */
static int finish_raw(struct recorder *r)
{
	struct module_registry *reg = session__modules(r->session);
	FILE *f = atomic_file__stream(r->raw);
	struct capture_info info = {
		.frequency = r->opts.frequency,
		.stack_size = r->opts.no_dwarf ? 0 : r->opts.stack_size,
		.duration_ns = (uint64_t)(r->duration_s * 1e9),
	};
	int err = r->raw_err;

	for (uint32_t i = 0; !err && i < module_registry__count(reg); i++) {
		struct module *mod = module_registry__by_id(reg, MODULE_FIRST_FILE + i);
		uint8_t id[4 + BUILD_ID_MAX] = { 0 };
		const uint8_t *build_id;
		uint32_t len;

		if (!mod->syms || !(len = elf_symbols__build_id(mod->syms, &build_id)))
			continue;
		memcpy(id, &len, 4);
		memcpy(id + 4, build_id, len);
		err = capture__write_record(f, CAPTURE_BUILD_ID, id, sizeof(id), mod->path,
					    strlen(mod->path) + 1);
	}
	if (!err)
		err = capture__write_record(f, CAPTURE_INFO, &info, sizeof(info), NULL, 0);
	if (!err)
		err = atomic_file__commit(r->raw);
	else
		atomic_file__abort(r->raw);
	r->raw = NULL;
	if (err)
		fprintf(stderr, "hprof: cannot write %s: %s\n", r->opts.raw_path, strerror(-err));
	return err;
}

/* Tells the kernel where a thread's stack ends, so that its later samples copy only the
 * live stack (base 0: forget it, the copy falls back to the end of the stack). */
static void learn_stack_base(void *ctx, uint32_t tid, uint64_t base, uint64_t fp_tail,
			     uint64_t fp_tail_ip)
{
	struct recorder *r = ctx;
	struct hprof_thread_stack value = { .base = base, .fp_tail = fp_tail,
					    .fp_tail_ip = fp_tail_ip };

	if (base || fp_tail)
		bpf_map__update_elem(r->skel->maps.thread_stacks, &tid, sizeof(tid), &value,
				     sizeof(value), BPF_ANY);
	else
		bpf_map__delete_elem(r->skel->maps.thread_stacks, &tid, sizeof(tid), 0);
}

static int load_bpf(struct recorder *r)
{
	int err;

	libbpf_set_print(libbpf_print);
	r->skel = hprof_bpf__open();
	if (!r->skel) {
		err = -errno;
		fprintf(stderr, "hprof: cannot open the BPF program: %s\n", strerror(errno));
		return err;
	}
	r->skel->rodata->filter_pids = r->opts.nr_pids > 0 || r->opts.command;
	r->skel->rodata->follow_forks = r->opts.command != NULL;
	r->skel->rodata->stack_copy_size = r->opts.no_dwarf ? 0 : r->opts.stack_size;
	bpf_map__set_max_entries(r->skel->maps.scratch_buffers, libbpf_num_possible_cpus());
	if (r->opts.ring_size)
		bpf_map__set_max_entries(r->skel->maps.samples, r->opts.ring_size);
	/* A quarter full wakes the reader; below that it drains every poll timeout. */
	r->skel->rodata->ringbuf_wakeup_bytes = bpf_map__max_entries(r->skel->maps.samples) / 4;
	err = hprof_bpf__load(r->skel);
	if (err) {
		fprintf(stderr, "hprof: cannot load the BPF program: %s (is BPF enabled in this kernel?)\n",
			strerror(-err));
		return err;
	}
	r->exit_link = bpf_program__attach(r->skel->progs.on_exit);
	if (!r->exit_link) {
		err = -errno;
		fprintf(stderr, "hprof: cannot attach the exit tracepoint: %s\n", strerror(errno));
		return err;
	}
	if (!r->opts.no_dwarf)
		session__set_stack_base_hook(r->session, learn_stack_base, r);
	if (r->opts.command) {
		r->fork_link = bpf_program__attach(r->skel->progs.on_fork);
		if (!r->fork_link) {
			err = -errno;
			fprintf(stderr, "hprof: cannot attach the fork tracepoint: %s\n",
				strerror(errno));
			return err;
		}
	}
	for (size_t i = 0; i < r->opts.nr_pids; i++) {
		err = add_pid_filter(r, r->opts.pids[i]);
		if (err)
			return err;
	}
	r->rb = ring_buffer__new(bpf_map__fd(r->skel->maps.samples), queue_sample, r, NULL);
	if (!r->rb) {
		err = -errno;
		fprintf(stderr, "hprof: cannot open the ring buffer: %s\n", strerror(errno));
		return err;
	}
	return 0;
}

/* The kernel's mapping events, open before the command execs and before any sample. */
static int open_sideband(struct recorder *r)
{
	char msg[256] = "";
	int err;

	r->queue = reorder__new();
	if (!r->queue)
		return -ENOMEM;
	err = sideband__open(&r->sideband, msg, sizeof(msg));
	if (err)
		fprintf(stderr, "hprof: %s\n", msg);
	return err;
}

/* Forks the command, held on a pipe until sampling is set up so that its first
 * instructions are profiled too. exec failures come back over a close-on-exec pipe. */
static int spawn_command(struct recorder *r, int *go_fd, int *exec_err_fd)
{
	int go[2], exec_err[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) || pipe2(exec_err, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char byte;
		int e;

		close(go[1]);
		close(exec_err[0]);
		if (read(go[0], &byte, 1) != 1)
			_exit(127); /* hprof failed to start sampling */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(r->opts.command[0], r->opts.command);
		e = errno;
		if (write(exec_err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(exec_err[1]);
	r->child = pid;
	*go_fd = go[1];
	*exec_err_fd = exec_err[0];
	return 0;
}

/* Lets the held command run; returns 0 once it has exec'd, or -errno. */
static int release_command(struct recorder *r, int go_fd, int exec_err_fd)
{
	int e = 0;
	ssize_t n;

	if (write(go_fd, "g", 1) != 1)
		return -errno;
	close(go_fd);
	n = read(exec_err_fd, &e, sizeof(e));
	close(exec_err_fd);
	if (n == sizeof(e)) {
		fprintf(stderr, "hprof: cannot run '%s': %s\n", r->opts.command[0], strerror(e));
		waitpid(r->child, &r->child_status, 0);
		r->child_exited = true;
		return -e;
	}
	return 0;
}

static bool child_has_exited(struct recorder *r)
{
	if (!r->child || r->child_exited)
		return r->child_exited;
	if (waitpid(r->child, &r->child_status, WNOHANG) == r->child)
		r->child_exited = true;
	return r->child_exited;
}

static bool all_pids_gone(const struct recorder *r)
{
	if (r->opts.nr_pids == 0 || r->opts.command)
		return false;
	for (size_t i = 0; i < r->opts.nr_pids; i++) {
		if (kill(r->opts.pids[i], 0) == 0 || errno != ESRCH)
			return false;
	}
	return true;
}

static int sample_until_done(struct recorder *r)
{
	double start = now_s(), deadline = start + r->opts.time_ms / 1000.0;
	int err = 0;

	while (!exiting) {
		err = ring_buffer__poll(r->rb, POLL_TIMEOUT_MS);
		if (err == -EINTR) {
			err = 0;
			continue;
		}
		if (err >= 0)
			err = drain_and_handle(r, false);
		if (err < 0) {
			fprintf(stderr, "hprof: reading samples failed: %s\n", strerror(-err));
			break;
		}
		err = 0;
		if (r->opts.time_ms && now_s() >= deadline)
			break;
		if (child_has_exited(r) || all_pids_gone(r))
			break;
	}
	/* Stop the events, then take what is still queued. */
	for (int i = 0; i < r->nr_links; i++) {
		bpf_link__destroy(r->links[i]);
		r->links[i] = NULL;
	}
	if (!err && drain_and_handle(r, true) < 0)
		err = -EIO;
	r->duration_s = now_s() - start;
	return err;
}

static void read_kernel_counters(struct recorder *r)
{
	int nr_cpus = libbpf_num_possible_cpus();
	__u64 *values = calloc(nr_cpus, sizeof(*values));

	if (!values)
		return;
	for (__u32 k = 0; k < KC_NR; k++) {
		if (bpf_map__lookup_elem(r->skel->maps.counters, &k, sizeof(k), values,
					 sizeof(*values) * nr_cpus, 0))
			continue;
		for (int cpu = 0; cpu < nr_cpus; cpu++)
			r->kernel_counters[k] += values[cpu];
	}
	free(values);
}

static double percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0.0;
}

/* Only when some process with JIT code had a map file. */
static void print_perf_map_summary(struct session *session)
{
	struct perf_map_stats pm;

	module_registry__perf_map_stats(session__modules(session), &pm);
	if (!pm.read && !pm.refused)
		return;
	fprintf(stderr, "hprof: perf map files: %" PRIu64 " entries, %" PRIu64
			" bad lines skipped; %" PRIu64 " files read, %" PRIu64
			" refused (owner or file type)",
		pm.entries, pm.bad_lines, pm.read, pm.refused);
	if (pm.cut_short)
		fprintf(stderr, ", %" PRIu64 " cut short at %u MiB or %u entries", pm.cut_short,
			PERF_MAP_MAX_BYTES >> 20, PERF_MAP_MAX_ENTRIES);
	fprintf(stderr, "\n");
}

void print_summary(struct session *session, double duration_s, unsigned frequency, bool no_dwarf,
		   const uint64_t *kernel_counters, uint64_t sideband_lost)
{
	static const uint64_t no_counters[KC_NR];
	const struct session_stats *st = session__stats(session);
	const struct process_table_stats *ps = session__process_stats(session);
	const uint64_t *kc = kernel_counters ? kernel_counters : no_counters;
	uint64_t user_samples = summary__user_samples(st);
	uint64_t lost = summary__lost_samples(st, kc);

	fprintf(stderr, "hprof: %.2f s, %" PRIu64 " samples at %u Hz, %" PRIu64
			" processes, %" PRIu64 " distinct stacks\n",
		duration_s, st->samples, frequency, st->processes,
		profile__nr_stacks(session__profile(session)));
	fprintf(stderr, "hprof: FP-complete: %.1f%% of user stacks (%" PRIu64 " of %" PRIu64
			"); %" PRIu64 " kernel-only samples (%" PRIu64 " in execve or exit)\n",
		percent(st->fp_complete, user_samples), st->fp_complete, user_samples,
		st->kernel_only, kc[KC_NO_USER_CONTEXT]);
	fprintf(stderr, "hprof: user stacks by method:");
	for (int m = 0; m < METHOD_COUNT; m++)
		fprintf(stderr, " %s %.1f%%", session__method_name(m),
			percent(st->methods[m], user_samples));
	fprintf(stderr, " (FP chains finished from their end: %" PRIu64 " by the DWARF walk, %" PRIu64
			" with the thread's learned frames)\n",
		st->fp_tails, st->fp_tails_learned);
	if (st->methods[METHOD_TRUNCATED]) {
		fprintf(stderr, "hprof: truncated stacks:");
		for (unsigned t = 0; t < TRUNCATED_COUNT; t++) {
			if (st->truncated[t])
				fprintf(stderr, " %s %" PRIu64 ";", session__truncated_root(t),
					st->truncated[t]);
		}
		fprintf(stderr, "\n");
	}
	fprintf(stderr, "hprof: lost samples: %" PRIu64 " (ring buffer full %" PRIu64
			", no scratch buffer %" PRIu64 ", malformed %" PRIu64 "); not recorded: idle %" PRIu64
			", other processes %" PRIu64 "\n",
		lost, kc[KC_DROP_RINGBUF_FULL], kc[KC_DROP_NO_SCRATCH], st->malformed, kc[KC_IDLE],
		kc[KC_FILTERED]);
	fprintf(stderr, "hprof: lost frames: %" PRIu64 " FP chains ended on unreadable memory, %" PRIu64
			" frames outside any mapping, %" PRIu64 " samples whose process maps were gone\n",
		kc[KC_FP_READ_FAILED], st->frames_unmapped, st->no_maps);
	fprintf(stderr, "hprof: mappings: %" PRIu64 " mmap, %" PRIu64 " exec, %" PRIu64 " fork, %" PRIu64
			" exit events; %" PRIu64 " processes read from /proc; %" PRIu64
			" mapping events lost\n",
		ps->events[MAP_EVENT_MMAP], ps->events[MAP_EVENT_EXEC], ps->events[MAP_EVENT_FORK],
		ps->events[MAP_EVENT_EXIT], ps->seeded_from_proc, sideband_lost);
	print_perf_map_summary(session);
	fprintf(stderr, "hprof: %.0f bytes received per sample", st->samples ? (double)st->bytes / st->samples : 0.0);
	if (no_dwarf)
		fprintf(stderr, " (frame pointers only, no stack copies)\n");
	else
		fprintf(stderr, " (stack copies: %" PRIu64 " to the thread's learned base, %" PRIu64
				" to the end of the stack, %" PRIu64 " of the leaf only (the FP chain sufficed), %" PRIu64
				" cut short by a failed read, %" PRIu64
				" failed; windows at the FP chain's end: %" PRIu64 " sent, %" PRIu64
				" unreadable)\n",
			kc[KC_COPY_LEARNED], kc[KC_COPY_DEFAULT], kc[KC_COPY_FP], kc[KC_STACK_COPY_CLAMPED],
			kc[KC_STACK_COPY_FAILED], st->tail_windows, kc[KC_FP_TAIL_FAILED]);
}

static int write_folded_file(struct session *s, const char *path)
{
	struct atomic_file *f;
	int err;

	if (strcmp(path, "-") == 0) {
		err = profile__write_folded(session__profile(s), stdout);
		if (!err && fflush(stdout))
			err = -errno;
		/* the reader has all it wanted (hprof | head) */
		return err == -EPIPE || (err && errno == EPIPE) ? 0 : err;
	}
	err = atomic_file__open(path, 0644, &f);
	if (err)
		return err;
	err = profile__write_folded(session__profile(s), atomic_file__stream(f));
	if (err) {
		atomic_file__abort(f);
		return err;
	}
	return atomic_file__commit(f);
}

static int write_svg_file(struct session *s, const struct output_opts *opts)
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
	err = profile__write_folded(session__profile(s), mem);
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

int write_outputs(struct session *s, const struct output_opts *opts)
{
	int err;

	if (opts->folded_path) {
		err = write_folded_file(s, opts->folded_path);
		if (err) {
			fprintf(stderr, "hprof: cannot write %s: %s\n", opts->folded_path,
				strerror(-err));
			return err;
		}
	}
	if (opts->svg_path) {
		err = write_svg_file(s, opts);
		if (err) {
			fprintf(stderr, "hprof: cannot write %s: %s\n", opts->svg_path,
				strerror(-err));
			return err;
		}
	}
	if (opts->pprof_path) {
		struct pprof_opts po = { opts->frequency, opts->duration_ns };

		err = pprof__write_file(opts->pprof_path, session__profile(s), session__modules(s), &po);
		if (err) {
			fprintf(stderr, "hprof: cannot write %s: %s\n", opts->pprof_path,
				strerror(-err));
			return err;
		}
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: hprof [OPTIONS] [-- COMMAND [ARGS...]]\n"
		"       hprof report CAPTURE [--svg FILE] [--folded FILE] [--pprof FILE] [--json FILE]\n"
		"       hprof diff BASE NEW [--threshold PCT] [--svg FILE] [--json FILE]\n"
		"       hprof stack PID | hprof table FILE | hprof flamegraph IN.folded OUT.svg\n"
		"Samples user and kernel stacks on every CPU and writes a flamegraph.\n"
		"\n"
		"  --svg FILE            write an interactive flamegraph\n"
		"  --folded FILE         write folded stacks (- for stdout; the default when\n"
		"                        no output is named)\n"
		"  --pprof FILE          write a gzip-compressed pprof profile (go tool pprof)\n"
		"  --json FILE           write the end-of-run summary and top functions as JSON\n"
		"  --time MS             sample for MS milliseconds (default: until Ctrl-C,\n"
		"                        or until COMMAND or every --pid exits)\n"
		"  -F, --frequency HZ    samples per second per CPU (default %d)\n"
		"  -p, --pid PID         profile only this process (repeatable)\n"
		"  --no-dwarf            frame pointers only: copy no user stack\n"
		"  --stack-size BYTES    user stack bytes copied per sample (default %d,\n"
		"                        at most %d)\n"
		"  --raw FILE            also save the raw samples (mode 0600: stack bytes\n"
		"                        can hold secrets) for hprof report\n"
		"  --ring-size BYTES     the kernel's sample buffer: a power of two from 4096\n"
		"                        to 1 GiB (default 16 MiB)\n"
		"  -h, --help            show this help\n"
		"  -V, --version         show the version\n"
		"\n"
		"With -- COMMAND, profiles COMMAND and its children until it exits and exits\n"
		"with its status.\n",
		DEFAULT_FREQUENCY, HPROF_DEFAULT_STACK_COPY, HPROF_MAX_STACK_COPY);
}

/* Parses a whole decimal number in [min, max]; false on anything else. */
static bool parse_number(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
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
       OPT_JSON, OPT_RING_SIZE };

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "hprof: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see hprof --help)\n");
	return -EINVAL;
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
	case OPT_TIME:
		if (!parse_number(arg, 1, 365LL * 24 * 3600 * 1000, &v))
			return usage_error("--time takes a positive number of milliseconds, got '%s'", arg);
		o->time_ms = v;
		return 0;
	case 'F':
		max_rate = max_sample_rate();
		if (!parse_number(arg, 1, max_rate, &v)) {
			fprintf(stderr, "hprof: --frequency must be between 1 and %lld "
					"(kernel.perf_event_max_sample_rate), got '%s'\n", max_rate, arg);
			return -EINVAL;
		}
		o->frequency = v;
		return 0;
	case 'p': {
		pid_t *pids = realloc(o->pids, (o->nr_pids + 1) * sizeof(*pids));

		if (!parse_number(arg, 1, INT32_MAX, &v))
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
	case OPT_RAW:
		o->raw_path = arg;
		return 0;
	case OPT_RING_SIZE:
		if (!parse_number(arg, 4096, 1 << 30, &v) || (v & (v - 1)))
			return usage_error("--ring-size takes a power of two from 4096 to 1073741824, got '%s'",
					   arg);
		o->ring_size = (unsigned)v;
		return 0;
	case OPT_STACK_SIZE:
		if (!parse_number(arg, 8, HPROF_MAX_STACK_COPY, &v) || v % 8)
			return usage_error("--stack-size takes a multiple of 8 from 8 to 65536, got '%s'",
					   arg);
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
		{ "raw", required_argument, NULL, OPT_RAW },
		{ "pprof", required_argument, NULL, OPT_PPROF },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "ring-size", required_argument, NULL, OPT_RING_SIZE },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int opt, err;

	o->frequency = DEFAULT_FREQUENCY;
	o->stack_size = HPROF_DEFAULT_STACK_COPY;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+F:p:hV", long_opts, NULL)) != -1) {
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
	return check_capabilities();
}

static void recorder__destroy(struct recorder *r)
{
	for (int i = 0; i < r->nr_links; i++)
		bpf_link__destroy(r->links[i]);
	free(r->links);
	bpf_link__destroy(r->fork_link);
	bpf_link__destroy(r->exit_link);
	ring_buffer__free(r->rb);
	sideband__free(r->sideband);
	reorder__free(r->queue);
	hprof_bpf__destroy(r->skel);
	session__free(r->session);
	free(r->opts.pids);
}

static void install_signal_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* a reader that stops early (hprof | head) is an EPIPE on stdout, not a kill */
	signal(SIGPIPE, SIG_IGN);
}

/* The command's exit status as a shell reports it. */
static int command_status(const struct recorder *r)
{
	if (WIFEXITED(r->child_status))
		return WEXITSTATUS(r->child_status);
	if (WIFSIGNALED(r->child_status))
		return 128 + WTERMSIG(r->child_status);
	return 1;
}

static void set_subtitle(struct recorder *r, char *buf, size_t len)
{
	const struct session_stats *st = session__stats(r->session);

	snprintf(buf, len, "%" PRIu64 " samples, %u Hz, %.1f s%s", st->samples, r->opts.frequency,
		 r->duration_s, r->opts.no_dwarf ? ", frame pointers only" : "");
	r->opts.out.subtitle = buf;
}

/* When the command outlives sampling (--time), it runs on; hprof waits for it, forwarding
 * Ctrl-C, SIGTERM and SIGHUP, and exits with its status. */
static void wait_for_command(struct recorder *r)
{
	/* a signal that stopped sampling was meant for the command too */
	if (exit_signal) {
		kill(r->child, exit_signal);
		exit_signal = 0;
	}
	while (!r->child_exited) {
		if (waitpid(r->child, &r->child_status, 0) == r->child) {
			r->child_exited = true;
		} else if (errno == EINTR && exit_signal) {
			kill(r->child, exit_signal);
			exit_signal = 0;
		} else if (errno != EINTR) {
			break;
		}
	}
}

int cmd_record(int argc, char **argv)
{
	struct recorder r = { 0 };
	int go_fd = -1, exec_err_fd = -1, err;
	char subtitle[128];

	err = parse_args(argc, argv, &r.opts);
	if (err) {
		free(r.opts.pids);
		return err > 0 ? 0 : 2;
	}
	if (!r.opts.out.svg_path && !r.opts.out.folded_path && !r.opts.raw_path &&
	    !r.opts.out.pprof_path && !r.opts.out.json_path)
		r.opts.out.folded_path = "-";
	r.opts.out.title = "hprof CPU flame graph";
	err = validate(&r.opts);
	if (err)
		goto cleanup;
	err = session__new(!r.opts.no_dwarf, &r.session);
	if (!err && r.opts.raw_path)
		err = open_raw(&r);
	if (err)
		goto cleanup;
	if (r.opts.command) {
		err = spawn_command(&r, &go_fd, &exec_err_fd);
		if (err) {
			fprintf(stderr, "hprof: cannot start '%s': %s\n", r.opts.command[0],
				strerror(-err));
			goto cleanup;
		}
		/* The child was forked before the mapping events were open, and its samples
		 * before exec run hprof's code: read its maps while it is held, not after. */
		session__track_process(r.session, r.child);
	}
	err = load_bpf(&r);
	if (!err)
		err = open_sideband(&r);
	if (!err && r.child)
		err = add_pid_filter(&r, r.child);
	if (!err)
		err = attach_perf_events(&r);
	if (!err)
		err = capabilities__drop_unneeded(bpf_map__fd(r.skel->maps.pids));
	if (err)
		goto cleanup;
	install_signal_handlers();
	if (r.child) {
		err = release_command(&r, go_fd, exec_err_fd);
		go_fd = exec_err_fd = -1;
		if (err)
			goto cleanup;
	}
	err = sample_until_done(&r);
	if (err)
		goto cleanup;
	read_kernel_counters(&r);
	set_subtitle(&r, subtitle, sizeof(subtitle));
	r.opts.out.frequency = r.opts.frequency;
	r.opts.out.duration_ns = (uint64_t)(r.duration_s * 1e9);
	err = write_outputs(r.session, &r.opts.out);
	if (!err && r.raw)
		err = finish_raw(&r);
	print_summary(r.session, r.duration_s, r.opts.frequency, r.opts.no_dwarf,
		      r.kernel_counters, sideband__lost(r.sideband));
	if (!err && r.opts.out.json_path)
		err = summary__write_json_file(r.opts.out.json_path, &(struct run_summary){
			r.session, r.duration_s, r.opts.frequency, r.opts.no_dwarf,
			r.kernel_counters, sideband__lost(r.sideband) });
	if (!err) {
		if (r.opts.out.svg_path)
			fprintf(stderr, "hprof: wrote flamegraph to %s\n", r.opts.out.svg_path);
		if (r.opts.out.folded_path && strcmp(r.opts.out.folded_path, "-") != 0)
			fprintf(stderr, "hprof: wrote folded stacks to %s\n", r.opts.out.folded_path);
		if (r.opts.raw_path)
			fprintf(stderr, "hprof: wrote raw samples to %s\n", r.opts.raw_path);
		if (r.opts.out.pprof_path)
			fprintf(stderr, "hprof: wrote pprof profile to %s\n", r.opts.out.pprof_path);
		if (r.opts.out.json_path)
			fprintf(stderr, "hprof: wrote JSON summary to %s\n", r.opts.out.json_path);
	}
cleanup:
	if (go_fd >= 0)
		close(go_fd); /* the held command sees EOF and exits 127 */
	if (exec_err_fd >= 0)
		close(exec_err_fd);
	if (r.child && !r.child_exited)
		wait_for_command(&r);
	atomic_file__abort(r.raw);
	recorder__destroy(&r);
	if (err)
		return 1;
	return r.child ? command_status(&r) : 0;
}
