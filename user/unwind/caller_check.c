/* What the process's code says of a candidate caller: whether a return address follows a
 * call, and into which function; whether it is where a stack ends. */
#include "unwind/walk_internal.h"

#include <errno.h>

#include "unwind/x86_code.h"

/* ra is in the process's executable memory and follows a call instruction; *target is
 * the call's, for a direct call (0 otherwise). */
enum code_call follows_call(struct walker *w, uint64_t ra, uint64_t *target)
{
	const struct unwind_map *map;
	int call;

	*target = 0;
	if (find_map(&w->maps, w->space, ra, &map) == -ENOENT)
		return CODE_CALL_NONE;
	call = w->space->call_before(w->space->ctx, ra, target);
	return call == CODE_CALL_DIRECT || call == CODE_CALL_INDIRECT ? call : CODE_CALL_NONE;
}

/* ra, an address in the process's code, is a return address where a stack ends though no
 * call precedes it (unwind_is_stack_end_fn). */
bool is_stack_end(struct walker *w, uint64_t ra)
{
	const struct unwind_map *map;

	return w->space->is_stack_end && find_map(&w->maps, w->space, ra, &map) != -ENOENT &&
	       w->space->is_stack_end(w->space->ctx, ra);
}

/* Where the function holding pc starts, by its symbol, else by its FDE: 0 or -ENOENT. */
int known_function_start(struct walker *w, uint64_t pc, uint64_t *start)
{
	const struct unwind_map *map;

	if (w->space->function_start && w->space->function_start(w->space->ctx, pc, start) == 0)
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

	if (!w->space->function_start || follows_call(w, caller_ra, &target) != CODE_CALL_DIRECT)
		return false;
	if (known_function_start(w, ra - 1, &start) != 0 || target == start)
		return false;
	return w->space->function_start(w->space->ctx, target, &target_start) == 0 &&
	       target_start == target;
}

/* The return address of rules from a tail-call exit (via_jump) is the frame's: it follows
 * a call through a pointer, or a direct call of the frame's function, or of one that jumps
 * on at the depth a tail call leaves (8: a PLT stub, a function that tail-calls this one).
 * Code that another function jumped to and runs in that one's frame (GHC's Haskell code
 * under StgRun) jumps on too; the word at its rsp is the other's scratch, and a return
 * address an earlier call left there follows a call of something else. */
bool tail_call_fits(struct walker *w, const struct frame_regs *frame, bool exact,
			   uint64_t ra)
{
	uint64_t target, start, at[SCAN_JUMPS];
	int32_t depths[SCAN_JUMPS];
	enum code_call call = follows_call(w, ra, &target);
	uint32_t nr;

	if (call != CODE_CALL_DIRECT)
		return true; /* through a pointer; no call at all is return_address_checked's */
	if (known_function_start(w, exact ? frame->ip : frame->ip - 1, &start) == 0 &&
	    start == target)
		return true;
	nr = w->space->jumps ? w->space->jumps(w->space->ctx, target, true, depths, at, SCAN_JUMPS)
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

	return space->is_entry_code && space->is_entry_code(space->ctx, f->pc, !f->exact);
}
