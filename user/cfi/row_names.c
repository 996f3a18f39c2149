/* Names of the row format's kinds and reasons (common/unwind_row.h), for `hprof table`,
 * the stats and HPROF_DEBUG=unwind. */
#include "cfi/unwind_table.h"

static const char *name_of(const char *const *names, size_t n, unsigned int i)
{
	return i < n && names[i] ? names[i] : "?";
}

#define NR_NAMES(names) (sizeof(names) / sizeof(names[0]))
#define NAME_OF(names, i) name_of(names, NR_NAMES(names), i)

const char *unwind_cfa_kind__name(enum unwind_cfa_kind kind)
{
	static const char *const names[] = {
		[UNWIND_CFA_END] = "end",
		[UNWIND_CFA_SP_OFFSET] = "sp-offset",
		[UNWIND_CFA_BP_OFFSET] = "bp-offset",
		[UNWIND_CFA_BX_OFFSET] = "bx-offset",
		[UNWIND_CFA_R10_OFFSET] = "r10-offset",
		[UNWIND_CFA_R12_OFFSET] = "r12-offset",
		[UNWIND_CFA_R13_OFFSET] = "r13-offset",
		[UNWIND_CFA_R14_OFFSET] = "r14-offset",
		[UNWIND_CFA_R15_OFFSET] = "r15-offset",
		[UNWIND_CFA_EXPR_PLT] = "expr-plt",
		[UNWIND_CFA_EXPR_DEREF_SP] = "expr-deref-sp",
		[UNWIND_CFA_EXPR_DEREF_BP] = "expr-deref-bp",
		[UNWIND_CFA_UNSUPPORTED] = "unsupported",
	};
	_Static_assert(NR_NAMES(names) == UNWIND_CFA_KIND_COUNT, "a name for every value");
	return NAME_OF(names, kind);
}

const char *unwind_rbp_kind__name(enum unwind_rbp_kind kind)
{
	static const char *const names[] = {
		[UNWIND_RBP_UNCHANGED] = "unchanged",
		[UNWIND_RBP_UNDEFINED] = "undefined",
		[UNWIND_RBP_AT_CFA] = "at-cfa",
		[UNWIND_RBP_VAL_CFA] = "val-cfa",
		[UNWIND_RBP_AT_SP] = "at-sp",
		[UNWIND_RBP_AT_BP] = "at-bp",
		[UNWIND_RBP_UNSUPPORTED] = "unsupported",
	};
	_Static_assert(NR_NAMES(names) == UNWIND_RBP_KIND_COUNT, "a name for every value");
	return NAME_OF(names, kind);
}

const char *unwind_ra_kind__name(enum unwind_ra_kind kind)
{
	static const char *const names[] = {
		[UNWIND_RA_AT_CFA] = "at-cfa",
		[UNWIND_RA_UNDEFINED] = "undefined",
		[UNWIND_RA_AT_SP] = "at-sp",
		[UNWIND_RA_REGISTER] = "register",
		[UNWIND_RA_UNSUPPORTED] = "unsupported",
	};
	_Static_assert(NR_NAMES(names) == UNWIND_RA_KIND_COUNT, "a name for every value");
	return NAME_OF(names, kind);
}

const char *unwind_rbx_kind__name(enum unwind_rbx_kind kind)
{
	static const char *const names[] = {
		[UNWIND_RBX_UNCHANGED] = "unchanged",
		[UNWIND_RBX_AT_CFA] = "at-cfa",
		[UNWIND_RBX_UNDEFINED] = "undefined",
		[UNWIND_RBX_UNSUPPORTED] = "unsupported",
	};
	_Static_assert(NR_NAMES(names) == UNWIND_RBX_KIND_COUNT, "a name for every value");
	return NAME_OF(names, kind);
}

const char *unwind_reason__name(enum unwind_reason reason)
{
	static const char *const names[] = {
		[UNWIND_REASON_NONE] = "none",
		[UNWIND_REASON_CFA_REGISTER] = "cfa-register",
		[UNWIND_REASON_EXPRESSION] = "expression",
		[UNWIND_REASON_VAL_EXPRESSION] = "val-expression",
		[UNWIND_REASON_REGISTER] = "register",
		[UNWIND_REASON_VAL_OFFSET] = "val-offset",
		[UNWIND_REASON_SAME_VALUE] = "same-value",
	};
	_Static_assert(NR_NAMES(names) == UNWIND_REASON_COUNT, "a name for every value");
	return NAME_OF(names, reason);
}
