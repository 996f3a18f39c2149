#include "unwind/deep_stacks.h"

#include "unwind/x86_code.h"

uint32_t deep_stacks__to_learn(const struct unwind_frame *frames, uint32_t n, uint64_t first_sp,
			       uint64_t outermost_sp, struct thread_deep_frame *out)
{
	uint32_t first = n > THREAD_DEEP_WALK + 1 ? n - THREAD_DEEP_WALK : 1, nr = 0;

	if (outermost_sp < first_sp || outermost_sp - first_sp < DEEP_STACK_BYTES)
		return 0;
	for (uint32_t i = first; i < n; i++) {
		if (frames[i].depth == UNWIND_DEPTH_UNKNOWN || frames[i].exact)
			continue;
		out[nr++] = (struct thread_deep_frame){ .sp = first_sp + frames[i].depth,
							.pc = frames[i].pc };
	}
	return nr;
}

/* The start of the function holding pc, by its FDE: 0 if none. */
static uint64_t function_of(const struct unwind_space *space, uint64_t pc)
{
	struct unwind_map map;
	uint64_t start;

	if (space->find_map(space->ctx, pc, &map) != 0 ||
	    unwind_table__function_start(map.table, pc - map.bias, &start) != 0)
		return 0;
	return start + map.bias;
}

/* The call before return address ra goes to the function holding pc, or through a pointer. */
static bool may_call(const struct unwind_space *space, uint64_t ra, uint64_t pc)
{
	uint64_t target, function;

	if (!space->code.call_before)
		return false;
	switch (space->code.call_before(space->ctx, ra, &target)) {
	case CODE_CALL_DIRECT:
		return (function = function_of(space, pc)) != 0 && target == function;
	case CODE_CALL_INDIRECT:
		return true;
	default:
		return false;
	}
}

bool deep_stacks__caller(const struct unwind_space *space, const struct stack_copy *copy,
			 const struct thread_info *ti, const struct unwind_frame *last,
			 const struct unwind_regs *at, struct unwind_regs *caller)
{
	uint64_t lookup = last->exact ? last->pc : last->pc - 1, cfa, word, pc;
	struct unwind_rules rules;

	if (!ti->deep || !unwind__rules_at(space, lookup, &rules) || rules.ra != UNWIND_RA_AT_CFA)
		return false;
	if (rules.cfa == UNWIND_CFA_SP_OFFSET)
		cfa = at->sp + (uint64_t)rules.cfa_offset;
	else if (rules.cfa == UNWIND_CFA_BP_OFFSET && at->bp_valid)
		cfa = at->bp + (uint64_t)rules.cfa_offset;
	else
		return false;
	/* only a return address the copy does not hold: one it holds was read already */
	if (cfa <= at->sp || stack_copy__read_u64(copy, cfa + (uint64_t)rules.ra_offset, &word) ||
	    !thread_info__deep_frame(ti, cfa, &pc) || !may_call(space, pc, lookup))
		return false;
	*caller = (struct unwind_regs){ .ip = pc, .sp = cfa, .bp = at->bp };
	if (rules.rbp == UNWIND_RBP_UNCHANGED)
		caller->bp_valid = at->bp_valid;
	else if (rules.rbp == UNWIND_RBP_AT_CFA)
		caller->bp_valid = stack_copy__read_u64(copy, cfa + (uint64_t)rules.rbp_offset,
							&caller->bp);
	return true;
}

bool deep_stacks__agrees(const struct unwind_space *space, const struct thread_info *ti,
			 uint64_t sp, const struct unwind_frame *frames, uint32_t n, uint32_t *met)
{
	uint64_t pc, function;

	for (uint32_t i = 1; i < n; i++) {
		if (frames[i].depth == UNWIND_DEPTH_UNKNOWN || frames[i].exact ||
		    !thread_info__deep_frame(ti, sp + frames[i].depth, &pc))
			continue;
		if (pc != frames[i].pc &&
		    (!(function = function_of(space, pc - 1)) ||
		     function != function_of(space, frames[i].pc - 1)))
			return false;
		(*met)++;
	}
	return true;
}
