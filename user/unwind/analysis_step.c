/* A step by the rules an analysis of the frame's code gave: taken where its return
 * address follows a call, else the frame record or a scan instead. */
#include "unwind/walk_internal.h"

#include "unwind/x86_code.h"

/* The return address an analysis gave (caller->ip, the caller's frame at caller->sp)
 * follows a call: known from the caller's cache slot (the walk looks it up next anyway),
 * else checked and remembered there. One into code without CFI that follows no call is
 * taken where a walk from it reaches the stack's start: HotSpot's interpreter calls by
 * pushing its return entry's address and jumping. Compiled code, which has CFI, is
 * returned to after calls only. Only in a sampled stack's walk: trial walks share one
 * buffer. */
static bool return_address_checked(struct walker *w, uint64_t id, struct cached_rules *rules,
				   const struct frame_regs *caller)
{
	struct cached_rules *slot = caller_rules(w, id, rules, caller->ip - 1);
	uint64_t target;

	if (slot && slot->ra_checked)
		return true;
	if (follows_call(w, caller->ip, &target) == CODE_CALL_NONE) {
		/* a failure is not remembered (a copy cut short fails where the next may not),
		 * so a walk tries a few: each may cost a walk of the whole stack */
		if (w->first_is_return || (slot && slot->found == UNWIND_FOUND_CFI) ||
		    w->ra_trials == 0)
			return false;
		w->ra_trials--;
		if (trial_walk(w, caller->ip, caller->sp, caller, true, NULL, NULL) !=
		    TRIAL_REACHES_START)
			return false;
		w->cache->stats.analysis_ra_by_walk++;
		/* the trial walk may have filled the slot with another pc's rules */
		slot = caller_rules(w, id, rules, caller->ip - 1);
	}
	if (slot)
		slot->ra_checked = true;
	return true;
}

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

/* Where an analysis's rules gave no caller that follows a call: the frame record or a scan,
 * as for code the analysis found nothing in. Where they could not be stepped because their
 * CFA is off the stack (cfa_off_stack), a scan only: the rules said where the return
 * address is, and a frame record at rbp would be a guess they contradict. Otherwise, and
 * when neither finds the caller, the step's own reason stands (a copy too short stays
 * one). */
static enum unwind_end fallback_step(struct walker *w, const struct cached_rules *rules,
				     struct frame_regs *cur, bool exact, uint8_t *found,
				     enum unwind_end stepped)
{
	enum unwind_end end;

	if (stepped != UNWIND_END_COMPLETE && !cfa_off_stack(rules, cur))
		return stepped;
	end = nocfi_step_by(w, cur, exact, found, stepped == UNWIND_END_COMPLETE);
	return end != UNWIND_END_COMPLETE && stepped != UNWIND_END_COMPLETE ? stepped : end;
}

/* A step by the rules an analysis gave, whose return address must follow a call; else
 * fallback_step. *outermost: the rules say no frame is above (a runtime's stack end). */

enum unwind_end analysis_step(struct walker *w, uint64_t id, struct cached_rules *rules,
				     struct frame_regs *cur, bool leaf, bool exact, uint8_t *found,
				     bool *outermost)
{
	struct frame_regs caller;
	bool ra_undefined, signal;
	enum unwind_end end;

	/* plain rules never come here: the walk's loop steps them and calls analysed_return */
	end = step(w, rules, cur, leaf, &caller, &ra_undefined, &signal);
	if (leaf && end == UNWIND_END_COMPLETE && rules->cfa == UNWIND_CFA_SP_OFFSET &&
	    rules->cfa_offset == 8)
		w->drap_caller_sp = caller.sp;
	/* where a runtime's stacks end (analysis_rules): the walk ends, complete */
	*outermost = end == UNWIND_END_COMPLETE && ra_undefined;
	if (*outermost)
		return end;
	if (end == UNWIND_END_COMPLETE && !ra_undefined &&
	    (!w->space->call_before || (return_address_checked(w, id, rules, &caller) &&
					(!rules->via_jump || tail_call_fits(w, cur, exact, caller.ip))))) {
		*cur = caller;
		return end;
	}
	w->cache->stats.analysis_rejected++;
	return fallback_step(w, rules, cur, exact, found, end);
}

/* After a plain step by an analysis's rules from callee to *ip (*end: how it went): true
 * when it was stepped and the return address follows a call; else the frame record or a
 * scan from callee, true when one found the caller (into *ip.., *found), false with *end
 * set when none did. Out of line: the walk's loop only tests for it. */
__attribute__((noinline)) bool
analysed_return(struct walker *w, uint64_t id, struct cached_rules *rules, struct frame_regs callee,
		bool exact, uint64_t *ip, uint64_t *sp, uint64_t *bp, bool *bp_valid, uint8_t *found,
		enum unwind_end *end)
{
	const struct cached_rules *known;
	struct frame_regs caller;

	if (*end == UNWIND_END_COMPLETE) {
		/* the common case first, before the caller's registers are gathered */
		known = caller_rules(w, id, rules, *ip - 1);
		if (!w->space->call_before || (known && known->ra_checked))
			return true;
		caller = (struct frame_regs){ *ip, *sp, *bp, BX_LOST, *bp_valid };
		if (return_address_checked(w, id, rules, &caller))
			return true;
	}
	w->cache->stats.analysis_rejected++;
	*end = fallback_step(w, rules, &callee, exact, found, *end);
	if (*end != UNWIND_END_COMPLETE)
		return false;
	*ip = callee.ip;
	*sp = callee.sp;
	*bp = callee.bp;
	*bp_valid = callee.bp_valid;
	return true;
}
