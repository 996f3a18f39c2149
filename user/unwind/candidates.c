/* The candidate user stacks hybrid.c picks from, each built with its verdict: the kernel's
 * FP chain as it is, the DWARF walk over the copy, the walk finished with the frames learned
 * for the thread, the walk continued on the chain where the two join, and the chain
 * finished by a walk from its end. The checks here decide whether a chain is right and where
 * a walk and a chain join. */
#include "unwind/candidates.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/unwind_table.h"
#include "unwind/deep_stacks.h"
#include "unwind/x86_code.h"

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
	if (exact && walk->symbols.is_function_entry &&
	    walk->symbols.is_function_entry(walk->ctx, ip))
		return false;
	/* a return address's rules are its own: the analysis takes it as it is */
	if (walk->code.analyze && walk->code.analyze(walk->ctx, ip, &code) == CODE_OK)
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
		if (cfa_is_not_bp(unwind__cfa_kind_at(&j->space->walk, j->tools->cache,
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

/* pc (or the call before a return address, caller) is in its binary's ELF entry code. */
static bool is_entry_code(const struct hybrid_space *space, uint64_t pc, bool caller)
{
	const struct unwind_symbols *symbols = &space->walk.symbols;

	return symbols->is_entry_code && symbols->is_entry_code(space->walk.ctx, pc, caller);
}

/* The frame (pc, or the call before a return address) is where a stack starts: its rows
 * say it has no return address (_start, a thread's clone3), or it is ELF entry code,
 * which may have no CFI at all (the dynamic loader's _start). */
static bool starts_stack(const struct hybrid_space *space, uint64_t pc, bool caller)
{
	struct unwind_rules rules;

	if (rules_at(space, caller ? pc - 1 : pc, &rules) && rules.ra == UNWIND_RA_UNDEFINED)
		return true;
	return is_entry_code(space, pc, caller);
}

/* The chain reached the outermost frame through executable mappings only: it ends at
 * the entry itself or, with frame pointers only, in the start-up code between the entry
 * and main or a thread's start routine (libc's, built without frame pointers), the best a
 * right chain can reach there: without a stack copy nothing can be walked beyond it, so
 * only its symbol can tell. With DWARF, the walk goes on from there to the entry. */
static bool fp_chain_is_complete(const struct job *j)
{
	const struct hprof_sample *s = j->sample;
	uint64_t outermost = hprof_sample__user_ip(s, s->nr_user - 1);
	bool caller = s->nr_user > 1;

	if (!j->chain_mapped)
		return false;
	if (starts_stack(j->space, outermost, caller))
		return true;
	return !j->tools->dwarf && caller && j->space->in_start_routine(j->space->walk.ctx, outermost);
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
	return end == UNWIND_END_COPY_SHORT || end == UNWIND_END_COPY_HOLE ||
	       end == UNWIND_END_NO_CFI ||
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

/* The frames beyond a right FP chain's end, for the thread's later samples: libc's start-up
 * code, a few frames; a longer path is not one. */
static void teach_tail(struct candidate *c, const struct unwind_frame *frames, uint32_t nr)
{
	if (nr > HPROF_MAX_LEARNED_TAIL)
		return;
	c->lesson.tail = frames;
	c->lesson.nr_tail = nr;
}

/* A sample whose chain ended where its thread's right chains end carries no copy of the
 * stack there (the kernel saw to that): the frames beyond are the ones learned. */
static bool finish_from_thread(const struct job *j, struct unwind_frame *out, uint32_t *added,
			       struct candidate *c)
{
	const struct hprof_sample *sample = j->sample;
	const struct thread_info *ti = thread_table__get(j->tools->threads, sample->tid, 0);

	if (!ti || ti->fp_tail != sample->fp_tail_frame ||
	    ti->tail_ip != hprof_sample__user_ip(sample, sample->nr_user - 1))
		return false;
	memcpy(out + *added, ti->tail, ti->nr_tail * sizeof(*out));
	*added += ti->nr_tail;
	c->finish = FINISH_LEARNED;
	return true;
}

/* Libc's start-up code keeps no frame pointers, so an FP chain ends in it (main's caller,
 * a thread's start routine) rather than at the entry. The DWARF walk goes on from the
 * chain's outermost frame, whose registers the frame record gives: the caller's sp is
 * just above the record, its rbp the value saved in it. Appends the frames beyond that
 * frame to out and returns true when the walk reaches the entry. */
static bool finish_fp_chain(const struct job *j, const struct unwind_frame *owner,
			    struct unwind_frame *out, uint32_t *added, struct candidate *c)
{
	const struct hprof_sample *sample = j->sample;
	uint64_t record = sample->fp_tail_frame, saved_bp, ra, caller_sp;
	uint64_t outermost = hprof_sample__user_ip(sample, sample->nr_user - 1);
	struct candidate_tools *t = j->tools;
	struct unwind_result result;
	struct unwind_regs regs;

	*added = 0;
	if (record == 0 || sample->nr_user < 2)
		return false;
	/* The kernel copied only the leaf: the thread's frames beyond are known. */
	if (sample->flags & SAMPLE_COPY_FP)
		return finish_from_thread(j, out, added, c);
	if (!job__read_u64(j, record, &saved_bp) || !job__read_u64(j, record + 8, &ra))
		return finish_from_thread(j, out, added, c);
	if (ra != outermost || !caller_sp_above_record(j, owner, record, &caller_sp))
		return false;
	/* A return address: its frame's rules are the call instruction's, at ra - 1. */
	regs = (struct unwind_regs){
		.ip = outermost - 1, .sp = caller_sp, .bp = saved_bp, .bp_valid = true,
	};
	candidates__walk(t, j->space, &regs, sample->tail_len ? &j->tail : &j->stack,
			 t->tail_walked, HYBRID_TAIL_MAX_FRAMES, &result);
	if (result.end == UNWIND_END_COPY_SHORT)
		return finish_from_thread(j, out, added, c);
	if (result.end != UNWIND_END_COMPLETE)
		return false;
	for (uint32_t i = 1; i < result.nr_frames; i++)
		out[(*added)++] = t->tail_walked[i];
	c->finish = FINISH_WALKED;
	c->lesson.base = result.last.sp;
	teach_tail(c, t->tail_walked + 1, result.nr_frames - 1);
	return true;
}

/* The chain ends at the entry: by a walk from its end, or by its own last frame's rules
 * or entry code. */
static bool fp_chain_reaches_entry(const struct job *j, const struct unwind_frame *owner,
				   struct unwind_frame *out, uint32_t *added, struct candidate *c)
{
	const struct hprof_sample *sample = j->sample;
	uint64_t outermost = hprof_sample__user_ip(sample, sample->nr_user - 1);

	if (finish_fp_chain(j, owner, out, added, c))
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
				 struct unwind_frame *out, uint32_t *n, struct candidate *c)
{
	const struct hprof_sample *sample = j->sample;
	const struct thread_info *ti;
	uint32_t added = 0;

	if (!(sample->flags & SAMPLE_COPY_FP) ||
	    !(ti = thread_table__get(j->tools->threads, sample->tid, 0)) || !ti->fp_tail)
		return false;
	for (uint32_t i = 1; i < nr_walked; i++) {
		if (out[i].pc != ti->tail_ip)
			continue;
		if (!finish_from_thread(j, out + i + 1, &added, c))
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
		      struct unwind_result *result, struct candidate *c)
{
	const struct thread_info *ti = thread_table__get(j->tools->threads, j->sample->tid, 0);
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
		candidates__walk(j->tools, j->space, &regs, &j->stack, out + at,
				 UNWIND_MAX_FRAMES - at, &next);
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
	c->crossed_gap = true;
	*n = at;
	*result = next;
	return true;
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

int candidate_tools__init(struct candidate_tools *t, bool dwarf)
{
	*t = (struct candidate_tools){ .dwarf = dwarf, .walks_to_trace = walks_to_trace() };
	t->walked = calloc(HYBRID_MAX_FRAMES, sizeof(*t->walked));
	t->tail_walked = calloc(HYBRID_TAIL_MAX_FRAMES, sizeof(*t->tail_walked));
	t->cache = unwind_cache__new();
	t->threads = thread_table__new();
	return t->walked && t->tail_walked && t->cache && t->threads ? 0 : -ENOMEM;
}

void candidate_tools__release(struct candidate_tools *t)
{
	free(t->walked);
	free(t->tail_walked);
	unwind_cache__free(t->cache);
	thread_table__free(t->threads);
}

void candidates__walk(struct candidate_tools *t, const struct hybrid_space *space,
		      const struct unwind_regs *regs, const struct stack_copy *copy,
		      struct unwind_frame *frames, uint32_t max, struct unwind_result *result)
{
	if (t->walks_to_trace) {
		t->walks_to_trace--;
		fprintf(stderr, "unwind: pid %u\n", space->pid);
		unwind__trace(regs, copy, &space->walk, t->cache, stderr);
	}
	unwind__walk(regs, copy, &space->walk, t->cache, frames, max, result);
}

void candidates__start(struct job *j, struct unwind_frame *out)
{
	j->chain = out;
	j->nr_chain = add_fp_frames(j, 0, out, &j->chain_mapped);
	j->chain_complete = fp_chain_is_complete(j);
	j->leaf_fp = !j->tools->dwarf ||
		     frame_uses_frame_pointer(j->space, j->sample->user_ip, true);
	j->records_fp = -1;
}

/* Every frame record of the chain is its frame's by the rows (chain_keeps_frame_pointers
 * from the leaf's caller on), checked once a sample; taken on trust without DWARF. */
static bool records_keep_fp(struct job *j)
{
	if (!j->tools->dwarf)
		return true;
	if (j->records_fp < 0)
		j->records_fp = chain_keeps_frame_pointers(j, 1);
	return j->records_fp;
}

static void take_chain(const struct job *j, struct candidate *c, enum stack_method method)
{
	c->frames = j->chain;
	c->n = j->nr_chain;
	c->method = method;
	c->chain_at = 0;
	c->chain_from = 0;
	c->chain_len = j->nr_chain;
}

/* Complete when the chain reaches the stack's start, the leaf keeps a frame pointer, and so
 * does every frame whose record gave its caller. */
bool candidate__chain(struct job *j, struct candidate *c)
{
	take_chain(j, c, METHOD_FP);
	return j->chain_complete && j->leaf_fp && records_keep_fp(j);
}

/* What a complete walk from the sample's own registers teaches: where the thread's stack
 * ends, a deep stack's frames (only from a copy of the whole stack from sp), and the frames
 * beyond the FP chain's end when the chain is the walk's. */
static void teach_walk(const struct job *j, struct candidate *c)
{
	const struct hprof_sample *sample = j->sample;

	c->lesson.base = j->walk.last.sp;
	if (!(sample->flags & SAMPLE_COPY_BASE_WINDOW) && !sample->interrupted_len) {
		c->lesson.whole = c->frames;
		c->lesson.nr_whole = c->n;
	}
	if (chain_matches_walk(sample, c->frames, c->n))
		teach_tail(c, c->frames + sample->nr_user, c->n - sample->nr_user);
}

/* The walk over the copy, across a deep stack's gap where it ran into one; complete when it
 * reached the start, or stopped without CFI in entry code. Keeps the walk in the job for the
 * candidates that extend it. */
bool candidate__walk(struct job *j, struct candidate *c)
{
	struct unwind_frame *walked = j->tools->walked;
	struct unwind_result *result = &j->walk;
	uint32_t n;

	candidates__walk(j->tools, j->space, &j->regs, &j->stack, walked, UNWIND_MAX_FRAMES,
			 result);
	n = result->nr_frames;
	if (result->end == UNWIND_END_COPY_SHORT)
		cross_gap(j, walked, &n, result, c);
	if (result->end == UNWIND_END_NO_CFI && n > 0 &&
	    is_entry_code(j->space, walked[n - 1].pc, !walked[n - 1].exact))
		result->end = UNWIND_END_COMPLETE;
	j->has_walk = true;
	j->nr_walked = n;
	c->frames = walked;
	c->n = n;
	c->method = METHOD_DWARF;
	if (result->end != UNWIND_END_COMPLETE)
		return false;
	if (!result->started_stack)
		teach_walk(j, c);
	return true;
}

/* A walk that stopped where the FP chain may go on, over a copy of only the leaf's stack,
 * through the return address the thread's right chains end at: complete with the frames
 * learned beyond it. Those overwrite the walk's frames past that one, in tools->walked: this
 * candidate wins whenever it is complete. */
bool candidate__walk_learned_tail(struct job *j, struct candidate *c)
{
	uint32_t n;

	if (!j->has_walk || !fp_may_continue(j->walk.end) ||
	    !reached_learned_tail(j, j->nr_walked, j->tools->walked, &n, c))
		return false;
	c->frames = j->tools->walked;
	c->n = n;
	c->method = METHOD_DWARF_FP;
	return true;
}

/* A walk that stopped where the FP chain may go on, continued on the chain from where the
 * two join: complete when the chain then reaches a runtime's stack end or the stack's start
 * (finished by a walk from its end where it ends in libc's start-up code). */
bool candidate__walk_then_chain(struct job *j, struct candidate *c)
{
	struct unwind_frame *walked = j->tools->walked, owner;
	uint32_t n = j->nr_walked, join, fp, tail;
	const struct unwind_frame *last;
	bool all_mapped;

	if (!j->has_walk || n == 0 || !fp_may_continue(j->walk.end))
		return false;
	last = &walked[n - 1];
	join = stitch_point(j, &j->walk.last,
			    frame_uses_frame_pointer(j->space, last->pc, last->exact));
	if (join == 0 || !chain_keeps_frame_pointers(j, join))
		return false;
	fp = add_fp_frames(j, join, walked + n, &all_mapped);
	c->frames = walked;
	c->n = n + fp;
	c->method = METHOD_DWARF_FP;
	c->chain_at = n;
	c->chain_from = join;
	c->chain_len = fp;
	if (all_mapped && candidate__stack_end(j, c) != NO_CHAIN)
		return true;
	owner = record_owner(j, join, last);
	if (fp == 0 || !all_mapped || !fp_chain_reaches_entry(j, &owner, walked + n + fp, &tail, c))
		return false;
	c->n += tail;
	return true;
}

/* The chain, where the leaf and every frame record keep frame pointers, finished by a walk
 * from its end (or the thread's learned frames): complete when that reaches the start. */
bool candidate__chain_then_walk(struct job *j, struct candidate *c)
{
	struct unwind_frame owner = record_owner(j, 0, NULL);
	uint32_t tail;

	if (!j->leaf_fp || !j->chain_mapped || !records_keep_fp(j) ||
	    !finish_fp_chain(j, &owner, j->chain + j->nr_chain, &tail, c))
		return false;
	take_chain(j, c, METHOD_DWARF_FP);
	c->n += tail;
	return true;
}

/* The chain as it is, though the leaf keeps no frame pointer (a libc leaf called from code
 * with frame pointers): complete when it reaches the start through frame records that are
 * their frames'. It lacks the leaf's caller, but every frame it has is right. */
bool candidate__chain_lacking_leaf_caller(struct job *j, struct candidate *c)
{
	take_chain(j, c, METHOD_FP);
	return j->chain_complete && records_keep_fp(j);
}

void candidate__chain_as_is(struct job *j, struct candidate *c)
{
	take_chain(j, c, METHOD_TRUNCATED);
}

void candidate__walk_as_is(struct job *j, struct candidate *c)
{
	c->frames = j->tools->walked;
	c->n = j->nr_walked;
	c->method = METHOD_TRUNCATED;
}

/* Go's systemstack and mcall move rsp to the thread's g0 stack but leave rbp, so the frame
 * records lead on into the goroutine's stack, past a frame they skip: a chain ends at a
 * return address where a runtime's stack ends, as the DWARF walk does. The leaf's pc is no
 * return address. */
uint32_t candidate__stack_end(const struct job *j, const struct candidate *c)
{
	const struct unwind_space *walk = &j->space->walk;

	if (c->chain_at == NO_CHAIN || !j->tools->dwarf || !walk->symbols.is_stack_end)
		return NO_CHAIN;
	for (uint32_t k = c->chain_from == 0 ? 1 : 0; k + 1 < c->chain_len; k++) {
		if (walk->symbols.is_stack_end(walk->ctx, c->frames[c->chain_at + k].pc))
			return k;
	}
	return NO_CHAIN;
}
