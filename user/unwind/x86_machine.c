/* The instruction analysis's abstract machine (x86_machine.h): each instruction's effect
 * on the values it tracks. Hostile code: every offset is bounded (word_offset), and what
 * cannot be named becomes unknown rather than guessed. */
#include "unwind/x86_machine.h"

#include <string.h>

static bool is_reg(const ZydisDecodedOperand *op, ZydisRegister reg)
{
	return op->type == ZYDIS_OPERAND_TYPE_REGISTER && op->reg.value == reg;
}

/* A memory operand that is reg itself: [reg + 0], no index, no segment. */
static bool is_same_address(const ZydisDecodedOperand *op, ZydisRegister reg)
{
	return op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->mem.base == reg &&
	       op->mem.index == ZYDIS_REGISTER_NONE && op->mem.disp.value == 0 &&
	       op->mem.segment != ZYDIS_REGISTER_FS && op->mem.segment != ZYDIS_REGISTER_GS;
}

/* An immediate operand's value. */
static bool imm_of(const ZydisDecodedOperand *op, int64_t *value)
{
	if (op->type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
		return false;
	*value = op->imm.is_signed ? op->imm.value.s : (int64_t)op->imm.value.u;
	return true;
}

/* r10 or r12-r15's slot in state.drap, or NULL. */
static struct val *drap_reg(struct state *s, ZydisRegister reg)
{
	if (reg == ZYDIS_REGISTER_R10)
		return &s->drap[0];
	if (reg >= ZYDIS_REGISTER_R12 && reg <= ZYDIS_REGISTER_R15)
		return &s->drap[2 + (reg - ZYDIS_REGISTER_R12)];
	return NULL;
}

/* The value of [base + disp] as lea computes it, for base rsp or rbp, no index. */
static struct val lea_value(struct state *s, const ZydisDecodedOperand *mem)
{
	struct val none = { BASE_NONE, 0 };

	if (mem->type != ZYDIS_OPERAND_TYPE_MEMORY || mem->mem.index != ZYDIS_REGISTER_NONE)
		return none;
	if (mem->mem.base == ZYDIS_REGISTER_RSP)
		return val_add(s->sp, mem->mem.disp.value);
	if (mem->mem.base == ZYDIS_REGISTER_RBP)
		return val_add(s->bp.val, mem->mem.disp.value);
	if (drap_reg(s, mem->mem.base))
		return val_add(*drap_reg(s, mem->mem.base), mem->mem.disp.value);
	return none;
}

/* A push of reg (or anything, reg NULL): a caller's value pushed is saved there. */
static void do_push(struct state *s, struct reg *r, int64_t width)
{
	s->sp = val_add(s->sp, -width);
	if (r && r->val.base == BASE_CALLER && val_addressable(s->sp))
		r->caller_at = s->sp;
}

/* A store of r to [at] (mov %rbp,8(%rsp): hand-written kernels, MKL's among them, save
 * registers by mov after one sub, not by push). The first store of the caller's value into
 * the frame is where it is saved; tracing forward, the load before the return says where.
 * A store below rsp (the red zone) is not taken: the walk reads a save below sp as one an
 * epilogue already popped. */
static void do_store(const struct state *s, struct reg *r, struct val at)
{
	/* a save popped since (below rsp) no longer holds it */
	bool saved = r->caller_at.base != BASE_NONE &&
		     !(r->caller_at.base == s->sp.base && r->caller_at.off < s->sp.off);

	if (r->val.base == BASE_CALLER && !saved && val_addressable(at) &&
	    at.base == s->sp.base && at.off >= s->sp.off)
		r->caller_at = at;
}

static void clobber(struct reg *r);

/* A load into r from [from] (a pop, or mov -8(%rbp),%rbx in an epilogue). Tracing from the
 * start, a load from where the caller's value was saved gives it back; tracing forward,
 * the last load from the frame before the return is where the caller's value is. A load
 * from anywhere else (a pointer's target) is a plain write. */
static void do_load(const struct state *s, struct reg *r, struct val from)
{
	if (s->from_start) {
		if (r->caller_at.base != BASE_NONE && val_is(r->caller_at, from.base, from.off))
			r->val = (struct val){ BASE_CALLER, 0 };
		else
			clobber(r);
		return;
	}
	if (!val_addressable(from)) {
		clobber(r);
		return;
	}
	r->caller_at = from;
	r->val = (struct val){ BASE_LOADED, 0 };
}

/* A pop into r: from where its caller's value was saved, it holds that value again
 * (tracing from the start); tracing forward, the last such pop before the return is where
 * the caller's value is. */
static void do_pop(struct state *s, struct reg *r, int64_t width)
{
	struct val from = s->sp;

	s->sp = val_add(s->sp, width);
	if (r)
		do_load(s, r, from);
}

/* A write to r the analysis does not model: its value is lost. Tracing forward, a value
 * restored from a save and then overwritten no longer returns to the caller; tracing from
 * the start, a save made before still holds the caller's value. */
static void clobber(struct reg *r)
{
	if (r->val.base == BASE_LOADED)
		r->caller_at = (struct val){ BASE_NONE, 0 };
	r->val = (struct val){ BASE_NONE, 0 };
}

static struct reg *tracked(struct state *s, ZydisRegister reg)
{
	if (reg == ZYDIS_REGISTER_RBP)
		return &s->bp;
	if (reg == ZYDIS_REGISTER_RBX)
		return &s->bx;
	return NULL;
}

/* Writes the instruction makes to rsp, rbp and rbx that the cases in apply() did not
 * model: through its explicit operands (a 32-bit write to ebx clobbers rbx too). */
static void clobber_written(struct state *s, const ZydisDecodedInstruction *insn,
			    const ZydisDecodedOperand *ops)
{
	for (uint8_t i = 0; i < insn->operand_count_visible; i++) {
		ZydisRegister reg;

		if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    !(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		reg = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, ops[i].reg.value);
		if (reg == ZYDIS_REGISTER_RSP)
			s->sp = (struct val){ BASE_NONE, 0 };
		else if (tracked(s, reg))
			clobber(tracked(s, reg));
		else if (drap_reg(s, reg))
			*drap_reg(s, reg) = (struct val){ BASE_NONE, 0 };
	}
}

/* mov, lea, add, sub on rsp and rbp: the ways functions set up and tear down frames. */
static bool apply_arith(struct state *s, const ZydisDecodedInstruction *insn,
			const ZydisDecodedOperand *ops)
{
	int64_t imm;

	if (insn->operand_count_visible < 2)
		return false;
	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_ADD:
	case ZYDIS_MNEMONIC_SUB:
		if (!is_reg(&ops[0], ZYDIS_REGISTER_RSP) || !imm_of(&ops[1], &imm))
			return false;
		s->sp = val_add(s->sp, insn->mnemonic == ZYDIS_MNEMONIC_ADD ? imm : -imm);
		return true;
	case ZYDIS_MNEMONIC_LEA:
		if (is_reg(&ops[0], ZYDIS_REGISTER_RSP)) {
			s->sp = lea_value(s, &ops[1]);
			return true;
		}
		if (is_reg(&ops[0], ZYDIS_REGISTER_RBP)) {
			struct val v = lea_value(s, &ops[1]);

			/* lea 0x0(%rbp),%rbp is a 4-byte nop (Mono pads its JIT code with it) */
			if (is_same_address(&ops[1], ZYDIS_REGISTER_RBP))
				return true;
			clobber(&s->bp);
			s->bp.val = v;
			return true;
		}
		return false;
	case ZYDIS_MNEMONIC_MOV:
		/* rsp kept in r10 or r12-r15 while the function realigns it, and back */
		if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && drap_reg(s, ops[0].reg.value) &&
		    is_reg(&ops[1], ZYDIS_REGISTER_RSP)) {
			*drap_reg(s, ops[0].reg.value) = s->sp;
			return true;
		}
		if (is_reg(&ops[0], ZYDIS_REGISTER_RSP) && ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    drap_reg(s, ops[1].reg.value)) {
			s->sp = *drap_reg(s, ops[1].reg.value);
			return true;
		}
		if (is_reg(&ops[0], ZYDIS_REGISTER_RBP) && is_reg(&ops[1], ZYDIS_REGISTER_RSP)) {
			clobber(&s->bp);
			s->bp.val = s->sp;
			return true;
		}
		if (is_reg(&ops[0], ZYDIS_REGISTER_RSP) && is_reg(&ops[1], ZYDIS_REGISTER_RBP)) {
			s->sp = val_addressable(s->bp.val) ? s->bp.val : (struct val){ BASE_NONE, 0 };
			return true;
		}
		/* a 64-bit load of rbp or rbx from the frame: a restore, as a pop is */
		if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && tracked(s, ops[0].reg.value) &&
		    ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[1].size == 64) {
			do_load(s, tracked(s, ops[0].reg.value), lea_value(s, &ops[1]));
			return true;
		}
		/* a 64-bit store of rbp or rbx into the frame: a save, as a push is */
		if (ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[0].size == 64 &&
		    ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER && tracked(s, ops[1].reg.value)) {
			do_store(s, tracked(s, ops[1].reg.value), lea_value(s, &ops[0]));
			return true;
		}
		return false;
	default:
		return false;
	}
}

/* rax..r15's index in state.gpr (any width of one), or -1 (rsp: tracked as state.sp). */
static int gpr_index(ZydisRegister reg)
{
	reg = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);
	if (reg < ZYDIS_REGISTER_RAX || reg > ZYDIS_REGISTER_R15 || reg == ZYDIS_REGISTER_RSP)
		return -1;
	return (int)(reg - ZYDIS_REGISTER_RAX);
}

static bool word_offset(int64_t off)
{
	return off > -CODE_MAX_WORD && off < CODE_MAX_WORD;
}

/* The word at SP0 + at as the trace has it: what was stored there since pc, else the word
 * that was there at pc. */
int32_t x86_machine__word_at(const struct state *s, int64_t at)
{
	if (!word_offset(at) || (at & 7))
		return WORD_UNKNOWN;
	for (unsigned i = 0; i < s->nr_words; i++) {
		if (s->words[i].at == at)
			return s->words[i].holds;
	}
	return at > s->forgotten ? (int32_t)at : WORD_UNKNOWN;
}

/* Stores holds to the word at SP0 + at. With every slot taken, the lowest word goes (a
 * return reads the word at its rsp, above the frame's locals and saves), and every word at
 * or below it reads as unknown from then on. */
static void store_word(struct state *s, int64_t at, int32_t holds)
{
	unsigned lowest = 0;

	if (!word_offset(at)) {
		s->forgotten = INT32_MAX; /* a store the words cannot hold: nothing is sure */
		return;
	}
	for (unsigned i = 0; i < s->nr_words; i++) {
		if (s->words[i].at == at) {
			s->words[i].holds = holds;
			return;
		}
		if (s->words[i].at < s->words[lowest].at)
			lowest = i;
	}
	if (s->nr_words < NR_WORDS) {
		lowest = s->nr_words++;
	} else if (s->words[lowest].at > at) {
		if (at > s->forgotten)
			s->forgotten = (int32_t)at;
		return;
	} else if (s->words[lowest].at > s->forgotten) {
		s->forgotten = s->words[lowest].at;
	}
	s->words[lowest] = (struct word){ (int32_t)at, holds };
}

/* A store of width bytes at SP0 + at: an aligned word takes holds, every other word it
 * touches becomes unknown. */
static void store_bytes(struct state *s, int64_t at, int64_t width, int32_t holds)
{
	if (width == 8 && !(at & 7)) {
		store_word(s, at, holds);
		return;
	}
	for (int64_t w = at & ~7ll; w < at + width && word_offset(w); w += 8)
		store_word(s, w, WORD_UNKNOWN);
}

/* A memory operand's address as SP0 + *at, with rsp at sp (push and pop move rsp around
 * their access). */
static bool stack_address(struct state *s, struct val sp, const ZydisDecodedOperand *op,
			  int64_t *at)
{
	struct val a;

	if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || op->mem.segment == ZYDIS_REGISTER_FS ||
	    op->mem.segment == ZYDIS_REGISTER_GS)
		return false;
	if (op->mem.base == ZYDIS_REGISTER_RSP && op->mem.index == ZYDIS_REGISTER_NONE)
		a = val_add(sp, op->mem.disp.value);
	else
		a = lea_value(s, op);
	if (a.base != BASE_SP0 || !word_offset(a.off))
		return false;
	*at = a.off;
	return true;
}

/* The word a push or a store writes, from its source operand: a register's tracked value,
 * or the word a memory source held. */
static int32_t source_word(struct state *s, const ZydisDecodedOperand *src)
{
	int64_t at;
	int i;

	if (src->type == ZYDIS_OPERAND_TYPE_REGISTER && src->size == 64) {
		i = gpr_index(src->reg.value);
		return i >= 0 ? s->gpr[i] : WORD_UNKNOWN;
	}
	if (src->type == ZYDIS_OPERAND_TYPE_MEMORY && src->size == 64 &&
	    stack_address(s, s->sp, src, &at))
		return x86_machine__word_at(s, at);
	return WORD_UNKNOWN;
}

/* Tracing forward, before apply() moves rsp: the stack words the instruction stores to and
 * the registers it loads from them. */
static void track_words(struct state *s, const ZydisDecodedInstruction *insn,
			const ZydisDecodedOperand *ops)
{
	const bool sp_known = s->sp.base == BASE_SP0;
	int32_t value = WORD_UNKNOWN;
	int dst = -1;
	int64_t at;

	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_PUSH:
		if (sp_known && insn->operand_width == 64)
			store_word(s, s->sp.off - 8, source_word(s, &ops[0]));
		else if (sp_known)
			store_bytes(s, s->sp.off - insn->operand_width / 8, insn->operand_width / 8,
				    WORD_UNKNOWN);
		return;
	case ZYDIS_MNEMONIC_PUSHFQ:
		if (sp_known)
			store_word(s, s->sp.off - 8, WORD_UNKNOWN);
		return;
	case ZYDIS_MNEMONIC_POP:
		value = sp_known ? x86_machine__word_at(s, s->sp.off) : WORD_UNKNOWN;
		if (ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY) {
			/* the address is computed with rsp already past what was popped */
			if (stack_address(s, val_add(s->sp, insn->operand_width / 8), &ops[0], &at))
				store_bytes(s, at, insn->operand_width / 8,
					    insn->operand_width == 64 ? value : WORD_UNKNOWN);
			return;
		}
		dst = gpr_index(ops[0].reg.value);
		if (dst >= 0)
			s->gpr[dst] = value;
		return;
	case ZYDIS_MNEMONIC_CALL:
		/* the callee may change any register, and the words below rsp */
		for (unsigned i = 0; i < NR_GPRS; i++)
			s->gpr[i] = WORD_UNKNOWN;
		for (unsigned i = 0; sp_known && i < s->nr_words; i++) {
			if (s->words[i].at < s->sp.off)
				s->words[i].holds = WORD_UNKNOWN;
		}
		return;
	case ZYDIS_MNEMONIC_MOV:
		if (insn->operand_count_visible == 2 && ops[0].size == 64)
			value = source_word(s, &ops[1]);
		break;
	default:
		break;
	}
	/* every register or stack word written, by any operand, hidden ones too */
	for (uint8_t i = 0; i < insn->operand_count; i++) {
		if (!(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER) {
			dst = gpr_index(ops[i].reg.value);
			if (dst >= 0)
				s->gpr[dst] = i == 0 ? value : WORD_UNKNOWN;
		} else if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && stack_address(s, s->sp, &ops[i], &at)) {
			store_bytes(s, at, ops[i].size / 8, i == 0 ? value : WORD_UNKNOWN);
		}
	}
}

/* rsp loaded from the stack word at from (pop %rsp; mov disp(%rbp),%rsp). Tracing
 * forward, a word the code has not stored to since pc holds what the sampled stack holds
 * there, so rsp is that word as the walk will read it (BASE_DEREF). Stores through rbp are
 * not tracked (as for returns), so a word read through it is taken as untouched. Anything
 * else, a second such load among them, loses rsp. */
static void load_sp(struct state *s, struct val from)
{
	bool untouched = from.base == BASE_BP0 ||
			 (from.base == BASE_SP0 && x86_machine__word_at(s, from.off) == from.off);

	if (s->from_start || !untouched || !word_offset(from.off) || s->deref.base != BASE_NONE) {
		s->sp = (struct val){ BASE_NONE, 0 };
		return;
	}
	s->deref = from;
	s->sp = (struct val){ BASE_DEREF, 0 };
}

/* The instruction's effect on rsp, rbp and rbx. */
void x86_machine__apply(struct state *s, const ZydisDecodedInstruction *insn,
			const ZydisDecodedOperand *ops)
{
	int64_t width = insn->operand_width / 8, imm;
	struct reg *r;

	if (!s->from_start)
		track_words(s, insn, ops);

	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_PUSH:
		r = ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER ? tracked(s, ops[0].reg.value) : NULL;
		do_push(s, r, width);
		return;
	case ZYDIS_MNEMONIC_POP:
		if (is_reg(&ops[0], ZYDIS_REGISTER_RSP)) {
			load_sp(s, s->sp); /* rsp takes the word it pointed at */
			return;
		}
		r = ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER ? tracked(s, ops[0].reg.value) : NULL;
		do_pop(s, r, width);
		if (!r)
			clobber_written(s, insn, ops);
		return;
	case ZYDIS_MNEMONIC_PUSHFQ:
		do_push(s, NULL, 8);
		return;
	case ZYDIS_MNEMONIC_POPFQ:
		do_pop(s, NULL, 8);
		return;
	case ZYDIS_MNEMONIC_LEAVE:
		/* mov %rbp,%rsp; pop %rbp */
		s->sp = val_addressable(s->bp.val) ? s->bp.val : (struct val){ BASE_NONE, 0 };
		do_pop(s, &s->bp, 8);
		return;
	case ZYDIS_MNEMONIC_ENTER:
		/* push %rbp; mov %rsp,%rbp; sub $size,%rsp (nesting level 0 only) */
		if (!imm_of(&ops[0], &imm) || !imm_of(&ops[1], &width) || width != 0) {
			s->sp = (struct val){ BASE_NONE, 0 };
			clobber(&s->bp);
			return;
		}
		do_push(s, &s->bp, 8);
		s->bp.val = s->sp;
		s->sp = val_add(s->sp, -imm);
		return;
	case ZYDIS_MNEMONIC_MOV:
		if (is_reg(&ops[0], ZYDIS_REGISTER_RSP) && ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    ops[1].size == 64) {
			load_sp(s, lea_value(s, &ops[1]));
			return;
		}
		/* fall through */
	default:
		if (!apply_arith(s, insn, ops))
			clobber_written(s, insn, ops);
	}
}
