/* The frame step by a frame record: for code without CFI, and without rules by analysis
 * or with rules whose caller did not fit, the caller whose return address and rbp are at
 * the frame's rbp. */
#include "unwind/walk_internal.h"

/* The frame record rbp points at, for a frame that keeps one: it lies above the frame's
 * sp, in the copied stack. Rejected where the process tells nothing about its code
 * (no call_before: nothing to judge the return address by), under HPROF_DEBUG=scan, after
 * rules that said where the return address is (f->no_frame_record), and where its return
 * address does not fit (caller_fits). rbp's validity stays as it was. */
enum step_result frame_record_step(struct walker *w, struct walk_frame *f)
{
	const struct frame_regs *regs = &f->regs;
	uint64_t saved_bp, ra;

	if (!w->space->code.call_before || w->space->scan_only || f->no_frame_record)
		return STEP_REJECTED;
	if (!regs->bp_valid || regs->bp < regs->sp || (regs->bp & 7))
		return STEP_REJECTED;
	if (!read_u64(w->view, regs->bp, &saved_bp) || !read_u64(w->view, regs->bp + 8, &ra))
		return STEP_REJECTED;
	f->caller = (struct frame_regs){ .ip = ra, .sp = regs->bp + 16, .bp = saved_bp,
					 .bx_at = BX_LOST, .bp_valid = regs->bp_valid };
	if (!caller_fits(w, f, f->rules, &f->caller, UNWIND_FOUND_FRAME_POINTER))
		return STEP_REJECTED;
	f->caller_exact = false;
	return STEP_FOUND;
}
