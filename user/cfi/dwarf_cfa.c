/* The CFA program interpreter. Only the CFA, rbp, rbx and the return-address column are
 * tracked; every other register's rules are parsed (to stay in step) and dropped.
 *
 * Every read goes through a bounded cursor; every loop consumes at least one byte of a
 * bounded buffer per iteration, so no input can make it spin. */
#include "cfi/dwarf_cfa.h"

#include <errno.h>
#include <string.h>

#include "unwind_row.h"

/* DW_CFA opcodes (DWARF 5, 6.4.2, plus the GNU extensions). */
enum {
	DW_CFA_advance_loc = 0x40,
	DW_CFA_offset = 0x80,
	DW_CFA_restore = 0xc0,
	DW_CFA_nop = 0x00,
	DW_CFA_set_loc = 0x01,
	DW_CFA_advance_loc1 = 0x02,
	DW_CFA_advance_loc2 = 0x03,
	DW_CFA_advance_loc4 = 0x04,
	DW_CFA_offset_extended = 0x05,
	DW_CFA_restore_extended = 0x06,
	DW_CFA_undefined = 0x07,
	DW_CFA_same_value = 0x08,
	DW_CFA_register = 0x09,
	DW_CFA_remember_state = 0x0a,
	DW_CFA_restore_state = 0x0b,
	DW_CFA_def_cfa = 0x0c,
	DW_CFA_def_cfa_register = 0x0d,
	DW_CFA_def_cfa_offset = 0x0e,
	DW_CFA_def_cfa_expression = 0x0f,
	DW_CFA_expression = 0x10,
	DW_CFA_offset_extended_sf = 0x11,
	DW_CFA_def_cfa_sf = 0x12,
	DW_CFA_def_cfa_offset_sf = 0x13,
	DW_CFA_val_offset = 0x14,
	DW_CFA_val_offset_sf = 0x15,
	DW_CFA_val_expression = 0x16,
	DW_CFA_MIPS_advance_loc8 = 0x1d,
	DW_CFA_GNU_window_save = 0x2d,
	DW_CFA_GNU_args_size = 0x2e,
	DW_CFA_GNU_negative_offset_extended = 0x2f,
};

/* The DWARF expression opcodes hprof recognises. */
enum {
	DW_OP_deref = 0x06,
	DW_OP_and = 0x1a,
	DW_OP_plus = 0x22,
	DW_OP_shl = 0x24,
	DW_OP_ge = 0x2a,
	DW_OP_lit0 = 0x30,
	DW_OP_lit3 = 0x33,
	DW_OP_lit15 = 0x3f,
	DW_OP_breg6 = 0x76,
	DW_OP_breg7 = 0x77,
	DW_OP_breg16 = 0x80,
};

/* ---- expressions ---- */

/* CFA = rsp + 8 + ((rip & 15) >= N ? 8 : 0): the lazy-binding PLT's rule; N = 11 for the
 * classic 16-byte .plt entry, 10 for the IBT layout. */
static bool match_plt(const uint8_t *x, uint64_t len, int64_t *threshold)
{
	static const uint8_t head[] = { DW_OP_breg7, 8, DW_OP_breg16, 0, DW_OP_lit15, DW_OP_and };
	static const uint8_t tail[] = { DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus };

	if (len != sizeof(head) + 1 + sizeof(tail) || memcmp(x, head, sizeof(head)) != 0 ||
	    memcmp(x + sizeof(head) + 1, tail, sizeof(tail)) != 0)
		return false;
	if (x[sizeof(head)] < DW_OP_lit0 || x[sizeof(head)] > DW_OP_lit0 + 31)
		return false;
	*threshold = x[sizeof(head)] - DW_OP_lit0;
	return true;
}

/* DW_OP_bregN sleb, and nothing else (or DW_OP_deref after it when deref). */
static bool match_breg(const uint8_t *x, uint64_t len, uint8_t breg, bool deref, int64_t *off)
{
	struct cfi_cur c = { x, x + len };
	uint8_t op;

	if (rd_u8(&c, &op) || op != breg || rd_sleb(&c, off))
		return false;
	if (deref && (rd_u8(&c, &op) || op != DW_OP_deref))
		return false;
	return c.p == c.end;
}

static void classify_cfa_expr(const uint8_t *x, uint64_t len, struct cfi_cfa_rule *cfa)
{
	int64_t arg = 0;

	if (match_plt(x, len, &arg))
		cfa->expr = UNWIND_CFA_EXPR_PLT;
	else if (match_breg(x, len, DW_OP_breg7, true, &arg))
		cfa->expr = UNWIND_CFA_EXPR_DEREF_SP;
	else if (match_breg(x, len, DW_OP_breg6, true, &arg))
		cfa->expr = UNWIND_CFA_EXPR_DEREF_BP;
	else
		cfa->expr = UNWIND_CFA_UNSUPPORTED;
	cfa->expr_arg = arg;
}

/* ---- the CFA program ---- */

/* Deepest DW_CFA_remember_state nesting accepted; compilers nest one or two deep. */
#define CFI_MAX_REMEMBER 64

struct remember_stack {
	struct cfi_state s[CFI_MAX_REMEMBER];
	unsigned int n;
};

/* The rule slot for reg, or NULL when hprof does not track reg. */
static inline struct cfi_reg_rule *slot(struct cfi_state *st, const struct cfi_cie *cie, uint64_t reg)
{
	if (reg == cie->ra_reg)
		return &st->ra;
	if (reg == UNWIND_DWARF_RBP)
		return &st->rbp;
	if (reg == UNWIND_DWARF_RBX)
		return &st->rbx;
	return NULL;
}

static inline void set_rule(struct cfi_state *st, const struct cfi_cie *cie, uint64_t reg,
			    uint8_t how, int64_t arg)
{
	struct cfi_reg_rule *r = slot(st, cie, reg);

	if (r) {
		r->how = how;
		r->arg = arg;
	}
}

/* DW_CFA_restore: back to the CIE's initial rule (inside the CIE itself: unreferenced). */
static inline void restore_rule(struct cfi_state *st, const struct cfi_cie *cie, uint64_t reg,
				bool in_cie)
{
	struct cfi_reg_rule *r = slot(st, cie, reg);
	static const struct cfi_reg_rule unref;

	if (!r)
		return;
	if (in_cie)
		*r = unref;
	else
		*r = r == &st->ra ? cie->init.ra : r == &st->rbp ? cie->init.rbp : cie->init.rbx;
}

/* Reads an expression block's length and bounds. */
static inline int rd_block(struct cfi_cur *c, const uint8_t **x, uint64_t *len)
{
	if (rd_uleb(c, len) || *len > (uint64_t)(c->end - c->p))
		return -1;
	*x = c->p;
	c->p += *len;
	return 0;
}

/* What an FDE's program has handed its sink: only changes are handed, since most
 * locations only change registers hprof does not track. */
struct handover {
	const struct cfi_sink *sink;
	struct cfi_state last;
	bool any;
};

static inline bool state_equal(const struct cfi_state *a, const struct cfi_state *b)
{
	return a->cfa.reg == b->cfa.reg && a->cfa.offset == b->cfa.offset &&
	       a->cfa.expr == b->cfa.expr && a->cfa.expr_arg == b->cfa.expr_arg &&
	       a->rbp.how == b->rbp.how && a->rbp.arg == b->rbp.arg &&
	       a->rbx.how == b->rbx.how && a->rbx.arg == b->rbx.arg &&
	       a->ra.how == b->ra.how && a->ra.arg == b->ra.arg;
}

static inline int hand_over(struct handover *h, uint64_t pc, const struct cfi_state *st)
{
	if (h->any && state_equal(st, &h->last))
		return 0;
	h->last = *st;
	h->any = true;
	return h->sink->state_at(h->sink->ctx, pc, st);
}

#define TRUNC() cfi_fail(e, sec, op_off, "truncated operand of DW_CFA opcode 0x%02x", op)

/* Runs [start, end). With a handover (an FDE), hands the state at each location in [lo, hi)
 * and stops at the first location at or past hi; without one (a CIE), ignores locations. */
static int run_program(const struct cfi_section *sec, const struct cfi_cie *cie,
		       struct cfi_state *st, uint64_t start, uint64_t end, uint64_t lo, uint64_t hi,
		       struct handover *out, struct cfi_err *e)
{
	struct cfi_cur c = { sec->data + start, sec->data + end };
	struct remember_stack rs; /* only its count is initialised: most programs never push */
	uint64_t loc = lo, reg, u, delta;
	bool in_cie = out == NULL;
	const uint8_t *x;
	int64_t s;
	int err;

	rs.n = 0;
	while (c.p < c.end) {
		uint64_t op_off = cur_off(sec, &c);
		uint8_t op = *c.p++;

		delta = 0;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			delta = (uint64_t)(op & 0x3f) * cie->code_align;
			goto advance;
		case DW_CFA_offset:
			if (rd_uleb(&c, &u))
				return TRUNC();
			set_rule(st, cie, op & 0x3f, CFI_REG_OFFSET, (int64_t)(u * (uint64_t)cie->data_align));
			continue;
		case DW_CFA_restore:
			restore_rule(st, cie, op & 0x3f, in_cie);
			continue;
		}
		switch (op) {
		case DW_CFA_nop:
		case DW_CFA_GNU_window_save:
			continue;
		case DW_CFA_set_loc: {
			uint64_t to;

			if (cfi_read_encoded(&c, cie->fde_enc, cie->addr_size,
					     sec->vaddr + cur_off(sec, &c), 0, &to))
				return cfi_fail(e, sec, op_off, "bad DW_CFA_set_loc operand");
			if (in_cie)
				continue;
			if (to < loc)
				return cfi_fail(e, sec, op_off, "DW_CFA_set_loc moves backwards");
			delta = to - loc;
			goto advance;
		}
		case DW_CFA_advance_loc1:
			if (rd_un(&c, 1, &u))
				return TRUNC();
			delta = u * cie->code_align;
			goto advance;
		case DW_CFA_advance_loc2:
			if (rd_un(&c, 2, &u))
				return TRUNC();
			delta = u * cie->code_align;
			goto advance;
		case DW_CFA_advance_loc4:
			if (rd_un(&c, 4, &u))
				return TRUNC();
			delta = u * cie->code_align;
			goto advance;
		case DW_CFA_MIPS_advance_loc8:
			if (rd_un(&c, 8, &u))
				return TRUNC();
			delta = u * cie->code_align;
			goto advance;
		case DW_CFA_offset_extended:
			if (rd_uleb(&c, &reg) || rd_uleb(&c, &u))
				return TRUNC();
			set_rule(st, cie, reg, CFI_REG_OFFSET, (int64_t)(u * (uint64_t)cie->data_align));
			continue;
		case DW_CFA_offset_extended_sf:
			if (rd_uleb(&c, &reg) || rd_sleb(&c, &s))
				return TRUNC();
			set_rule(st, cie, reg, CFI_REG_OFFSET,
				 (int64_t)((uint64_t)s * (uint64_t)cie->data_align));
			continue;
		case DW_CFA_GNU_negative_offset_extended:
			if (rd_uleb(&c, &reg) || rd_uleb(&c, &u))
				return TRUNC();
			set_rule(st, cie, reg, CFI_REG_OFFSET,
				 (int64_t)(0 - u * (uint64_t)cie->data_align));
			continue;
		case DW_CFA_val_offset:
			if (rd_uleb(&c, &reg) || rd_uleb(&c, &u))
				return TRUNC();
			set_rule(st, cie, reg, CFI_REG_VAL_OFFSET, (int64_t)(u * (uint64_t)cie->data_align));
			continue;
		case DW_CFA_val_offset_sf:
			if (rd_uleb(&c, &reg) || rd_sleb(&c, &s))
				return TRUNC();
			set_rule(st, cie, reg, CFI_REG_VAL_OFFSET,
				 (int64_t)((uint64_t)s * (uint64_t)cie->data_align));
			continue;
		case DW_CFA_restore_extended:
			if (rd_uleb(&c, &reg))
				return TRUNC();
			restore_rule(st, cie, reg, in_cie);
			continue;
		case DW_CFA_undefined:
			if (rd_uleb(&c, &reg))
				return TRUNC();
			set_rule(st, cie, reg, CFI_REG_UNDEFINED, 0);
			continue;
		case DW_CFA_same_value:
			if (rd_uleb(&c, &reg))
				return TRUNC();
			set_rule(st, cie, reg, CFI_REG_SAME_VALUE, 0);
			continue;
		case DW_CFA_register:
			if (rd_uleb(&c, &reg) || rd_uleb(&c, &u))
				return TRUNC();
			set_rule(st, cie, reg, CFI_REG_REGISTER, (int64_t)u);
			continue;
		case DW_CFA_remember_state:
			if (rs.n >= CFI_MAX_REMEMBER)
				return cfi_fail(e, sec, op_off,
						"DW_CFA_remember_state nested deeper than %d",
						CFI_MAX_REMEMBER);
			rs.s[rs.n++] = *st;
			continue;
		case DW_CFA_restore_state:
			if (rs.n == 0)
				return cfi_fail(e, sec, op_off,
						"DW_CFA_restore_state without DW_CFA_remember_state");
			*st = rs.s[--rs.n];
			continue;
		case DW_CFA_def_cfa:
			if (rd_uleb(&c, &reg) || rd_uleb(&c, &u))
				return TRUNC();
			st->cfa.reg = reg;
			st->cfa.offset = (int64_t)u;
			st->cfa.expr = 0;
			continue;
		case DW_CFA_def_cfa_sf:
			if (rd_uleb(&c, &reg) || rd_sleb(&c, &s))
				return TRUNC();
			st->cfa.reg = reg;
			st->cfa.offset = (int64_t)((uint64_t)s * (uint64_t)cie->data_align);
			st->cfa.expr = 0;
			continue;
		case DW_CFA_def_cfa_register:
			if (rd_uleb(&c, &reg))
				return TRUNC();
			st->cfa.reg = reg;
			st->cfa.expr = 0;
			continue;
		case DW_CFA_def_cfa_offset:
			/* only meaningful after a register rule; an expression rule stays */
			if (rd_uleb(&c, &u))
				return TRUNC();
			st->cfa.offset = (int64_t)u;
			continue;
		case DW_CFA_def_cfa_offset_sf:
			if (rd_sleb(&c, &s))
				return TRUNC();
			st->cfa.offset = (int64_t)((uint64_t)s * (uint64_t)cie->data_align);
			continue;
		case DW_CFA_def_cfa_expression:
			if (rd_block(&c, &x, &u))
				return TRUNC();
			classify_cfa_expr(x, u, &st->cfa);
			continue;
		case DW_CFA_expression:
			if (rd_uleb(&c, &reg) || rd_block(&c, &x, &u))
				return TRUNC();
			if (match_breg(x, u, DW_OP_breg7, false, &s))
				set_rule(st, cie, reg, CFI_REG_EXPR_AT_SP, s);
			else if (match_breg(x, u, DW_OP_breg6, false, &s))
				set_rule(st, cie, reg, CFI_REG_EXPR_AT_BP, s);
			else
				set_rule(st, cie, reg, CFI_REG_EXPRESSION, 0);
			continue;
		case DW_CFA_val_expression:
			if (rd_uleb(&c, &reg) || rd_block(&c, &x, &u))
				return TRUNC();
			set_rule(st, cie, reg, CFI_REG_VAL_EXPRESSION, 0);
			continue;
		case DW_CFA_GNU_args_size:
			if (rd_uleb(&c, &u))
				return TRUNC();
			continue;
		default:
			return cfi_fail(e, sec, op_off, "unknown DW_CFA opcode 0x%02x", op);
		}
advance:
		if (in_cie)
			continue;
		/* the state so far covers [loc, loc + delta); a zero advance is overridden */
		if (delta == 0)
			continue;
		if (loc < hi) {
			err = hand_over(out, loc, st);
			if (err)
				return err;
		}
		if (loc + delta < loc || loc + delta >= hi)
			return 0;
		loc += delta;
	}
	if (out && loc < hi)
		return hand_over(out, loc, st);
	return 0;
}

int cfi_run_cie(const struct cfi_section *sec, struct cfi_cie *cie, struct cfi_err *e)
{
	/* the initial rules: CFA unknown until the program says, registers unreferenced */
	memset(&cie->init, 0, sizeof(cie->init));
	return run_program(sec, cie, &cie->init, cie->insn_off, cie->insn_end, 0, 0, NULL, e);
}

int cfi_run_fde(const struct cfi_section *sec, const struct cfi_cie *cie,
		const struct cfi_fde *fde, uint64_t hi, const struct cfi_sink *sink,
		struct cfi_err *e)
{
	struct cfi_state st = cie->init;
	struct handover out = { .sink = sink };

	return run_program(sec, cie, &st, fde->insn_off, fde->insn_off + fde->insn_len, fde->lo,
			   hi, &out, e);
}
