/* Code without CFI and without rules by analysis: its caller by the frame record rbp
 * points at, else by a scan of the stack. */
#include "unwind/walk_internal.h"

#include "unwind/x86_code.h"

/* The frame record rbp points at, for a frame that keeps one: it lies above the frame's
 * sp, in the copied stack, and its return address follows a call. */
static bool frame_pointer_step(struct walker *w, struct frame_regs *regs)
{
	uint64_t saved_bp, ra, target;

	if (!regs->bp_valid || regs->bp < regs->sp || (regs->bp & 7))
		return false;
	if (!read_u64(w->view, regs->bp, &saved_bp) || !read_u64(w->view, regs->bp + 8, &ra))
		return false;
	if (follows_call(w, ra, &target) == CODE_CALL_NONE)
		return false;
	regs->ip = ra;
	regs->sp = regs->bp + 16;
	regs->bp = saved_bp;
	return true;
}

/* A frame whose code has no CFI and no rules by analysis: its caller by its frame record
 * (unless frame_record is false), else by a scan. Sets *found; NO_CFI when neither works. */
enum unwind_end nocfi_step_by(struct walker *w, struct frame_regs *regs, bool exact,
				     uint8_t *found, bool frame_record)
{
	if (!w->space->call_before)
		return UNWIND_END_NO_CFI;
	if (frame_record && !w->space->scan_only && frame_pointer_step(w, regs))
		*found = UNWIND_FOUND_FRAME_POINTER;
	else if (w->may_scan && scan_step(w, regs, exact))
		*found = UNWIND_FOUND_SCAN;
	else
		return UNWIND_END_NO_CFI;
	w->cache->stats.nocfi_frames[*found]++;
	return UNWIND_END_COMPLETE;
}

enum unwind_end nocfi_step(struct walker *w, struct frame_regs *regs, bool exact,
				  uint8_t *found)
{
	return nocfi_step_by(w, regs, exact, found, true);
}
