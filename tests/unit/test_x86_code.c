/* The instruction analysis of code without CFI (user/unwind/x86_code.c) on pinned code:
 * the bytes below are this assembly, linked at 0x1000 (gcc -nostdlib -static -no-pie
 * -Wl,-Ttext=0x1000), each function's true rules worked out by hand.
 *
 *   f_pushes:     push %rbx; push %r12; sub $0x48,%rsp
 *   f_pushes_body: call f_leaf; add $0x48,%rsp; pop %r12; pop %rbx; ret
 *   f_leaf:       mov $100,%eax
 *   f_leaf_body:  dec %eax; jnz f_leaf_body; ret
 *   f_fp:         push %rbp; mov %rsp,%rbp; push %rbx; sub $24,%rsp
 *   f_fp_body:    call f_leaf; mov -8(%rbp),%rbx; leave; ret
 *   f_multi:      push %rbx; mov %rdi,%rbx
 *   f_multi_loop: dec %rbx; jz 1f; cmp $5,%rbx; je 2f; jmp f_multi_loop
 *             1:  pop %rbx; ret
 *             2:  mov $1,%eax; pop %rbx; ret
 *   f_drap:       push %rbp; mov %rsp,%rbp; push %rbx; and $-32,%rsp; sub $64,%rsp
 *   f_drap_body:  call f_leaf; lea -8(%rbp),%rsp; pop %rbx; pop %rbp; ret
 *   f_jit_loop:   jmp f_jit_loop
 *   f_call_sites: call f_leaf; nop; call *%rax; nop; call *0x10(%rbx); nop; ret
 */
#include <string.h>

#include "fixture.h"
#include "nocfi_expect.h"
#include "unwind/x86_code.h"
#include "unwind_row.h"

static const uint8_t code[] = {
	0x53, 0x41, 0x54, 0x48, 0x83, 0xec, 0x48, 0xe8, 0x08, 0x00, 0x00, 0x00,
	0x48, 0x83, 0xc4, 0x48, 0x41, 0x5c, 0x5b, 0xc3, 0xb8, 0x64, 0x00, 0x00,
	0x00, 0xff, 0xc8, 0x75, 0xfc, 0xc3, 0x55, 0x48, 0x89, 0xe5, 0x53, 0x48,
	0x83, 0xec, 0x18, 0xe8, 0xe8, 0xff, 0xff, 0xff, 0x48, 0x8b, 0x5d, 0xf8,
	0xc9, 0xc3, 0x53, 0x48, 0x89, 0xfb, 0x48, 0xff, 0xcb, 0x74, 0x08, 0x48,
	0x83, 0xfb, 0x05, 0x74, 0x04, 0xeb, 0xf3, 0x5b, 0xc3, 0xb8, 0x01, 0x00,
	0x00, 0x00, 0x5b, 0xc3, 0x55, 0x48, 0x89, 0xe5, 0x53, 0x48, 0x83, 0xe4,
	0xe0, 0x48, 0x83, 0xec, 0x40, 0xe8, 0xb6, 0xff, 0xff, 0xff, 0x48, 0x8d,
	0x65, 0xf8, 0x5b, 0x5d, 0xc3, 0xeb, 0xfe, 0xe8, 0xa8, 0xff, 0xff, 0xff,
	0x90, 0xff, 0xd0, 0x90, 0xff, 0x53, 0x10, 0x90, 0xc3,
};

enum {
	F_PUSHES = 0x1000, F_PUSHES_BODY = 0x1007, F_PUSHES_RA = 0x100c, F_LEAF = 0x1014,
	F_LEAF_BODY = 0x1019, F_FP = 0x101e, F_FP_BODY = 0x1027, F_FP_RA = 0x102c,
	F_MULTI = 0x1032, F_MULTI_LOOP = 0x1036, F_DRAP = 0x104c, F_DRAP_BODY = 0x1059,
	F_DRAP_RA = 0x105e, F_JIT_LOOP = 0x1065, F_CALL_SITES = 0x1067,
};

static const struct code_window window = { code, 0x1000, sizeof(code) };

/* What a pc's rules must be: the CFA, and the rbp and rbx rules. */
struct want {
	const char *what;
	uint64_t pc, start;
	uint8_t cfa;
	int32_t cfa_offset;
	uint8_t rbp;
	int32_t rbp_offset;
	uint8_t rbx;
	int32_t rbx_offset;
};

static const struct want wants[] = {
	/* traced forward from the pc (no start known): saves are where the epilogue pops */
	{ "pushes, body", F_PUSHES_BODY, 0, UNWIND_CFA_SP_OFFSET, 96, UNWIND_RBP_UNCHANGED, 0,
	  UNWIND_RBX_AT_CFA, -16 },
	{ "pushes, return address", F_PUSHES_RA, 0, UNWIND_CFA_SP_OFFSET, 96, UNWIND_RBP_UNCHANGED,
	  0, UNWIND_RBX_AT_CFA, -16 },
	{ "leaf, in its loop", F_LEAF_BODY, 0, UNWIND_CFA_SP_OFFSET, 8, UNWIND_RBP_UNCHANGED, 0,
	  UNWIND_RBX_UNCHANGED, 0 },
	{ "frame pointer, body", F_FP_BODY, 0, UNWIND_CFA_BP_OFFSET, 16, UNWIND_RBP_AT_CFA, -16,
	  UNWIND_RBX_AT_CFA, -24 },
	{ "frame pointer, return address", F_FP_RA, 0, UNWIND_CFA_BP_OFFSET, 16,
	  UNWIND_RBP_AT_CFA, -16, UNWIND_RBX_AT_CFA, -24 },
	{ "several returns, in the loop", F_MULTI_LOOP, 0, UNWIND_CFA_SP_OFFSET, 16,
	  UNWIND_RBP_UNCHANGED, 0, UNWIND_RBX_AT_CFA, -16 },
	{ "realigned, body", F_DRAP_BODY, 0, UNWIND_CFA_BP_OFFSET, 16, UNWIND_RBP_AT_CFA, -16,
	  UNWIND_RBX_AT_CFA, -24 },
	{ "realigned, return address", F_DRAP_RA, 0, UNWIND_CFA_BP_OFFSET, 16, UNWIND_RBP_AT_CFA,
	  -16, UNWIND_RBX_AT_CFA, -24 },
	/* traced from the start: a register not yet overwritten still holds its caller's value */
	{ "pushes from its start, body", F_PUSHES_BODY, F_PUSHES, UNWIND_CFA_SP_OFFSET, 96,
	  UNWIND_RBP_UNCHANGED, 0, UNWIND_RBX_UNCHANGED, 0 },
	{ "pushes from its start, at the start", F_PUSHES, F_PUSHES, UNWIND_CFA_SP_OFFSET, 8,
	  UNWIND_RBP_UNCHANGED, 0, UNWIND_RBX_UNCHANGED, 0 },
	{ "frame pointer from its start, body", F_FP_BODY, F_FP, UNWIND_CFA_BP_OFFSET, 16,
	  UNWIND_RBP_AT_CFA, -16, UNWIND_RBX_UNCHANGED, 0 },
	{ "several returns from the start, in the loop", F_MULTI_LOOP, F_MULTI,
	  UNWIND_CFA_SP_OFFSET, 16, UNWIND_RBP_UNCHANGED, 0, UNWIND_RBX_AT_CFA, -16 },
	{ "realigned from its start, body", F_DRAP_BODY, F_DRAP, UNWIND_CFA_BP_OFFSET, 16,
	  UNWIND_RBP_AT_CFA, -16, UNWIND_RBX_UNCHANGED, 0 },
	/* a wrong start (the pc is not reached from it) falls back to the forward trace */
	{ "a start the pc is not reached from", F_DRAP_BODY, F_LEAF, UNWIND_CFA_BP_OFFSET, 16,
	  UNWIND_RBP_AT_CFA, -16, UNWIND_RBX_AT_CFA, -24 },
};

static void test_rules(void)
{
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		const struct want *w = &wants[i];
		struct code_rules r;
		enum code_fail fail = x86_code__analyze(&window, w->pc, w->start, 0, &r);

		check(fail == CODE_OK && r.cfa == w->cfa && r.cfa_offset == w->cfa_offset,
		      "%s: CFA (%s, kind %u%+d)", w->what, code_fail__name(fail), r.cfa, r.cfa_offset);
		check(fail == CODE_OK && r.rbp == w->rbp && r.rbp_offset == w->rbp_offset,
		      "%s: rbp (kind %u%+d)", w->what, r.rbp, r.rbp_offset);
		check(fail == CODE_OK && r.rbx == w->rbx && r.rbx_offset == w->rbx_offset,
		      "%s: rbx (kind %u%+d)", w->what, r.rbx, r.rbx_offset);
	}
}

/* A return address after a call that does not return, which a jump before the frame is
 * set up also reaches (glibc's __pthread_rwlock_rdlock: its early exit starts there). The
 * trace from the start takes the state the call leaves, the return address's; at a pc after
 * a call that only a jump reaches, the jump's. At 0x4000:
 *   0x4000: test %rdi,%rdi  0x4003: je 0x400f  0x4005: push %rbx  0x4006: sub $0x10,%rsp
 *   0x400a: call 0x4012 (ud2: does not return)  0x400f: xor %eax,%eax  0x4011: ret
 *   0x4012: ud2
 *   0x4014: jmp 0x401b  0x4016: call 0x4012  0x401b: ret */
static void test_noreturn_call(void)
{
	static const uint8_t bytes[] = {
		0x48, 0x85, 0xff, 0x74, 0x0a, 0x53, 0x48, 0x83, 0xec, 0x10, 0xe8, 0x03,
		0x00, 0x00, 0x00, 0x31, 0xc0, 0xc3, 0x0f, 0x0b, 0xeb, 0x05, 0xe8, 0xf7,
		0xff, 0xff, 0xff, 0xc3,
	};
	const struct code_window w = { bytes, 0x4000, sizeof(bytes) };
	struct code_rules r;
	enum code_fail fail;

	fail = x86_code__analyze(&w, 0x400f, 0x4000, 0x4014, &r);
	check(fail == CODE_OK && r.from_start && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 32,
	      "after a call that does not return, also a jump's target: the call's state, CFA = "
	      "rsp + 32 (%s, kind %u%+d)", code_fail__name(fail), r.cfa, r.cfa_offset);
	fail = x86_code__analyze(&w, 0x401b, 0x4014, 0x401c, &r);
	check(fail == CODE_OK && r.from_start && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 8,
	      "after a call only a jump reaches: the jump's state, CFA = rsp + 8 (%s, kind %u%+d)",
	      code_fail__name(fail), r.cfa, r.cfa_offset);
}

/* Registers saved by mov, not by push, after one sub: MKL's GEMM kernels save rbx, rbp and
 * r12-r15 so and use rbp as a counter. At 0x5000:
 *   0x5000: sub $0x38,%rsp  0x5004: mov %rbx,(%rsp)  0x5008: mov %rbp,0x8(%rsp)
 *   0x500d: mov %rdi,%rbp  0x5010: xor %rbp,%rbx  0x5013: dec %rbp  0x5016: jne 0x5010
 *   0x5018: mov (%rsp),%rbx  0x501c: mov 0x8(%rsp),%rbp  0x5021: add $0x38,%rsp  0x5025: ret
 * In the loop, CFA = rsp + 0x40, rbp at CFA - 0x38, rbx at CFA - 0x40, from the start (the
 * stores) and forward (the loads before the return) alike. */
static void test_mov_saves(void)
{
	static const uint8_t bytes[] = {
		0x48, 0x83, 0xec, 0x38, 0x48, 0x89, 0x1c, 0x24, 0x48, 0x89, 0x6c, 0x24,
		0x08, 0x48, 0x89, 0xfd, 0x48, 0x31, 0xeb, 0x48, 0xff, 0xcd, 0x75, 0xf8,
		0x48, 0x8b, 0x1c, 0x24, 0x48, 0x8b, 0x6c, 0x24, 0x08, 0x48, 0x83, 0xc4,
		0x38, 0xc3,
	};
	const struct code_window w = { bytes, 0x5000, sizeof(bytes) };

	for (int from_start = 0; from_start < 2; from_start++) {
		struct code_rules r;
		enum code_fail fail = x86_code__analyze(&w, 0x5013, from_start ? 0x5000 : 0,
							 from_start ? 0x5026 : 0, &r);
		const char *how = from_start ? "from the start" : "forward";

		check(fail == CODE_OK && r.from_start == from_start && r.cfa == UNWIND_CFA_SP_OFFSET &&
			      r.cfa_offset == 0x40,
		      "mov saves, %s: CFA = rsp + 0x40 (%s, kind %u%+d)", how, code_fail__name(fail),
		      r.cfa, r.cfa_offset);
		check(fail == CODE_OK && r.rbp == UNWIND_RBP_AT_CFA && r.rbp_offset == -0x38,
		      "mov saves, %s: rbp at CFA - 0x38 (kind %u%+d)", how, r.rbp, r.rbp_offset);
		check(fail == CODE_OK && r.rbx == UNWIND_RBX_AT_CFA && r.rbx_offset == -0x40,
		      "mov saves, %s: rbx at CFA - 0x40 (kind %u%+d)", how, r.rbx, r.rbx_offset);
	}
}

/* lea 0x0(%rbp),%rbp, the 4-byte nop Mono pads its JIT code with, leaves rbp as it was. At
 * 0x6000:
 *   0x6000: sub $0x18,%rsp  0x6004: lea 0x0(%rbp),%rbp  0x6008: dec %rdi  0x600b: jne 0x6004
 *   0x600d: add $0x18,%rsp  0x6011: ret
 * At 0x6004 and 0x6008: CFA = rsp + 0x20, rbp unchanged, from the start and forward. */
static void test_lea_nop(void)
{
	static const uint8_t bytes[] = {
		0x48, 0x83, 0xec, 0x18, 0x48, 0x8d, 0x6d, 0x00, 0x48, 0xff, 0xcf, 0x75,
		0xf7, 0x48, 0x83, 0xc4, 0x18, 0xc3,
	};
	const struct code_window w = { bytes, 0x6000, sizeof(bytes) };

	static const struct { uint64_t pc, start, end; } cases[] = {
		{ 0x6008, 0, 0 }, { 0x6004, 0, 0 }, { 0x6008, 0x6000, 0x6012 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct code_rules r;
		enum code_fail fail = x86_code__analyze(&w, cases[i].pc, cases[i].start,
							 cases[i].end, &r);

		check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 0x20 &&
			      r.rbp == UNWIND_RBP_UNCHANGED,
		      "lea 0x0(%%rbp),%%rbp, at %#llx %s: CFA = rsp + 0x20, rbp unchanged (%s, "
		      "kind %u%+d, rbp kind %u)", (unsigned long long)cases[i].pc,
		      cases[i].start ? "from the start" : "forward", code_fail__name(fail), r.cfa,
		      r.cfa_offset, r.rbp);
	}
}

/* Return addresses the code moves: sljit's fast calls (PCRE2's JIT) enter with
 * pop (%rsp), which moves the return address into the caller's top word, and return by
 * pushing it again. At 0x3000:
 *   0x3000: pop (%rsp)  0x3003: add $1,%rax  0x3007: mov (%rsp),%rax  0x300b: push %rax
 *   0x300c: ret
 *   0x3010: pop (%rsp)  0x3013: nop  0x3014: push (%rsp)  0x3017: ret
 *   0x3020: mov %rax,(%rsp)  0x3024: ret      (a return address overwritten: rax's value)
 *   0x3030: mov (%rsp),%rcx  0x3034: mov %rcx,0x8(%rsp)  0x3039: pop %rax  0x303a: ret
 *                                            (its own return address, copied up a word)
 *   0x3040: add $1,%rax  0x3044: mov %rax,(%rsp)  0x3048: ret
 *                                            (overwritten by a value it cannot name)
 *   0x3050: pop %r8  0x3052: nop  0x3053: push %r8  0x3055: ret
 *                                            (sljit's fast call into a register) */
static void test_moved_return(void)
{
	static const uint8_t moved[] = {
		0x8f, 0x04, 0x24, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x8b, 0x04, 0x24, 0x50, 0xc3, 0xcc,
		0xcc, 0xcc, 0x8f, 0x04, 0x24, 0x90, 0xff, 0x34, 0x24, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc,
		0xcc, 0xcc, 0xcc, 0xcc, 0x48, 0x89, 0x04, 0x24, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
		0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0x48, 0x8b, 0x0c, 0x24, 0x48, 0x89, 0x4c, 0x24,
		0x08, 0x58, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x89,
		0x04, 0x24, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0x41, 0x58, 0x90, 0x41,
		0x50, 0xc3,
	};
	const struct code_window w = { moved, 0x3000, sizeof(moved) };
	struct code_rules r;
	enum code_fail fail;

	fail = x86_code__analyze(&w, 0x3000, 0, 0, &r);
	check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 8 &&
		      r.ra_offset == -8,
	      "fast call, at its entry: CFA rsp+8, return address at CFA-8 (%s, %+d, %+d)",
	      code_fail__name(fail), r.cfa_offset, r.ra_offset);
	fail = x86_code__analyze(&w, 0x3003, 0, 0, &r);
	check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 0 &&
		      r.ra_offset == 0,
	      "fast call, past pop (%%rsp): the caller's rsp is rsp, the return address at it (%s, %+d, %+d)",
	      code_fail__name(fail), r.cfa_offset, r.ra_offset);
	fail = x86_code__analyze(&w, 0x3013, 0, 0, &r);
	check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 0 &&
		      r.ra_offset == 0,
	      "fast call returning by push (%%rsp); ret: the same (%s, %+d, %+d)", code_fail__name(fail),
	      r.cfa_offset, r.ra_offset);
	fail = x86_code__analyze(&w, 0x300b, 0, 0, &r);
	check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 0 &&
		      r.ra_in_register && r.ra_register == 0,
	      "fast call at push %%rax; ret: the caller's rsp is rsp, the return address rax's value (%s, %+d, %d %u)",
	      code_fail__name(fail), r.cfa_offset, r.ra_in_register, r.ra_register);
	fail = x86_code__analyze(&w, 0x3020, 0, 0, &r);
	check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 8 &&
		      r.ra_in_register && r.ra_register == 0,
	      "a return address overwritten by rax: rax's value at pc, CFA rsp+8 (%s, %+d, %d %u)",
	      code_fail__name(fail), r.cfa_offset, r.ra_in_register, r.ra_register);
	check(x86_code__analyze(&w, 0x3040, 0, 0, &r) == CODE_STACK_LOST,
	      "a return address overwritten by a value the analysis cannot name: stack lost");
	fail = x86_code__analyze(&w, 0x3050, 0, 0, &r);
	check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 8 &&
		      r.ra_offset == -8 && !r.ra_in_register,
	      "fast call into a register, at its entry: CFA rsp+8, return address at CFA-8 (%s, %+d, %+d)",
	      code_fail__name(fail), r.cfa_offset, r.ra_offset);
	fail = x86_code__analyze(&w, 0x3052, 0, 0, &r);
	check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 0 &&
		      r.ra_in_register && r.ra_register == 8,
	      "fast call into a register, past pop %%r8: the caller's rsp is rsp, the return address r8's value (%s, %+d, %d %u)",
	      code_fail__name(fail), r.cfa_offset, r.ra_in_register, r.ra_register);
	fail = x86_code__analyze(&w, 0x3030, 0, 0, &r);
	check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 16 &&
		      r.ra_offset == -16,
	      "a return address copied a word up: read where it was at pc (%s, %+d, %+d)",
	      code_fail__name(fail), r.cfa_offset, r.ra_offset);
	{
		/* mov -8(%rsp),%rax; push %rax; ret: a word below rsp at pc is no stack's */
		static const uint8_t below[] = { 0x48, 0x8b, 0x44, 0x24, 0xf8, 0x50, 0xc3 };
		const struct code_window bw = { below, 0x4000, sizeof(below) };

		check(x86_code__analyze(&bw, 0x4000, 0, 0, &r) == CODE_STACK_LOST,
		      "a return address from below rsp at pc: stack lost");
	}
	{
		/* 17 pushes of rax, 17 pops, ret: the words stay consistent past 16 slots */
		uint8_t many[35];
		const struct code_window mw = { many, 0x5000, sizeof(many) };

		memset(many, 0x50, 17);
		memset(many + 17, 0x58, 17);
		many[34] = 0xc3;
		fail = x86_code__analyze(&mw, 0x5000, 0, 0, &r);
		check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 8 &&
			      r.ra_offset == -8,
		      "more pushes than tracked words: the return address at rsp (%s, %+d, %+d)",
		      code_fail__name(fail), r.cfa_offset, r.ra_offset);
	}
	fail = x86_code__analyze(&window, F_PUSHES_BODY, 0, 0, &r);
	check(fail == CODE_OK && r.ra_offset == -8, "a plain function: return address at CFA-8");
	fail = x86_code__analyze(&window, F_PUSHES_BODY, F_PUSHES, 0, &r);
	check(fail == CODE_OK && r.ra_offset == -8,
	      "a plain function from its start: return address at CFA-8");
}

static void test_failures(void)
{
	static const uint8_t bad[] = { 0x06, 0x06, 0x06, 0x06 };   /* push %es: not in 64-bit mode */
	static const uint8_t lost[] = { 0x48, 0x89, 0xfc, 0xc3 };  /* mov %rdi,%rsp; ret */
	static const uint8_t away[] = { 0xe9, 0x00, 0x10, 0x00, 0x00 }; /* jmp out of the window */
	const struct code_window bad_w = { bad, 0x2000, sizeof(bad) };
	const struct code_window lost_w = { lost, 0x2000, sizeof(lost) };
	const struct code_window away_w = { away, 0x2000, sizeof(away) };
	struct code_rules r;

	check(x86_code__analyze(&window, F_JIT_LOOP, 0, 0, &r) == CODE_NO_EXIT,
	      "a loop with no exit: no return found");
	check(x86_code__analyze(&bad_w, 0x2000, 0, 0, &r) == CODE_UNDECODABLE,
	      "bytes that do not decode: undecodable");
	check(x86_code__analyze(&lost_w, 0x2000, 0, 0, &r) == CODE_STACK_LOST,
	      "rsp loaded from a register: stack lost");
	check(x86_code__analyze(&away_w, 0x2000, 0, 0, &r) == CODE_NO_EXIT && r.past_window,
	      "a jump past the code read: no return found, and more code might hold it");
	check(x86_code__analyze(&window, F_JIT_LOOP, 0, 0, &r) == CODE_NO_EXIT && !r.past_window,
	      "a loop with no exit inside the code read: no more code asked for");
	{
		/* add $0x12345678,%rax cut after 3 of its 6 bytes: no return found, more code asked */
		static const uint8_t cut[] = { 0x90, 0x48, 0x05, 0x78 };
		const struct code_window cut_w = { cut, 0x2000, sizeof(cut) };

		check(x86_code__analyze(&cut_w, 0x2000, 0, 0, &r) == CODE_NO_EXIT && r.past_window,
		      "an instruction cut by the window's end: more code might hold the return");
	}
	check(x86_code__analyze(&window, 0x9000, 0, 0, &r) == CODE_UNDECODABLE,
	      "a pc outside the window: undecodable");
	check(x86_code__analyze(&window, F_LEAF_BODY + 1, 0, 0, &r) != CODE_OK ||
		      r.cfa == UNWIND_CFA_SP_OFFSET,
	      "a pc inside an instruction gives no wrong frame pointer rule");
}

static void test_calls(void)
{
	uint64_t target = 0;

	check(x86_code__call_before(&window, F_CALL_SITES + 5, &target) == CODE_CALL_DIRECT &&
		      target == F_LEAF,
	      "after call rel32: a direct call to its target (%#lx)", (unsigned long)target);
	check(x86_code__call_before(&window, F_CALL_SITES + 8, &target) == CODE_CALL_INDIRECT,
	      "after call *%%rax: an indirect call");
	check(x86_code__call_before(&window, F_CALL_SITES + 12, &target) == CODE_CALL_INDIRECT,
	      "after call *0x10(%%rbx): an indirect call");
	check(x86_code__call_before(&window, F_LEAF, &target) == CODE_CALL_NONE,
	      "a function's first instruction (after a ret) follows no call");
	check(x86_code__call_before(&window, F_LEAF_BODY, &target) == CODE_CALL_NONE,
	      "an address inside a function that follows no call");
	check(x86_code__call_before(&window, 0x1001, &target) == CODE_CALL_NONE,
	      "an address with too few bytes before it in the window");
}

/* x86_code__jump_depths on this assembly, linked at 0x1000 as above:
 *   stg:     sub $0x30,%rsp; mov %rsp,%rax; sub $0x4000,%rsp; mov %rbx,(%rax);
 *            mov %rsi,%r13; mov %rdi,%rax; jmp *%rax           (GHC's StgRun: depth 0x4038)
 *   stg_ret: mov %rbx,%rax; add $0x4000,%rsp; mov (%rsp),%rbx; add $0x30,%rsp; ret
 *   plt:     jmp *0x100(%rip)                                  (a PLT stub: depth 8)
 *   branchy: push %rbx; test %rdi,%rdi; je 1f; sub $0x10,%rsp; jmp *%rdi
 *        1:  pop %rbx; jmp *%rsi                               (depths 0x20 and 8)
 *   noj:     push %rbx; pop %rbx; ret                          (none)
 *   far:     sub $8,%rsp; add $8,%rsp; jmp 0x9000              (out of the code: depth 8)
 *   far2:    push %rbx; pop %rbx; jmp 0x9000       (an epilogue's pop, then a jump out)
 * and x86_code__jump_offsets from branchy + 1 (after its push): -16 and +8; from far: 0. */
static const uint8_t jumps[] = {
	0x48, 0x83, 0xec, 0x30, 0x48, 0x89, 0xe0, 0x48, 0x81, 0xec, 0x00, 0x40,
	0x00, 0x00, 0x48, 0x89, 0x18, 0x49, 0x89, 0xf5, 0x48, 0x89, 0xf8, 0xff,
	0xe0, 0x48, 0x89, 0xd8, 0x48, 0x81, 0xc4, 0x00, 0x40, 0x00, 0x00, 0x48,
	0x8b, 0x1c, 0x24, 0x48, 0x83, 0xc4, 0x30, 0xc3, 0xff, 0x25, 0x00, 0x01,
	0x00, 0x00, 0x53, 0x48, 0x85, 0xff, 0x74, 0x06, 0x48, 0x83, 0xec, 0x10,
	0xff, 0xe7, 0x5b, 0xff, 0xe6, 0x53, 0x5b, 0xc3, 0x48, 0x83, 0xec, 0x08,
	0x48, 0x83, 0xc4, 0x08, 0xe9, 0xaf, 0x7f, 0x00, 0x00, 0x53, 0x5b, 0xe9,
	0xa8, 0x7f, 0x00, 0x00,
};
#define J_STG 0x1000
#define J_PLT 0x102c
#define J_BRANCHY 0x1032
#define J_NOJ 0x1041
#define J_FAR 0x1044
#define J_FAR2 0x1051

static void test_jump_depths(void)
{
	const struct code_window w = { jumps, 0x1000, sizeof(jumps) };
	int32_t d[4] = { 0 };
	uint64_t at[4] = { 0 };
	uint32_t n;

	n = x86_code__jump_depths(&w, J_STG, 0, d, at, 4);
	check(n == 1 && d[0] == 0x4038 && at[0] == J_STG + 0x17,
	      "StgRun's jump: one, at depth 0x4038, its address (%u, %#x at %#lx)", n, d[0],
	      (unsigned long)at[0]);
	n = x86_code__jump_depths(&w, J_PLT, 0, d, NULL, 4);
	check(n == 1 && d[0] == 8, "a PLT stub's jump: depth 8 (%u, %d)", n, d[0]);
	n = x86_code__jump_depths(&w, J_BRANCHY, J_NOJ, d, NULL, 4);
	check(n == 2 && ((d[0] == 0x20 && d[1] == 8) || (d[0] == 8 && d[1] == 0x20)),
	      "both paths' jumps: depths 0x20 and 8 (%u: %d, %d)", n, d[0], d[1]);
	n = x86_code__jump_depths(&w, J_BRANCHY, J_NOJ, d, NULL, 1);
	check(n == 1, "no more depths than asked for (%u)", n);
	n = x86_code__jump_depths(&w, J_NOJ, 0, d, NULL, 4);
	check(n == 0, "a function that only returns: no depth (%u)", n);
	n = x86_code__jump_depths(&w, 0x2000, 0, d, NULL, 4);
	check(n == 0, "a start outside the code: no depth (%u)", n);
	n = x86_code__jump_depths(&w, J_FAR, 0, d, NULL, 4);
	check(n == 1 && d[0] == 8, "a jump out of the code read: depth 8 (%u, %d)", n, d[0]);
	n = x86_code__jump_offsets(&w, J_BRANCHY + 1, d, 4);
	check(n == 2 && ((d[0] == -16 && d[1] == 8) || (d[0] == 8 && d[1] == -16)),
	      "from a pc: rsp at each path's jump, relative to rsp at pc (%u: %d, %d)", n, d[0],
	      d[1]);
	n = x86_code__jump_offsets(&w, J_FAR + 4, d, 4);
	check(n == 1 && d[0] == 8, "from a pc after a sub: +8 at the jump out (%u, %d)", n, d[0]);
	{
		struct code_rules r;
		enum code_fail fail = x86_code__analyze(&w, J_FAR2 + 1, 0, 0, &r);

		check(fail == CODE_OK && r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == 16 &&
			      r.via_jump,
		      "a pop, then a jump out of the code: a tail call, CFA = rsp + 16, via_jump");
		fail = x86_code__analyze(&w, J_NOJ + 1, 0, 0, &r);
		check(fail == CODE_OK && !r.via_jump, "rules from a return: not via_jump");
	}
}

/* ---- tests/fixtures/nocfi.o against the rules worked out by hand (nocfi_expect.h) ---- */

/* nocfi.o's .text: at file offset 0x40, 0x129 bytes (readelf -S), linked at 0. */
#define NOCFI_TEXT_OFFSET 0x40
#define NOCFI_TEXT_SIZE 0x129

/* The functions' starts, in order (nm -n): the analysis's "symbols". */
static const uint64_t nocfi_functions[] = { 0x00, 0x10, 0x30, 0x80, 0xa0, 0xc0, 0xf0, 0x100 };
#define NR_NOCFI_FUNCTIONS (sizeof(nocfi_functions) / sizeof(nocfi_functions[0]))

static void nocfi_bounds(uint64_t pc, uint64_t *start, uint64_t *end)
{
	for (size_t i = 0; i < NR_NOCFI_FUNCTIONS; i++) {
		if (pc >= nocfi_functions[i]) {
			*start = nocfi_functions[i];
			*end = i + 1 < NR_NOCFI_FUNCTIONS ? nocfi_functions[i + 1] : NOCFI_TEXT_SIZE;
		}
	}
}

/* The CFA as the analysis gives it is the table's: its rule, or rsp + the distance the
 * table gives where rbp is the table's base and rsp is at a known distance too. */
static bool same_cfa(const struct nocfi_expect *e, const struct code_rules *r)
{
	if (e->cfa.base == NOCFI_R10)
		return r->cfa == UNWIND_CFA_R10_OFFSET && r->cfa_offset == e->cfa.offset;
	if (e->cfa.base == NOCFI_DEREF_RBP)
		return r->cfa == UNWIND_CFA_EXPR_DEREF_BP && r->cfa_offset == e->cfa.offset &&
		       r->cfa_addend == e->cfa.addend;
	if (e->cfa.base == NOCFI_RSP || e->cfa.base == NOCFI_RBP) {
		uint8_t kind = e->cfa.base == NOCFI_RSP ? UNWIND_CFA_SP_OFFSET : UNWIND_CFA_BP_OFFSET;

		if (r->cfa == kind && r->cfa_offset == e->cfa.offset)
			return true;
	}
	return e->cfa_minus_rsp != NOCFI_RSP_UNKNOWN && r->cfa == UNWIND_CFA_SP_OFFSET &&
	       r->cfa_offset == e->cfa_minus_rsp;
}

/* A saved register's rule says where the table does. Tracing from the start, "unchanged"
 * is right too for a register saved but not yet written: the trace knows it still holds
 * its caller's value (the table names the save). */
static bool same_saved(const struct nocfi_expect *x, const struct nocfi_rule *e, uint8_t kind,
		       int32_t offset, bool is_bp, bool from_start, bool written)
{
	uint8_t unchanged = is_bp ? UNWIND_RBP_UNCHANGED : UNWIND_RBX_UNCHANGED;
	uint8_t at_cfa = is_bp ? UNWIND_RBP_AT_CFA : UNWIND_RBX_AT_CFA;

	/* Tracing forward from a prologue, the save an epilogue restores from may lie below
	 * sp still: the walk takes such a rule as "unchanged" (the register holds the value
	 * until it is pushed), as the table does. */
	if (e->base == NOCFI_SAME)
		return kind == unchanged ||
		       (kind == at_cfa && x->cfa_minus_rsp != NOCFI_RSP_UNKNOWN &&
			offset < -x->cfa_minus_rsp);
	if (e->base == NOCFI_AT_CFA)
		return (kind == at_cfa && offset == e->offset) ||
		       (from_start && !written && kind == unchanged);
	return false;
}

/* Labels where the register was written after its save (nocfi.S): rbp, multiret's counter.
 * (At nocfi_fp_body, rbx is written by the instruction there, not yet.) */
static bool written_after_save(const char *label, bool is_bp)
{
	return is_bp && (strcmp(label, "nocfi_multiret_loop") == 0 ||
			 strcmp(label, "nocfi_multiret_after_lea") == 0);
}

/* The table's rules the analysis has none for (GCC's DRAP: a CFA read through rbp from
 * where the DRAP register was saved, a save relative to rbp): it must then find nothing
 * rather than something wrong. A CFA in r10 it may find (rsp kept there while realigned)
 * or not. A CFA that is a word at rbp plus an addend (rsp kept in memory, reloaded by
 * pop %rsp) it finds tracing forward. */
static bool beyond_analysis(const struct nocfi_expect *e)
{
	return (e->cfa.base == NOCFI_DEREF_RBP && !e->cfa.addend) || e->rbp.base == NOCFI_AT_RBP ||
	       e->rbx.base == NOCFI_AT_RBP;
}

/* Tracing forward from nocfi_savedsp's first two instructions, rsp is realigned before
 * its old value is stored where the epilogue reloads it from, through rax, which the
 * analysis does not follow: it loses rsp (tracing from the start finds these). */
static bool saved_sp_prologue(const char *label)
{
	return strcmp(label, "nocfi_savedsp") == 0 || strcmp(label, "nocfi_savedsp_pushed") == 0;
}

static bool may_fail(const struct nocfi_expect *e, bool forward)
{
	return beyond_analysis(e) || e->cfa.base == NOCFI_R10 ||
	       (forward && saved_sp_prologue(e->label));
}

static void test_fixture(void)
{
	size_t len;
	uint8_t *file = fixture_read("nocfi.o", &len);
	const struct code_window code = { file + NOCFI_TEXT_OFFSET, 0, NOCFI_TEXT_SIZE };
	unsigned right[2] = { 0 }, none[2] = { 0 };

	if (len < NOCFI_TEXT_OFFSET + NOCFI_TEXT_SIZE) {
		check(false, "nocfi.o: holds its .text");
		return;
	}
	for (size_t i = 0; i < NOCFI_EXPECT_COUNT; i++) {
		const struct nocfi_expect *e = &nocfi_expect[i];

		for (int mode = 0; mode < 2; mode++) {
			uint64_t start = 0, end = 0;
			struct code_rules r;
			enum code_fail fail;
			bool ok;

			if (mode)
				nocfi_bounds(e->text_offset, &start, &end);
			fail = x86_code__analyze(&code, e->text_offset, start, end, &r);
			if (fail != CODE_OK) {
				/* Tracing forward through a DRAP epilogue (lea -8(%r10),%rsp, r10
				 * reloaded from the frame) loses rsp: a failure, not a wrong rule
				 * (GCC's DRAP frames come with CFI, whose r10 rules hprof follows). */
				bool drap = !mode && strncmp(e->label, "nocfi_drap", 10) == 0;

				none[mode]++;
				check(may_fail(e, !mode) || drap, "nocfi.o %s, %s: %s", e->label,
				      mode ? "from the start" : "forward", code_fail__name(fail));
				continue;
			}
			ok = !beyond_analysis(e) && same_cfa(e, &r) &&
			     same_saved(e, &e->rbp, r.rbp, r.rbp_offset, true, r.from_start,
					written_after_save(e->label, true)) &&
			     same_saved(e, &e->rbx, r.rbx, r.rbx_offset, false, r.from_start,
					written_after_save(e->label, false));
			right[mode] += ok;
			check(ok, "nocfi.o %s, %s: cfa kind %u%+d%+d, rbp kind %u%+d, rbx kind %u%+d",
			      e->label, mode ? "from the start" : "forward", r.cfa, r.cfa_offset,
			      r.cfa_addend, r.rbp, r.rbp_offset, r.rbx, r.rbx_offset);
		}
	}
	printf("# nocfi.o: %u of %zu labels right forward (%u without rules), %u from the start (%u)\n",
	       right[0], NOCFI_EXPECT_COUNT, none[0], right[1], none[1]);
	free(file);
}

int main(void)
{
	test_fixture();
	test_rules();
	test_failures();
	test_moved_return();
	test_noreturn_call();
	test_mov_saves();
	test_lea_nop();
	test_calls();
	test_jump_depths();
	return failures ? 1 : 0;
}
