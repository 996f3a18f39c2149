/* The compact unwind row: the one format hprof's CFI compiler emits and every unwinder
 * (userspace replay, BPF) reads. A table is an array of rows sorted by pc; the row with
 * the greatest pc <= a given pc holds the rules for that pc, unless it is an end-of-function
 * marker (cfa_kind UNWIND_CFA_END), in which case no rule covers the pc.
 *
 * Only what a profiler needs is kept: how to find the CFA (the caller's rsp), the caller's
 * rbp and rbx, and the return address. rbx matters only to a frame whose CFA is rbx + N
 * (glibc's lazy-binding trampoline, _dl_runtime_resolve_*, which realigns rsp): the ld.so
 * functions it calls save rbx on the way down, so a walk from below needs their saves.
 * Offsets that do not fit the row's fields move, with the rest of the row's arguments, to
 * a side table of struct unwind_row_wide (see UNWIND_ROW_WIDE); the rbx rule is always in
 * the row (UNWIND_ROW_RBX_*). Included by userspace and BPF alike, so only fixed-width
 * kernel types. */
#ifndef HPROF_UNWIND_ROW_H
#define HPROF_UNWIND_ROW_H

#include "types.h"

/* x86-64 DWARF register numbers (System V psABI, figure 3.36). */
enum unwind_dwarf_reg {
	UNWIND_DWARF_RBX = 3,
	UNWIND_DWARF_RDI = 5,
	UNWIND_DWARF_RBP = 6,
	UNWIND_DWARF_RSP = 7,
	UNWIND_DWARF_R8 = 8,
	UNWIND_DWARF_R10 = 10,
	UNWIND_DWARF_R12 = 12,
	UNWIND_DWARF_R13 = 13,
	UNWIND_DWARF_R14 = 14,
	UNWIND_DWARF_R15 = 15,
	UNWIND_DWARF_RIP = 16, /* the return-address column */
};

/* How to compute the CFA. The expression kinds are the DWARF expressions hprof
 * recognises; anything else is UNSUPPORTED with a reason. */
enum unwind_cfa_kind {
	UNWIND_CFA_END = 0,       /* end-of-function marker: no rule covers this pc */
	UNWIND_CFA_SP_OFFSET,     /* CFA = rsp + arg */
	UNWIND_CFA_BP_OFFSET,     /* CFA = rbp + arg */
	UNWIND_CFA_BX_OFFSET,     /* CFA = rbx + arg (_dl_runtime_resolve_*: push %rbx; mov %rsp, %rbx) */
	UNWIND_CFA_EXPR_PLT,      /* lazy-binding PLT stub: CFA = rsp + 8 + ((rip & 15) >= arg ? 8 : 0);
				   * arg is 11 for .plt, 10 for the IBT .plt layout */
	UNWIND_CFA_EXPR_DEREF_SP, /* CFA = *(rsp + arg): signal trampolines (__restore_rt) */
	UNWIND_CFA_EXPR_DEREF_BP, /* CFA = *(rbp + arg): GCC's dynamic stack realignment (DRAP) */
	/* CFA = r10 (r12, ..., r15) + arg: GCC's realigned frames in their prologue and
	 * epilogue, where the DRAP register holds the CFA. Only the sampled frame's value of
	 * these registers is known, and only there do such rules occur: no call is made
	 * between the prologue and the epilogue. */
	UNWIND_CFA_R10_OFFSET,
	UNWIND_CFA_R12_OFFSET,
	UNWIND_CFA_R13_OFFSET,
	UNWIND_CFA_R14_OFFSET,
	UNWIND_CFA_R15_OFFSET,
	UNWIND_CFA_UNSUPPORTED,   /* arg = enum unwind_reason */
	UNWIND_CFA_KIND_COUNT,
};

/* How to recover the caller's rbp. */
enum unwind_rbp_kind {
	UNWIND_RBP_UNCHANGED = 0, /* callee-saved and untouched (also DW_CFA_same_value) */
	UNWIND_RBP_UNDEFINED,     /* DW_CFA_undefined: the caller's rbp cannot be recovered */
	UNWIND_RBP_AT_CFA,        /* saved at address CFA + arg */
	UNWIND_RBP_VAL_CFA,       /* rbp = CFA + arg (DW_CFA_val_offset) */
	UNWIND_RBP_AT_SP,         /* saved at address rsp + arg (DW_CFA_expression DW_OP_breg7) */
	UNWIND_RBP_AT_BP,         /* saved at address rbp + arg (DW_OP_breg6: GCC's DRAP prologue) */
	UNWIND_RBP_UNSUPPORTED,   /* arg = enum unwind_reason */
	UNWIND_RBP_KIND_COUNT,
};

/* Where the return address is. */
enum unwind_ra_kind {
	UNWIND_RA_AT_CFA = 0,     /* saved at address CFA + arg (x86-64: -8) */
	UNWIND_RA_UNDEFINED,      /* outermost frame (_start, clone3): the walk ends here */
	UNWIND_RA_AT_SP,          /* saved at address rsp + arg (signal trampolines) */
	UNWIND_RA_REGISTER,       /* in the register whose DWARF number is arg (DW_CFA_register):
				   * glibc's __vfork pops it into rdi around the system call */
	UNWIND_RA_UNSUPPORTED,    /* arg = enum unwind_reason */
	UNWIND_RA_KIND_COUNT,
};

/* How to recover the caller's rbx (struct unwind_rules; a row encodes it in one byte). */
enum unwind_rbx_kind {
	UNWIND_RBX_UNCHANGED = 0, /* callee-saved and untouched (also DW_CFA_same_value) */
	UNWIND_RBX_AT_CFA,        /* saved at address CFA + arg, arg = -8 * k, k in 1..UNWIND_ROW_RBX_SLOTS */
	UNWIND_RBX_UNDEFINED,     /* DW_CFA_undefined */
	UNWIND_RBX_UNSUPPORTED,   /* any other rule: in another register, an expression, a save
				   * at an offset of another form */
	UNWIND_RBX_KIND_COUNT,
};

/* Why a rule is UNSUPPORTED. */
enum unwind_reason {
	UNWIND_REASON_NONE = 0,
	UNWIND_REASON_CFA_REGISTER,   /* CFA = reg + offset, reg not rsp, rbp, rbx, r10 or r12-r15 */
	UNWIND_REASON_EXPRESSION,     /* a DWARF expression hprof does not recognise */
	UNWIND_REASON_VAL_EXPRESSION, /* DW_CFA_val_expression */
	UNWIND_REASON_REGISTER,       /* DW_CFA_register: the value lives in another register */
	UNWIND_REASON_VAL_OFFSET,     /* return address = CFA + offset as a value */
	UNWIND_REASON_SAME_VALUE,     /* DW_CFA_same_value on the return address */
	UNWIND_REASON_COUNT,
};

/* ra_arg's marker for "the arguments are in the side table": a real return-address offset
 * of -128 is stored there too, so no rule is ambiguous. */
#define UNWIND_ROW_WIDE (-128)

/* The rbx rule in a row's byte rbx: 0 unchanged; k in 1..UNWIND_ROW_RBX_SLOTS saved at
 * CFA - 8k (prologues push it within the first few words below the return address);
 * then undefined, then unsupported, which takes every other rule: a save at an offset of
 * another form, in another register, or by an expression (GCC's realigned frames save it
 * relative to rbp). rbx is needed only for a CFA = rbx + N, through the frames called
 * from there: the ld.so functions the lazy-binding trampoline calls push it. */
#define UNWIND_ROW_RBX_UNCHANGED 0
#define UNWIND_ROW_RBX_SLOTS 253
#define UNWIND_ROW_RBX_UNDEFINED 254
#define UNWIND_ROW_RBX_UNSUPPORTED 255

struct unwind_row {
	__u64 pc;          /* ELF virtual address (the unwinder subtracts the load bias first) */
	__u8 cfa_kind;     /* enum unwind_cfa_kind */
	__u8 rbp_kind : 4; /* enum unwind_rbp_kind */
	__u8 ra_kind : 4;  /* enum unwind_ra_kind */
	__u8 rbx;          /* the rbx rule, UNWIND_ROW_RBX_* */
	__s8 ra_arg;       /* the ra rule's argument, or UNWIND_ROW_WIDE */
	__s16 cfa_arg;     /* the CFA rule's argument; low half of the side-table index when wide */
	__s16 rbp_arg;     /* the rbp rule's argument; high half of the side-table index when wide */
};
_Static_assert(sizeof(struct unwind_row) == 16, "unwind_row must stay 16 bytes");
_Static_assert(UNWIND_RBP_KIND_COUNT <= 16 && UNWIND_RA_KIND_COUNT <= 16,
	       "rbp and ra kinds share a byte");
_Static_assert(UNWIND_CFA_KIND_COUNT <= 256, "cfa_kind is a byte");

/* An rbx save at CFA + offset fits the row's byte. */
static inline int unwind_row_rbx_fits(__s64 offset)
{
	return offset < 0 && offset % 8 == 0 && offset >= -8 * (__s64)UNWIND_ROW_RBX_SLOTS;
}

/* The row's byte for an rbx rule (offset: the AT_CFA rule's). A save that does not fit is
 * unsupported: map rules through unwind_row_rbx_fits first to keep counts honest. */
static inline __u8 unwind_row_rbx_encode(enum unwind_rbx_kind kind, __s64 offset)
{
	switch (kind) {
	case UNWIND_RBX_UNCHANGED:
		return UNWIND_ROW_RBX_UNCHANGED;
	case UNWIND_RBX_AT_CFA:
		return unwind_row_rbx_fits(offset) ? (__u8)(-offset / 8) : UNWIND_ROW_RBX_UNSUPPORTED;
	case UNWIND_RBX_UNDEFINED:
		return UNWIND_ROW_RBX_UNDEFINED;
	default:
		return UNWIND_ROW_RBX_UNSUPPORTED;
	}
}

/* The rule a row's rbx byte holds. */
static inline enum unwind_rbx_kind unwind_row_rbx_kind(__u8 rbx)
{
	if (rbx == UNWIND_ROW_RBX_UNCHANGED)
		return UNWIND_RBX_UNCHANGED;
	if (rbx <= UNWIND_ROW_RBX_SLOTS)
		return UNWIND_RBX_AT_CFA;
	return rbx == UNWIND_ROW_RBX_UNDEFINED ? UNWIND_RBX_UNDEFINED : UNWIND_RBX_UNSUPPORTED;
}

/* The AT_CFA rule's offset from the CFA; 0 for the other rules. */
static inline int unwind_row_rbx_offset(__u8 rbx)
{
	return unwind_row_rbx_kind(rbx) == UNWIND_RBX_AT_CFA ? -8 * (int)rbx : 0;
}

/* Arguments of a row whose ra_arg is UNWIND_ROW_WIDE. */
struct unwind_row_wide {
	__s64 cfa_arg;
	__s64 rbp_arg;
	__s64 ra_arg;
};
_Static_assert(sizeof(struct unwind_row_wide) == 24, "unwind_row_wide must stay 24 bytes");

/* Side-table index of a wide row. */
static inline __u32 unwind_row_wide_index(const struct unwind_row *row)
{
	return (__u32)(__u16)row->cfa_arg | (__u32)(__u16)row->rbp_arg << 16;
}

#endif
