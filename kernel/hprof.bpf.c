// SPDX-License-Identifier: GPL-2.0
/* hprof's sampler: runs on every cpu-clock perf event, records who was running, the
 * user registers, the user frame-pointer chain, the kernel stack and a copy of the user
 * stack, and sends it to userspace through a ring buffer. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "sample.h"
#include "python.bpf.h"
#include "go.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by userspace before load. */
const volatile bool filter_pids = false;   /* record only tgids in the pids map */
const volatile bool follow_forks = false;  /* add children of filtered tgids as they fork */
const volatile __u32 stack_copy_size = 0;  /* bytes of user stack to copy; 0 = FP-only */
const volatile __u64 ringbuf_wakeup_bytes = 4 << 20; /* waiting data that wakes the reader */
const volatile bool delta_copies = false; /* copies to a learned base sent as deltas */
const volatile bool delta_verify = false; /* deltas carry the whole copy too (a check) */
const volatile __u64 delta_secret = 0;    /* seeds the chunk hashes: random per run */
const volatile bool python_frames = false; /* read CPython processes' frames (python_procs) */

/* Room for the largest record plus slack, so that the verifier's bound on (offset of a
 * write) + (its length), each bounded on its own, stays inside the buffer: one chunk of the
 * stack copy after the largest record; a second copy's worth, for the interrupted stack
 * after the first copy; for a delta, a payload run or the verified image of up to a whole
 * copy after the largest delta header and map and a whole copy. */
#define SCRATCH_SIZE                                                                      \
	(HPROF_SAMPLE_MAX_SIZE + HPROF_MAX_STACK_COPY + HPROF_STACK_CHUNK +               \
	 sizeof(struct hprof_stack_delta) + HPROF_DELTA_MAP_WORDS * 8)
_Static_assert(HPROF_FP_TAIL_WINDOW <= HPROF_STACK_CHUNK, "the tail fits in the slack");
_Static_assert(SCRATCH_SIZE >= HPROF_SAMPLE_MAX_WIRE_SIZE, "a whole record fits");

struct scratch {
	__u8 buf[SCRATCH_SIZE];
};

/* One scratch record per CPU (max_entries set to the CPU count at load time); perf
 * event programs do not nest on a CPU, so the slot is ours for the whole sample. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_buffers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} samples SEC(".maps");


struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64); /* the process's start time, or HPROF_PID_ADDED */
} pids SEC(".maps");

/* Stack bases userspace learned from complete walks, each claimed by its thread's start
 * time (struct hprof_thread_stack); the least recently used go when it is full. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, HPROF_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct hprof_thread_stack);
} thread_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KC_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(enum kernel_counter which)
{
	__u32 key = which;
	__u64 *value = bpf_map_lookup_elem(&counters, &key);

	if (value)
		*value += 1;
}

#define PF_EXITING_FLAG 0x00000004 /* include/linux/sched.h PF_EXITING */

static __always_inline bool in_execve(struct task_struct *task)
{
	if (!bpf_core_field_exists(task->in_execve))
		return false;
	return BPF_CORE_READ_BITFIELD(task, in_execve);
}

/* True when the sample interrupted user mode. The context allows only 8-byte loads of
 * pt_regs, and cs shares its word with padding (or FRED state): load the word, test the
 * privilege level in its low bits. */
static __always_inline bool sampled_user_mode(struct bpf_perf_event_data *ctx)
{
	__u64 cs_word = *(volatile __u64 *)((void *)&ctx->regs +
					      __builtin_offsetof(struct pt_regs, cs));

	return cs_word & 3;
}

/* The user registers of the sampled task: the interrupted registers for a user-mode
 * sample, the registers saved on kernel entry for a kernel-mode one. */
static __always_inline bool read_user_regs(struct bpf_perf_event_data *ctx,
					   struct hprof_sample *s)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs, saved;

	/* An exiting task tears its address space down (it may already be gone), and in
	 * execve the registers belong to the program being replaced: neither has a user stack
	 * to read. */
	if ((task->flags & PF_EXITING_FLAG) || in_execve(task)) {
		s->flags |= SAMPLE_NO_USER_CONTEXT;
		count(KC_NO_USER_CONTEXT);
		return false;
	}
	if (!task->mm)
		return false; /* kernel thread */
	if (sampled_user_mode(ctx)) {
		s->user_ip = ctx->regs.ip;
		s->user_sp = ctx->regs.sp;
		s->user_bp = ctx->regs.bp;
		s->user_bx = ctx->regs.bx;
		s->user_di = ctx->regs.di;
		s->user_r10 = ctx->regs.r10;
		s->user_r12 = ctx->regs.r12;
		s->user_r13 = ctx->regs.r13;
		s->user_r14 = ctx->regs.r14;
		s->user_r15 = ctx->regs.r15;
		s->user_r8 = ctx->regs.r8;
		return true;
	}
	s->flags |= SAMPLE_IN_KERNEL;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	/* one read of the saved registers, not one per register: ten probe reads cost more
	 * than the copy */
	if (!regs || bpf_probe_read_kernel(&saved, sizeof(saved), regs) != 0)
		return false;
	s->user_ip = saved.ip;
	s->user_sp = saved.sp;
	s->user_bp = saved.bp;
	s->user_bx = saved.bx;
	s->user_di = saved.di;
	s->user_r10 = saved.r10;
	s->user_r12 = saved.r12;
	s->user_r13 = saved.r13;
	s->user_r14 = saved.r14;
	s->user_r15 = saved.r15;
	s->user_r8 = saved.r8;
	return s->user_ip != 0;
}

/* Where the frame records of the sampled thread's stack lie: from sp up to its learned
 * base (the outermost frame's CFA), when sp lies below it; else anywhere. */
struct fp_bounds {
	__u64 lo, hi;
};

static __always_inline struct fp_bounds fp_bounds_of(const struct hprof_sample *s,
						     const struct hprof_thread_stack *known)
{
	struct fp_bounds b = { 0, ~0ull };

	if (known && known->base > s->user_sp) {
		b.lo = s->user_sp;
		b.hi = known->base;
	}
	return b;
}

/* Walks saved-rbp links: [bp] is the caller's bp, [bp + 8] the return address. A link
 * outside the bounds is no frame record of this stack (code built without frame pointers
 * keeps data in rbp) and is not read: a read of memory that is not mapped takes a fault, a
 * microsecond, as much as the rest of the sample. */
static __always_inline void walk_frame_pointers(struct hprof_sample *s, struct fp_bounds b)
{
	__u64 *ips = (__u64 *)s->data;
	__u64 bp = s->user_bp;
	__u64 frame[2];
	__u32 n = 1;

	ips[0] = s->user_ip;
	s->fp_end = FP_END_DEPTH_LIMIT;
	for (int i = 1; i < HPROF_MAX_FP_DEPTH; i++) {
		if (bp == 0) {
			s->fp_end = FP_END_ZERO_LINK;
			break;
		}
		if (bp < b.lo || bp > b.hi - 16) {
			s->fp_end = FP_END_OFF_STACK;
			count(KC_FP_OFF_STACK);
			break;
		}
		if (bpf_probe_read_user(frame, sizeof(frame), (void *)bp)) {
			s->fp_end = FP_END_READ_FAILED;
			count(KC_FP_READ_FAILED);
			break;
		}
		if (frame[1] == 0) {
			s->fp_end = FP_END_ZERO_LINK;
			break;
		}
		ips[i] = frame[1];
		n = i + 1;
		s->fp_tail_frame = bp;
		if (frame[0] != 0 && frame[0] <= bp) {
			s->fp_end = FP_END_NOT_ASCENDING;
			break;
		}
		bp = frame[0];
	}
	s->nr_user = n;
}

/* the stack copy and its deltas: they use the settings, maps and count() above */
#include "stack_copy.bpf.h"
#include "stack_delta.bpf.h"

/* When a copy to the end of the stack last woke the reader (see reader_wakeup). Shared by
 * the CPUs: a race costs one more wakeup, or one fewer. */
__u64 last_base_wakeup_ns = 0;
/* 0: never (hprof serve: at 19 Hz a thread's next sample comes after the next read) */
const volatile __u64 base_wakeup_every_ns = 20 * 1000 * 1000ull;

/* A copy that ran to the end of the stack (not to a learned base, not the leaf alone, not
 * in two parts around it): the thread's base is not known to the kernel yet. */
static __always_inline bool copied_to_stack_end(const struct hprof_sample *s)
{
	return s->stack_len > 0 && !(s->flags & (SAMPLE_COPY_LEARNED | SAMPLE_COPY_FP |
						 SAMPLE_STACK_DELTA | SAMPLE_COPY_BASE_WINDOW));
}

/* Waking the reader on every sample costs more than the sample itself: hprof polls every
 * 100 ms (hprof serve every 500 ms, with base_wakeup_every_ns 0), and is woken when the
 * buffer fills past a quarter. A thread whose base the kernel
 * does not know yet also wakes it, at most every base_wakeup_every_ns: its first walk then
 * teaches the kernel at the second wakeup (past the ~10-ms reorder window), not at the next
 * poll, and the thread's copies stop running to the end of the stack after ~12 samples at
 * 499 Hz, not ~50. Every 5 ms took ~8, but under process churn (every new process wakes
 * it) cost hprof twice its CPU; every 20 ms costs it ~1.5 times (bench/README.md). */
static __always_inline __u64 reader_wakeup(const struct hprof_sample *s)
{
	if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > ringbuf_wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	if (base_wakeup_every_ns && copied_to_stack_end(s) &&
	    s->timestamp_ns - last_base_wakeup_ns > base_wakeup_every_ns) {
		last_base_wakeup_ns = s->timestamp_ns;
		return BPF_RB_FORCE_WAKEUP;
	}
	return BPF_RB_NO_WAKEUP;
}

/* The current thread's learned stack, NULL when none is known. An entry userspace wrote
 * (start time 0) is claimed by the thread's next sample; one another thread claimed, which
 * held the tid before, is not this thread's. */
static __always_inline struct hprof_thread_stack *own_thread_stack(__u32 tid)
{
	struct hprof_thread_stack *known = bpf_map_lookup_elem(&thread_stacks, &tid);
	__u64 start;

	if (!known)
		return NULL;
	start = bpf_get_current_task_btf()->start_time;
	if (known->start_time == 0)
		known->start_time = start;
	return known->start_time == start ? known : NULL;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, zero = 0;
	struct hprof_sample *s;
	struct scratch *scratch;
	__u32 off;
	__u64 size; /* 64 bits: a 32-bit one is re-extended after its check, unbounded */
	__u64 stack_end = 0;
	struct hprof_thread_stack *known = NULL;
	struct alt_stack alt;
	struct delta_state *slot = NULL;
	__u64 wakeup;
	long kbytes;

	if (tgid == 0) {
		count(KC_IDLE);
		return 0;
	}
	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid)) {
		count(KC_FILTERED);
		return 0;
	}
	count(KC_SAMPLES);
	zero = bpf_get_smp_processor_id();
	scratch = bpf_map_lookup_elem(&scratch_buffers, &zero);
	if (!scratch) {
		count(KC_DROP_NO_SCRATCH);
		return 0;
	}
	s = (struct hprof_sample *)scratch->buf;
	__builtin_memset(s, 0, sizeof(*s));
	s->timestamp_ns = bpf_ktime_get_ns();
	s->pid = tgid;
	s->tid = (__u32)id;
	s->cpu = bpf_get_smp_processor_id();
	bpf_get_current_comm(s->comm, sizeof(s->comm));

	if (read_user_regs(ctx, s)) {
		s->flags |= SAMPLE_USER_REGS;
		if (stack_copy_size)
			known = own_thread_stack(s->tid);
		walk_frame_pointers(s, fp_bounds_of(s, known));
	} else {
		s->fp_end = FP_END_NO_USER;
		if (!sampled_user_mode(ctx))
			s->flags |= SAMPLE_IN_KERNEL;
		count(KC_USER_REGS_MISSING);
	}

	off = s->nr_user * 8;
	if (off > HPROF_MAX_FP_DEPTH * 8)
		return 0;
	if (s->flags & SAMPLE_IN_KERNEL) {
		kbytes = bpf_get_stack(ctx, s->data + off, HPROF_MAX_KERNEL_DEPTH * 8, 0);
		if (kbytes > 0)
			s->nr_kernel = kbytes / 8;
		else
			count(KC_KERNEL_STACK_FAILED);
	}
	off += s->nr_kernel * 8;
	if (off > (HPROF_MAX_FP_DEPTH + HPROF_MAX_KERNEL_DEPTH) * 8)
		return 0;
	if ((s->flags & SAMPLE_USER_REGS) && stack_copy_size) {
		if (fp_chain_suffices(s, known)) {
			copy_leaf(s, s->data + off);
		} else if (on_alt_stack(s, &alt)) {
			stack_end = alt.top;
			copy_alt_stack(s, s->data + off, known, &alt);
		} else if (!copy_stack_delta(s, scratch, off, known, &slot)) {
			stack_end = stack_end_above(s->user_sp, known, copy_ceiling());
			copy_user_stack(s, s->data + off, known, stack_end);
		}
	}
	/* a delta's stack region may be longer than a copy; it has no interrupted stack */
	off += s->stack_len + s->interrupted_len;
	if (off > (HPROF_MAX_FP_DEPTH + HPROF_MAX_KERNEL_DEPTH) * 8 + HPROF_MAX_STACK_WIRE)
		return 0;
	if ((s->flags & SAMPLE_USER_REGS) && !(s->flags & SAMPLE_COPY_FP))
		copy_fp_tail(s, off, stack_end);

	off += s->tail_len;
	barrier_var(off);
	if (off > (HPROF_MAX_FP_DEPTH + HPROF_MAX_KERNEL_DEPTH) * 8 + HPROF_MAX_STACK_WIRE +
			  HPROF_FP_TAIL_WINDOW)
		return 0;
	if (python_frames && (s->flags & SAMPLE_USER_REGS))
		read_python_frames(s, s->data + off);
	off += s->nr_python * (__u32)sizeof(struct hprof_py_frame);
	if (off > (HPROF_MAX_FP_DEPTH + HPROF_MAX_KERNEL_DEPTH) * 8 + HPROF_MAX_STACK_WIRE +
			  HPROF_FP_TAIL_WINDOW + HPROF_PY_MAX_BYTES)
		return 0;
	if (s->flags & SAMPLE_USER_REGS)
		off += read_go_switch(s, s->data + off);

	wakeup = reader_wakeup(s);
	size = sizeof(*s) + (__u64)off;
	if (size > HPROF_SAMPLE_MAX_WIRE_SIZE)
		return 0;
	if (bpf_ringbuf_output(&samples, s, size, wakeup))
		count(KC_DROP_RINGBUF_FULL);
	else if (s->flags & SAMPLE_STACK_DELTA)
		commit_stack_delta(s->tid, slot);
	return 0;
}

/* A profiled process leaves the filter when its last task is freed (the thread group's
 * leader is released last, and nothing of the process runs any more, not even its exit
 * path): the filter holds live processes only, and another process that gets the pid later
 * is not profiled. The free comes a grace period after the pid itself was released: a
 * profiled child may hold the pid again by then, and keeps its entry. */
SEC("tp_btf/sched_process_free")
int BPF_PROG(on_free, struct task_struct *task)
{
	__u32 tgid = task->tgid;
	__u64 *start;

	if (!filter_pids || task->pid != task->tgid)
		return 0;
	start = bpf_map_lookup_elem(&pids, &tgid);
	if (start && (*start == HPROF_PID_ADDED || *start == task->start_time))
		bpf_map_delete_elem(&pids, &tgid);
	return 0;
}

/* With -- COMMAND, children of profiled processes are profiled too. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = parent->tgid, child_tgid = child->tgid;
	__u64 start = child->start_time;

	if (!follow_forks || parent_tgid == child_tgid)
		return 0;
	if (!bpf_map_lookup_elem(&pids, &parent_tgid))
		return 0;
	/* over the entry of a freed process that held the pid before, if it is still there */
	if (bpf_map_update_elem(&pids, &child_tgid, &start, BPF_ANY) == 0)
		count(KC_FORKS_FOLLOWED);
	else
		count(KC_FORKS_NOT_FOLLOWED);
	return 0;
}
