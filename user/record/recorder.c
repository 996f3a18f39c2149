#include "record/recorder.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "record/capabilities.h"
#include "record/reorder.h"
#include "record/sideband.h"
#include "python/process.h"
#include "record/stack_delta.h"
#include "util/grow.h"
#include "util/tid_set.h"

/* A record is written a little after its timestamp is taken (the BPF program stamps the
 * sample before it copies the stack): records are put in order only once they are older
 * than the last drain of every buffer by this much. */
#define REORDER_SLACK_NS (10 * 1000 * 1000ull)
/* HPROF_DEBUG=memory[:SECONDS]: what hprof holds, every SECONDS (default 10) while it
 * runs and once at the end. */
#define MEMORY_REPORT_S 10.0

struct held_exit {
	uint64_t time_ns;
	uint32_t pid, tid;
	bool handled; /* queued when read */
};

struct recorder {
	struct recorder_opts opts;
	struct session *session;
	struct capture_writer *raw;
	struct sampler *sampler;
	struct sideband *sideband;
	struct reorder *queue;
	struct stack_delta *deltas;
	/* Threads whose exit was read in the last drain: their images go after the next read
	 * of the ring buffer, which holds their last samples. */
	uint32_t *exited, *exiting;
	size_t nr_exited, nr_exiting, exited_cap, exiting_cap;
	/* The threads a sample was queued for since their last exit. Only they have anything
	 * to forget when they exit: under thread churn nearly every thread that exits was never
	 * sampled, and queueing and handling their exits was a sixth of hprof serve's CPU. */
	struct tid_set *sampled;
	bool every_exit; /* sampled is full: every exit is handled */
	/* Exits read in the last drain, looked at again after the next read of the ring
	 * buffer, which holds every sample they took: a thread sampled just before it exited
	 * has its exit handled then, after that sample. */
	struct held_exit *held_exits;
	size_t nr_held_exits, held_exits_cap;
	uint64_t received_bytes; /* of sample records, as the ring buffer delivered them */
	double duration_s;
	uint64_t kernel_counters[KC_NR];
	double report_memory_s; /* 0: never */
	unsigned next_wait_ms;  /* the next poll's timeout (recorder__read_within) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static double memory_report_interval(void)
{
	const char *debug = getenv("HPROF_DEBUG"), *opt;
	double s;

	if (!debug || !(opt = strstr(debug, "memory")))
		return 0;
	opt += strlen("memory");
	s = *opt == ':' ? strtod(opt + 1, NULL) : MEMORY_REPORT_S;
	return s > 0 ? s : MEMORY_REPORT_S;
}

static void report_memory(const struct recorder *r)
{
	struct memory_stats m;

	session__memory(r->session, &m);
	m.filtered_pids = sampler__pid_filter_count(r->sampler);
	summary__print_memory(&m, stderr);
}

static bool thread_lives(uint32_t tid, void *ctx)
{
	(void)ctx;
	return kill((pid_t)tid, 0) == 0 || errno != ESRCH;
}

/* tid in the set of sampled threads. A tid whose exit was never read (lost with the
 * mapping events, or a thread that exec'd and took its leader's) stays there: when it is
 * full, the threads gone go, and should that not make room, every exit is handled. */
static void note_sampled(struct recorder *r, uint32_t tid)
{
	int err = tid_set__add(r->sampled, tid);

	if (err == -ENOSPC) {
		tid_set__keep_if(r->sampled, thread_lives, NULL);
		err = tid_set__add(r->sampled, tid);
		/* little room made: not worth a kill(2) for each one again soon */
		if (tid_set__count(r->sampled) > TID_SET_MAX / 4 * 3)
			err = -ENOSPC;
	}
	if (err)
		r->every_exit = true;
}

/* Ring buffer callback: samples wait in the queue for the mapping events before them, as
 * the kernel would have sent them without deltas. The ring buffer delivers each thread's
 * records in the order they were taken, the order deltas are made in. */
static int queue_sample(void *ctx, void *data, size_t size)
{
	struct recorder *r = ctx;
	const struct hprof_sample *sample = data;
	const void *rec = data;
	size_t len = size;
	uint64_t time;
	int err;

	r->received_bytes += size;
	if (r->deltas) {
		err = stack_delta__rebuild(r->deltas, data, size, &rec, &len);
		if (err)
			return err;
	}
	/* A record too short to hold its time is counted as malformed when it is handled. */
	time = size >= sizeof(*sample) ? sample->timestamp_ns : 0;
	if (size >= sizeof(*sample) && sample->tid && !r->every_exit)
		note_sampled(r, sample->tid);
	return reorder__push(r->queue, time, REORDER_SAMPLE, rec, len);
}

/* tid's delta images go two drains from now (forget_exited_threads). */
static void note_thread_exit(struct recorder *r, uint32_t tid)
{
	if (r->deltas && grow_array((void **)&r->exiting, &r->exiting_cap, r->nr_exiting + 1,
				    sizeof(*r->exiting)) == 0)
		r->exiting[r->nr_exiting++] = tid;
}

/* The images of threads whose exit the drain before last read: the ring buffer read since
 * holds every sample they took. */
static void forget_exited_threads(struct recorder *r)
{
	uint32_t *swap = r->exited;
	size_t cap = r->exited_cap;

	for (size_t i = 0; i < r->nr_exited; i++)
		stack_delta__forget(r->deltas, r->exited[i]);
	r->exited = r->exiting;
	r->exited_cap = r->exiting_cap;
	r->nr_exited = r->nr_exiting;
	r->exiting = swap;
	r->exiting_cap = cap;
	r->nr_exiting = 0;
}

/* A delta against a copy userspace does not hold: the kernel sends the next one whole. */
static void request_full_copy(void *ctx, uint32_t tid)
{
	sampler__forget_stack_delta(ctx, tid);
}

/* The event and its path, as one queued record. */
static int push_event(struct recorder *r, const struct map_event *e, const char *path)
{
	size_t path_len = strnlen(path, MAP_EVENT_PATH_MAX - 1);
	uint8_t record[sizeof(*e) + MAP_EVENT_PATH_MAX];

	memcpy(record, e, sizeof(*e));
	memcpy(record + sizeof(*e), path, path_len);
	record[sizeof(*e) + path_len] = '\0';
	return reorder__push(r->queue, e->time_ns, REORDER_EVENT, record, sizeof(*e) + path_len + 1);
}

static void hold_exit(struct recorder *r, const struct map_event *e, uint32_t tid, bool handled)
{
	if (grow_array((void **)&r->held_exits, &r->held_exits_cap, r->nr_held_exits + 1,
		       sizeof(*r->held_exits)) == 0)
		r->held_exits[r->nr_held_exits++] = (struct held_exit){
			.time_ns = e->time_ns, .pid = e->pid, .tid = tid, .handled = handled,
		};
}

/* A process's exit is always queued; a thread's only when it was sampled (else it is held
 * to be looked at again: settle_held_exits). */
static int read_exit(struct recorder *r, const struct map_event *e)
{
	uint32_t tid = e->type == MAP_EVENT_EXIT ? e->pid : e->tid;
	bool handled = e->type == MAP_EVENT_EXIT || r->every_exit ||
		       tid_set__contains(r->sampled, tid);

	hold_exit(r, e, tid, handled);
	if (e->type == MAP_EVENT_EXIT)
		session__process_exit_seen(r->session, e->pid);
	if (!handled)
		return 0;
	tid_set__remove(r->sampled, tid);
	note_thread_exit(r, tid);
	return push_event(r, e, "");
}

/* The exits the last drain held: those of threads whose sample the ring buffer has
 * delivered since are queued now (after that sample, in time order). A tid leaves the set
 * here too, should a sample have come after its exit was queued. */
static int settle_held_exits(struct recorder *r)
{
	int err = 0;

	for (size_t i = 0; i < r->nr_held_exits && !err; i++) {
		const struct held_exit *h = &r->held_exits[i];

		if (!h->handled && tid_set__contains(r->sampled, h->tid)) {
			struct map_event e = { .time_ns = h->time_ns, .type = MAP_EVENT_THREAD_EXIT,
					       .pid = h->pid, .tid = h->tid };

			note_thread_exit(r, h->tid);
			err = push_event(r, &e, "");
		}
		tid_set__remove(r->sampled, h->tid);
	}
	r->nr_held_exits = 0;
	return err;
}

/* Side-band callback: mapping events are queued; exits as read_exit says. */
static int queue_map_event(void *ctx, const struct map_event *e, const char *path)
{
	struct recorder *r = ctx;

	if (e->type == MAP_EVENT_EXIT || e->type == MAP_EVENT_THREAD_EXIT)
		return read_exit(r, e);
	session__pin_mapped_file(r->session, e, path);
	/* handled (and a CPython learned) as soon as the reorder window lets it go */
	if (e->type == MAP_EVENT_MMAP && (e->prot & PROT_EXEC) && python_file__maybe(path))
		recorder__read_within(r, REORDER_SLACK_NS / 1000000 + 1);
	return push_event(r, e, path);
}

/* Records leave the queue in time order: handled, then written to the capture (after
 * handling, so that maps read for a record are written before it). */
static int handle_record(void *ctx, enum reorder_kind kind, const void *data, size_t len)
{
	struct recorder *r = ctx;
	const char *path = (const char *)data + sizeof(struct map_event);
	int err;

	if (kind == REORDER_SAMPLE)
		err = session__handle_sample(r->session, data, len);
	else
		err = session__handle_map_event(r->session, data, path);
	if (err || !r->raw)
		return err;
	if (kind == REORDER_SAMPLE)
		capture_writer__sample(r->raw, data, len);
	else
		capture_writer__map_event(r->raw, data, path);
	return 0;
}

/* A process with JIT code was sampled within RECORDER_JIT_LINGER_NS of now: its reads
 * stay frequent through the moments it does not run (a loaded machine, a lock), in which
 * a read handles none of its samples. */
static bool jit_sampled_lately(const struct recorder *r, uint64_t now)
{
	uint64_t at = session__anon_code_sampled_ns(r->session);

	return at && at <= now && now - at < RECORDER_JIT_LINGER_NS;
}

/* Reads every buffer, then handles what is now certainly in order (everything when
 * final). Returns 0 or -errno. */
static int drain_and_handle(struct recorder *r, bool final)
{
	uint64_t drained_at = now_ns();
	int err;

	err = sampler__consume(r->sampler);
	if (err >= 0)
		err = settle_held_exits(r);
	if (r->deltas)
		forget_exited_threads(r);
	if (err >= 0)
		err = sideband__drain(r->sideband, queue_map_event, r);
	if (err < 0)
		return err;
	err = reorder__flush(r->queue, final ? UINT64_MAX : drained_at - REORDER_SLACK_NS,
			     handle_record, r);
	/* (an always-on agent, with a wait of its own, keeps it: its processes live on) */
	if (!r->opts.poll_ms && jit_sampled_lately(r, drained_at))
		recorder__read_within(r, RECORDER_JIT_POLL_MS);
	return err;
}

/* Tells the kernel where a thread's stack ends, so that its later samples copy only the
 * live stack (base 0: forget it, the copy falls back to the end of the stack). */
static void learn_stack_base(void *ctx, uint32_t tid, uint64_t base, uint64_t fp_tail,
			     uint64_t fp_tail_ip)
{
	sampler__set_thread_stack(ctx, tid, base, fp_tail, fp_tail_ip);
}

static void learn_go_proc(void *ctx, uint32_t pid, const struct hprof_go_proc *proc)
{
	sampler__set_go_proc(ctx, pid, proc);
}

static void learn_python_proc(void *ctx, uint32_t pid, const struct hprof_python_proc *proc)
{
	sampler__set_python_proc(ctx, pid, proc);
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

int recorder__open(const struct recorder_opts *o, struct session *session,
		   struct capture_writer *raw, struct recorder **out)
{
	struct recorder *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	r->opts = *o;
	r->session = session;
	r->report_memory_s = memory_report_interval();
	r->raw = raw;
	r->sampled = tid_set__new();
	if (!r->sampled) {
		free(r);
		return -ENOMEM;
	}
	err = sampler__open(&o->sampler, queue_sample, r, &r->sampler);
	if (err)
		goto fail;
	if (o->sampler.stack_deltas && o->sampler.stack_size) {
		err = stack_delta__new(STACK_DELTA_MAX_IMAGES, STACK_DELTA_MAX_BYTES, &r->deltas);
		if (err)
			goto fail;
		stack_delta__set_resend_hook(r->deltas, request_full_copy, r->sampler);
		stack_delta__set_drop_every(r->deltas, o->delta_drop_every);
	}
	if (o->sampler.stack_size)
		session__set_stack_base_hook(session, learn_stack_base, r->sampler);
	if (o->sampler.python_frames)
		session__set_python_hook(session, learn_python_proc, r->sampler);
	session__set_go_hook(session, learn_go_proc, r->sampler);
	for (size_t i = 0; !err && i < o->nr_pids; i++)
		err = sampler__add_pid(r->sampler, o->pids[i]);
	if (!err)
		err = open_sideband(r);
	if (!err && o->child)
		err = sampler__add_pid(r->sampler, o->child->pid);
	if (err)
		goto fail;
	*out = r;
	return 0;
fail:
	recorder__free(r);
	return err;
}

int recorder__start(struct recorder *r)
{
	int err = sampler__start(r->sampler);

	return err ? err : capabilities__drop_unneeded(sampler__pid_filter_fd(r->sampler));
}

static double now_s(void)
{
	return now_ns() / 1e9;
}

static bool all_pids_gone(const struct recorder *r)
{
	if (r->opts.nr_pids == 0)
		return false;
	for (size_t i = 0; i < r->opts.nr_pids; i++) {
		if (kill(r->opts.pids[i], 0) == 0 || errno != ESRCH)
			return false;
	}
	return true;
}

static bool done(struct recorder *r, double now, double deadline)
{
	if (r->opts.time_ms && now >= deadline)
		return true;
	return (r->opts.child && child__has_exited(r->opts.child)) || all_pids_gone(r);
}

static void progress(struct recorder *r, double elapsed_s, bool running)
{
	if (r->opts.progress)
		r->opts.progress(r->opts.progress_ctx, r, elapsed_s, running);
}

static unsigned poll_ms(const struct recorder *r)
{
	return r->opts.poll_ms ? r->opts.poll_ms : RECORDER_POLL_MS;
}

void recorder__read_within(struct recorder *r, unsigned ms)
{
	if (ms < r->next_wait_ms)
		r->next_wait_ms = ms;
}

int recorder__run(struct recorder *r, volatile sig_atomic_t *stop)
{
	double start = now_s(), deadline = start + r->opts.time_ms / 1000.0;
	double next_report = start + r->report_memory_s, now = start;
	int err = 0;

	r->next_wait_ms = poll_ms(r);
	while (!*stop) {
		unsigned wait_ms = r->next_wait_ms;

		r->next_wait_ms = poll_ms(r);
		err = sampler__poll(r->sampler, (int)wait_ms);
		if (err == -EINTR)
			err = 0; /* a signal: read now (hprof serve's HTTP threads wake it so) */
		if (err >= 0)
			err = drain_and_handle(r, false);
		if (err < 0) {
			progress(r, now - start, false);
			fprintf(stderr, "hprof: reading samples failed: %s\n", strerror(-err));
			break;
		}
		err = 0;
		now = now_s();
		if (r->report_memory_s && now >= next_report) {
			progress(r, now - start, false);
			report_memory(r);
			next_report += r->report_memory_s;
		}
		if (done(r, now, deadline))
			break;
		progress(r, now - start, true);
	}
	progress(r, now_s() - start, false);
	/* Stop the events, then take what is still queued. */
	sampler__stop(r->sampler);
	if (!err && drain_and_handle(r, true) < 0)
		err = -EIO;
	r->duration_s = now_s() - start;
	sampler__read_counters(r->sampler, r->kernel_counters);
	if (r->report_memory_s)
		report_memory(r);
	return err;
}

double recorder__duration_s(const struct recorder *r)
{
	return r->duration_s;
}

const uint64_t *recorder__kernel_counters(struct recorder *r)
{
	return r->kernel_counters;
}

void recorder__read_counters(struct recorder *r, uint64_t *counters)
{
	sampler__read_counters(r->sampler, counters);
}

uint64_t recorder__sideband_lost(const struct recorder *r)
{
	return sideband__lost(r->sideband);
}

uint64_t recorder__received_bytes(const struct recorder *r)
{
	return r->received_bytes;
}

const struct stack_delta_stats *recorder__delta_stats(const struct recorder *r)
{
	return r->deltas ? stack_delta__stats(r->deltas) : NULL;
}

void recorder__free(struct recorder *r)
{
	if (!r)
		return;
	sampler__free(r->sampler);
	sideband__free(r->sideband);
	reorder__free(r->queue);
	stack_delta__free(r->deltas);
	free(r->exited);
	free(r->exiting);
	tid_set__free(r->sampled);
	free(r->held_exits);
	free(r);
}
