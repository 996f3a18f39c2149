/* Rows from the states CFA programs go through: each state mapped onto the row's rule
 * kinds, kept as a compact row when its rules differ from the last row's (arguments too
 * wide for the row go to the side table), and end markers between functions. */
#include "cfi/rows.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/grow.h"

/* One register's DWARF rule as a row kind and argument; an unsupported rule's argument is
 * its reason. */
static void map_reg(const struct cfi_reg_rule *r, bool is_ra, int *kind, int64_t *arg,
		    enum unwind_reason *reason)
{
	*arg = r->arg;
	*reason = UNWIND_REASON_NONE;
	switch (r->how) {
	case CFI_REG_UNREFERENCED:
		/* x86-64: the call pushed the return address just below the CFA */
		*kind = is_ra ? UNWIND_RA_AT_CFA : UNWIND_RBP_UNCHANGED;
		*arg = is_ra ? -8 : 0;
		return;
	case CFI_REG_SAME_VALUE:
		if (!is_ra) {
			*kind = UNWIND_RBP_UNCHANGED;
			*arg = 0;
			return;
		}
		*reason = UNWIND_REASON_SAME_VALUE;
		break;
	case CFI_REG_UNDEFINED:
		*kind = is_ra ? UNWIND_RA_UNDEFINED : UNWIND_RBP_UNDEFINED;
		*arg = 0;
		return;
	case CFI_REG_OFFSET:
		*kind = is_ra ? UNWIND_RA_AT_CFA : UNWIND_RBP_AT_CFA;
		return;
	case CFI_REG_VAL_OFFSET:
		if (!is_ra) {
			*kind = UNWIND_RBP_VAL_CFA;
			return;
		}
		*reason = UNWIND_REASON_VAL_OFFSET;
		break;
	case CFI_REG_EXPR_AT_SP:
		*kind = is_ra ? UNWIND_RA_AT_SP : UNWIND_RBP_AT_SP;
		return;
	case CFI_REG_EXPR_AT_BP:
		if (!is_ra) {
			*kind = UNWIND_RBP_AT_BP;
			return;
		}
		*reason = UNWIND_REASON_EXPRESSION;
		break;
	case CFI_REG_REGISTER:
		/* the walk knows some registers' values (rdi in the leaf): the row says which */
		if (is_ra && r->arg >= 0 && r->arg <= INT8_MAX && r->arg != UNWIND_ROW_WIDE) {
			*kind = UNWIND_RA_REGISTER;
			return;
		}
		*reason = UNWIND_REASON_REGISTER;
		break;
	case CFI_REG_EXPRESSION:
		*reason = UNWIND_REASON_EXPRESSION;
		break;
	default:
		*reason = UNWIND_REASON_VAL_EXPRESSION;
		break;
	}
	*kind = is_ra ? UNWIND_RA_UNSUPPORTED : UNWIND_RBP_UNSUPPORTED;
	*arg = *reason;
}

/* rbx's DWARF rule as a row rule: only what the row's byte can hold is supported. */
static void map_rbx(const struct cfi_reg_rule *r, struct unwind_rules *out)
{
	out->rbx_offset = 0;
	switch (r->how) {
	case CFI_REG_UNREFERENCED:
	case CFI_REG_SAME_VALUE:
		out->rbx = UNWIND_RBX_UNCHANGED;
		return;
	case CFI_REG_UNDEFINED:
		out->rbx = UNWIND_RBX_UNDEFINED;
		return;
	case CFI_REG_OFFSET:
		if (unwind_row_rbx_fits(r->arg)) {
			out->rbx = UNWIND_RBX_AT_CFA;
			out->rbx_offset = r->arg;
			return;
		}
		break;
	default:
		break;
	}
	out->rbx = UNWIND_RBX_UNSUPPORTED;
}

/* Maps a DWARF state onto the row's rule kinds. */
static void state_rules(const struct cfi_state *st, struct unwind_rules *r)
{
	int kind;

	r->cfa_reason = UNWIND_REASON_NONE;
	if (st->cfa.expr) {
		r->cfa = st->cfa.expr;
		r->cfa_offset = st->cfa.expr_arg;
		if (r->cfa == UNWIND_CFA_UNSUPPORTED) {
			r->cfa_reason = UNWIND_REASON_EXPRESSION;
			r->cfa_offset = UNWIND_REASON_EXPRESSION;
		}
	} else if (st->cfa.reg == UNWIND_DWARF_RSP) {
		r->cfa = UNWIND_CFA_SP_OFFSET;
		r->cfa_offset = st->cfa.offset;
	} else if (st->cfa.reg == UNWIND_DWARF_RBP) {
		r->cfa = UNWIND_CFA_BP_OFFSET;
		r->cfa_offset = st->cfa.offset;
	} else if (st->cfa.reg == UNWIND_DWARF_RBX) {
		r->cfa = UNWIND_CFA_BX_OFFSET;
		r->cfa_offset = st->cfa.offset;
	} else if (st->cfa.reg == UNWIND_DWARF_R10) {
		r->cfa = UNWIND_CFA_R10_OFFSET;
		r->cfa_offset = st->cfa.offset;
	} else if (st->cfa.reg >= UNWIND_DWARF_R12 && st->cfa.reg <= UNWIND_DWARF_R15) {
		r->cfa = UNWIND_CFA_R12_OFFSET + (int)(st->cfa.reg - UNWIND_DWARF_R12);
		r->cfa_offset = st->cfa.offset;
	} else {
		r->cfa = UNWIND_CFA_UNSUPPORTED;
		r->cfa_reason = UNWIND_REASON_CFA_REGISTER;
		r->cfa_offset = UNWIND_REASON_CFA_REGISTER;
	}
	map_reg(&st->rbp, false, &kind, &r->rbp_offset, &r->rbp_reason);
	r->rbp = kind;
	map_reg(&st->ra, true, &kind, &r->ra_offset, &r->ra_reason);
	r->ra = kind;
	map_rbx(&st->rbx, r);
}

static bool fits16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

/* A row's rules (the 8 bytes after pc) as one integer: equal rules, equal integers, as
 * long as neither row is wide. */
static inline uint64_t row_rules(const struct unwind_row *row)
{
	uint64_t v;

	memcpy(&v, &row->cfa_kind, sizeof(v));
	return v;
}

static bool wide_equal(const struct unwind_row_wide *w, const struct unwind_rules *r)
{
	return w->cfa_arg == r->cfa_offset && w->rbp_arg == r->rbp_offset && w->ra_arg == r->ra_offset;
}

static int push_row(struct cfi_rows *s, const struct unwind_row *row)
{
	if (s->nr_rows == s->cap_rows &&
	    grow_array((void **)&s->rows, &s->cap_rows, s->nr_rows + 1, sizeof(*row)))
		return -ENOMEM;
	s->rows[s->nr_rows++] = *row;
	return 0;
}

/* Appends the row unless the previous row has the same rules; *added says which. */
static int encode_row(struct cfi_rows *s, uint64_t pc, const struct unwind_rules *r, bool *added)
{
	const struct unwind_row *last = s->have_last ? &s->rows[s->nr_rows - 1] : NULL;
	struct unwind_row row = {
		.pc = pc,
		.cfa_kind = r->cfa,
		.rbp_kind = r->rbp,
		.ra_kind = r->ra,
		.rbx = unwind_row_rbx_encode(r->rbx, r->rbx_offset),
	};

	*added = false;
	if (fits16(r->cfa_offset) && fits16(r->rbp_offset) && r->ra_offset > UNWIND_ROW_WIDE &&
	    r->ra_offset <= INT8_MAX) {
		row.cfa_arg = (__s16)r->cfa_offset;
		row.rbp_arg = (__s16)r->rbp_offset;
		row.ra_arg = (__s8)r->ra_offset;
		/* compare with a copy kept aside, not the row just stored */
		if (last && s->last_rules_valid && s->last_rules == row_rules(&row))
			return 0;
		*added = true;
		s->last_rules = row_rules(&row);
		s->last_rules_valid = true;
		return push_row(s, &row);
	}
	if (last && last->ra_arg == UNWIND_ROW_WIDE && last->cfa_kind == row.cfa_kind &&
	    last->rbp_kind == row.rbp_kind && last->ra_kind == row.ra_kind &&
	    last->rbx == row.rbx && wide_equal(&s->wide[unwind_row_wide_index(last)], r))
		return 0;
	if (s->nr_wide >= UINT32_MAX)
		return -E2BIG;
	if (s->nr_wide == s->cap_wide &&
	    grow_array((void **)&s->wide, &s->cap_wide, s->nr_wide + 1, sizeof(*s->wide)))
		return -ENOMEM;
	s->wide[s->nr_wide] = (struct unwind_row_wide){ r->cfa_offset, r->rbp_offset, r->ra_offset };
	s->last_rules_valid = false;
	row.ra_arg = UNWIND_ROW_WIDE;
	row.cfa_arg = (__s16)(__u16)(s->nr_wide & 0xffff);
	row.rbp_arg = (__s16)(__u16)(s->nr_wide >> 16);
	s->nr_wide++;
	s->stats->wide_rows++;
	*added = true;
	return push_row(s, &row);
}

static void count_row(struct unwind_stats *st, const struct unwind_rules *r)
{
	st->rows++;
	st->cfa[r->cfa]++;
	st->rbp[r->rbp]++;
	st->ra[r->ra]++;
	st->rbx[r->rbx]++;
	if (r->cfa == UNWIND_CFA_UNSUPPORTED)
		st->cfa_reason[r->cfa_reason]++;
	if (r->rbp == UNWIND_RBP_UNSUPPORTED)
		st->rbp_reason[r->rbp_reason]++;
	if (r->ra == UNWIND_RA_UNSUPPORTED)
		st->ra_reason[r->ra_reason]++;
}

int cfi_rows__add_state(void *rows, uint64_t pc, const struct cfi_state *state)
{
	struct cfi_rows *s = rows;
	struct unwind_rules r;
	bool added;
	int err;

	state_rules(state, &r);
	err = encode_row(s, pc, &r, &added);
	if (err)
		return err;
	if (added)
		count_row(s->stats, &r);
	s->have_last = true;
	return 0;
}

int cfi_rows__end_function(struct cfi_rows *s, uint64_t pc)
{
	struct unwind_row row = { .pc = pc, .cfa_kind = UNWIND_CFA_END };

	s->have_last = false;
	s->stats->end_markers++;
	return push_row(s, &row);
}

void cfi_rows__reserve(struct cfi_rows *s, size_t n)
{
	s->rows = malloc(n * sizeof(*s->rows));
	s->cap_rows = s->rows ? n : 0;
	if (s->rows && n * sizeof(*s->rows) >= 4u << 20)
		/* large tables: fewer page faults while the rows are written */
		madvise((void *)((uintptr_t)s->rows & ~(uintptr_t)4095), n * sizeof(*s->rows),
			MADV_HUGEPAGE);
}

void cfi_rows__take(struct cfi_rows *s, struct unwind_row **out, size_t *nr_out,
		    struct unwind_row_wide **wide, size_t *nr_wide)
{
	*out = s->nr_rows ? realloc(s->rows, s->nr_rows * sizeof(*s->rows)) : NULL;
	if (s->nr_rows && !*out)
		*out = s->rows;
	else if (!s->nr_rows)
		free(s->rows);
	*nr_out = s->nr_rows;
	*wide = s->wide;
	*nr_wide = s->nr_wide;
	s->rows = NULL;
	s->wide = NULL;
	s->nr_rows = s->cap_rows = s->nr_wide = s->cap_wide = 0;
}

void cfi_rows__release(struct cfi_rows *s)
{
	free(s->rows);
	free(s->wide);
	s->rows = NULL;
	s->wide = NULL;
}
