/* Judging a candidate caller: what the process's code says of a return address (whether
 * it follows a call, and into which function; whether it is where a stack ends), trial
 * walks from it to the stack's start, and caller_fits, the one judge the frame steps ask. */
#include "unwind/walk_internal.h"

#include <errno.h>

#include "unwind/x86_code.h"

/* ra is in the process's executable memory and follows a call instruction; *target is
 * the call's, for a direct call (0 otherwise). CODE_CALL_UNREADABLE where ra is in JIT code
 * no longer there to read. */
enum code_call follows_call(struct walker *w, uint64_t ra, uint64_t *target)
{
	const struct unwind_map *map;
	int call;

	*target = 0;
	if (find_map(&w->maps, w->space, ra, &map) == -ENOENT)
		return CODE_CALL_NONE;
	call = w->space->code.call_before(w->space->ctx, ra, target);
	return code_call__is_call(call) || call == CODE_CALL_UNREADABLE ? call : CODE_CALL_NONE;
}

/* ra, an address in the process's code, is a return address where a stack ends though no
 * call precedes it (unwind_is_stack_end_fn). */
bool is_stack_end(struct walker *w, uint64_t ra)
{
	const struct unwind_symbols *symbols = &w->space->symbols;
	const struct unwind_map *map;

	return symbols->is_stack_end && find_map(&w->maps, w->space, ra, &map) != -ENOENT &&
	       symbols->is_stack_end(w->space->ctx, ra);
}

/* Where the function holding pc starts, by its symbol, else by its FDE: 0 or -ENOENT. */
static int known_function_start(struct walker *w, uint64_t pc, uint64_t *start)
{
	const struct unwind_symbols *symbols = &w->space->symbols;
	const struct unwind_map *map;

	if (symbols->function_start && symbols->function_start(w->space->ctx, pc, start) == 0)
		return 0;
	if (find_map(&w->maps, w->space, pc, &map) != 0 ||
	    unwind_table__function_start(map->table, pc - map->bias, start) != 0)
		return -ENOENT;
	*start += map->bias;
	return 0;
}

/* A stale return address: ra's function was called from the frame below it, which has
 * called another one since. The walk from ra then finds that frame's return address after
 * a direct call to some function's start that is not ra's function (main called the clock
 * and then the JIT code's caller, into the same stack slot). The target must be a symbol's
 * start: a call into a stub (a PLT entry, which an FDE may start at) tells nothing. A
 * function that ra's reached by a tail call, or ra in a function's split-off part
 * (F.cold), is rejected too: only candidates the scan is not sure of are judged so. */
bool caller_called_elsewhere(struct walker *w, uint64_t ra, uint64_t caller_ra)
{
	uint64_t target, start, target_start;

	if (!w->space->symbols.function_start ||
	    follows_call(w, caller_ra, &target) != CODE_CALL_DIRECT)
		return false;
	if (known_function_start(w, code_at(ra, false), &start) != 0 || target == start)
		return false;
	return w->space->symbols.function_start(w->space->ctx, target, &target_start) == 0 &&
	       target_start == target;
}

/* The return address of rules from a tail-call exit (via_jump) is the frame's: it follows
 * a call through a pointer, or a direct call of the frame's function, or of one that jumps
 * on at the depth a tail call leaves (8: a PLT stub, a function that tail-calls this one).
 * Code that another function jumped to and runs in that one's frame (GHC's Haskell code
 * under StgRun) jumps on too; the word at its rsp is the other's scratch, and a return
 * address an earlier call left there follows a call of something else. */
static bool tail_call_fits(struct walker *w, const struct frame_regs *frame, bool exact,
			   uint64_t ra)
{
	uint64_t target, start, at[SCAN_JUMPS];
	int32_t depths[SCAN_JUMPS];
	enum code_call call = follows_call(w, ra, &target);
	uint32_t nr;

	if (call != CODE_CALL_DIRECT)
		return true; /* through a pointer; no call at all is return_address_checked's */
	if (known_function_start(w, code_at(frame->ip, exact), &start) == 0 &&
	    start == target)
		return true;
	nr = w->space->code.jumps
		     ? w->space->code.jumps(w->space->ctx, target, true, depths, at, SCAN_JUMPS)
			     : 0;
	for (uint32_t i = 0; i < nr; i++) {
		if (depths[i] == 8)
			return true;
	}
	return false;
}

/* A zero return address ends a stack only in a frame that can be its outermost: a
 * binary's entry code, or where a runtime's stack ends (BEAM's exit address). Anywhere
 * else it is a word the walk should not have reached: a frame found at the wrong CFA (a
 * realigned frame's caller started at its frame record, say) reads a zero from the middle
 * of a frame, and a stack cut there would pass for complete. Threads and programs start in
 * frames whose CFI marks the return address undefined (clone3, _start). */
bool may_be_outermost(const struct walker *w, const struct unwind_frame *f)
{
	const struct unwind_space *space = w->space;

	return space->symbols.is_entry_code &&
	       space->symbols.is_entry_code(space->ctx, f->pc, !f->exact);
}

/* The trial walk's n frames agree with the calls before their return addresses: no frame's
 * caller called, directly, another function's start than the frame's own. A stale return
 * address's walk meets its first disagreement where its stale frames join the live ones
 * (main called the clock, then the function being scanned: the clock's frames are stale,
 * and main's return address there follows the later call). A tail call makes a right walk
 * disagree too, so this only ranks candidates that both reach the start. */
static bool trial_agrees(struct walker *w, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		if (caller_called_elsewhere(w, w->cache->trial[i - 1].pc, w->cache->trial[i].pc))
			return false;
	}
	return true;
}

/* Whether the walk from a candidate return address, found at sp - 8, reaches the stack's
 * start (an entry: a return address the CFI leaves undefined, or entry code), and, for a
 * candidate the scan is not sure of, whether its frame's caller called its function. One
 * that reaches the start sets *agrees (trial_agrees) and *nr_frames, when given. */
enum trial trial_walk(struct walker *w, uint64_t ra, uint64_t sp,
			     const struct frame_regs *regs, bool sure, bool *agrees,
			     uint32_t *nr_frames)
{
	const struct unwind_regs from = { .ip = ra, .sp = sp, .bp = regs->bp,
					  .bp_valid = regs->bp_valid };
	struct unwind_result result;
	const struct unwind_frame *last;

	w->walk_from(&from, w->view->copy, w->space, w->cache, w->cache->trial, UNWIND_MAX_FRAMES,
		  &result, true);
	if (!sure && result.nr_frames >= 2 &&
	    caller_called_elsewhere(w, ra, w->cache->trial[1].pc))
		return TRIAL_STALE;
	/* A zero return address ends a walk, but is no entry: a stale word that follows an
	 * indirect call, in a frame whose return address slot holds 0 (QEMU's TCG frame keeps
	 * 1 KiB of temporaries), would pass for the stack's start. */
	last = &w->cache->trial[result.nr_frames - 1];
	/* Nor is a return address to a function's start, where a stack some code started by
	 * hand ends (makecontext): a stale candidate's walk meets one in the middle of a
	 * stack (a mono thread's) as easily as a right one meets clone3. */
	if (result.started_stack)
		return TRIAL_STOPS;
	if (!(result.end == UNWIND_END_COMPLETE && result.last.ip != 0) &&
	    !(result.end == UNWIND_END_NO_CFI && w->space->symbols.is_entry_code &&
	      w->space->symbols.is_entry_code(w->space->ctx, last->pc, !last->exact)))
		return TRIAL_STOPS;
	if (agrees)
		*agrees = trial_agrees(w, result.nr_frames);
	if (nr_frames)
		*nr_frames = result.nr_frames;
	return TRIAL_REACHES_START;
}

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
	struct cached_rules *slot = caller_rules(w, id, rules, code_at(caller->ip, false));
	uint64_t target;

	if (slot && slot->ra_checked)
		return true;
	if (!code_call__is_call(follows_call(w, caller->ip, &target))) {
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
		slot = caller_rules(w, id, rules, code_at(caller->ip, false));
	}
	if (slot)
		slot->ra_checked = true;
	return true;
}

/* Whether caller, found for the frame f by the step of trust by, may be its caller: the
 * one judge of a candidate caller, for every step that has one.
 * - CFI rows are trusted as they are.
 * - An analysis's rules: their return address follows a call (return_address_checked),
 *   and fits a tail call where they come from a jump out of the function (tail_call_fits).
 * - A frame record: its return address follows a call.
 * - A scan ranks its candidates by their calls and trial walks (scan.c), which a single
 *   yes or no cannot carry: it asks none here.
 * Without call_before, the process tells nothing about its code, and every caller fits. */
bool caller_fits(struct walker *w, const struct walk_frame *f, struct cached_rules *rules,
		 const struct frame_regs *caller, enum unwind_found by)
{
	uint64_t target;

	if (!w->space->code.call_before)
		return true;
	switch (by) {
	case UNWIND_FOUND_ANALYSIS:
		return return_address_checked(w, w->space->id, rules, caller) &&
		       (!rules->via_jump || tail_call_fits(w, &f->regs, f->exact, caller->ip));
	case UNWIND_FOUND_FRAME_POINTER:
		return code_call__is_call(follows_call(w, caller->ip, &target));
	default:
		return true;
	}
}
