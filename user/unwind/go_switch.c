#include "unwind/go_switch.h"

#include <string.h>

static const char *const outcome_names[GO_SWITCH_COUNT] = {
	[GO_SWITCH_JOINED] = "joined",
	[GO_SWITCH_READ_FAILED] = "read failed",
	[GO_SWITCH_NOT_G0] = "on the signal g",
	[GO_SWITCH_NO_CURG] = "no goroutine",
	[GO_SWITCH_BAD_SCHED] = "sched off its stack",
	[GO_SWITCH_G0_TRUNCATED] = "g0 stack truncated",
	[GO_SWITCH_NOT_AT_SWITCH] = "not at a switch",
	[GO_SWITCH_GOROUTINE_INCOMPLETE] = "goroutine incomplete",
};

const char *go_switch__outcome_name(enum go_switch_outcome o)
{
	return o < GO_SWITCH_COUNT ? outcome_names[o] : "?";
}

static enum go_switch_outcome from_status(uint32_t status)
{
	switch (status) {
	case HPROF_GO_OK: return GO_SWITCH_JOINED;
	case HPROF_GO_NOT_G0: return GO_SWITCH_NOT_G0;
	case HPROF_GO_NO_CURG: return GO_SWITCH_NO_CURG;
	case HPROF_GO_BAD_SCHED: return GO_SWITCH_BAD_SCHED;
	default: return GO_SWITCH_READ_FAILED;
	}
}

/* The switches that save the goroutine in its g.sched before moving to g0, with how far
 * below g0's sched.sp (where they set rsp) the return address into them lies: systemstack
 * and morestack call at once, mcall pushes the g first (runtime/asm_amd64.s). */
enum switch_kind { SWITCH_NONE, SWITCH_SYSTEMSTACK, SWITCH_MCALL, SWITCH_MORESTACK };

static bool named(const char *name, const char *want)
{
	size_t n = strlen(want);

	return strncmp(name, want, n) == 0 && (name[n] == 0 || strcmp(name + n, ".abi0") == 0);
}

static enum switch_kind switch_kind(const struct hybrid_space *space, uint64_t ra)
{
	const char *name = space->go_function ? space->go_function(space->walk.ctx, ra - 1) : NULL;

	if (!name)
		return SWITCH_NONE;
	if (named(name, "runtime.systemstack"))
		return SWITCH_SYSTEMSTACK;
	if (named(name, "runtime.mcall"))
		return SWITCH_MCALL;
	if (named(name, "runtime.morestack"))
		return SWITCH_MORESTACK;
	return SWITCH_NONE;
}

/* The word at addr in copy, false where the copy does not hold it or it fell in a hole. */
static bool copy_word(const struct stack_copy *copy, uint64_t addr, uint64_t *out)
{
	for (; copy; copy = copy->more) {
		uint64_t off = addr - copy->base, page;

		if (addr < copy->base || copy->len < 8 || off > copy->len - 8)
			continue;
		page = (addr / STACK_COPY_PAGE) - (copy->base / STACK_COPY_PAGE);
		if (page < 64 && ((copy->holes >> page) & 1))
			return false;
		memcpy(out, copy->bytes + off, sizeof(*out));
		return true;
	}
	return false;
}

/* The g0 stack's root frame (the return address into the switch) is the one the switch
 * pushed at g0's base, where it set rsp: not a return into one of them further up g0 (a
 * systemstack called on g0 runs its function in place, and code already on g0 may call
 * the vDSO through nanotime1, whose frame also ends the walk). */
static bool at_g0_base(const struct stack_copy *g0_stack, const struct hprof_go_switch *go,
		       enum switch_kind kind, uint64_t ra)
{
	uint64_t word, below = kind == SWITCH_MCALL ? 16 : 8;

	return go->g0_sched_sp > below && copy_word(g0_stack, go->g0_sched_sp - below, &word) &&
	       word == ra;
}

/* Where the goroutine's walk starts. systemstack left sched.pc in systemstack_switch, a
 * frame of none, so the first frame is its caller's, by the return address at sched.sp;
 * mcall and morestack left the return address into their caller as sched.pc. */
static bool goroutine_regs(const struct hybrid_space *space, const struct hprof_go_switch *go,
			   const struct stack_copy *window, enum switch_kind kind,
			   struct unwind_regs *regs)
{
	const char *name;
	uint64_t ra;

	*regs = (struct unwind_regs){ .ip = go->sched_pc, .sp = go->sched_sp, .bp = go->sched_bp,
				      .bp_valid = true };
	if (kind != SWITCH_SYSTEMSTACK)
		return true;
	name = space->go_function(space->walk.ctx, go->sched_pc);
	if (!name || !named(name, "runtime.systemstack_switch") ||
	    !copy_word(window, go->sched_sp, &ra))
		return false;
	regs->ip = ra;
	regs->sp = go->sched_sp + 8;
	return true;
}

enum go_switch_outcome go_switch__join(struct candidate_tools *t, const struct hybrid_space *space,
				       const struct hprof_sample *sample,
				       const struct stack_copy *g0_stack, bool complete,
				       struct unwind_frame *out, uint32_t *n, uint32_t max)
{
	struct hprof_go_switch go;
	struct stack_copy window;
	struct unwind_result result;
	struct unwind_regs regs;
	enum switch_kind kind;
	uint32_t room;

	if (!hprof_sample__go_switch(sample, &go))
		return GO_SWITCH_COUNT;
	if (go.status != HPROF_GO_OK)
		return from_status(go.status);
	if (!complete || *n == 0)
		return GO_SWITCH_G0_TRUNCATED;
	kind = switch_kind(space, out[*n - 1].pc);
	if (kind == SWITCH_NONE || !at_g0_base(g0_stack, &go, kind, out[*n - 1].pc))
		return GO_SWITCH_NOT_AT_SWITCH;
	window = (struct stack_copy){ .bytes = hprof_sample__go_stack(sample),
				      .base = go.sched_sp, .len = go.len };
	if (!goroutine_regs(space, &go, &window, kind, &regs))
		return GO_SWITCH_NOT_AT_SWITCH;
	room = max - *n < UNWIND_MAX_FRAMES ? max - *n : UNWIND_MAX_FRAMES;
	if (room == 0)
		return GO_SWITCH_GOROUTINE_INCOMPLETE;
	candidates__walk(t, space, &regs, &window, out + *n, room, &result);
	if (result.end != UNWIND_END_COMPLETE || result.nr_frames == 0)
		return GO_SWITCH_GOROUTINE_INCOMPLETE;
	/* its pc is a return address, and its caller was found by the goroutine's g.sched */
	out[*n].exact = false;
	out[*n].found = UNWIND_FOUND_GO_SCHED;
	for (uint32_t i = 0; i < result.nr_frames; i++)
		out[*n + i].depth = UNWIND_DEPTH_UNKNOWN;
	*n += result.nr_frames;
	return GO_SWITCH_JOINED;
}

/* A base this far below g0's sched.sp is taken for one on the same g0 stack (Go gives a
 * thread's g0 16 KiB unless it is the thread's own stack). */
#define G0_BASE_BELOW 65536

void go_switch__g0_base(const struct hprof_sample *sample, uint64_t *base)
{
	struct hprof_go_switch go;

	if (hprof_sample__go_switch(sample, &go) &&
	    (go.status == HPROF_GO_OK || go.status == HPROF_GO_NO_CURG) && *base &&
	    *base < go.g0_sched_sp && go.g0_sched_sp - *base <= G0_BASE_BELOW)
		*base = go.g0_sched_sp;
}
