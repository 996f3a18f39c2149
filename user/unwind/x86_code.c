#include "unwind/x86_code.h"

#include <string.h>

#include <Zydis/Zydis.h>

#include "unwind/x86_machine.h"
#include "unwind_row.h"

static const char *const fail_names[CODE_FAIL_COUNT] = {
	[CODE_OK] = "ok",
	[CODE_UNDECODABLE] = "code did not decode",
	[CODE_NO_EXIT] = "no return found in the code",
	[CODE_STACK_LOST] = "stack pointer lost in the code",
	[CODE_AMBIGUOUS] = "returns that disagree",
};

const char *code_fail__name(enum code_fail fail)
{
	return fail < CODE_FAIL_COUNT ? fail_names[fail] : "?";
}

/* One analysis: the code, the decoder, what was visited, the paths still to follow. */
struct tracer {
	const struct code_window *code;
	uint64_t start, end; /* the function's bounds when known, else 0 */
	ZydisDecoder decoder;
	uint8_t *visited; /* a bit per byte of the window */
	uint32_t insns;
	uint32_t nr_exits; /* returns found tracing forward */
	uint32_t nr_pending;
	struct state pending[CODE_MAX_BRANCHES];
	bool decoded_any;
	bool past_window; /* a path ran past the end of the code */
	/* x86_code__jump_depths and _offsets: the values found so far, and the jumps' own
	 * addresses (jump_depths NULL in an analysis for rules; jump_at may be NULL) */
	int32_t *jump_depths;
	uint64_t *jump_at;
	uint32_t nr_jump_depths, max_jump_depths;
};

static bool in_window(const struct code_window *code, uint64_t addr)
{
	return addr - code->addr < code->len;
}

/* addr is in the function, when its bounds are known. */
static bool in_function(const struct tracer *t, uint64_t addr)
{
	return !t->end || (addr >= t->start && addr < t->end);
}

/* Marks addr visited; false if it was already. */
static bool visit(struct tracer *t, uint64_t addr)
{
	uint64_t i = addr - t->code->addr;
	uint8_t bit = (uint8_t)(1u << (i & 7));

	if (t->visited[i >> 3] & bit)
		return false;
	t->visited[i >> 3] |= bit;
	return true;
}

/* addr lies after the code read (more code might be read there). */
static bool past_window(const struct code_window *code, uint64_t addr)
{
	return addr >= code->addr && addr - code->addr >= code->len;
}

static void push_pending(struct tracer *t, const struct state *s, uint64_t target)
{
	t->past_window |= past_window(t->code, target);
	if (t->nr_pending == CODE_MAX_BRANCHES || !in_window(t->code, target))
		return;
	t->pending[t->nr_pending] = *s;
	t->pending[t->nr_pending].pc = target;
	t->nr_pending++;
}

/* What an instruction does to the control flow. */
enum flow {
	FLOW_NEXT,   /* on to the next instruction */
	FLOW_JUMP,   /* to *target only */
	FLOW_BRANCH, /* to the next instruction, or *target */
	FLOW_RETURN, /* the return address is at rsp */
	FLOW_END,    /* nowhere the analysis can follow */
};

static enum flow flow_of(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops,
			 uint64_t pc, uint64_t *target)
{
	bool direct = insn->operand_count_visible > 0 &&
		      ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative;

	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_RET:
		return FLOW_RETURN;
	case ZYDIS_CATEGORY_UNCOND_BR:
		if (!direct)
			return FLOW_END; /* an indirect jump: a switch, or a tail call */
		*target = pc + insn->length + (uint64_t)ops[0].imm.value.s;
		return FLOW_JUMP;
	case ZYDIS_CATEGORY_COND_BR:
		if (!direct)
			return FLOW_END;
		*target = pc + insn->length + (uint64_t)ops[0].imm.value.s;
		return FLOW_BRANCH;
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSTEM:
		/* int3, ud2-like traps and hlt end a path; syscall returns */
		return insn->mnemonic == ZYDIS_MNEMONIC_SYSCALL ? FLOW_NEXT : FLOW_END;
	default:
		return insn->mnemonic == ZYDIS_MNEMONIC_UD2 || insn->mnemonic == ZYDIS_MNEMONIC_UD0 ||
				       insn->mnemonic == ZYDIS_MNEMONIC_UD1
			       ? FLOW_END
			       : FLOW_NEXT;
	}
}


/* Decodes the instruction at s->pc. */
static bool decode(struct tracer *t, uint64_t pc, ZydisDecodedInstruction *insn,
		   ZydisDecodedOperand *ops)
{
	const struct code_window *code = t->code;
	uint64_t off = pc - code->addr;

	if (off >= code->len)
		return false;
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&t->decoder, code->bytes + off, code->len - off,
						 insn, ops))) {
		/* an instruction cut by the window's end: more code would decode it */
		if (code->len - off < ZYDIS_MAX_INSTRUCTION_LENGTH)
			t->past_window = true;
		return false;
	}
	t->decoded_any = true;
	return true;
}

/* Two returns found tracing forward give the same caller: the same rsp at the return, and
 * the return address in the same place. */
static bool same_exit(const struct state *a, const struct state *b)
{
	return val_is(a->sp, b->sp.base, b->sp.off) && a->ra_moved == b->ra_moved &&
	       a->ra_at == b->ra_at &&
	       (a->sp.base != BASE_DEREF || val_is(a->deref, b->deref.base, b->deref.off));
}

/* Tracing forward, at a return: where its return address is. Lost when the code stored
 * something the analysis cannot name in the word the return reads, or moved it there from
 * below rsp at pc (no word of the stack any more). Such a return still counts as the
 * trace's exit: it gives no rule, as a return at an rsp below pc's does, where skipping it
 * would let a later return on a path that ran into another function decide. */
static void find_return_address(struct state *s)
{
	int32_t ra;

	s->ra_moved = false;
	s->ra_lost = false;
	s->ra_at = 0;
	if (s->from_start || s->sp.base != BASE_SP0)
		return;
	ra = x86_machine__word_at(s, s->sp.off);
	if (ra == s->sp.off)
		return;
	s->ra_moved = true;
	s->ra_lost = ra == WORD_UNKNOWN || (ra < 0 && !WORD_IS_REGISTER(ra));
	s->ra_at = s->ra_lost ? WORD_UNKNOWN : ra;
}

/* pop of a register a function saves for its caller (rbx, rbp, r12-r15): an epilogue's */
static bool pops_saved_register(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	if (insn->mnemonic != ZYDIS_MNEMONIC_POP || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER)
		return false;
	switch (ops[0].reg.value) {
	case ZYDIS_REGISTER_RBX:
	case ZYDIS_REGISTER_RBP:
	case ZYDIS_REGISTER_R12:
	case ZYDIS_REGISTER_R13:
	case ZYDIS_REGISTER_R14:
	case ZYDIS_REGISTER_R15:
		return true;
	default:
		return false;
	}
}

/* Offsets beyond these are not a frame: the analysis went astray. */
#define CODE_MAX_FRAME (1 << 24)

static bool offset_sane(int64_t off)
{
	return off > 0 && off < CODE_MAX_FRAME;
}

/* x86_code__jump_depths and _offsets: at a jump that leaves the code the trace can follow
 * (through a register or memory, out of the code read, or out of the function's known
 * bounds: GHC's code jumps on to the next function's), where rsp is:
 * the frame's depth CFA - rsp (tracing from the start), or rsp - SP0 (tracing from a pc);
 * once each. */
static void note_jump(struct tracer *t, const struct state *s, const ZydisDecodedInstruction *insn,
		      enum flow flow, uint64_t target)
{
	bool leaves = (flow == FLOW_END && insn->meta.category == ZYDIS_CATEGORY_UNCOND_BR) ||
		      (flow == FLOW_JUMP && (!in_window(t->code, target) ||
					     (t->end && !in_function(t, target))));
	int32_t value;

	if (!leaves)
		return;
	if (s->sp.base == BASE_CFA && offset_sane(-s->sp.off))
		value = (int32_t)-s->sp.off;
	else if (s->sp.base == BASE_SP0 && s->sp.off > -CODE_MAX_FRAME && s->sp.off < CODE_MAX_FRAME)
		value = (int32_t)s->sp.off;
	else
		return;
	for (uint32_t i = 0; i < t->nr_jump_depths; i++) {
		if (t->jump_depths[i] == value)
			return;
	}
	if (t->nr_jump_depths == t->max_jump_depths)
		return;
	if (t->jump_at)
		t->jump_at[t->nr_jump_depths] = s->pc;
	t->jump_depths[t->nr_jump_depths++] = value;
}

/* Follows paths from s until one reaches goal (tracing from the start) or, with goal 0,
 * a return instruction (or a jump that leaves the function: a tail call); conditional
 * branches are followed both ways, each address at most once: the fall-through first (a
 * loop's exit comes before its back edge), but for a branch forward that stays at or
 * before the goal. A goal just after a call is taken as reached through the call; a jump's
 * arrival there counts only where no path through the call is found (the analysis cannot
 * tell a sampled pc from a return address: a sample there after a call that does not
 * return gets the call's state). Returns CODE_OK with *at the state there. */
static enum code_fail trace(struct tracer *t, struct state s, uint64_t goal, struct state *at)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	bool lost = false, after_call = false, jumped_to_goal = false, popped_saved = false;
	/* A goal just after a call is the call's return address, reached by the call; a jump
	 * there is taken only where no path through the call is found: after a call that
	 * does not return, the next block's state is not the call's. */
	uint64_t unused;
	const bool goal_follows_call =
		goal && x86_code__call_before(t->code, goal, &unused) != CODE_CALL_NONE;

	push_pending(t, &s, s.pc);
	while (t->nr_pending > 0) {
		s = t->pending[--t->nr_pending];
		after_call = popped_saved = false;
		while (t->insns < CODE_MAX_INSNS && in_window(t->code, s.pc)) {
			uint64_t target = 0, next;
			enum flow flow;

			/* the goal may be the function's end: the return address of a call
			 * that does not return */
			if (goal && s.pc == goal) {
				if (after_call || !goal_follows_call) {
					*at = s;
					return CODE_OK;
				}
				if (!jumped_to_goal)
					*at = s;
				jumped_to_goal = true;
				break;
			}
			if (!visit(t, s.pc) || !in_function(t, s.pc))
				break;
			t->insns++;
			if (!decode(t, s.pc, &insn, ops))
				break;
			flow = flow_of(&insn, ops, s.pc, &target);
			if (t->jump_depths)
				note_jump(t, &s, &insn, flow, target);
			/* Tracing forward, a jump out of the function is a tail call: the return
			 * address is at rsp, as at a return. Without the function's bounds, so
			 * is a jump out of the code read just after an epilogue's pop of a
			 * saved register (HotSpot's compiled methods leave their exception
			 * paths by add, pop %rbp and a jump to a shared stub); elsewhere such a
			 * jump may stay in a function larger than what was read. */
			s.tail_jump = false;
			if (flow == FLOW_JUMP && !goal &&
			    (!in_function(t, target) ||
			     (!t->end && popped_saved && !in_window(t->code, target)))) {
				flow = FLOW_RETURN;
				s.tail_jump = true;
			}
			/* a trace for jumps follows every path: no return ends it */
			if (flow == FLOW_RETURN && !goal && !t->jump_depths) {
				if (!val_addressable(s.sp)) {
					lost = true;
				} else {
					find_return_address(&s);
					if (t->nr_exits++ == 0)
						*at = s;
					else if (!same_exit(at, &s))
						return CODE_AMBIGUOUS;
				}
				if (t->nr_exits == CODE_EXITS)
					return CODE_OK;
			}
			if (flow == FLOW_RETURN || flow == FLOW_END)
				break;
			x86_machine__apply(&s, &insn, ops);
			popped_saved = pops_saved_register(&insn, ops);
			next = s.pc + insn.length;
			/* Tracing to a goal, a branch forward that stays at or before it goes
			 * first: it skips code on the way (a switch's cases), where the fall-
			 * through would visit it all. */
			if (flow == FLOW_BRANCH && goal && target > next && target <= goal) {
				push_pending(t, &s, next);
				next = target;
			} else if (flow == FLOW_BRANCH) {
				push_pending(t, &s, target);
			}
			after_call = insn.meta.category == ZYDIS_CATEGORY_CALL;
			s.pc = flow == FLOW_JUMP ? target : next;
		}
		t->past_window |= past_window(t->code, s.pc);
	}
	if (jumped_to_goal)
		return CODE_OK;
	if (t->nr_exits > 0)
		return CODE_OK;
	if (!t->decoded_any)
		return CODE_UNDECODABLE;
	return lost ? CODE_STACK_LOST : CODE_NO_EXIT;
}

/* A saved register's rule, with the CFA at cfa: untouched when it still holds the value it
 * had (unchanged), else saved where its caller's value is. */
static void saved_rule(const struct reg *r, struct val unchanged, struct val cfa, uint8_t *kind,
		       int32_t *offset, bool is_bp)
{
	*offset = 0;
	if (val_is(r->val, unchanged.base, unchanged.off)) {
		*kind = is_bp ? UNWIND_RBP_UNCHANGED : UNWIND_RBX_UNCHANGED;
		return;
	}
	if (r->caller_at.base != BASE_NONE && r->caller_at.base == cfa.base) {
		*kind = is_bp ? UNWIND_RBP_AT_CFA : UNWIND_RBX_AT_CFA;
		*offset = (int32_t)(r->caller_at.off - cfa.off);
		return;
	}
	if (is_bp && r->caller_at.base == BASE_SP0) {
		*kind = UNWIND_RBP_AT_SP;
		*offset = (int32_t)r->caller_at.off;
		return;
	}
	*kind = is_bp ? UNWIND_RBP_UNDEFINED : UNWIND_RBX_UNDEFINED;
}

/* rsp lost to a realignment, but kept in r10 or r12-r15: CFA = that register + off (the
 * walk knows its value in the sampled frame only). */
static bool drap_cfa(const struct state *s, struct code_rules *out)
{
	for (unsigned i = 0; i < NR_DRAP; i++) {
		if (i == 1 || s->drap[i].base != BASE_CFA || !offset_sane(-s->drap[i].off))
			continue;
		out->cfa = i == 0 ? UNWIND_CFA_R10_OFFSET : UNWIND_CFA_R12_OFFSET + (i - 2);
		out->cfa_offset = (int32_t)-s->drap[i].off;
		return true;
	}
	return false;
}

/* Tracing from the start: at pc, rsp or rbp is CFA + off. */
static enum code_fail rules_from_start(const struct state *s, struct code_rules *out)
{
	struct val cfa = { BASE_CFA, 0 };

	/* A frame pointer (rbp at the frame record, CFA - 16) first, as compilers' CFI has
	 * it: it holds through alloca and anything else that moves rsp in ways the trace may
	 * not follow. rbp set from rsp elsewhere (a pointer to a local) only where rsp is lost. */
	if (val_is(s->bp.val, BASE_CFA, -16) ||
	    (s->sp.base != BASE_CFA && s->bp.val.base == BASE_CFA && offset_sane(-s->bp.val.off))) {
		out->cfa = UNWIND_CFA_BP_OFFSET;
		out->cfa_offset = (int32_t)-s->bp.val.off;
	} else if (s->sp.base == BASE_CFA && offset_sane(-s->sp.off)) {
		out->cfa = UNWIND_CFA_SP_OFFSET;
		out->cfa_offset = (int32_t)-s->sp.off;
	} else if (!drap_cfa(s, out)) {
		return CODE_STACK_LOST;
	}
	/* rules below are relative to the CFA itself: a save at CFA + off */
	saved_rule(&s->bp, (struct val){ BASE_CALLER, 0 }, cfa, &out->rbp, &out->rbp_offset, true);
	saved_rule(&s->bx, (struct val){ BASE_CALLER, 0 }, cfa, &out->rbx, &out->rbx_offset, false);
	out->ra_offset = -8;
	out->from_start = true;
	return CODE_OK;
}

/* Tracing forward: at the return, rsp is the word at SP0 or BP0 + off, plus cfa.off - 8:
 * CFA = *(rsp or rbp + off) + cfa.off. */
static enum code_fail deref_cfa(const struct state *s, struct val cfa, struct code_rules *out)
{
	if (!offset_sane(cfa.off) || s->deref.off <= -CODE_MAX_FRAME ||
	    s->deref.off >= CODE_MAX_FRAME)
		return CODE_STACK_LOST;
	out->cfa = s->deref.base == BASE_SP0 ? UNWIND_CFA_EXPR_DEREF_SP : UNWIND_CFA_EXPR_DEREF_BP;
	out->cfa_offset = (int32_t)s->deref.off;
	out->cfa_addend = (int32_t)cfa.off;
	out->ra_offset = -8;
	saved_rule(&s->bp, (struct val){ BASE_BP0, 0 }, cfa, &out->rbp, &out->rbp_offset, true);
	saved_rule(&s->bx, (struct val){ BASE_BX0, 0 }, cfa, &out->rbx, &out->rbx_offset, false);
	out->from_start = false;
	out->via_jump = s->tail_jump;
	return CODE_OK;
}

/* A general register's DWARF number, from its index in state.gpr (Zydis's order: rax,
 * rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8-r15). */
static uint8_t dwarf_number(int32_t gpr)
{
	static const uint8_t dwarf[NR_GPRS] = { 0, 2, 1, 3, 7, 6, 4, 5,
						8, 9, 10, 11, 12, 13, 14, 15 };

	return dwarf[gpr & (NR_GPRS - 1)];
}

/* Tracing forward: at the return, rsp is SP0 or BP0 + off and the return address is
 * there. */
static enum code_fail rules_at_return(const struct state *s, struct code_rules *out)
{
	struct val cfa = val_add(s->sp, 8);

	if (s->ra_lost)
		return CODE_STACK_LOST;
	if (cfa.base == BASE_DEREF)
		return deref_cfa(s, cfa, out);
	/* a return address the code moved up into its caller's top word, or into a register
	 * (sljit), leaves the caller's rsp where the callee's is */
	if (cfa.base == BASE_SP0 ? !offset_sane(cfa.off) && !(s->ra_moved && cfa.off == 0)
				 : cfa.off <= -CODE_MAX_FRAME || cfa.off >= CODE_MAX_FRAME)
		return CODE_STACK_LOST;
	if (cfa.base == BASE_SP0)
		out->cfa = UNWIND_CFA_SP_OFFSET;
	else if (cfa.base == BASE_BP0)
		out->cfa = UNWIND_CFA_BP_OFFSET;
	else /* a DRAP register: the walk knows its value in the sampled frame only */
		out->cfa = cfa.base == BASE_R0 ? UNWIND_CFA_R10_OFFSET
					       : UNWIND_CFA_R12_OFFSET + (cfa.base - BASE_R0 - 2);
	out->cfa_offset = (int32_t)cfa.off;
	if (s->ra_moved && WORD_IS_REGISTER(s->ra_at)) {
		if (cfa.base != BASE_SP0)
			return CODE_STACK_LOST; /* with its CFA known in the sampled frame only */
		out->ra_in_register = true;
		out->ra_register = dwarf_number(s->ra_at - WORD_REGISTER(0));
		out->ra_offset = 0;
	} else {
		/* moved: the return reads it from a word the code stored it to (s->sp is
		 * SP0-based) */
		out->ra_offset = s->ra_moved ? (int32_t)(s->ra_at - cfa.off) : -8;
	}
	saved_rule(&s->bp, (struct val){ BASE_BP0, 0 }, cfa, &out->rbp, &out->rbp_offset, true);
	saved_rule(&s->bx, (struct val){ BASE_BX0, 0 }, cfa, &out->rbx, &out->rbx_offset, false);
	out->from_start = false;
	out->via_jump = s->tail_jump;
	return CODE_OK;
}

static enum code_fail analyze_from(struct tracer *t, uint64_t pc, uint64_t start,
				   struct code_rules *out)
{
	struct state s = { .pc = start }, at;
	enum code_fail fail;

	if (start) {
		s.from_start = true;
		s.sp = (struct val){ BASE_CFA, -8 };
		s.bp.val = (struct val){ BASE_CALLER, 0 };
		s.bx.val = (struct val){ BASE_CALLER, 0 };
		fail = trace(t, s, pc, &at);
		return fail == CODE_OK ? rules_from_start(&at, out) : fail;
	}
	s.pc = pc;
	s.sp = (struct val){ BASE_SP0, 0 };
	for (unsigned i = 0; i < NR_GPRS; i++)
		s.gpr[i] = WORD_REGISTER(i);
	s.forgotten = INT32_MIN;
	s.bp.val = (struct val){ BASE_BP0, 0 };
	s.bx.val = (struct val){ BASE_BX0, 0 };
	for (unsigned i = 0; i < NR_DRAP; i++)
		s.drap[i] = (struct val){ i == 1 ? BASE_NONE : BASE_R0 + i, 0 };
	fail = trace(t, s, 0, &at);
	return fail == CODE_OK ? rules_at_return(&at, out) : fail;
}

static void tracer_init(struct tracer *t, const struct code_window *code, uint64_t start,
			uint64_t end, uint8_t *visited)
{
	t->code = code;
	t->start = end > start ? start : 0;
	t->end = end > start ? end : 0;
	t->visited = visited;
	t->insns = 0;
	t->nr_exits = 0;
	t->nr_pending = 0;
	t->decoded_any = false;
	t->past_window = false;
	t->jump_depths = NULL;
	t->jump_at = NULL;
	t->nr_jump_depths = t->max_jump_depths = 0;
	memset(visited, 0, (code->len + 7) / 8);
	ZydisDecoderInit(&t->decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

enum code_fail x86_code__analyze(const struct code_window *code, uint64_t pc, uint64_t start,
				 uint64_t end, struct code_rules *out)
{
	static __thread uint8_t visited[CODE_MAX_WINDOW / 8];
	struct code_window window = *code;
	struct tracer t;
	enum code_fail fail = CODE_UNDECODABLE;

	memset(out, 0, sizeof(*out));
	if (window.len > CODE_MAX_WINDOW)
		window.len = CODE_MAX_WINDOW;
	if (!in_window(&window, pc))
		return CODE_UNDECODABLE;
	if (end && (pc < start || pc > end))
		start = end = 0; /* bounds that do not hold pc are not its function's */
	if (start && start <= pc && in_window(&window, start)) {
		tracer_init(&t, &window, start, end, visited);
		fail = analyze_from(&t, pc, start, out);
		if (fail == CODE_OK)
			return fail;
	}
	tracer_init(&t, &window, start, end, visited);
	fail = analyze_from(&t, pc, 0, out);
	out->past_window = fail == CODE_NO_EXIT && t.past_window;
	return fail;
}

/* Every path from s.pc, for where rsp is at the jumps it cannot follow (note_jump). */
static uint32_t trace_jumps(const struct code_window *code, struct state s, uint64_t start,
			    uint64_t end, int32_t *values, uint64_t *at, uint32_t max)
{
	static __thread uint8_t visited[CODE_MAX_WINDOW / 8];
	struct code_window window = *code;
	struct state unused;
	struct tracer t;

	if (window.len > CODE_MAX_WINDOW)
		window.len = CODE_MAX_WINDOW;
	if (!in_window(&window, s.pc))
		return 0;
	tracer_init(&t, &window, start, end, visited);
	t.jump_depths = values;
	t.jump_at = at;
	t.max_jump_depths = max;
	s.bp.val = (struct val){ BASE_CALLER, 0 };
	s.bx.val = (struct val){ BASE_CALLER, 0 };
	for (unsigned i = 0; i < NR_GPRS; i++)
		s.gpr[i] = WORD_UNKNOWN;
	s.forgotten = INT32_MIN;
	trace(&t, s, 0, &unused);
	return t.nr_jump_depths;
}

uint32_t x86_code__jump_depths(const struct code_window *code, uint64_t start, uint64_t end,
			       int32_t *depths, uint64_t *at, uint32_t max)
{
	const struct state s = { .pc = start, .from_start = true, .sp = { BASE_CFA, -8 } };

	return trace_jumps(code, s, start, end, depths, at, max);
}

uint32_t x86_code__jump_offsets(const struct code_window *code, uint64_t pc, int32_t *offsets,
				uint32_t max)
{
	const struct state s = { .pc = pc, .sp = { BASE_SP0, 0 } };

	return trace_jumps(code, s, 0, 0, offsets, NULL, max);
}

enum code_call x86_code__call_before(const struct code_window *code, uint64_t ra,
				     uint64_t *target)
{
	ZydisDecoder decoder;
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

	ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	/* call rel32 is 5 bytes; indirect calls 2 (call *%rax) to 7 (call *disp32(%rsp)), 8 and
	 * 9 with prefixes. The instruction must end exactly at ra. */
	for (uint64_t len = 2; len <= 9; len++) {
		uint64_t at = ra - len;

		if (ra < len || !in_window(code, at) || at - code->addr + len > code->len)
			continue;
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code->bytes + (at - code->addr),
							 len, &insn, ops)) ||
		    insn.length != len || insn.mnemonic != ZYDIS_MNEMONIC_CALL)
			continue;
		if (ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative) {
			*target = ra + (uint64_t)ops[0].imm.value.s;
			return CODE_CALL_DIRECT;
		}
		return CODE_CALL_INDIRECT;
	}
	return CODE_CALL_NONE;
}
