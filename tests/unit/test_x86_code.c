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

#include "check.h"
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
	check(x86_code__analyze(&away_w, 0x2000, 0, 0, &r) == CODE_NO_EXIT,
	      "a jump out of the code read: no return found");
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

int main(void)
{
	test_rules();
	test_failures();
	test_calls();
	return failures ? 1 : 0;
}
