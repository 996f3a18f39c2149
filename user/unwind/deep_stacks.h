/* Stacks deeper than the copy's ceiling: the kernel copies the part from sp and the window
 * below the thread's base, and a frame whose return address lies in the gap between them is
 * found by what the thread's earlier walks of its whole stack showed at that sp
 * (thread_deep_frames), where the code agrees. hybrid.c runs the walk across. */
#ifndef HPROF_UNWIND_DEEP_STACKS_H
#define HPROF_UNWIND_DEEP_STACKS_H

#include <stdbool.h>
#include <stdint.h>

#include "unwind/threads.h"
#include "unwind/walk.h"

/* Stacks at least this deep (from sp to the outermost frame's CFA) teach their frames: well
 * below any ceiling the kernel would split a copy at. */
#define DEEP_STACK_BYTES (32u << 10)

/* The frames a complete walk of a whole stack (frames, n of them, from first_sp; its
 * outermost frame's CFA outermost_sp) teaches, into out (THREAD_DEEP_WALK at most): the
 * outermost, by their sp. 0 when the stack is not deep. */
uint32_t deep_stacks__to_learn(const struct unwind_frame *frames, uint32_t n, uint64_t first_sp,
			       uint64_t outermost_sp, struct thread_deep_frame *out);

/* The caller of the walk's last frame last (registers at) when its return address lies in
 * the gap, outside copy: the frame learned at last's CFA, if a direct call before it goes
 * to last's function or the call is indirect (a return address that follows no call is no
 * caller). Sets *caller, its ip a return address. */
bool deep_stacks__caller(const struct unwind_space *space, const struct stack_copy *copy,
			 const struct thread_info *ti, const struct unwind_frame *last,
			 const struct unwind_regs *at, struct unwind_regs *caller);

/* How the walk on from a caller found across the gap at sp (frames, n; frames[0] the
 * caller) agrees with the learned walks: each frame after the first where one had a frame at
 * the same sp must be in that frame's function (a call site may differ: main calls the
 * deep path from another line than the shallow one). Adds those met to *met; false on one
 * that differs. A learned frame whose call path has changed since leads the walk astray: it
 * meets none, or one that differs. */
bool deep_stacks__agrees(const struct unwind_space *space, const struct thread_info *ti,
			 uint64_t sp, const struct unwind_frame *frames, uint32_t n, uint32_t *met);

#endif
