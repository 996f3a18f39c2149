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
	return s->user_ip != 0;
}

/* Walks saved-rbp links: [bp] is the caller's bp, [bp + 8] the return address. */
static __always_inline void walk_frame_pointers(struct hprof_sample *s)
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

struct vma_end {
	__u64 end;
};

static long vma_end_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	((struct vma_end *)data)->end = vma->vm_end;
	return 0;
}

/* Where the user stack holding sp ends: the end of its mapping, and for the main thread's
 * stack the start of argv's strings, so that neither they nor the environment after them
 * are ever copied. When the mapping cannot be found (its lock is busy), argv's start if it
 * lies above sp, else 0: unknown. */
static __always_inline __u64 user_stack_end(__u64 sp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct vma_end found = { 0 };
	__u64 arg_start = BPF_CORE_READ(task, mm, arg_start);

	if (bpf_find_vma(task, sp, vma_end_cb, &found, 0))
		return arg_start > sp ? arg_start : 0;
	if (arg_start > sp && arg_start < found.end)
		return arg_start;
	return found.end;
}

/* The most a sample may copy: --stack-size, within what the record holds. */
static __always_inline __u64 copy_ceiling(void)
{
	return stack_copy_size < HPROF_MAX_STACK_COPY ? stack_copy_size : HPROF_MAX_STACK_COPY;
}

/* Bytes from sp up to end in whole words, rounded up. A walk reads aligned words, and sp is
 * not always word aligned (assembly that reserves 4 bytes: rav1e's): rounded down, a copy
 * to the base would end 4 bytes short of it, without the outermost frame's return address. */
static __always_inline __u64 words_up_to(__u64 sp, __u64 end)
{
	return (end - sp + 7) & ~7ull;
}

static __always_inline bool within_learned_base(__u64 sp, const struct hprof_thread_stack *known,
						__u64 ceiling)
{
	return known && known->base > sp && words_up_to(sp, known->base) <= ceiling;
}

/* Where the stack holding sp ends: below a learned base the stack runs at least that far,
 * and the mapping need not be looked up (the lookup is most of a sample's cost). */
static __always_inline __u64 stack_end_above(__u64 sp, const struct hprof_thread_stack *known,
					     __u64 ceiling)
{
	return within_learned_base(sp, known, ceiling) ? known->base : user_stack_end(sp);
}

/* Bytes to copy from sp: up to the thread's learned base when sp lies below it within the
 * ceiling (a signal handler on another stack, a coroutine, does not), rounded up to whole
 * words (the stack runs on past the base: its start routine's caller's frame, argv); else
 * as much as the ceiling allows, never past the end of the stack. */
static __always_inline __u64 copy_length(struct hprof_sample *s, __u64 sp,
					 const struct hprof_thread_stack *known, __u64 stack_end,
					 __u64 ceiling)
{
	__u64 want = ceiling;

	/* the stack runs on past the base: the copy may end a few bytes beyond it */
	if (within_learned_base(sp, known, ceiling)) {
		s->flags |= SAMPLE_COPY_LEARNED;
		count(KC_COPY_LEARNED);
		return words_up_to(sp, known->base);
	}
	count(KC_COPY_DEFAULT);
	if (stack_end > sp && stack_end - sp < want)
		want = stack_end - sp;
	/* whole words: the walk reads 8 bytes at a time */
	return want & ~7ull;
}

/* The FP chain ended at the frame record this thread's right chains end at: userspace
 * knows the frames beyond it, and needs no copy but the leaf's. */
static __always_inline bool fp_chain_suffices(const struct hprof_sample *s,
					      const struct hprof_thread_stack *known)
{
	__u64 last_ip;

	if (!known || !known->fp_tail || s->fp_tail_frame != known->fp_tail || s->nr_user < 2)
		return false;
	/* and the same return address there: main's frame, entered from libc, not another
	 * function's that happens to use the same stack slot */
	last_ip = ((__u64 *)s->data)[(s->nr_user - 1) & (HPROF_MAX_FP_DEPTH - 1)];
	return last_ip == known->fp_tail_ip;
}

static __always_inline void copy_leaf(struct hprof_sample *s, __u8 *dst)
{
	s->flags |= SAMPLE_COPY_FP;
	count(KC_COPY_FP);
	if (bpf_probe_read_user(dst, HPROF_LEAF_COPY, (void *)s->user_sp) == 0)
		s->stack_len = HPROF_LEAF_COPY;
	else if (bpf_probe_read_user(dst, HPROF_LEAF_COPY / 2, (void *)s->user_sp) == 0)
		s->stack_len = HPROF_LEAF_COPY / 2;
}

/* Stores v in the record and reads it back. The verifier tracks no value read from a map:
 * it neither follows the copy loop's many outcomes through it (which would keep it from
 * pruning the loop's states, each page read or not) nor trusts it without the bounds
 * checks that follow. */
static __always_inline __u32 through_record(__u32 *field, __u32 v)
{
	*(volatile __u32 *)field = v;
	return *(volatile __u32 *)field;
}

static __always_inline void store_holes(__u64 *field, __u64 v)
{
	*(volatile __u64 *)field = v;
}

/* A copy a page at a time (bpf_loop's context): where it goes and comes from, how far it
 * got, and which pages could not be read. */
struct page_copy {
	__u8 *dst;
	__u64 from, want;
	__u64 copied, kept, holes;
	__u32 pages_kept;
};

/* bpf_loop step c: the copy's c-th page (the first may start mid-page, the last may end
 * short), 1 to stop. Verified once, for any c and any state: every value is bounded here. */
static long copy_page(__u64 c, void *ctx)
{
	struct page_copy *p = ctx;
	__u64 copied = p->copied, want = p->want, len;

	if (c >= 64 || copied >= want || want > HPROF_MAX_STACK_COPY)
		return 1;
	len = HPROF_STACK_CHUNK - ((p->from + copied) & (HPROF_STACK_CHUNK - 1));
	if (len > want - copied)
		len = want - copied;
	/* Keep clang from testing a copy of len and passing another to the helper: the
	 * verifier must see the bound on the register it checks. */
	barrier_var(len);
	if (len == 0 || len > HPROF_STACK_CHUNK)
		return 1;
	barrier_var(copied);
	if (copied > HPROF_MAX_STACK_COPY)
		return 1;
	if (bpf_probe_read_user(p->dst + copied, len, (void *)(p->from + copied)) == 0) {
		p->kept = copied + len;
		p->pages_kept = c + 1;
	} else {
		p->holes |= 1ull << c;
	}
	p->copied = copied + len;
	return 0;
}

/* Copies want bytes of user memory from `from` to dst in one read, sized so that it does
 * not run off the end of the stack. Should the read fail (a page never touched, or swapped
 * out, cannot be read without a fault), copies a page at a time: a page that fails is left
 * zero-filled (the helper clears what it could not read) and marked in *holes, and the
 * pages above it are still copied. Sets *len, both in the record, to the bytes copied up
 * to the last page read, and returns it. The pages go through bpf_loop: a loop the
 * verifier unrolled would take it past its budget at HPROF_MAX_STACK_CHUNKS pages. */
static __always_inline __u32 copy_region(__u8 *dst, __u64 from, __u64 want, __u32 *len_out,
					 __u64 *holes_out)
{
	struct page_copy p = { .dst = dst, .from = from, .want = want };
	__u64 holes;

	barrier_var(want);
	if (want == 0 || want > HPROF_MAX_STACK_COPY)
		return through_record(len_out, 0);
	if (bpf_probe_read_user(dst, want, (void *)from) == 0)
		return through_record(len_out, want);
	bpf_loop(HPROF_MAX_STACK_CHUNKS, copy_page, &p, 0);
	/* unreadable pages past the last one read are no holes: the copy ends before them */
	holes = p.pages_kept >= 64 ? p.holes : p.holes & ((1ull << p.pages_kept) - 1);
	store_holes(holes_out, holes);
	return through_record(len_out, p.kept);
}

/* Counts how a copy of want bytes went, and marks a short one in the sample. */
static __always_inline void count_copy(struct hprof_sample *s, __u64 want, __u64 copied,
				       const __u64 *holes)
{
	if (*(volatile const __u64 *)holes)
		count(KC_STACK_COPY_HOLES);
	if (copied >= want)
		return;
	s->flags |= SAMPLE_COPY_CLAMPED;
	count(copied ? KC_STACK_COPY_CLAMPED : KC_STACK_COPY_FAILED);
}

/* The stack runs from sp past the ceiling to the thread's learned base, which lies on the
 * same stack (not a coroutine's or a runtime's elsewhere): a copy from sp alone would end
 * short of the outermost frames, whatever the walk needs below them. */
static __always_inline bool deeper_than_ceiling(__u64 sp, const struct hprof_thread_stack *known,
						__u64 stack_end, __u64 ceiling)
{
	return known && known->base > sp && known->base - sp > ceiling &&
	       stack_end >= known->base && ceiling >= 2 * HPROF_BASE_WINDOW;
}

/* Reads the window below the base into dst: whole, else its upper half or quarter, else the
 * part of the base's page below it (the frames next to the base; a large frame's buffer
 * below them, or the pages below a shallow thread's frames, may never have been touched).
 * Fixed sizes: a page-wise copy's loop here took the verifier past its budget. */
static __always_inline void copy_base_window(struct hprof_sample *s, __u8 *dst, __u64 base)
{
	__u64 size = HPROF_BASE_WINDOW;

	if (bpf_probe_read_user(dst, HPROF_BASE_WINDOW, (void *)(base - HPROF_BASE_WINDOW)) != 0) {
		size = HPROF_BASE_WINDOW / 2;
		if (bpf_probe_read_user(dst, HPROF_BASE_WINDOW / 2,
					(void *)(base - HPROF_BASE_WINDOW / 2)) != 0) {
			size = HPROF_BASE_WINDOW / 4;
			if (bpf_probe_read_user(dst, HPROF_BASE_WINDOW / 4,
						(void *)(base - HPROF_BASE_WINDOW / 4)) != 0) {
				/* a thread that never went a page deep (an OpenMP worker whose
				 * GEMM runs on a workspace of its own): the base's own page */
				size = base & (HPROF_STACK_CHUNK - 1);
				barrier_var(size);
				if (size < 8 || size > HPROF_BASE_WINDOW / 4 ||
				    bpf_probe_read_user(dst, size, (void *)(base - size)) != 0)
					return;
			}
		}
	}
	s->interrupted_len = size;
	s->interrupted_sp = base - size;
	s->flags |= SAMPLE_COPY_BASE_WINDOW;
	count(KC_COPY_BASE_WINDOW);
}

/* sp lies outside the stack the thread's learned base ends (its mapping ends below the
 * base, or sp is above it): code that moved rsp to a workspace of its own (oneDNN's GEMM
 * kernels) keeps the way back, the original rsp, in a register or in that area, and the
 * callers' frames are next to the base. */
static __always_inline bool off_thread_stack(__u64 sp, const struct hprof_thread_stack *known,
					     __u64 stack_end, __u64 ceiling)
{
	return known && known->base && ceiling >= 2 * HPROF_BASE_WINDOW &&
	       (sp >= known->base || (stack_end && stack_end < known->base));
}

/* Where a thread whose base is not known yet has its first frames, when sp is off its stack:
 * glibc keeps a thread's TCB, where its fs base points, at the top of the thread's stack
 * mapping, its first frames right below. 0 when sp is on the main thread's stack (its end
 * is argv's start), on the mapping the fs base lies in (the thread's own stack), or there
 * is no fs base. A wrong guess costs a window no walk finds frames in. */
static __always_inline __u64 guessed_base(__u64 sp, __u64 stack_end, __u64 ceiling)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fs = task->thread.fsbase, arg_start = BPF_CORE_READ(task, mm, arg_start);

	if (!fs || !stack_end || stack_end == arg_start || (fs >= sp && fs < stack_end) ||
	    ceiling < 2 * HPROF_BASE_WINDOW)
		return 0;
	return fs & ~7ull;
}

/* A stack deeper than the ceiling, or sp off the thread's stack: up to the ceiling less
 * HPROF_BASE_WINDOW from sp (never past stack_end, when known), then the window below the
 * base, as the second copy. The walk reads both; what lies between is the middle of large
 * frames, or the walk stops there short of the copy, as it would have. */
static __always_inline void copy_with_base_window(struct hprof_sample *s, __u8 *dst,
						  __u64 base, __u64 ceiling, __u64 stack_end)
{
	__u64 want = (ceiling - HPROF_BASE_WINDOW) & ~7ull, len;

	if (stack_end > s->user_sp && stack_end - s->user_sp < want)
		want = (stack_end - s->user_sp) & ~7ull;

	len = copy_region(dst, s->user_sp, want, &s->stack_len, &s->stack_holes);
	count_copy(s, want, len, &s->stack_holes);
	/* The verifier must see the bound on the register that offsets the second copy. */
	barrier_var(len);
	if (len > HPROF_MAX_STACK_COPY - HPROF_BASE_WINDOW)
		return;
	copy_base_window(s, dst + len, base & ~7ull);
}

/* Copies the live stack from sp. */
static __always_inline void copy_user_stack(struct hprof_sample *s, __u8 *dst,
					    const struct hprof_thread_stack *known, __u64 stack_end)
{
	__u64 want, guess;

	if (deeper_than_ceiling(s->user_sp, known, stack_end, copy_ceiling())) {
		copy_with_base_window(s, dst, known->base, copy_ceiling(), 0);
		return;
	}
	if (off_thread_stack(s->user_sp, known, stack_end, copy_ceiling())) {
		count(KC_COPY_OFF_STACK);
		copy_with_base_window(s, dst, known->base, copy_ceiling(), stack_end);
		return;
	}
	guess = (known && known->base) ? 0 : guessed_base(s->user_sp, stack_end, copy_ceiling());
	if (guess) {
		count(KC_COPY_OFF_STACK);
		copy_with_base_window(s, dst, guess, copy_ceiling(), stack_end);
		return;
	}
	want = copy_length(s, s->user_sp, known, stack_end, copy_ceiling());

	count_copy(s, want, copy_region(dst, s->user_sp, want, &s->stack_len, &s->stack_holes),
		   &s->stack_holes);
}

/* The thread's signal stack (sigaltstack), when sp lies on it: [bottom, top). A handler
 * running there has its interrupted code's stack elsewhere. */
struct alt_stack {
	__u64 bottom, top;
};

static __always_inline bool on_alt_stack(const struct hprof_sample *s, struct alt_stack *alt)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 bottom = task->sas_ss_sp, size = task->sas_ss_size;

	if (size == 0 || s->user_sp < bottom || s->user_sp - bottom >= size)
		return false;
	alt->bottom = bottom;
	alt->top = bottom + size;
	return true;
}

/* The search for the signal frame: the copy of the alternate stack from sp (in the
 * scratch buffer), and what the frame's ucontext must hold. */
struct sigframe_search {
	const __u8 *copy;
	__u64 sp, len; /* the copy is [sp, sp + len), ending at alt.top */
	struct alt_stack alt;
	__u64 depth;          /* of the ucontext found below alt.top; 0: none yet */
	__u64 interrupted_sp; /* the sp saved in it */
};

/* Where the last search found the ucontext, below the top: the same for every signal of a
 * process (the saved FPU state above it has one size), so mostly found at the first try. A
 * hint only, checked like any other place, shared by all CPUs. */
__u64 sigframe_depth_hint = 0;

#define UC_STACK_OFF __builtin_offsetof(struct ucontext, uc_stack)
#define UC_SP_OFF (__builtin_offsetof(struct ucontext, uc_mcontext) + \
		   __builtin_offsetof(struct sigcontext_64, sp))
#define UC_FPSTATE_OFF (__builtin_offsetof(struct ucontext, uc_mcontext) + \
			__builtin_offsetof(struct sigcontext_64, fpstate))

static __always_inline __u64 copy_word(const __u8 *copy, __u64 off)
{
	__u64 v;

	__builtin_memcpy(&v, copy + off, sizeof(v));
	return v;
}

/* The kernel's ucontext lies depth bytes below the alternate stack's top: its uc_stack
 * describes that very stack, and its saved FPU state lies above it, below the top (the
 * kernel puts the state at the top and the frame right under it). Sets the interrupted sp
 * when it does. */
static __always_inline bool sigframe_at(struct sigframe_search *f, __u64 depth)
{
	__u64 uc = f->alt.top - depth, off = uc - f->sp, fpstate;
	const __u8 *copy = f->copy;

	if (depth < sizeof(struct ucontext) || depth > f->len || (uc & 15))
		return false;
	/* The verifier must see the bound on the register that indexes the copy. */
	barrier_var(off);
	if (off > HPROF_MAX_STACK_COPY - sizeof(struct ucontext))
		return false;
	if (copy_word(copy, off + UC_STACK_OFF) != f->alt.bottom ||
	    copy_word(copy, off + UC_STACK_OFF + 16) != f->alt.top - f->alt.bottom)
		return false;
	fpstate = copy_word(copy, off + UC_FPSTATE_OFF);
	if (fpstate <= uc || fpstate > f->alt.top)
		return false;
	f->depth = depth;
	f->interrupted_sp = copy_word(copy, off + UC_SP_OFF);
	return true;
}

/* One place of the search, from the top down (bpf_loop callback): the outermost signal
 * frame, the one that entered the stack, is the highest. */
static long search_sigframe_step(__u64 i, void *ctx)
{
	struct sigframe_search *f = ctx;
	/* ucontexts are 16-byte aligned; the frame holds at least a ucontext below the top */
	__u64 highest = (sizeof(struct ucontext) + 15) & ~15ull;

	return sigframe_at(f, highest + i * 16 + (f->alt.top & 15)) ? 1 : 0;
}

/* The sp the signal interrupted, from the signal frame in the copy of the alternate stack
 * (which must reach its top); 0 when no frame is found there. */
static __always_inline __u64 find_interrupted_sp(const __u8 *copy, __u64 sp, __u64 len,
						 const struct alt_stack *alt)
{
	struct sigframe_search f = { .copy = copy, .sp = sp, .len = len, .alt = *alt };

	if (sp + len != alt->top)
		return 0;
	if (!sigframe_at(&f, sigframe_depth_hint)) {
		bpf_loop(HPROF_SIGFRAME_SEARCH / 16, search_sigframe_step, &f, 0);
		if (f.depth)
			sigframe_depth_hint = f.depth;
	}
	return f.interrupted_sp;
}

/* A signal handler on the thread's alternate stack: copies that stack from sp to its top,
 * which holds the signal frame, then the interrupted code's stack from the sp saved in the
 * frame, as any stack is copied, within what is left of the ceiling. */
static __always_inline void copy_alt_stack(struct hprof_sample *s, __u8 *dst,
					   const struct hprof_thread_stack *known,
					   const struct alt_stack *alt)
{
	__u64 ceiling = copy_ceiling(), want = (alt->top - s->user_sp) & ~7ull;
	__u64 rsp, end, want2, len;

	s->flags |= SAMPLE_COPY_ALTSTACK;
	count(KC_COPY_ALTSTACK);
	if (want > ceiling)
		want = ceiling & ~7ull;
	len = copy_region(dst, s->user_sp, want, &s->stack_len, &s->stack_holes);
	count_copy(s, want, len, &s->stack_holes);
	/* The verifier must see the bound on the register that offsets the second copy. */
	barrier_var(len);
	if (len > HPROF_MAX_STACK_COPY)
		return;
	rsp = find_interrupted_sp(dst, s->user_sp, len, alt);
	if (rsp == 0) {
		count(KC_SIGFRAME_NOT_FOUND);
		return;
	}
	/* nested on the alternate stack: the copy holds it already */
	if (rsp >= alt->bottom && rsp < alt->top)
		return;
	ceiling = ceiling > len ? ceiling - len : 0;
	end = stack_end_above(rsp, known, ceiling);
	want2 = copy_length(s, rsp, known, end, ceiling);
	if (want2 == 0)
		return;
	count_copy(s, want2,
		   copy_region(dst + len, rsp, want2, &s->interrupted_len, &s->interrupted_holes),
		   &s->interrupted_holes);
	s->interrupted_sp = s->interrupted_len ? rsp : 0;
}

/* Copies HPROF_FP_TAIL_WINDOW bytes from the FP chain's outermost frame record when the
 * stack copy does not already hold them, so that userspace can go on from the chain's
 * end with the DWARF walk (libc's start-up code keeps no frame pointers). */
static __always_inline void copy_fp_tail(struct hprof_sample *s, __u64 off, __u64 stack_end)
{
	__u64 tail = s->fp_tail_frame, len = HPROF_FP_TAIL_WINDOW, copy_end;
	__u8 *dst;

	if (stack_copy_size == 0 || tail == 0)
		return;
	/* never past the end of the stack: argv's and the environment's strings follow it */
	if (stack_end > tail && stack_end - tail < len)
		len = (stack_end - tail) & ~7ull;
	copy_end = s->user_sp + s->stack_len;
	/* A copy up to the thread's base holds everything a walk reads; a record outside the
	 * stack is no frame (rbp held data); a copy that holds the window needs no other. */
	if (tail < s->user_sp || (stack_end && tail >= stack_end))
		s->flags |= SAMPLE_FP_TAIL_OFF_STACK;
	if ((s->flags & SAMPLE_COPY_LEARNED) || tail < s->user_sp ||
	    (stack_end && tail >= stack_end) || (tail < copy_end && copy_end - tail >= len))
		return;
	/* The verifier must see the bound on the register that indexes the buffer. */
	barrier_var(off);
	if (off > (HPROF_MAX_FP_DEPTH + HPROF_MAX_KERNEL_DEPTH) * 8 + HPROF_MAX_STACK_COPY)
		return;
	dst = s->data + off;
	barrier_var(len);
	if (len == 0 || len > HPROF_FP_TAIL_WINDOW)
		return;
	if (bpf_probe_read_user(dst, len, (void *)tail) == 0) {
		s->tail_len = len;
		return;
	}
	/* The window ran off the stack mapping: half of it still holds the usual frames. */
	if (bpf_probe_read_user(dst, HPROF_FP_TAIL_WINDOW / 2, (void *)tail) == 0)
		s->tail_len = HPROF_FP_TAIL_WINDOW / 2;
	else
		count(KC_FP_TAIL_FAILED);
}

/* --- Delta copies: a copy to the thread's learned base sends only the chunks that changed
 * since the thread's last copy the ring buffer accepted (common/sample.h). */

/* What the kernel keeps of a thread's last accepted copy (BPF array delta_states, at the
 * slot of its tid). An array rather than a hash by tid: its lookup is an address, where a
 * hash's costs cache misses on every sample. Userspace zeroes a slot to have its thread's
 * next copy sent whole. Every value in it may be stale or torn (two threads on a slot,
 * userspace's writes): it decides nothing but which chunks to leave out, and a chunk's hash
 * matches only one of the same thread (the seed), copy (the key) and bytes. */
struct delta_state {
	__u64 seq;        /* that copy's number; 0: none */
	__u64 end;        /* where it ended (the learned base): chunks are counted down from it */
	__u32 tid;        /* the thread it belongs to, */
	__u32 since_full; /* deltas sent since the last whole copy */
	__u64 start_time; /* and that thread's start time (a later one may get its tid) */
	__u64 hashes[HPROF_DELTA_MAX_CHUNKS]; /* chunk i's hash, mixed with seq (chunk_key) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HPROF_DELTA_SLOTS);
	__type(key, __u32);
	__type(value, struct delta_state);
} delta_states SEC(".maps");

/* Per-CPU room for one delta: the live stack read whole, the hashes of its chunks until
 * the record is accepted, the map of chunks sent, and where the pass over the chunks is
 * (here rather than in its context on the stack, where the verifier would follow every
 * value it takes and never see the loop's states converge). */
struct delta_work {
	/* a chunk is hashed as 64 bytes from its start, also the short one at sp */
	__u8 image[HPROF_MAX_STACK_COPY + HPROF_DELTA_CHUNK];
	__u64 hashes[HPROF_DELTA_MAX_CHUNKS];
	__u64 sent[HPROF_DELTA_MAP_WORDS];
	__u64 seq;
	__u64 end;
	__u64 start_time;     /* the thread's */
	__u32 since_full;
	__u32 nr_chunks;
	__u64 pos;            /* payload bytes written */
	__u64 run_lo, run_hi; /* image bytes [run_lo, run_hi) still to be written */
	__u32 failed;         /* 0 or 1 */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the CPU count, set at load time */
	__type(key, __u32);
	__type(value, struct delta_work);
} delta_work SEC(".maps");

/* Powers of two: the verifier must see every index masked within its array. */
_Static_assert((HPROF_MAX_STACK_COPY & (HPROF_MAX_STACK_COPY - 1)) == 0, "image index mask");
_Static_assert((HPROF_DELTA_MAX_CHUNKS & (HPROF_DELTA_MAX_CHUNKS - 1)) == 0, "hash index mask");
_Static_assert((HPROF_DELTA_MAP_WORDS & (HPROF_DELTA_MAP_WORDS - 1)) == 0, "map index mask");
_Static_assert(HPROF_DELTA_CHUNK == 8 * 8, "a chunk is hashed as eight words");

#define PRIME64_1 0x9E3779B185EBCA87ull
#define PRIME64_2 0xC2B2AE3D27D4EB4Full
#define PRIME64_3 0x165667B19E3779F9ull
#define PRIME64_5 0x27D4EB2F165667C5ull

static __always_inline __u64 rotl64(__u64 x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/* XXH64's finishing mix: every input bit reaches every output bit. */
static __always_inline __u64 avalanche(__u64 h)
{
	h ^= h >> 33;
	h *= PRIME64_2;
	h ^= h >> 29;
	h *= PRIME64_3;
	h ^= h >> 32;
	return h;
}

/* What a stored chunk hash is mixed with: the number of the copy it belongs to, so that a
 * hash kept for one copy never matches when compared for another (a state torn by an LRU
 * slot changing hands, a sequence started again). */
static __always_inline __u64 chunk_key(__u64 seq)
{
	return avalanche(seq ^ delta_secret);
}

/* One pass over the tracked chunks, lowest address first: what stays the same throughout. */
struct delta_pass {
	struct delta_work *w;
	struct scratch *rec;
	const struct delta_state *prev; /* the thread's slot, compared against when compare */
	__u64 seed;      /* the run's secret and the tid */
	__u64 prev_key;  /* chunk_key of the copy compared against */
	__u64 next_key;  /* chunk_key of this copy */
	__u64 full_len;
	__u64 payload;   /* offset of the payload in rec */
	__u32 nr_chunks;
	bool compare;    /* against prev; else every chunk is sent */
};

/* Writes the pending run of image bytes to the payload. */
static __always_inline void flush_run(const struct delta_pass *p)
{
	struct delta_work *w = p->w;
	__u64 len = w->run_hi - w->run_lo, lo = w->run_lo, at = p->payload + w->pos;

	w->run_lo = w->run_hi;
	barrier_var(len);
	if (len == 0)
		return;
	if (len > HPROF_MAX_STACK_COPY || lo > HPROF_MAX_STACK_COPY ||
	    at > SCRATCH_SIZE - HPROF_MAX_STACK_COPY) {
		w->failed = 1;
		return;
	}
	if (bpf_probe_read_kernel(p->rec->buf + at, len, w->image + lo))
		w->failed = 1;
	w->pos += len;
}

/* Hash of chunk i, [lo, hi) of the image: the 64 bytes from lo (for the short chunk at sp,
 * bytes of the next one too: more than it holds, so no change of its own goes unseen),
 * its length and its place, seeded with the run's secret and the tid. Four lanes of two
 * words, each word xor-multiplied in (one multiplication: a bijection of the lane, so a
 * change within one lane always changes the hash), then summed. Hashes are only compared
 * for equality: no finishing mix, which is a bijection, would make them collide less. */
static __always_inline __u64 hash_chunk(const struct delta_pass *p, __u32 i, __u64 lo, __u64 hi)
{
	const __u64 *v = (const __u64 *)(p->w->image + (lo & (HPROF_MAX_STACK_COPY - 1)));
	__u64 seed = p->seed + ((hi - lo) | ((__u64)i << 8)) * PRIME64_3;
	__u64 a = seed + PRIME64_1, b = seed + PRIME64_2, c = seed + PRIME64_3, d = seed + PRIME64_5;

	a = rotl64((a ^ v[0]) * PRIME64_1, 29);
	b = rotl64((b ^ v[1]) * PRIME64_2, 29);
	c = rotl64((c ^ v[2]) * PRIME64_1, 29);
	d = rotl64((d ^ v[3]) * PRIME64_2, 29);
	a = (a ^ v[4]) * PRIME64_2;
	b = (b ^ v[5]) * PRIME64_1;
	c = (c ^ v[6]) * PRIME64_2;
	d = (d ^ v[7]) * PRIME64_1;
	return a + rotl64(b, 16) + rotl64(c, 32) + rotl64(d, 48);
}

/* bpf_loop step k: chunk nr_chunks - 1 - k, hashed, compared, sent when it changed. */
static long delta_chunk(__u64 k, void *ctx)
{
	const struct delta_pass *p = ctx;
	struct delta_work *w = p->w;
	__u32 i = (p->nr_chunks - 1 - (__u32)k) & (HPROF_DELTA_MAX_CHUNKS - 1);
	__u64 lo, hi = hprof_delta__chunk(p->full_len, i, &lo), h;
	bool changed;

	if (hi > HPROF_MAX_STACK_COPY || lo >= hi) {
		w->failed = 1;
		return 1;
	}
	h = hash_chunk(p, i, lo, hi);
	changed = !p->compare || p->prev->hashes[i] != (h ^ p->prev_key);
	w->hashes[i] = h ^ p->next_key;
	if (changed) {
		w->sent[(i >> 6) & (HPROF_DELTA_MAP_WORDS - 1)] |= 1ull << (i & 63);
		if (w->run_hi != lo)
			flush_run(p);
		if (w->run_lo == w->run_hi)
			w->run_lo = lo;
		w->run_hi = hi;
	} else {
		flush_run(p);
	}
	return w->failed & 1;
}

/* A new sequence for a thread: random, so that numbers of different lives of a tid (and of
 * states lost in between) do not meet; below 2^63, so that it never wraps to 0. */
static __always_inline __u64 new_sequence(void)
{
	__u64 seq = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();

	return (seq >> 1) | 1;
}

/* Whether a copy ending at end may be a delta against the thread's state. */
static __always_inline bool delta_base_usable(const struct delta_state *state, __u32 tid,
					      __u64 start_time, __u64 end)
{
	return state && state->tid == tid && state->start_time == start_time &&
	       state->end == end && state->seq != 0 &&
	       state->since_full + 1 < HPROF_DELTA_FULL_EVERY;
}

/* Writes the delta header, its map and payload (and with delta_verify the whole image)
 * at rec offset hdr_at, for a copy of full_len bytes already in w->image, against the
 * thread's slot when compare. Returns the stack region's length, 0 on failure. */
static __always_inline __u64 encode_delta(struct delta_work *w, struct scratch *rec,
					  __u32 tid, __u64 hdr_at, __u64 full_len,
					  struct delta_state *slot, bool compare)
{
	struct delta_state *prev = compare ? slot : NULL;
	__u64 prev_seq = prev ? prev->seq : 0;
	struct hprof_stack_delta hdr = {
		.seq = prev ? prev_seq + 1 : new_sequence(),
		.base_seq = prev_seq,
		.full_len = full_len,
		.nr_chunks = hprof_delta__nr_chunks(full_len),
		.flags = delta_verify ? HPROF_DELTA_VERIFY : 0,
	};
	__u64 map_len = prev ? hprof_delta__map_words(hdr.nr_chunks) * 8 : 0;
	const struct delta_pass p = {
		.w = w, .rec = rec, .prev = slot, .compare = compare,
		.full_len = full_len, .nr_chunks = hdr.nr_chunks,
		.seed = delta_secret ^ ((__u64)tid * PRIME64_1),
		.prev_key = chunk_key(prev_seq), .next_key = chunk_key(hdr.seq),
		.payload = hdr_at + sizeof(hdr) + map_len,
	};
	__u64 len, pos;

	if (hdr_at > SCRATCH_SIZE - HPROF_MAX_STACK_WIRE || hdr.nr_chunks == 0 ||
	    hdr.nr_chunks > HPROF_DELTA_MAX_CHUNKS)
		return 0;
	__builtin_memset(w->sent, 0, sizeof(w->sent));
	w->pos = 0;
	w->run_lo = 0;
	w->run_hi = hprof_delta__untracked(full_len); /* below the tracked chunks: always sent */
	w->failed = 0;
	bpf_loop(hdr.nr_chunks, delta_chunk, (void *)&p, 0);
	flush_run(&p);
	pos = w->pos;
	if (w->failed || pos > HPROF_MAX_STACK_COPY)
		return 0;
	__builtin_memcpy(rec->buf + hdr_at, &hdr, sizeof(hdr));
	barrier_var(map_len);
	if (map_len > sizeof(w->sent))
		return 0;
	if (map_len && bpf_probe_read_kernel(rec->buf + hdr_at + sizeof(hdr), map_len, w->sent))
		return 0;
	len = sizeof(hdr) + map_len + pos;
	if (delta_verify) {
		barrier_var(full_len);
		if (full_len == 0 || full_len > HPROF_MAX_STACK_COPY ||
		    bpf_probe_read_kernel(rec->buf + p.payload + pos, full_len, w->image))
			return 0;
		len += full_len;
	}
	w->seq = hdr.seq;
	w->since_full = prev ? prev->since_full + 1 : 0;
	w->nr_chunks = hdr.nr_chunks;
	return len;
}

/* A copy to the thread's learned base, sent as a delta against the thread's last accepted
 * copy when there is one to the same base (else whole, starting a new sequence). False
 * when deltas are off, sp is not below the learned base within the ceiling, or the stack
 * could not be read in one go: the plain copy then does what it does. *slot: the
 * thread's, for commit_stack_delta. */
static __always_inline bool copy_stack_delta(struct hprof_sample *s, struct scratch *rec,
					     __u64 off, const struct hprof_thread_stack *known,
					     struct delta_state **slot)
{
	__u32 cpu = bpf_get_smp_processor_id(), index = hprof_delta__slot(s->tid);
	struct delta_state *found;
	struct delta_work *w;
	__u64 want, len;

	if (!delta_copies || !within_learned_base(s->user_sp, known, copy_ceiling()))
		return false;
	w = bpf_map_lookup_elem(&delta_work, &cpu);
	if (!w)
		return false;
	want = words_up_to(s->user_sp, known->base);
	barrier_var(want);
	if (want == 0 || want > HPROF_MAX_STACK_COPY)
		return false;
	if (bpf_probe_read_user(w->image, want, (void *)s->user_sp))
		return false;
	w->end = s->user_sp + want;
	found = bpf_map_lookup_elem(&delta_states, &index);
	if (!found)
		return false;
	*slot = found;
	w->start_time = known->start_time;
	len = encode_delta(w, rec, s->tid, sizeof(*s) + off, want, found,
			   delta_base_usable(found, s->tid, w->start_time, w->end));
	if (len == 0)
		return false;
	s->flags |= SAMPLE_COPY_LEARNED | SAMPLE_STACK_DELTA;
	count(KC_COPY_LEARNED);
	s->stack_len = len;
	return true;
}

/* Once the ring buffer took the record: the thread's slot holds this copy's state (only the
 * hashes of this copy's chunks are written; those beyond belong to no copy of this
 * number, and never match). */
static __always_inline void commit_stack_delta(__u32 tid, struct delta_state *slot)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct delta_work *w = bpf_map_lookup_elem(&delta_work, &cpu);
	__u64 len;

	if (!w || !slot)
		return;
	len = (__u64)w->nr_chunks * 8;
	barrier_var(len);
	if (len == 0 || len > sizeof(w->hashes))
		return;
	/* seq first and last: until the end, a copy compared against the slot finds nothing
	 * the same */
	slot->seq = 0;
	bpf_probe_read_kernel(slot->hashes, len, w->hashes);
	slot->end = w->end;
	slot->tid = tid;
	slot->start_time = w->start_time;
	slot->since_full = w->since_full;
	slot->seq = w->seq;
}

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
	struct hprof_thread_stack *known;
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
		walk_frame_pointers(s);
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
		known = own_thread_stack(s->tid);
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

	wakeup = reader_wakeup(s);
	size = sizeof(*s) + (__u64)off + s->nr_python * (__u64)sizeof(struct hprof_py_frame);
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
