/* The BPF sampler: loads kernel/hprof.bpf.c, attaches it to one cpu-clock perf event per
 * CPU (and, following processes, to the fork and process-free tracepoints), and hands
 * every record of its ring buffer to a callback. Also the two ways userspace talks back to
 * it: the pid filter and what walks have learned about each thread's stack. */
#ifndef HPROF_RECORD_SAMPLER_H
#define HPROF_RECORD_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample.h"

struct sampler_opts {
	unsigned frequency;  /* Hz per CPU */
	unsigned stack_size; /* ceiling of each sample's stack copy; 0: copy nothing */
	unsigned ring_size;  /* bytes of the ring buffer; 0: sampler__default_ring_size's */
	bool filter_pids;    /* record only the pids added with sampler__add_pid */
	bool follow_forks;   /* children of filtered pids join the filter */
	bool stack_deltas;   /* copies to a learned base sent as deltas (user/record/stack_delta.h) */
	bool delta_verify;   /* deltas carry the whole copy too, to check the rebuild against */
	unsigned max_pids;   /* room in the kernel's pid filter; 0: the BPF program's default */
	/* The reader is woken only when the buffer fills, never early for a thread whose stack
	 * base the kernel does not know yet (an always-on agent at a low rate, which reads
	 * every half second: under process churn, most samples are of such threads). */
	bool lazy_wakeups;
	bool python_frames; /* read the frames of the CPython processes sampler__set_python_proc names */
};

/* Called with each ring buffer record (a struct hprof_sample of size bytes, not yet
 * checked). Returns 0 or -errno, which stops the read. */
typedef int (*sampler_record_fn)(void *ctx, void *data, size_t size);

struct sampler;

/* The most bytes one sample can take in the ring buffer with copies of at most stack_size
 * bytes (0: none, --no-dwarf), delta_verify doubling them: the record's header, the
 * fixed part, the deepest FP chain and kernel stack, the stack region as a delta would
 * send it, the FP tail's window, rounded up as the ring buffer stores it. */
uint64_t sampler__max_record_size(unsigned stack_size, bool delta_verify);
/* The ring buffer's size when --ring-size is not given: room for SAMPLER_RING_WORST_MS of
 * the worst traffic that can arrive (every CPU sampled at frequency Hz, each sample the
 * largest record), rounded up to a power of two, within SAMPLER_RING_MIN..MAX. */
#define SAMPLER_RING_WORST_MS 25
#define SAMPLER_RING_MIN (2u << 20)
#define SAMPLER_RING_MAX (256u << 20)
unsigned sampler__default_ring_size(unsigned nr_cpus, unsigned frequency, uint64_t max_record);

/* Loads and attaches everything but the perf events. Returns 0 or -errno after printing
 * one line. */
int sampler__open(const struct sampler_opts *opts, sampler_record_fn fn, void *ctx,
		  struct sampler **out);
int sampler__add_pid(struct sampler *s, pid_t pid);
/* Opens the perf events: sampling starts. */
int sampler__start(struct sampler *s);
/* Closes the perf events: no sample is taken after it returns (some may still be in the
 * ring buffer). */
void sampler__stop(struct sampler *s);
/* Waits up to timeout_ms for records, handing them to the callback. Returns the number of
 * records, or -errno (-EINTR on a signal). */
int sampler__poll(struct sampler *s, int timeout_ms);
/* Hands every record now in the ring buffer to the callback without waiting. */
int sampler__consume(struct sampler *s);
/* The pid filter map, the probe capabilities__drop_unneeded reads through. */
int sampler__pid_filter_fd(const struct sampler *s);
/* Processes in the pid filter now (HPROF_DEBUG=memory); 0 when not filtering. */
uint64_t sampler__pid_filter_count(const struct sampler *s);
/* What walks taught about a thread (see struct hprof_thread_stack); all zero forgets it. */
void sampler__set_thread_stack(struct sampler *s, uint32_t tid, uint64_t base, uint64_t fp_tail,
			       uint64_t fp_tail_ip);
/* Tells the kernel where pid's CPython keeps its frames (common/python.h); NULL: it has
 * none (it exited or exec'd). */
/* Tells the kernel the layout of pid's Go runtime (NULL: none now), whose stack switches
 * its samples then carry (common/go.h). */
void sampler__set_go_proc(struct sampler *s, uint32_t pid, const struct hprof_go_proc *proc);
void sampler__set_python_proc(struct sampler *s, uint32_t pid,
			      const struct hprof_python_proc *proc);
/* Forgets the chunk hashes kept for a thread's deltas: its next copy is sent whole. */
void sampler__forget_stack_delta(struct sampler *s, uint32_t tid);
/* The kernel's counters summed over CPUs, into counters[KC_NR]. */
void sampler__read_counters(struct sampler *s, uint64_t *counters);
void sampler__free(struct sampler *s);

#endif
