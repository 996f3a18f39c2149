#include "unwind/x86_code.h"

#include <string.h>

#include <Zydis/Zydis.h>

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

/* A register's value as the analysis knows it: base + off, where a base is a value the
 * analysis cannot know but can name. */
enum base {
	BASE_NONE = 0, /* not known */
	BASE_CFA,      /* the caller's rsp (tracing from the function's start) */
	BASE_SP0,      /* rsp at pc (tracing forward from pc) */
	BASE_BP0,      /* rbp at pc (tracing forward from pc) */
	BASE_BX0,      /* rbx at pc (tracing forward from pc): not an address */
	BASE_CALLER,   /* the caller's own value of the register (rbp or rbx): not an address */
	BASE_LOADED,   /* loaded from where the caller's value was saved (see struct reg) */
	BASE_R0,       /* r10 (BASE_R0 + 0), r12 .. r15 (+ 2 .. 5) at pc, tracing forward: hand-
			* written code keeps rsp in one while it realigns rsp (dav1d's x86inc) */
	BASE_R0_LAST = BASE_R0 + 5,
	BASE_DEREF,    /* the word at state.deref as it was at pc (tracing forward): the rsp a
			* realigned frame keeps in memory and reloads with pop %rsp (libjpeg-
			* turbo's nasm: CFA = *(rbp) + 16 in the body) */
};

/* r10 and r12-r15, tracked for the rsp a function keeps in one (index: DWARF number - 10;
 * r11 is not tracked). */
#define NR_DRAP 6

/* Tracing forward, the words of the stack the code stores to, and what the general
 * registers loaded from the stack, so that a return finds its return address where the
 * code moved it: sljit's fast calls (PCRE2's JIT) enter with pop (%rsp), which moves the
 * return address into the caller's top word, and return with mov (%rsp),%rax; push %rax;
 * ret. A word is 8 bytes at SP0 + an offset; WORD_UNKNOWN: a value the analysis cannot
 * name. Stores through other registers than rsp (and rbp or a DRAP register holding
 * rsp + N) are taken not to reach the words a return reads. */
#define NR_WORDS 16
#define NR_GPRS 16
#define WORD_UNKNOWN INT32_MIN
#define CODE_MAX_WORD (1 << 24)

struct word {
	int32_t at;    /* SP0 + at */
	int32_t holds; /* the word at SP0 + holds at pc, or WORD_UNKNOWN */
};

struct val {
	uint8_t base;
	int64_t off;
};

/* rbp or rbx: its value, and where the caller's value of it is in memory. */
struct reg {
	struct val val;
	struct val caller_at; /* BASE_NONE: nowhere known */
};

struct state {
	uint64_t pc;
	struct val sp;
	struct reg bp, bx;
	struct val drap[NR_DRAP];
	struct val deref; /* BASE_DEREF's word: SP0 or BP0 + an offset */
	bool from_start; /* tracing from the function's start, not forward from pc */
	/* tracing forward: rax..r15 (by Zydis's order; rsp's unused) as the word at SP0 + n
	 * at pc they were loaded from, else WORD_UNKNOWN; the words stored to since pc */
	int32_t gpr[NR_GPRS];
	struct word words[NR_WORDS];
	uint8_t nr_words;
	int32_t forgotten; /* words at or below SP0 + forgotten may have been stored to */
	/* at a return: the return address is at SP0 + ra_at (ra_moved), else at rsp; nowhere
	 * the analysis can name (ra_lost) */
	bool ra_moved, ra_lost;
	/* the exit is a jump out of the function, taken for a tail call, not a return */
	bool tail_jump;
	int32_t ra_at;
};

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

static bool val_is(struct val v, uint8_t base, int64_t off)
{
	return v.base == base && v.off == off;
}

/* A value an address can be computed from (rsp or rbp as a base). */
static bool val_addressable(struct val v)
{
	return v.base == BASE_CFA || v.base == BASE_SP0 || v.base == BASE_BP0 ||
	       (v.base >= BASE_R0 && v.base <= BASE_R0_LAST) || v.base == BASE_DEREF;
}

static struct val val_add(struct val v, int64_t delta)
{
	if (!val_addressable(v))
		return (struct val){ BASE_NONE, 0 };
	v.off += delta;
	return v;
}

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
static int32_t word_at(const struct state *s, int64_t at)
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
		return word_at(s, at);
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
		value = sp_known ? word_at(s, s->sp.off) : WORD_UNKNOWN;
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
			 (from.base == BASE_SP0 && word_at(s, from.off) == from.off);

	if (s->from_start || !untouched || !word_offset(from.off) || s->deref.base != BASE_NONE) {
		s->sp = (struct val){ BASE_NONE, 0 };
		return;
	}
	s->deref = from;
	s->sp = (struct val){ BASE_DEREF, 0 };
}

/* The instruction's effect on rsp, rbp and rbx. */
static void apply(struct state *s, const ZydisDecodedInstruction *insn,
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
	ra = word_at(s, s->sp.off);
	if (ra == s->sp.off)
		return;
	s->ra_moved = true;
	s->ra_lost = ra == WORD_UNKNOWN || ra < 0;
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
			apply(&s, &insn, ops);
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

/* Tracing forward: at the return, rsp is SP0 or BP0 + off and the return address is
 * there. */
static enum code_fail rules_at_return(const struct state *s, struct code_rules *out)
{
	struct val cfa = val_add(s->sp, 8);

	if (s->ra_lost)
		return CODE_STACK_LOST;
	if (cfa.base == BASE_DEREF)
		return deref_cfa(s, cfa, out);
	/* a return address the code moved up into its caller's top word (sljit) leaves the
	 * caller's rsp where the callee's is */
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
	/* moved: the return reads it from a word the code stored it to (s->sp is SP0-based) */
	out->ra_offset = s->ra_moved ? (int32_t)(s->ra_at - cfa.off) : -8;
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
		s.gpr[i] = WORD_UNKNOWN;
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
