/* What an unwinder of code without CFI must find in tests/fixtures/nocfi.o: for chosen pcs
 * (a function's entry or a label inside it, each a symbol of the object), how to get the
 * CFA (the caller's rsp after the return) and where the caller's rbp and rbx are. Worked
 * out by hand from the instructions in tests/fixtures/nocfi.S, never from hprof's output;
 * the offsets in .text are nm -n's (tests/fixtures/README.md has the same table).
 * Header-only, for a unit test to walk. At every pc here the return address is at CFA - 8
 * (in nocfi_drap's body, rbp + 8 holds a copy of it too). */
#ifndef HPROF_TESTS_NOCFI_EXPECT_H
#define HPROF_TESTS_NOCFI_EXPECT_H

#include <stddef.h>
#include <stdint.h>

enum nocfi_base {
	NOCFI_SAME,      /* a register that still holds its caller's value (offset 0) */
	NOCFI_RSP,       /* CFA = rsp + offset */
	NOCFI_RBP,       /* CFA = rbp + offset */
	NOCFI_DEREF_RBP, /* CFA = the word at rbp + offset, plus addend (a DRAP saved under the
			  * frame record; rsp after push %rbp kept at a realigned rbp) */
	NOCFI_R10,       /* CFA = r10 + offset (a DRAP in its register) */
	NOCFI_AT_CFA,    /* a register saved at CFA + offset */
	NOCFI_AT_RBP,    /* a register saved at rbp + offset */
};

struct nocfi_rule {
	enum nocfi_base base;
	int offset;
	int addend; /* NOCFI_DEREF_RBP's */
};

/* CFA - rsp where no constant relates them (rsp realigned). */
#define NOCFI_RSP_UNKNOWN (-1)

struct nocfi_expect {
	const char *label;    /* the symbol at the pc */
	uint64_t text_offset; /* its value: the pc's offset in .text */
	struct nocfi_rule cfa, rbp, rbx;
	/* CFA - rsp at this pc, what tracking rsp through the instructions gives; where rbp
	 * gives the CFA and rsp is at a fixed distance too, both are right. */
	int cfa_minus_rsp;
};

/* Short names for the table, undefined after it. */
#define NX_RSP(n)       { NOCFI_RSP, n, 0 }
#define NX_RBP(n)       { NOCFI_RBP, n, 0 }
#define NX_DEREF_RBP(n) { NOCFI_DEREF_RBP, n, 0 }
#define NX_DEREF_RBP_PLUS(n, a) { NOCFI_DEREF_RBP, n, a }
#define NX_R10(n)       { NOCFI_R10, n, 0 }
#define NX_SAME         { NOCFI_SAME, 0, 0 }
#define NX_AT_CFA(n)    { NOCFI_AT_CFA, n, 0 }
#define NX_AT_RBP(n)    { NOCFI_AT_RBP, n, 0 }

static const struct nocfi_expect nocfi_expect[] = {
	/* label                         .text  CFA              rbp              rbx              CFA-rsp */
	{ "nocfi_leaf",                  0x00, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_leaf_body",             0x03, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_pushes",                0x10, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_pushes_one_push",       0x11, NX_RSP(16),      NX_SAME,         NX_AT_CFA(-16),  16 },
	{ "nocfi_pushes_body",           0x17, NX_RSP(0x60),    NX_SAME,         NX_AT_CFA(-16),  0x60 },
	{ "nocfi_pushes_after_call",     0x1f, NX_RSP(0x60),    NX_SAME,         NX_AT_CFA(-16),  0x60 },
	{ "nocfi_pushes_epilogue",       0x23, NX_RSP(0x18),    NX_SAME,         NX_AT_CFA(-16),  0x18 },
	{ "nocfi_pushes_ret",            0x26, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_multiret",              0x30, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_multiret_ret0",         0x37, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_multiret_odd",          0x48, NX_RSP(0x30),    NX_AT_CFA(-24),  NX_AT_CFA(-16),  0x30 },
	{ "nocfi_multiret_odd_popped",   0x4f, NX_RSP(0x10),    NX_SAME,         NX_AT_CFA(-16),  0x10 },
	{ "nocfi_multiret_loop",         0x51, NX_RSP(0x30),    NX_AT_CFA(-24),  NX_AT_CFA(-16),  0x30 },
	{ "nocfi_multiret_after_lea",    0x77, NX_RSP(0x18),    NX_AT_CFA(-24),  NX_AT_CFA(-16),  0x18 },
	{ "nocfi_fp",                    0x80, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_fp_pushed",             0x81, NX_RSP(16),      NX_AT_CFA(-16),  NX_SAME,         16 },
	{ "nocfi_fp_body",               0x89, NX_RBP(16),      NX_AT_CFA(-16),  NX_AT_CFA(-24),  0x30 },
	/* rbx was reloaded from its save before leave: its caller's value again */
	{ "nocfi_fp_leave",              0x95, NX_RBP(16),      NX_AT_CFA(-16),  NX_SAME,         0x30 },
	{ "nocfi_fp_ret",                0x96, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_realign",               0xa0, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_realign_and",           0xa4, NX_RBP(16),      NX_AT_CFA(-16),  NX_SAME,         16 },
	{ "nocfi_realign_body",          0xac, NX_RBP(16),      NX_AT_CFA(-16),  NX_SAME,         NOCFI_RSP_UNKNOWN },
	{ "nocfi_realign_ret",           0xb5, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_drap",                  0xc0, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_drap_lea",              0xc5, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_drap_realigned",        0xc9, NX_R10(0),       NX_SAME,         NX_SAME,         NOCFI_RSP_UNKNOWN },
	{ "nocfi_drap_body",             0xd7, NX_DEREF_RBP(-8), NX_AT_RBP(0),    NX_SAME,         NOCFI_RSP_UNKNOWN },
	{ "nocfi_drap_left",             0xe5, NX_R10(0),       NX_SAME,         NX_SAME,         NOCFI_RSP_UNKNOWN },
	{ "nocfi_drap_ret",              0xe9, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_trampoline",            0xf0, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_trampoline_after_call", 0xf6, NX_RBP(16),      NX_AT_CFA(-16),  NX_SAME,         16 },
	{ "nocfi_trampoline_ret",        0xf7, NX_RSP(8),       NX_SAME,         NX_SAME,         8 },
	{ "nocfi_savedsp",               0x100, NX_RSP(8),      NX_SAME,         NX_SAME,         8 },
	{ "nocfi_savedsp_pushed",        0x101, NX_RSP(16),     NX_AT_CFA(-16),  NX_SAME,         16 },
	{ "nocfi_savedsp_body",          0x119, NX_DEREF_RBP_PLUS(0, 16), NX_AT_CFA(-16), NX_SAME, NOCFI_RSP_UNKNOWN },
	{ "nocfi_savedsp_epilogue",      0x123, NX_DEREF_RBP_PLUS(0, 16), NX_AT_CFA(-16), NX_SAME, NOCFI_RSP_UNKNOWN },
	{ "nocfi_savedsp_popped",        0x127, NX_RSP(16),     NX_AT_CFA(-16),  NX_SAME,         16 },
	{ "nocfi_savedsp_ret",           0x128, NX_RSP(8),      NX_SAME,         NX_SAME,         8 },
};

#undef NX_RSP
#undef NX_RBP
#undef NX_DEREF_RBP
#undef NX_DEREF_RBP_PLUS
#undef NX_R10
#undef NX_SAME
#undef NX_AT_CFA
#undef NX_AT_RBP

#define NOCFI_EXPECT_COUNT (sizeof(nocfi_expect) / sizeof(nocfi_expect[0]))

#endif
