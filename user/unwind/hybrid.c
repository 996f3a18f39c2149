#include "unwind/hybrid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/unwind_table.h"
#include "unwind/deep_stacks.h"
#include "unwind/threads.h"
#include "unwind/x86_code.h"

struct hybrid {
	bool dwarf;
	struct unwind_frame *walked; /* scratch, UNWIND_MAX_FRAMES */
	struct unwind_cache *cache;
	struct thread_table *threads;
	hybrid_thread_fn thread_hook;
	void *thread_ctx;
	struct hybrid_stats stats;
	/* HPROF_DEBUG=unwind[:N]: walks still to print step by step on stderr. */
	uint64_t walks_to_trace;
	/* Learned from the sample being handled: the outermost frame's sp when its walk
	 * reached the entry (0 otherwise), where its thread's stack ends; and when its FP chain
	 * proved right, the frames beyond the chain's end. */
	uint64_t walk_base;
	bool tail_learned;
	/* a whole deep stack's frames, by sp, for its thread's later copies with a gap */
	uint32_t nr_deep;
	struct thread_deep_frame deep[THREAD_DEEP_WALK];
	uint32_t nr_tail;
	struct unwind_frame tail[THREAD_TAIL_FRAMES];
};

/* What hybrid__user_stack works on: the sample, its process, and its copied memory (the
 * stack copied from sp, followed by the stack a signal interrupted when sp was on an
 * alternate stack, and the window copied from the FP chain's outermost frame record when
 * the copy did not reach it). */
struct job {
	struct hybrid *h;
	const struct hybrid_space *space;
	const struct hprof_sample *sample;
	struct stack_copy stack; /* more: interrupted, when there is one */
	struct stack_copy interrupted;
	struct stack_copy tail;
};

static const char *const method_names[METHOD_COUNT] = {
	[METHOD_FP] = "fp",
	[METHOD_DWARF] = "dwarf",
	[METHOD_DWARF_FP] = "dwarf+fp",
	[METHOD_ANALYSIS] = "analysis",
	[METHOD_SCAN] = "scan",
	[METHOD_TRUNCATED] = "truncated",
};

/* Why a stack is incomplete, as the frame placed under its comm. The walk's own reasons
 * are named by unwind_end__name, so the two cannot drift apart. */
static const char *truncated_reason(unsigned reason)
{
	if (reason == TRUNCATED_FP_ONLY)
		return "frame-pointer chain broken";
	if (reason == TRUNCATED_NO_COPY)
		return "no stack copy";
	if (reason == TRUNCATED_DELTA_BASE_MISSING)
		return "delta base missing";
	return unwind_end__name(reason);
}

const char *hybrid__method_name(enum stack_method m)
{
	return m < METHOD_COUNT ? method_names[m] : "?";
}

const char *hybrid__truncated_root(unsigned reason)
{
	static char roots[TRUNCATED_COUNT][64];

	if (reason >= TRUNCATED_COUNT || reason == UNWIND_END_COMPLETE)
		return "[truncated]";
	if (!roots[reason][0])
		snprintf(roots[reason], sizeof(roots[reason]), "[truncated: %s]",
			 truncated_reason(reason));
	return roots[reason];
}

/* HPROF_DEBUG=unwind traces every walk, unwind:N the first N. */
static uint64_t walks_to_trace(void)
{
	const char *debug = getenv("HPROF_DEBUG"), *opt;

	if (!debug || !(opt = strstr(debug, "unwind")))
		return 0;
	opt += strlen("unwind");
	return *opt == ':' ? strtoull(opt + 1, NULL, 10) : UINT64_MAX;
}

int hybrid__new(bool dwarf, struct hybrid **out)
{
	struct hybrid *h = calloc(1, sizeof(*h));

	*out = NULL;
	if (!h)
		return -ENOMEM;
	h->dwarf = dwarf;
	h->walks_to_trace = walks_to_trace();
	h->walked = calloc(UNWIND_MAX_FRAMES, sizeof(*h->walked));
	h->cache = unwind_cache__new();
	h->threads = thread_table__new();
	if (!h->walked || !h->cache || !h->threads) {
		hybrid__free(h);
		return -ENOMEM;
	}
	*out = h;
	return 0;
}

void hybrid__set_thread_hook(struct hybrid *h, hybrid_thread_fn fn, void *ctx)
{
	h->thread_hook = fn;
	h->thread_ctx = ctx;
}

void hybrid__walk(struct hybrid *h, const struct hybrid_space *space,
		  const struct unwind_regs *regs, const struct stack_copy *copy,
		  struct unwind_frame *frames, uint32_t max, struct unwind_result *result)
{
	if (h->walks_to_trace) {
		h->walks_to_trace--;
		fprintf(stderr, "unwind: pid %u\n", space->pid);
		unwind__trace(regs, copy, &space->walk, h->cache, stderr);
	}
	unwind__walk(regs, copy, &space->walk, h->cache, frames, max, result);
}

_Static_assert(STACK_COPY_PAGE == HPROF_STACK_CHUNK, "the kernel marks holes by its chunks");

static bool job__read_u64(const struct job *j, uint64_t addr, uint64_t *value)
{
	return stack_copy__read_u64(&j->stack, addr, value) ||
	       stack_copy__read_u64(&j->tail, addr, value);
}

/* The rules of the row covering ip; false without CFI there. */
static bool rules_at(const struct hybrid_space *space, uint64_t ip, struct unwind_rules *rules)
{
	return unwind__rules_at(&space->walk, ip, rules);
}

/* Rules of a CFA and an rbp kind that say rbp is the frame's frame pointer. */
static bool rbp_is_frame_pointer(uint8_t cfa, uint8_t rbp, int64_t rbp_offset)
{
	return cfa == UNWIND_CFA_BP_OFFSET ||
	       (cfa == UNWIND_CFA_EXPR_DEREF_BP && rbp == UNWIND_RBP_AT_BP && rbp_offset == 0);
}

/* The CFI at ip agrees that rbp is its function's frame pointer. When it does not (the
 * function keeps no frame pointer, or is in its prologue), the kernel's chain skipped the
 * function's caller even if it looks complete. GCC's realigned frames (DRAP) agree in
 * their body: CFA = *(rbp - N), with the caller's rbp saved where rbp points, and their
 * prologue pushes a copy of the return address just above it, so rbp holds a frame
 * record. Without CFI, the analysis of the code says so where it finds rules (Mono's JIT
 * code keeps no frame pointer, so a chain from rbp skipped every frame of a recursion);
 * where it finds none, only a function's entry (an exact pc) contradicts the chain:
 * nothing is pushed there yet. */
static bool frame_uses_frame_pointer(const struct hybrid_space *space, uint64_t ip, bool exact)
{
	const struct unwind_space *walk = &space->walk;
	struct unwind_rules rules;
	struct code_rules code;

	if (rules_at(space, exact ? ip : ip - 1, &rules))
		return rbp_is_frame_pointer(rules.cfa, rules.rbp, rules.rbp_offset);
	if (exact && walk->is_function_entry && walk->is_function_entry(walk->ctx, ip))
		return false;
	/* a return address's rules are its own: the analysis takes it as it is */
	if (walk->analyze && walk->analyze(walk->ctx, ip, &code) == CODE_OK)
		return rbp_is_frame_pointer(code.cfa, code.rbp, code.rbp_offset);
	return true;
}

/* Rules whose CFA says the frame is found without rbp: its function keeps no frame
 * pointer. A CFA hprof cannot evaluate (an expression: SBCL's runtime) or kept in a DRAP
 * register says nothing either way. */
static bool cfa_is_not_bp(uint8_t cfa)
{
	return cfa == UNWIND_CFA_SP_OFFSET || cfa == UNWIND_CFA_BX_OFFSET ||
	       cfa == UNWIND_CFA_EXPR_PLT || cfa == UNWIND_CFA_EXPR_DEREF_SP;
}

/* Every frame of the FP chain from index from on whose frame record gave its caller (all
 * but the outermost) keeps rbp as its frame pointer where its rows say how: a chain
 * through a function whose CFI says it keeps none took data for a frame record, so the
 * frames beyond are not the stack's, however plausible their return addresses (stale ones
 * of earlier calls, in code built without frame pointers). Code without rows is taken as
 * the chain has it: the analysis of a return address in JIT code (HotSpot's template
 * interpreter, whose frames are chained by rbp) judges the code after the call, not the
 * frame. */
static bool chain_keeps_frame_pointers(const struct job *j, uint32_t from)
{
	const struct hprof_sample *s = j->sample;

	for (uint32_t i = from; i + 1 < s->nr_user; i++) {
		uint64_t pc = hprof_sample__user_ip(s, i);

		/* every frame of every frame-pointer sample: through the walk's cache */
		if (cfa_is_not_bp(unwind__cfa_kind_at(&j->space->walk, j->h->cache,
						      i == 0 ? pc : pc - 1)))
			return false;
	}
	return true;
}

/* The caller's sp at the FP chain's outermost frame: above the frame record at record,
 * which owner keeps (the chain's frame before the outermost, or the walk's last frame when
 * the chain joined it there), by owner's rules. Usually CFA = rbp + 16. A realigned frame
 * (GCC's DRAP) has its record below a gap: the CFA is the word its rules name,
 * CFA = *(rbp - N), and a walk started at record + 16 would read its caller's return
 * address 16-48 bytes off. Code without rules (JIT code), or rules that say nothing of
 * rbp, keeps the plain record. False when the rules say owner keeps no frame pointer. */
static bool caller_sp_above_record(const struct job *j, const struct unwind_frame *owner,
				   uint64_t record, uint64_t *sp)
{
	struct unwind_rules rules;

	*sp = record + 16;
	if (!rules_at(j->space, owner->exact ? owner->pc : owner->pc - 1, &rules))
		return true;
	if (rules.cfa == UNWIND_CFA_BP_OFFSET) {
		*sp = record + (uint64_t)rules.cfa_offset;
		return true;
	}
	if (rules.cfa == UNWIND_CFA_EXPR_DEREF_BP)
		return rules.rbp == UNWIND_RBP_AT_BP && rules.rbp_offset == 0 &&
		       job__read_u64(j, record + (uint64_t)rules.cfa_offset, sp) && *sp > record;
	return !cfa_is_not_bp(rules.cfa);
}

/* The frame of the FP chain whose record holds the chain's outermost return address, when
 * the chain is taken from index from on after the frame joined (the walk's last frame, or
 * the sample's own context when from is 0). */
static struct unwind_frame record_owner(const struct job *j, uint32_t from,
					const struct unwind_frame *joined)
{
	const struct hprof_sample *s = j->sample;
	uint32_t owner = s->nr_user - 2;

	if (s->nr_user < 2)
		return (struct unwind_frame){ 0 };
	if (owner + 1 == from)
		return *joined;
	return (struct unwind_frame){ .pc = hprof_sample__user_ip(s, owner), .exact = owner == 0 };
}

/* The frame (pc, or the call before a return address) is where a stack starts: its rows
 * say it has no return address (_start, a thread's clone3), or it is ELF entry code,
 * which may have no CFI at all (the dynamic loader's _start). */
static bool starts_stack(const struct hybrid_space *space, uint64_t pc, bool caller)
{
	struct unwind_rules rules;

	if (rules_at(space, caller ? pc - 1 : pc, &rules) && rules.ra == UNWIND_RA_UNDEFINED)
		return true;
	return space->is_entry_code(space->walk.ctx, pc, caller);
}

/* The chain reached the outermost frame through executable mappings only: it ends at
 * the entry itself or, with frame pointers only, in the start-up code between the entry
 * and main or a thread's start routine (libc's, built without frame pointers), the best a
 * right chain can reach there: without a stack copy nothing can be walked beyond it, so
 * only its symbol can tell. With DWARF, the walk goes on from there to the entry. */
static bool fp_chain_is_complete(const struct job *j, bool all_mapped)
{
	const struct hprof_sample *s = j->sample;
	uint64_t outermost = hprof_sample__user_ip(s, s->nr_user - 1);
	bool caller = s->nr_user > 1;

	if (!all_mapped)
		return false;
	if (starts_stack(j->space, outermost, caller))
		return true;
	return !j->h->dwarf && caller && j->space->in_start_routine(j->space->walk.ctx, outermost);
}

/* Where the DWARF walk stopped (it ran out of copied stack, or met code without usable
 * CFI, such as JIT code), continue with the kernel's FP chain if the walk's last frame is
 * one of the chain's: same pc, and its rbp is the chain's frame address there. The chain's
 * next return address is then that frame's caller. The chain's frame addresses are
 * rebuilt from the copy, up to the first one outside it. Returns the index of the first
 * FP return address to append, or 0 when the two do not join. */
static uint32_t stitch_point(const struct job *j, const struct unwind_regs *last,
			     bool last_owns_bp)
{
	const struct hprof_sample *sample = j->sample;
	uint64_t bp = sample->user_bp;

	if (!last->bp_valid)
		return 0;
	for (uint32_t i = 1; i < sample->nr_user; i++) {
		/* The chain holds no return address into the function owning the sample's own
		 * rbp when the leaf keeps no frame pointer: there the walk's last frame must be
		 * that function by its own rules (a function that merely left rbp alone has it
		 * too). */
		if (bp == last->bp && (i == 1 ? last_owns_bp
					      : hprof_sample__user_ip(sample, i - 1) == last->ip))
			return i;
		if (!job__read_u64(j, bp, &bp))
			return 0;
	}
	return 0;
}

/* Walk ends after which the FP chain may carry on. */
static bool fp_may_continue(enum unwind_end end)
{
	return end == UNWIND_END_COPY_SHORT || end == UNWIND_END_COPY_HOLE || end == UNWIND_END_NO_CFI ||
	       end == UNWIND_END_UNSUPPORTED || end == UNWIND_END_UNMAPPED ||
	       end == UNWIND_END_BAD_FRAME || end == UNWIND_END_ZERO_RA;
}

/* The chain's frames from index from on; *all_mapped says whether every one is in an
 * executable mapping. */
static uint32_t add_fp_frames(const struct job *j, uint32_t from, struct unwind_frame *out,
			      bool *all_mapped)
{
	const struct hprof_sample *sample = j->sample;
	uint32_t n = 0;

	*all_mapped = true;
	for (uint32_t i = from; i < sample->nr_user; i++) {
		uint64_t pc = hprof_sample__user_ip(sample, i);

		out[n++] = (struct unwind_frame){
			.pc = pc, .exact = i == 0, .depth = UNWIND_DEPTH_UNKNOWN,
			.found = i == 0 ? UNWIND_FOUND_CONTEXT : UNWIND_FOUND_FP_CHAIN,
		};
		if (!j->space->is_mapped(j->space->walk.ctx, pc))
			*all_mapped = false;
	}
	return n;
}

/* A chain taken for the stack ends at a return address where a runtime's stack ends (the
 * space's is_stack_end), as the DWARF walk does: Go's systemstack and mcall move rsp to the
 * thread's g0 stack but leave rbp, so the frame records lead on into the goroutine's
 * stack, past a frame they skip. frames[0] is the chain's frame from; *n becomes the count
 * up to the end. True when it was cut. With DWARF only: the check reads the binaries'
 * tables, which an FP-only run never opens. Run on the chains taken, not on every one. */
static bool cut_at_stack_end(const struct job *j, const struct unwind_frame *frames,
			     uint32_t from, uint32_t *n)
{
	const struct unwind_space *walk = &j->space->walk;

	if (!j->h->dwarf || !walk->is_stack_end)
		return false;
	for (uint32_t k = from == 0 ? 1 : 0; k + 1 < *n; k++) {
		if (walk->is_stack_end(walk->ctx, frames[k].pc)) {
			*n = k + 1;
			return true;
		}
	}
	return false;
}

/* The frames beyond a right FP chain's end, for the thread's later samples. */
static void keep_tail(struct hybrid *h, const struct unwind_frame *frames, uint32_t nr)
{
	if (nr > HPROF_MAX_LEARNED_TAIL)
		return;
	memcpy(h->tail, frames, nr * sizeof(*frames));
	h->nr_tail = nr;
	h->tail_learned = true;
}

/* A sample whose chain ended where its thread's right chains end carries no copy of the
 * stack there (the kernel saw to that): the frames beyond are the ones learned. */
static bool finish_from_thread(const struct job *j, struct unwind_frame *out, uint32_t *added)
{
	const struct hprof_sample *sample = j->sample;
	const struct thread_info *ti = thread_table__get(j->h->threads, sample->tid, 0);

	if (!ti || ti->fp_tail != sample->fp_tail_frame ||
	    ti->tail_ip != hprof_sample__user_ip(sample, sample->nr_user - 1))
		return false;
	memcpy(out + *added, ti->tail, ti->nr_tail * sizeof(*out));
	*added += ti->nr_tail;
	j->h->stats.fp_tails_learned++;
	return true;
}

/* Libc's start-up code keeps no frame pointers, so an FP chain ends in it (main's caller,
 * a thread's start routine) rather than at the entry. The DWARF walk goes on from the
 * chain's outermost frame, whose registers the frame record gives: the caller's sp is
 * just above the record, its rbp the value saved in it. Appends the frames beyond that
 * frame to out and returns true when the walk reaches the entry. */
static bool finish_fp_chain(const struct job *j, const struct unwind_frame *owner,
			    struct unwind_frame *out, uint32_t *added)
{
	const struct hprof_sample *sample = j->sample;
	uint64_t record = sample->fp_tail_frame, saved_bp, ra, caller_sp;
	uint64_t outermost = hprof_sample__user_ip(sample, sample->nr_user - 1);
	struct hybrid *h = j->h;
	struct unwind_result result;
	struct unwind_regs regs;

	*added = 0;
	if (record == 0 || sample->nr_user < 2)
		return false;
	/* The kernel copied only the leaf: the thread's frames beyond are known. */
	if (sample->flags & SAMPLE_COPY_FP)
		return finish_from_thread(j, out, added);
	if (!job__read_u64(j, record, &saved_bp) || !job__read_u64(j, record + 8, &ra))
		return finish_from_thread(j, out, added);
	if (ra != outermost || !caller_sp_above_record(j, owner, record, &caller_sp))
		return false;
	/* A return address: its frame's rules are the call instruction's, at ra - 1. */
	regs = (struct unwind_regs){
		.ip = outermost - 1, .sp = caller_sp, .bp = saved_bp, .bp_valid = true,
	};
	hybrid__walk(h, j->space, &regs, sample->tail_len ? &j->tail : &j->stack, h->walked,
		     HYBRID_TAIL_MAX_FRAMES, &result);
	if (result.end == UNWIND_END_COPY_SHORT)
		return finish_from_thread(j, out, added);
	if (result.end != UNWIND_END_COMPLETE)
		return false;
	for (uint32_t i = 1; i < result.nr_frames; i++)
		out[(*added)++] = h->walked[i];
	h->stats.fp_tails++;
	h->walk_base = result.last.sp;
	keep_tail(h, h->walked + 1, result.nr_frames - 1);
	return true;
}

/* The chain ends at the entry: by a walk from its end, or by its own last frame's rules
 * or entry code. */
static bool fp_chain_reaches_entry(const struct job *j, const struct unwind_frame *owner,
				   struct unwind_frame *out, uint32_t *added)
{
	const struct hprof_sample *sample = j->sample;
	uint64_t outermost = hprof_sample__user_ip(sample, sample->nr_user - 1);

	if (finish_fp_chain(j, owner, out, added))
		return true;
	if (starts_stack(j->space, outermost, sample->nr_user > 1))
		return true;
	/* The chain left the stack the sample ran on for the thread's own (SBCL runs Lisp on
	 * a stack of its own, entered from C), and the kernel copies no window of another
	 * stack: a chain that ends in libc's start routine there is as far as it can be
	 * followed, as with frame pointers only. */
	return sample->nr_user > 1 && (sample->flags & SAMPLE_FP_TAIL_OFF_STACK) &&
	       j->space->in_start_routine(j->space->walk.ctx, outermost);
}

/* Every frame of the FP chain is the walk's, and the walk went on past the chain's end:
 * this thread's chains can be trusted where they end there. */
static bool chain_matches_walk(const struct hprof_sample *sample,
			       const struct unwind_frame *walked, uint32_t nr_walked)
{
	if (sample->fp_tail_frame == 0 || nr_walked <= sample->nr_user)
		return false;
	for (uint32_t i = 0; i < sample->nr_user; i++) {
		if (walked[i].pc != hprof_sample__user_ip(sample, i))
			return false;
	}
	return true;
}

/* A walk over only the leaf's copy that ran through the chain's end: the frames beyond
 * are the ones learned for the thread, from the frame whose pc is the learned outermost
 * return address on. */
static bool reached_learned_tail(const struct job *j, uint32_t nr_walked,
				 struct unwind_frame *out, uint32_t *n)
{
	const struct hprof_sample *sample = j->sample;
	const struct thread_info *ti;
	uint32_t added = 0;

	if (!(sample->flags & SAMPLE_COPY_FP) ||
	    !(ti = thread_table__get(j->h->threads, sample->tid, 0)) || !ti->fp_tail)
		return false;
	for (uint32_t i = 1; i < nr_walked; i++) {
		if (j->h->walked[i].pc != ti->tail_ip)
			continue;
		if (!finish_from_thread(j, out + i + 1, &added))
			return false;
		*n = i + 1 + added;
		return true;
	}
	return false;
}

/* A walk that ran into the gap between a deep stack's copy from sp and the window below its
 * base (SAMPLE_COPY_BASE_WINDOW) goes on from the caller its thread's earlier walk found
 * there (deep_stacks__caller), frame by frame while their return addresses lie in the gap,
 * then over the window to the entry, meeting the learned walk's frames there
 * (deep_stacks__agrees). Frames are appended to out (n frames so far) and *result becomes
 * the last walk's; true when it reached the start. On false, out and *result are as they
 * were. */
static bool cross_gap(const struct job *j, struct unwind_frame *out, uint32_t *n,
		      struct unwind_result *result)
{
	const struct thread_info *ti = thread_table__get(j->h->threads, j->sample->tid, 0);
	struct unwind_result next = *result;
	uint32_t at = *n, met = 0;

	if (!ti || !ti->deep || !(j->sample->flags & SAMPLE_COPY_BASE_WINDOW))
		return false;
	for (int crossed = 0; crossed < THREAD_DEEP_WALK && next.end == UNWIND_END_COPY_SHORT;
	     crossed++) {
		struct unwind_regs caller, regs;

		if (at >= UNWIND_MAX_FRAMES ||
		    !deep_stacks__caller(&j->space->walk, &j->stack, ti, &out[at - 1], &next.last,
					 &caller))
			return false;
		/* from the call instruction, as for the chain's end (finish_fp_chain) */
		regs = caller;
		regs.ip = caller.ip - 1;
		hybrid__walk(j->h, j->space, &regs, &j->stack, out + at, UNWIND_MAX_FRAMES - at,
			     &next);
		if (!deep_stacks__agrees(&j->space->walk, ti, caller.sp, out + at, next.nr_frames,
					 &met))
			return false;
		out[at] = (struct unwind_frame){ .pc = caller.ip, .found = UNWIND_FOUND_LEARNED,
						 .depth = UNWIND_DEPTH_UNKNOWN };
		at += next.nr_frames;
	}
	/* the walk left the gap on the learned walk's frames, to the entry */
	if (next.end != UNWIND_END_COMPLETE || met == 0)
		return false;
	j->h->stats.gaps_crossed++;
	*n = at;
	*result = next;
	return true;
}

/* The DWARF walk over the sample's copy into out; where it stops short, the FP chain from
 * where the two join, finished by a DWARF walk from the chain's end. Returns the frame
 * count and sets *method and *reason. */
static uint32_t walk_dwarf(const struct job *j, struct unwind_frame *out,
			   enum stack_method *method, unsigned *reason)
{
	const struct hprof_sample *sample = j->sample;
	const struct unwind_regs regs = hybrid__sample_regs(sample);
	struct hybrid *h = j->h;
	const struct unwind_frame *last;
	struct unwind_frame owner;
	struct unwind_result result;
	uint32_t n, join, fp, tail;
	bool all_mapped;

	hybrid__walk(h, j->space, &regs, &j->stack, h->walked, UNWIND_MAX_FRAMES, &result);
	memcpy(out, h->walked, result.nr_frames * sizeof(*out));
	n = result.nr_frames;
	if (result.end == UNWIND_END_COPY_SHORT && cross_gap(j, out, &n, &result))
		memcpy(h->walked, out, n * sizeof(*out));
	if (result.end == UNWIND_END_NO_CFI && n > 0 &&
	    j->space->is_entry_code(j->space->walk.ctx, h->walked[n - 1].pc,
				    !h->walked[n - 1].exact))
		result.end = UNWIND_END_COMPLETE;
	*reason = result.end;
	*method = result.end == UNWIND_END_COMPLETE ? METHOD_DWARF : METHOD_TRUNCATED;
	if (result.end == UNWIND_END_COMPLETE && !result.started_stack) {
		h->walk_base = result.last.sp;
		if (!(sample->flags & SAMPLE_COPY_BASE_WINDOW) && !sample->interrupted_len)
			h->nr_deep = deep_stacks__to_learn(h->walked, n, sample->user_sp,
							   result.last.sp, h->deep);
		if (chain_matches_walk(sample, h->walked, n))
			keep_tail(h, h->walked + sample->nr_user, n - sample->nr_user);
	}
	if (!fp_may_continue(result.end))
		return n;
	if (reached_learned_tail(j, n, out, &n)) {
		*method = METHOD_DWARF_FP;
		return n;
	}
	last = &h->walked[result.nr_frames - 1];
	join = stitch_point(j, &result.last,
			    frame_uses_frame_pointer(j->space, last->pc, last->exact));
	if (join == 0 || !chain_keeps_frame_pointers(j, join))
		return n;
	fp = add_fp_frames(j, join, out + n, &all_mapped);
	if (all_mapped && cut_at_stack_end(j, out + n, join, &fp)) {
		*method = METHOD_DWARF_FP;
		return n + fp;
	}
	owner = record_owner(j, join, last);
	if (fp == 0 || !all_mapped || !fp_chain_reaches_entry(j, &owner, out + n + fp, &tail))
		return n;
	*method = METHOD_DWARF_FP;
	return n + fp + tail;
}

/* Picks the user stack: the FP chain when it reaches the entry and the leaf keeps a frame
 * pointer; else the DWARF walk, continued on the FP chain where it cannot go on; else the
 * FP chain finished by a DWARF walk from its end; else whatever the walk found, marked
 * truncated. Returns the frame count. */
static uint32_t pick_user_stack(const struct job *j, struct unwind_frame *out,
				enum stack_method *method, unsigned *reason)
{
	const struct hprof_sample *sample = j->sample;
	struct hybrid *h = j->h;
	bool all_mapped, fp_complete, leaf_fp;
	uint32_t n, walked, tail;
	struct unwind_frame owner;

	n = add_fp_frames(j, 0, out, &all_mapped);
	fp_complete = fp_chain_is_complete(j, all_mapped);
	if (fp_complete)
		h->stats.fp_complete++;
	leaf_fp = !h->dwarf || frame_uses_frame_pointer(j->space, sample->user_ip, true);
	if (fp_complete && leaf_fp && (!h->dwarf || chain_keeps_frame_pointers(j, 1))) {
		cut_at_stack_end(j, out, 0, &n);
		*method = METHOD_FP;
		return n;
	}
	/* Past here a chain that looks complete has a leaf whose CFI says it keeps no frame
	 * pointer: the chain skipped the leaf's caller, so it is not taken as it is. */
	if (!h->dwarf || sample->stack_len == 0) {
		*method = METHOD_TRUNCATED;
		*reason = !h->dwarf ? TRUNCATED_FP_ONLY
		        : (sample->flags & SAMPLE_DELTA_BASE_MISSING) ? TRUNCATED_DELTA_BASE_MISSING
							       : TRUNCATED_NO_COPY;
		return n;
	}
	walked = walk_dwarf(j, out + n, method, reason);
	if (*method != METHOD_TRUNCATED) {
		memmove(out, out + n, walked * sizeof(*out));
		return walked;
	}
	/* The walk could not start or join the chain: the chain alone, if the leaf agrees. */
	owner = record_owner(j, 0, NULL);
	if (leaf_fp && all_mapped && chain_keeps_frame_pointers(j, 1) &&
	    finish_fp_chain(j, &owner, out + n, &tail)) {
		*method = METHOD_DWARF_FP;
		return cut_at_stack_end(j, out, 0, &n) ? n : n + tail;
	}
	/* A complete-looking chain beats a walk that ran out of copy, even when the leaf keeps
	 * no frame pointer (a libc leaf called from code with frame pointers, copied leaf
	 * only): it then lacks the leaf's caller, but every frame it has is right. */
	if (fp_complete && chain_keeps_frame_pointers(j, 1)) {
		cut_at_stack_end(j, out, 0, &n);
		*method = METHOD_FP;
		return n;
	}
	memmove(out, out + n, walked * sizeof(*out));
	return walked;
}

/* Keeps what the sample taught about its thread, and tells the kernel whenever that
 * changed or the kernel did not use it (its entry went when the thread exited, or the LRU
 * map dropped it; tids come back):
 * where its stack ends, and where its FP chains end when they are right. A copy that the
 * learned facts made too short unlearns them. */
static void learn_thread(struct hybrid *h, const struct hprof_sample *sample,
			 enum stack_method method, unsigned reason)
{
	bool used = sample->flags & (SAMPLE_COPY_LEARNED | SAMPLE_COPY_FP | SAMPLE_COPY_BASE_WINDOW),
	     tell = false;
	struct thread_info *ti;

	/* Learned on replays too: their samples that copied only the leaf need it. */
	ti = thread_table__get(h->threads, sample->tid, method != METHOD_TRUNCATED);
	if (!ti)
		return;
	/* A truncated stack of a sample that copied only the leaf says nothing against the
	 * chain's end (the kernel checked it): it is the leaf that could not be walked. */
	if (method == METHOD_TRUNCATED) {
		if ((sample->flags & SAMPLE_COPY_LEARNED) && reason == UNWIND_END_COPY_SHORT &&
		    !(sample->flags & SAMPLE_COPY_BASE_WINDOW) && ti->base) {
			ti->base = 0;
			tell = true;
		}
	} else {
		if (h->walk_base && h->walk_base != ti->base) {
			ti->base = h->walk_base;
			tell = true;
		}
		if (h->tail_learned && !(sample->flags & SAMPLE_COPY_FP) &&
		    ti->fp_tail != sample->fp_tail_frame) {
			ti->fp_tail = sample->fp_tail_frame;
			ti->tail_ip = hprof_sample__user_ip(sample, sample->nr_user - 1);
			ti->nr_tail = h->nr_tail;
			memcpy(ti->tail, h->tail, h->nr_tail * sizeof(*h->tail));
			tell = true;
		}
		tell |= !used && (ti->base || ti->fp_tail);
		if (h->nr_deep && (ti->deep || (ti->deep = calloc(1, sizeof(*ti->deep)))))
			thread_deep_frames__merge(ti->deep, h->deep, h->nr_deep);
	}
	if (tell && h->thread_hook)
		h->thread_hook(h->thread_ctx, sample->tid, ti->base, ti->fp_tail, ti->tail_ip);
}

/* A complete stack's method, given how its frames were found: one found in code without
 * CFI makes it an analysis, one found by scanning a scan, whatever else it took. */
static enum stack_method nocfi_method(const struct unwind_frame *frames, uint32_t n,
				      enum stack_method method)
{
	uint32_t found = 0;

	for (uint32_t i = 0; i < n; i++)
		found |= 1u << frames[i].found;
	if (found & (1u << UNWIND_FOUND_SCAN))
		return METHOD_SCAN;
	if (found & (1u << UNWIND_FOUND_ANALYSIS | 1u << UNWIND_FOUND_FRAME_POINTER))
		return METHOD_ANALYSIS;
	return method;
}

uint32_t hybrid__user_stack(struct hybrid *h, const struct hybrid_space *space,
			    const struct hprof_sample *sample, struct unwind_frame *out,
			    enum stack_method *method, unsigned *reason)
{
	struct job j = {
		.h = h,
		.space = space,
		.sample = sample,
		.tail = { .bytes = hprof_sample__tail(sample), .base = sample->fp_tail_frame,
			  .len = sample->tail_len },
	};
	uint32_t n;

	hybrid__sample_copy(sample, &j.stack, &j.interrupted);

	h->walk_base = 0;
	h->tail_learned = false;
	h->nr_deep = 0;
	*reason = 0;
	n = pick_user_stack(&j, out, method, reason);
	if (*method != METHOD_TRUNCATED)
		*method = nocfi_method(out, n, *method);
	learn_thread(h, sample, *method, *reason);
	return n;
}

struct unwind_regs hybrid__sample_regs(const struct hprof_sample *sample)
{
	return (struct unwind_regs){
		.ip = sample->user_ip, .sp = sample->user_sp, .bp = sample->user_bp,
		.bx = sample->user_bx, .di = sample->user_di,
		.bp_valid = true, .bx_valid = true, .di_valid = true,
		.drap_valid = true,
		.drap = { sample->user_r10, 0, sample->user_r12, sample->user_r13, sample->user_r14,
			  sample->user_r15 },
	};
}

void hybrid__sample_copy(const struct hprof_sample *sample, struct stack_copy *stack,
			 struct stack_copy *interrupted)
{
	*interrupted = (struct stack_copy){
		.bytes = hprof_sample__interrupted(sample), .base = sample->interrupted_sp,
		.len = sample->interrupted_len, .holes = sample->interrupted_holes,
	};
	*stack = (struct stack_copy){
		.bytes = hprof_sample__stack(sample), .base = sample->user_sp,
		.len = sample->stack_len, .holes = sample->stack_holes,
		.more = sample->interrupted_len ? interrupted : NULL,
	};
}

const struct hybrid_stats *hybrid__stats(const struct hybrid *h)
{
	return &h->stats;
}

void hybrid__cache_stats(const struct hybrid *h, struct unwind_cache_stats *stats)
{
	unwind_cache__stats(h->cache, stats);
}

/* The kernel is told too: its entry for the tid, should the thread have had one, would be
 * claimed by the next thread given the tid if the thread never came back to claim it. */
void hybrid__forget_thread(struct hybrid *h, uint32_t tid)
{
	if (!thread_table__get(h->threads, tid, 0))
		return;
	thread_table__remove(h->threads, tid);
	if (h->thread_hook)
		h->thread_hook(h->thread_ctx, tid, 0, 0, 0);
}

size_t hybrid__thread_count(const struct hybrid *h)
{
	return thread_table__count(h->threads);
}

void hybrid__free(struct hybrid *h)
{
	if (!h)
		return;
	free(h->walked);
	unwind_cache__free(h->cache);
	thread_table__free(h->threads);
	free(h);
}
