#include "unwind.h"

#include <errno.h>
#include <string.h>

static const char *const end_names[UNWIND_END_COUNT] = {
	[UNWIND_END_COMPLETE] = "complete",
	[UNWIND_END_COPY_SHORT] = "copy too short",
	[UNWIND_END_NO_CFI] = "no CFI for pc",
	[UNWIND_END_UNSUPPORTED] = "unsupported rule",
	[UNWIND_END_UNMAPPED] = "pc outside any known mapping",
	[UNWIND_END_BAD_FRAME] = "CFA did not move up",
	[UNWIND_END_DEPTH] = "too deep",
};

const char *unwind_end__name(enum unwind_end end)
{
	return end < UNWIND_END_COUNT ? end_names[end] : "?";
}

bool stack_copy__read_u64(const struct stack_copy *copy, uint64_t addr, uint64_t *value)
{
	/* addr - base wraps for addr < base, so one comparison covers both ends. */
	uint64_t off = addr - copy->base;

	if (off > copy->len || copy->len - off < 8)
		return false;
	memcpy(value, copy->bytes + off, sizeof(*value));
	return true;
}

/* CFA for the rules at regs->ip. Returns an unwind_end; COMPLETE means "computed". */
static enum unwind_end compute_cfa(const struct unwind_rules *rules, const struct unwind_regs *regs,
				   const struct stack_copy *copy, uint64_t *cfa)
{
	switch (rules->cfa) {
	case UNWIND_CFA_SP_OFFSET:
		*cfa = regs->sp + rules->cfa_offset;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_BP_OFFSET:
		if (!regs->bp_valid)
			return UNWIND_END_UNSUPPORTED;
		*cfa = regs->bp + rules->cfa_offset;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_EXPR_PLT:
		/* A lazy PLT entry pushes one more word after its first instruction group. */
		*cfa = regs->sp + 8 + ((regs->ip & 15) >= (uint64_t)rules->cfa_offset ? 8 : 0);
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_EXPR_DEREF_SP:
		return stack_copy__read_u64(copy, regs->sp + rules->cfa_offset, cfa)
			       ? UNWIND_END_COMPLETE
			       : UNWIND_END_COPY_SHORT;
	case UNWIND_CFA_EXPR_DEREF_BP:
		if (!regs->bp_valid)
			return UNWIND_END_UNSUPPORTED;
		return stack_copy__read_u64(copy, regs->bp + rules->cfa_offset, cfa)
			       ? UNWIND_END_COMPLETE
			       : UNWIND_END_COPY_SHORT;
	case UNWIND_CFA_END:
		return UNWIND_END_NO_CFI;
	default:
		return UNWIND_END_UNSUPPORTED;
	}
}

/* The caller's rbp. A rule that loses it leaves bp_valid false: only a later bp-based CFA
 * needs it, and that then stops the walk as unsupported. */
static enum unwind_end recover_bp(const struct unwind_rules *rules, const struct unwind_regs *regs,
				  uint64_t cfa, const struct stack_copy *copy,
				  struct unwind_regs *caller)
{
	uint64_t slot;

	caller->bp = regs->bp;
	caller->bp_valid = regs->bp_valid;
	switch (rules->rbp) {
	case UNWIND_RBP_UNCHANGED:
		return UNWIND_END_COMPLETE;
	case UNWIND_RBP_AT_CFA:
	case UNWIND_RBP_AT_SP:
		slot = (rules->rbp == UNWIND_RBP_AT_CFA ? cfa : regs->sp) + rules->rbp_offset;
		/* In an epilogue, after `pop %rbp`, compilers leave the rule pointing at the
		 * popped slot, now below sp: the register already holds the caller's value. */
		if (slot < regs->sp)
			return UNWIND_END_COMPLETE;
		caller->bp_valid = true;
		return stack_copy__read_u64(copy, slot, &caller->bp) ? UNWIND_END_COMPLETE
								      : UNWIND_END_COPY_SHORT;
	case UNWIND_RBP_VAL_CFA:
		caller->bp = cfa + rules->rbp_offset;
		caller->bp_valid = true;
		return UNWIND_END_COMPLETE;
	default:
		caller->bp_valid = false;
		return UNWIND_END_COMPLETE;
	}
}

/* One step: the caller's registers from the callee's. ra_undefined reports the outermost
 * frame; signal reports a signal trampoline (its caller resumes at an exact pc). */
/* The rules covering a pc, decoded, with the range they cover: recursion and loops
 * revisit one row. */
struct row_cache {
	const struct unwind_table *table;
	const struct unwind_row *row;
	uint64_t lo, hi; /* the row covers [lo, hi) */
	struct unwind_rules rules;
};

static const struct unwind_rules *find_rules(struct row_cache *c, const struct unwind_table *table,
					     uint64_t pc)
{
	const struct unwind_row *rows;
	size_t nr;

	if (c->row && c->table == table && pc >= c->lo && pc < c->hi)
		return &c->rules;
	c->row = unwind_table__find(table, pc);
	if (!c->row)
		return NULL;
	rows = unwind_table__rows(table, &nr);
	c->table = table;
	c->lo = c->row->pc;
	c->hi = c->row + 1 < rows + nr ? c->row[1].pc : UINT64_MAX;
	unwind_table__decode(table, c->row, &c->rules);
	return &c->rules;
}

static enum unwind_end step(const struct unwind_rules *found, const struct unwind_regs *regs,
			    const struct stack_copy *copy, struct unwind_regs *caller,
			    bool *ra_undefined, bool *signal)
{
	enum unwind_end end;
	uint64_t cfa, ra_addr;

	if (!found)
		return UNWIND_END_NO_CFI;
	const struct unwind_rules rules = *found;
	if (rules.ra == UNWIND_RA_UNDEFINED) {
		*ra_undefined = true;
		return UNWIND_END_COMPLETE;
	}
	end = compute_cfa(&rules, regs, copy, &cfa);
	if (end != UNWIND_END_COMPLETE)
		return end;
	switch (rules.ra) {
	case UNWIND_RA_AT_CFA:
		ra_addr = cfa + rules.ra_offset;
		break;
	case UNWIND_RA_AT_SP:
		ra_addr = regs->sp + rules.ra_offset;
		break;
	default:
		return UNWIND_END_UNSUPPORTED;
	}
	if (!stack_copy__read_u64(copy, ra_addr, &caller->ip))
		return UNWIND_END_COPY_SHORT;
	end = recover_bp(&rules, regs, cfa, copy, caller);
	if (end != UNWIND_END_COMPLETE)
		return end;
	caller->sp = cfa;
	*signal = rules.cfa == UNWIND_CFA_EXPR_DEREF_SP && rules.ra == UNWIND_RA_AT_SP;
	/* Outside signal frames the stack only grows down: a caller's frame is above. */
	if (!*signal && cfa <= regs->sp)
		return UNWIND_END_BAD_FRAME;
	return UNWIND_END_COMPLETE;
}

void unwind__walk(const struct unwind_regs *regs, const struct stack_copy *copy,
		  unwind_find_table_fn find_table, void *ctx, struct unwind_frame *frames,
		  uint32_t max, struct unwind_result *result)
{
	struct unwind_regs cur = *regs, caller;
	struct row_cache rows = { 0 };
	bool exact = true;

	result->nr_frames = 0;
	result->end = UNWIND_END_DEPTH;
	if (max > UNWIND_MAX_FRAMES)
		max = UNWIND_MAX_FRAMES;
	while (result->nr_frames < max) {
		const struct unwind_table *table;
		uint64_t bias;
		bool ra_undefined = false, signal = false;
		/* caller frames: look up ra-1, the call instruction, not the one after it */
		uint64_t lookup = exact ? cur.ip : cur.ip - 1;
		int err;

		frames[result->nr_frames++] = (struct unwind_frame){ .pc = cur.ip, .exact = exact };
		err = find_table(ctx, lookup, &table, &bias);
		if (err) {
			result->end = err == -ENOENT ? UNWIND_END_UNMAPPED : UNWIND_END_NO_CFI;
			break;
		}
		caller = cur;
		result->end = step(find_rules(&rows, table, lookup - bias), &cur, copy, &caller,
				   &ra_undefined, &signal);
		if (result->end != UNWIND_END_COMPLETE || ra_undefined)
			break;
		if (caller.ip == 0) /* a zero return address also ends a stack */
			break;
		cur = caller;
		exact = signal;
		result->end = UNWIND_END_DEPTH;
	}
	result->last = cur;
}
