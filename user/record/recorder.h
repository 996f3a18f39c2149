/* A recording: the sampler's records and the kernel's mapping events, put in time order
 * and handed to a session (and to the raw capture, when there is one), until the time is
 * up, the command or every pid has exited, or a signal stops it. */
#ifndef HPROF_RECORD_RECORDER_H
#define HPROF_RECORD_RECORDER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/writer.h"
#include "record/child.h"
#include "record/sampler.h"
#include "record/stack_delta.h"
#include "session.h"

struct recorder;

/* Called after each read of the buffers (at least every poll_ms) with running set, and with
 * it clear before the recorder prints anything and once recording is over: whatever the
 * hook shows on the terminal must then go. */
typedef void (*recorder_progress_fn)(void *ctx, struct recorder *r, double elapsed_s,
				     bool running);

struct recorder_opts {
	struct sampler_opts sampler;
	long time_ms;         /* 0: until stopped */
	const pid_t *pids;    /* --pid: recording ends when all are gone */
	size_t nr_pids;
	struct child *child;  /* NULL, or the command: recording ends when it exits */
	unsigned delta_drop_every; /* HPROF_DEBUG=delta-drop:N (stack_delta__set_drop_every) */
	/* How long the reader waits for the buffers between reads; 0: RECORDER_POLL_MS. Each
	 * read handles what came since, with caches that went cold while it waited: an
	 * always-on agent reads less often (hprof serve: every half second). */
	unsigned poll_ms;
	recorder_progress_fn progress; /* NULL: none */
	void *progress_ctx;
};

/* Loads the sampler and opens the mapping events; nothing is sampled yet. raw (may be
 * NULL) gets every record handled.
 * Returns 0 or -errno after printing one line. */
int recorder__open(const struct recorder_opts *o, struct session *session,
		   struct capture_writer *raw, struct recorder **out);
/* Starts sampling and gives up the capabilities only set-up needed. */
int recorder__start(struct recorder *r);
#define RECORDER_POLL_MS 100
/* The wait while processes with JIT code are sampled (with the default poll_ms). Their
 * code is read from their memory when a sample is walked, and a sample waits for the read
 * and the reorder window (~10 ms) before it is: code first run in a process's last
 * moments before it exits is lost for samples walked after it (binary/code_copies.h).
 * Reading this often narrows that from ~110 ms to ~15 ms, at ~200 reads a second. */
#define RECORDER_JIT_POLL_MS 5
/* ... for so long after such a process was last sampled: a read that handles none of its
 * samples (it did not run for 5 ms, on a loaded machine) keeps the short wait. */
#define RECORDER_JIT_LINGER_NS (2 * 1000 * 1000 * 1000ull)
/* Records until done or until *stop is set. Returns 0 or -errno after printing one line. */
int recorder__run(struct recorder *r, volatile sig_atomic_t *stop);
/* From the progress hook: the next read comes within ms (a deadline before the usual
 * wait is up). */
void recorder__read_within(struct recorder *r, unsigned ms);
double recorder__duration_s(const struct recorder *r);
/* The kernel's counters (enum kernel_counter) once recording is over. */
const uint64_t *recorder__kernel_counters(struct recorder *r);
/* The kernel's counters now, while recording (a lookup per counter: for a progress hook). */
void recorder__read_counters(struct recorder *r, uint64_t *counters);
uint64_t recorder__sideband_lost(const struct recorder *r);
/* Bytes of sample records the ring buffer delivered (deltas as sent, not rebuilt). */
uint64_t recorder__received_bytes(const struct recorder *r);
/* NULL when copies are not sent as deltas. */
const struct stack_delta_stats *recorder__delta_stats(const struct recorder *r);
void recorder__free(struct recorder *r);

#endif
