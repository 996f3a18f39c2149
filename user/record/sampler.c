#include "record/sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hprof.skel.h"

struct sampler {
	struct hprof_bpf *skel;
	struct bpf_link **links; /* one per CPU, NULL once stopped */
	int nr_links;
	struct bpf_link *fork_link;
	struct bpf_link *free_link;
	struct ring_buffer *rb;
	unsigned frequency;
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || !getenv("HPROF_DEBUG_LIBBPF"))
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* HPROF_DEBUG_LIBBPF=stats: the verifier's statistics of the sample handler (instructions
 * it processed, of its limit of a million): how much room a change to the BPF program left.
 * Only these are asked for, so that a program that loads leaves no long log; a failure's
 * whole log is HPROF_DEBUG_LIBBPF=1's (libbpf asks for it again). */
static char verifier_log[4096];

static void verifier_stats_on(struct bpf_program *prog)
{
	bpf_program__set_log_buf(prog, verifier_log, sizeof(verifier_log));
	bpf_program__set_log_level(prog, 4); /* BPF_LOG_STATS */
}

static void print_verifier_stats(const struct bpf_program *prog)
{
	const char *line = strstr(verifier_log, "processed ");

	if (line)
		fprintf(stderr, "hprof: verifier, %s: %.*s\n", bpf_program__name(prog),
			(int)strcspn(line, "\n"), line);
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

static struct bpf_link *attach_tracepoint(struct bpf_program *prog, const char *what)
{
	struct bpf_link *link = bpf_program__attach(prog);

	if (!link)
		fprintf(stderr, "hprof: cannot attach the %s tracepoint: %s\n", what,
			strerror(errno));
	return link;
}

/* Deltas hash chunks with a secret of this run's: a stack crafted to collide with another's
 * chunks would have to know it. */
static int set_delta_copies(struct sampler *s, const struct sampler_opts *o)
{
	uint64_t secret;

	if (!o->stack_deltas || !o->stack_size)
		return 0;
	if (getrandom(&secret, sizeof(secret), 0) != sizeof(secret)) {
		int err = errno ? -errno : -EIO;

		fprintf(stderr, "hprof: cannot get random bytes: %s\n", strerror(-err));
		return err;
	}
	s->skel->rodata->delta_copies = true;
	s->skel->rodata->delta_verify = o->delta_verify;
	s->skel->rodata->delta_secret = secret;
	return 0;
}

uint64_t sampler__max_record_size(unsigned stack_size, bool delta_verify)
{
	uint64_t copy = stack_size < HPROF_MAX_STACK_COPY ? stack_size : HPROF_MAX_STACK_COPY;
	uint64_t size = sizeof(struct hprof_sample) +
			(HPROF_MAX_FP_DEPTH + HPROF_MAX_KERNEL_DEPTH) * 8;

	/* No copy (--no-dwarf) sends no stack and no FP tail. A copy sent whole as a delta
	 * carries the delta's header and map besides; a verified one the copy twice. */
	if (copy)
		size += sizeof(struct hprof_stack_delta) + HPROF_DELTA_MAP_WORDS * 8 +
			(delta_verify ? 2 : 1) * copy + HPROF_FP_TAIL_WINDOW;
	/* the ring buffer's 8-byte header, then the record padded to 8 bytes */
	return BPF_RINGBUF_HDR_SZ + ((size + 7) & ~7ull);
}

/* The default ring buffer. While hprof reads, the BPF program adds records until the ring is
 * a quarter full, which wakes the reader (or the 100-ms poll timeout comes first); the other
 * three quarters take what arrives while the reader wakes and drains. A drain also unwinds
 * and symbolizes what it read, and a first sample in a large binary has its tables built
 * first (libLLVM: 40-170 ms, bench/README.md). Sized for the worst traffic (every CPU busy,
 * every sample the largest record), the ring holds SAMPLER_RING_WORST_MS of it: the reader
 * is woken after a quarter of that and has the rest to drain. Real copies stop at the end of
 * the stack or at the thread's learned base and are mostly sent as deltas (0.3-15 KiB a
 * sample against the ~132 KiB of the default 128-KiB copy's bound), so the same ring holds
 * ~0.2-10 s of ordinary traffic, past the slowest drain; whole copies of 57 KiB from both
 * CPUs at 999 Hz (deep recursion, deltas off) lost none in a 2-MiB ring. The old fixed
 * 16 MiB held 240 ms of the worst case of 64-KiB copies on 2 CPUs at 499 Hz (and cost
 * 32 MiB of RSS: libbpf maps the data pages twice, all of them up front) but 2 ms on 128
 * CPUs at 999 Hz. The floor keeps slow rates (the default -F 99, --no-dwarf, few CPUs) from
 * rings a single slow drain overflows: 2 MiB holds 80 ms of the worst case on 2 CPUs at
 * 99 Hz. The ceiling bounds the memory on large
 * hosts (twice the ring in RSS). */
unsigned sampler__default_ring_size(unsigned nr_cpus, unsigned frequency, uint64_t max_record)
{
	uint64_t want = (uint64_t)nr_cpus * frequency * max_record * SAMPLER_RING_WORST_MS / 1000;
	uint64_t size = SAMPLER_RING_MIN;

	while (size < want && size < SAMPLER_RING_MAX)
		size <<= 1;
	return (unsigned)size;
}

/* CPUs the sampler attaches to: the online ones (sampler__start skips the others). */
static unsigned sampled_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n <= 0)
		n = libbpf_num_possible_cpus();
	return n > 0 ? (unsigned)n : 1;
}

static unsigned ring_size(const struct sampler_opts *o)
{
	unsigned cpus, size;
	uint64_t record;
	const char *debug;

	if (o->ring_size)
		return o->ring_size;
	cpus = sampled_cpus();
	record = sampler__max_record_size(o->stack_size, o->stack_deltas && o->delta_verify);
	size = sampler__default_ring_size(cpus, o->frequency, record);
	debug = getenv("HPROF_DEBUG");
	if (debug && strstr(debug, "memory"))
		fprintf(stderr, "hprof: ring buffer: %u KiB (%u CPUs at %u Hz, records up to %" PRIu64
				" bytes)\n", size >> 10, cpus, o->frequency, record);
	return size;
}

static int load(struct sampler *s, const struct sampler_opts *o)
{
	const char *debug = getenv("HPROF_DEBUG_LIBBPF");
	bool stats = debug && strcmp(debug, "stats") == 0;
	int err;

	libbpf_set_print(libbpf_print);
	s->skel = hprof_bpf__open();
	if (!s->skel) {
		err = -errno;
		fprintf(stderr, "hprof: cannot open the BPF program: %s\n", strerror(errno));
		return err;
	}
	s->skel->rodata->filter_pids = o->filter_pids;
	s->skel->rodata->follow_forks = o->follow_forks;
	s->skel->rodata->stack_copy_size = o->stack_size;
	s->skel->rodata->python_frames = o->python_frames;
	err = set_delta_copies(s, o);
	if (err)
		return err;
	bpf_map__set_max_entries(s->skel->maps.scratch_buffers, libbpf_num_possible_cpus());
	if (o->max_pids)
		bpf_map__set_max_entries(s->skel->maps.pids, o->max_pids);
	bpf_map__set_max_entries(s->skel->maps.delta_work, libbpf_num_possible_cpus());
	bpf_map__set_max_entries(s->skel->maps.samples, ring_size(o));
	/* A quarter full wakes the reader; below that it drains every poll timeout. */
	s->skel->rodata->ringbuf_wakeup_bytes = bpf_map__max_entries(s->skel->maps.samples) / 4;
	if (o->lazy_wakeups)
		s->skel->rodata->base_wakeup_every_ns = 0;
	if (stats)
		verifier_stats_on(s->skel->progs.on_cpu_sample);
	err = hprof_bpf__load(s->skel);
	if (stats)
		print_verifier_stats(s->skel->progs.on_cpu_sample);
	if (err)
		fprintf(stderr, "hprof: cannot load the BPF program: %s (is BPF enabled in this kernel?)\n",
			strerror(-err));
	return err;
}

int sampler__open(const struct sampler_opts *opts, sampler_record_fn fn, void *ctx,
		  struct sampler **out)
{
	struct sampler *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->frequency = opts->frequency;
	err = load(s, opts);
	if (err)
		goto fail;
	if (opts->follow_forks)
		s->fork_link = attach_tracepoint(s->skel->progs.on_fork, "fork");
	if (opts->filter_pids && (s->fork_link || !opts->follow_forks))
		s->free_link = attach_tracepoint(s->skel->progs.on_free, "process free");
	if ((opts->follow_forks && !s->fork_link) || (opts->filter_pids && !s->free_link)) {
		err = -EINVAL;
		goto fail;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), fn, ctx, NULL);
	if (!s->rb) {
		err = -errno;
		fprintf(stderr, "hprof: cannot open the ring buffer: %s\n", strerror(errno));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sampler__free(s);
	return err;
}

int sampler__add_pid(struct sampler *s, pid_t pid)
{
	__u32 key = (__u32)pid;
	__u64 added = HPROF_PID_ADDED;

	if (bpf_map__update_elem(s->skel->maps.pids, &key, sizeof(key), &added, sizeof(added), 0)) {
		fprintf(stderr, "hprof: cannot add pid %d to the filter: %s\n", pid,
			strerror(errno));
		return -errno;
	}
	return 0;
}

/* One cpu-clock event per online CPU, each running the sampling program. */
int sampler__start(struct sampler *s)
{
	int nr_cpus = libbpf_num_possible_cpus();

	if (nr_cpus <= 0)
		return nr_cpus ? nr_cpus : -ENODEV;
	s->links = calloc(nr_cpus, sizeof(*s->links));
	if (!s->links)
		return -ENOMEM;
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		struct bpf_link *link;
		int fd = open_cpu_clock_event(cpu, s->frequency);
		int err;

		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline CPU */
			err = -errno;
			fprintf(stderr, "hprof: perf_event_open(cpu-clock) failed on CPU %d: %s\n",
				cpu, strerror(errno));
			return err;
		}
		link = bpf_program__attach_perf_event(s->skel->progs.on_cpu_sample, fd);
		if (!link) {
			err = -errno;
			close(fd);
			fprintf(stderr, "hprof: cannot attach the sampler to CPU %d: %s\n", cpu,
				strerror(-err));
			return err;
		}
		s->links[s->nr_links++] = link;
	}
	return s->nr_links ? 0 : -ENODEV;
}

void sampler__stop(struct sampler *s)
{
	for (int i = 0; i < s->nr_links; i++) {
		bpf_link__destroy(s->links[i]);
		s->links[i] = NULL;
	}
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	return ring_buffer__poll(s->rb, timeout_ms);
}

int sampler__consume(struct sampler *s)
{
	return ring_buffer__consume(s->rb);
}

int sampler__pid_filter_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.pids);
}

uint64_t sampler__pid_filter_count(const struct sampler *s)
{
	__u32 key, next;
	uint64_t n = 0;
	bool first = true;

	while (!bpf_map__get_next_key(s->skel->maps.pids, first ? NULL : &key, &next,
				      sizeof(next))) {
		key = next;
		first = false;
		n++;
	}
	return n;
}

void sampler__set_thread_stack(struct sampler *s, uint32_t tid, uint64_t base, uint64_t fp_tail,
			       uint64_t fp_tail_ip)
{
	struct hprof_thread_stack value = { .base = base, .fp_tail = fp_tail,
					    .fp_tail_ip = fp_tail_ip };

	if (base || fp_tail)
		bpf_map__update_elem(s->skel->maps.thread_stacks, &tid, sizeof(tid), &value,
				     sizeof(value), BPF_ANY);
	else
		bpf_map__delete_elem(s->skel->maps.thread_stacks, &tid, sizeof(tid), 0);
}

void sampler__set_python_proc(struct sampler *s, uint32_t pid,
			      const struct hprof_python_proc *proc)
{
	if (proc)
		bpf_map__update_elem(s->skel->maps.python_procs, &pid, sizeof(pid), proc,
				     sizeof(*proc), BPF_ANY);
	else
		bpf_map__delete_elem(s->skel->maps.python_procs, &pid, sizeof(pid), 0);
}

void sampler__set_go_proc(struct sampler *s, uint32_t pid, const struct hprof_go_proc *proc)
{
	if (proc) {
		bpf_map__update_elem(s->skel->maps.go_procs, &pid, sizeof(pid), proc,
				     sizeof(*proc), BPF_ANY);
		/* from now on the kernel looks each sample's process up in go_procs */
		s->skel->bss->go_procs_known = true;
	} else {
		bpf_map__delete_elem(s->skel->maps.go_procs, &pid, sizeof(pid), 0);
	}
}

/* Zeroes the thread's slot: whichever thread holds it now sends its next copy whole. */
void sampler__forget_stack_delta(struct sampler *s, uint32_t tid)
{
	struct bpf_map *slots = s->skel->maps.delta_states;
	uint32_t index = hprof_delta__slot(tid);
	void *zero = calloc(1, bpf_map__value_size(slots));

	if (zero)
		bpf_map__update_elem(slots, &index, sizeof(index), zero, bpf_map__value_size(slots),
				     BPF_ANY);
	free(zero);
}

void sampler__read_counters(struct sampler *s, uint64_t *counters)
{
	int nr_cpus = libbpf_num_possible_cpus();
	__u64 *values = nr_cpus > 0 ? calloc(nr_cpus, sizeof(*values)) : NULL;

	memset(counters, 0, KC_NR * sizeof(*counters));
	if (!values)
		return;
	for (__u32 k = 0; k < KC_NR; k++) {
		if (bpf_map__lookup_elem(s->skel->maps.counters, &k, sizeof(k), values,
					 sizeof(*values) * nr_cpus, 0))
			continue;
		for (int cpu = 0; cpu < nr_cpus; cpu++)
			counters[k] += values[cpu];
	}
	free(values);
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	sampler__stop(s);
	free(s->links);
	bpf_link__destroy(s->fork_link);
	bpf_link__destroy(s->free_link);
	ring_buffer__free(s->rb);
	hprof_bpf__destroy(s->skel);
	free(s);
}
