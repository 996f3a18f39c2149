/* The frame step by the rules an analysis of the frame's code gave (code without CFI):
 * taken where the caller they give fits (caller_fits), else the steps after it try. */
#include "unwind/walk_internal.h"

/* A frame no larger than this: a default thread stack. */
#define MAX_FRAME_BYTES (8ull << 20)

/* The CFA the rules give lies off the stack being walked: at or below sp, where no
 * caller's frame is (a stack only grows down), or further above it than any one frame
 * reaches. rbp held another stack's address: BEAM's runtime calls return through it to
 * the Erlang process's own stack, in its heap. A CFA just above the copy, or in a hole, is
 * this stack's, deeper than what was copied: a scan there would read only the frame's own
 * stale words. */
static bool cfa_off_stack(const struct cached_rules *rules, const struct frame_regs *regs)
{
	uint64_t cfa;

	if (rules->cfa == UNWIND_CFA_BP_OFFSET && regs->bp_valid)
		cfa = regs->bp + (uint64_t)rules->cfa_offset;
	else if (rules->cfa == UNWIND_CFA_SP_OFFSET)
		cfa = regs->sp + (uint64_t)rules->cfa_offset;
	else
		return false;
	return cfa <= regs->sp || cfa - regs->sp > MAX_FRAME_BYTES;
}

/* The rules were stepped (stepped: how it went) to a caller that did not fit, or could
 * not be stepped: the frame record and the scan try next, as for code the analysis found
 * nothing in. Where the rules could not be stepped because their CFA is off the stack
 * (cfa_off_stack), a scan only: the rules said where the return address is, and a frame
 * record at rbp would be a guess they contradict; for any other failure the walk stops
 * with the step's own reason (a copy too short stays one), as it does when no later step
 * finds the caller. */
static enum step_result rejected(struct walker *w, struct walk_frame *f, enum unwind_end stepped)
{
	w->cache->stats.analysis_rejected++;
	if (stepped != UNWIND_END_COMPLETE && !cfa_off_stack(f->rules, &f->regs)) {
		f->end = stepped;
		return STEP_STOP;
	}
	f->rejected = stepped;
	f->no_frame_record = stepped != UNWIND_END_COMPLETE;
	/* The walk took plain rules in its straight line and stopped where they led when
	 * nothing else found the caller; kept so, for the same stacks. */
	f->stop_at_rejected = stepped == UNWIND_END_COMPLETE && is_plain(f->rules);
	f->rejected_caller = f->caller;
	return STEP_REJECTED;
}

/* A caller at its callee's sp (a return address moved up into the caller's frame or
 * popped into a register: sljit's fast calls, nested as deep as SAME_SP_FRAMES - 1) is
 * taken while its pc is none of the frames' at that sp: frames there could otherwise name
 * each other forever. */
static bool another_at_same_sp(struct walker *w, const struct walk_frame *f)
{
	if (w->same_sp != f->regs.sp) {
		w->same_sp = f->regs.sp;
		w->same_sp_pcs[0] = f->regs.ip;
		w->nr_same_sp = 1;
	}
	for (uint32_t i = 0; i < w->nr_same_sp; i++) {
		if (w->same_sp_pcs[i] == f->caller.ip)
			return false;
	}
	if (w->nr_same_sp == SAME_SP_FRAMES)
		return false;
	w->same_sp_pcs[w->nr_same_sp++] = f->caller.ip;
	return true;
}

/* Where a step's return address was, when the code had moved it (sljit's fast calls). */
static void count_moved(struct walker *w, const struct cached_rules *rules)
{
	struct unwind_cache_stats *stats = &w->cache->stats;

	if (w->first_is_return) /* a trial walk (trial_walk): its steps are not the stack's */
		return;
	if (rules->ra == UNWIND_RA_AT_CFA && rules->ra_offset >= 0)
		stats->analysis_ra_moved++;
	else if (rules->ra == UNWIND_RA_REGISTER && ra_from_top_word(w, rules))
		stats->analysis_ra_top_word++;
	else if (rules->ra == UNWIND_RA_REGISTER)
		stats->analysis_ra_register++;
}

/* The frame's rules by analysis: cached in its slot, or found now (analysis_rules, which
 * also gives the rules of a runtime's stack end: no frame above). None: rejected. */
enum step_result analysis_step(struct walker *w, struct walk_frame *f)
{
	struct cached_rules *rules = f->rules;
	bool ra_undefined, signal;
	enum unwind_end end;

	if (!rules || rules->found != UNWIND_FOUND_ANALYSIS) {
		rules = analysis_rules(w, w->space->id, f->regs.ip, f->exact, rules);
		if (!rules)
			return STEP_REJECTED;
		f->rules = rules;
	}
	/* a return address in a register: only the sampled frame's registers are known (a
	 * frame a signal interrupted gets no rules, as a return address does: analysis_rules) */
	if (rules->ra == UNWIND_RA_REGISTER && !f->leaf)
		return STEP_REJECTED;
	f->analysed = true;
	end = step(w, rules, &f->regs, f->leaf, &f->caller, &ra_undefined, &signal);
	if (f->leaf && end == UNWIND_END_COMPLETE && rules->cfa == UNWIND_CFA_SP_OFFSET &&
	    rules->cfa_offset == 8)
		w->drap_caller_sp = f->caller.sp;
	if (end == UNWIND_END_COMPLETE && ra_undefined)
		return STEP_OUTERMOST;
	if (end != UNWIND_END_COMPLETE ||
	    !caller_fits(w, f, rules, &f->caller, UNWIND_FOUND_ANALYSIS))
		return rejected(w, f, end);
	if (f->caller.sp == f->regs.sp && !another_at_same_sp(w, f)) {
		f->end = UNWIND_END_BAD_FRAME;
		return STEP_STOP;
	}
	f->caller_exact = false;
	count_moved(w, rules);
	return STEP_FOUND;
}
