/* The copy of the user stack a sample carries (common/sample.h): from the sp up, to the
 * thread's learned base or the end of its stack mapping, in two parts around a base
 * window when the stack is deeper than a copy; the interrupted stack under a signal
 * handler on an alternate stack; the tail of the frame-pointer chain. Included by
 * hprof.bpf.c, after its maps and settings. */
#ifndef HPROF_STACK_COPY_BPF_H
#define HPROF_STACK_COPY_BPF_H

struct vma_end {
	__u64 end;
};

static long vma_end_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	((struct vma_end *)data)->end = vma->vm_end;
	return 0;
}

/* The most the main thread's stack may grow: its rlimit, at most 1 GiB (an unlimited one
 * gives the legacy layout, with mappings far below the stack). Other mappings lie further
 * below argv than this: the kernel leaves at least the limit free for the stack. */
#define MAIN_STACK_MAX (1ull << 30)
#define RLIMIT_STACK_INDEX 3

static __always_inline __u64 main_stack_limit(struct task_struct *task)
{
	__u64 limit = BPF_CORE_READ(task, signal, rlim[RLIMIT_STACK_INDEX].rlim_cur);

	return limit < MAIN_STACK_MAX ? limit : MAIN_STACK_MAX;
}

/* No mapping lies within this much below the main thread's stack however its limit is
 * set: the kernel leaves at least 128 MiB (MIN_GAP) between the highest the stack may start
 * and the mappings below it, and a limit raised after exec moves nothing. */
#define MAIN_STACK_CLEAR (128ull << 20)

/* sp lies on the main thread's stack, known without looking its mapping up: within its
 * limit (and the room kept clear) below argv's strings, which start its top. */
static __always_inline bool on_main_stack(struct task_struct *task, __u64 sp, __u64 arg_start)
{
	__u64 limit = main_stack_limit(task);

	if (limit > MAIN_STACK_CLEAR)
		limit = MAIN_STACK_CLEAR;
	return arg_start > sp && arg_start - sp <= limit;
}

/* Where the user stack holding sp ends: the end of its mapping, and for the main thread's
 * stack the start of argv's strings, so that neither they nor the environment after them
 * are ever copied. The mapping is looked up only where neither of these says it: argv's
 * start for sp on the main thread's stack; the thread's TCB (its fs base), which glibc and
 * musl keep at the top of a thread's stack mapping with its frames right below, for sp
 * within a copy's length below it. From the sampling interrupt bpf_find_vma releases the
 * mapping's lock through an irq_work, a self-IPI: several microseconds under
 * virtualization, most of a sample's cost. When the mapping cannot be found (its lock is
 * busy, as while a writer that holds or waits for it is preempted), argv's start if sp
 * lies within the stack's limit below it, else 0: unknown. */
static __always_inline __u64 user_stack_end(__u64 sp, __u64 ceiling)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct vma_end found = { 0 };
	__u64 arg_start = BPF_CORE_READ(task, mm, arg_start), fs = task->thread.fsbase;

	if (on_main_stack(task, sp, arg_start))
		return arg_start;
	if (task->pid != task->tgid && fs > sp && fs - sp <= ceiling)
		return fs;
	if (bpf_find_vma(task, sp, vma_end_cb, &found, 0))
		return arg_start > sp && arg_start - sp <= main_stack_limit(task) ? arg_start : 0;
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
	return within_learned_base(sp, known, ceiling) ? known->base : user_stack_end(sp, ceiling);
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
static __always_inline bool copy_base_window(struct hprof_sample *s, __u8 *dst, __u64 base)
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
					return false;
			}
		}
	}
	s->interrupted_len = size;
	s->interrupted_sp = base - size;
	s->flags |= SAMPLE_COPY_BASE_WINDOW;
	count(KC_COPY_BASE_WINDOW);
	return true;
}

/* sp lies outside the stack the thread's learned base ends (its mapping ends below the
 * base, or sp is above it, or its mapping is not known and sp lies further below the base
 * than a copy reaches): code that moved rsp to a workspace of its own (oneDNN's GEMM
 * kernels) keeps the way back, the original rsp, in a register or in that area, and the
 * callers' frames are next to the base. */
static __always_inline bool off_thread_stack(__u64 sp, const struct hprof_thread_stack *known,
					     __u64 stack_end, __u64 ceiling)
{
	return known && known->base && ceiling >= 2 * HPROF_BASE_WINDOW &&
	       (sp >= known->base || (stack_end && stack_end < known->base) ||
		(!stack_end && known->base - sp > ceiling));
}

/* Where a thread whose base is not known yet has its first frames, when sp is off its stack:
 * the main thread's lie right below the sp the process started with (mm->start_stack, where
 * argc is); glibc keeps another thread's TCB, where its fs base points, at the top of the
 * thread's stack mapping, its first frames right below. 0 when sp is on the main thread's
 * stack (its end is argv's start), on the mapping the fs base lies in (the thread's own
 * stack), or there is no fs base. A wrong guess costs a window no walk finds frames in. */
static __always_inline __u64 guessed_base(__u64 sp, __u64 stack_end, __u64 ceiling)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fs = task->thread.fsbase, arg_start = BPF_CORE_READ(task, mm, arg_start);

	if (stack_end == arg_start || ceiling < 2 * HPROF_BASE_WINDOW)
		return 0;
	/* (for the main thread, stack_end 0 says sp is off its stack too: user_stack_end) */
	if (task->pid == task->tgid)
		return BPF_CORE_READ(task, mm, start_stack) & ~7ull;
	if (!fs || !stack_end || (fs >= sp && fs <= stack_end))
		return 0;
	return fs & ~7ull;
}

/* A stack deeper than the ceiling, or sp off the thread's stack: up to the ceiling less
 * HPROF_BASE_WINDOW from sp (never past stack_end, when known), then the window below the
 * base, as the second copy; below fallback (when not 0) where none can be read below base.
 * The walk reads both; what lies between is the middle of large frames, or the walk stops
 * there short of the copy, as it would have. */
static __always_inline void copy_with_base_window(struct hprof_sample *s, __u8 *dst,
						  __u64 base, __u64 fallback, __u64 ceiling,
						  __u64 stack_end)
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
	if (!copy_base_window(s, dst + len, base & ~7ull) && fallback && fallback != base)
		copy_base_window(s, dst + len, fallback & ~7ull);
}

/* Copies the live stack from sp. */
static __always_inline void copy_user_stack(struct hprof_sample *s, __u8 *dst,
					    const struct hprof_thread_stack *known, __u64 stack_end)
{
	__u64 want, guess;

	if (deeper_than_ceiling(s->user_sp, known, stack_end, copy_ceiling())) {
		copy_with_base_window(s, dst, known->base, 0, copy_ceiling(), 0);
		return;
	}
	if (off_thread_stack(s->user_sp, known, stack_end, copy_ceiling())) {
		count(KC_COPY_OFF_STACK);
		/* a learned base with nothing readable below it (one a thread taught before it
		 * called execve: the claim is the thread's start time, which execve keeps) gives
		 * way to the guess */
		copy_with_base_window(s, dst, known->base,
				      guessed_base(s->user_sp, stack_end, copy_ceiling()),
				      copy_ceiling(), stack_end);
		return;
	}
	guess = (known && known->base) ? 0 : guessed_base(s->user_sp, stack_end, copy_ceiling());
	if (guess) {
		count(KC_COPY_OFF_STACK);
		copy_with_base_window(s, dst, guess, 0, copy_ceiling(), stack_end);
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

#endif
