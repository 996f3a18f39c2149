/* A leaf without CFI whose frame holds planted decoys, for tests/t_nocfi.sh (nofp_decoys.c
 * calls it). There is no .cfi_* directive in this file and gas adds none, so no FDE covers
 * these functions. An unwinder that scans asm_decoy_leaf's stack for something that looks
 * like a return address, or follows rbp, meets a decoy before the true return address:
 *
 *   rsp + 0x00  (a) decoy_unused: code, but a function's first instruction, which no call
 *               instruction precedes (int3 fills the alignment before it)
 *   rsp + 0x08  (b) decoy_stale_ret: a stale return address, just after a call of this
 *               very leaf in decoy_stale, a function that is never on the stack
 *   rsp + 0x10  (c) a fake frame record, where rbp points: { rsp + 0x20, decoy_stale_ret }
 *   rsp + 0x20      0, the fake record chain's end
 *   rsp + 0x28      0, its return address
 *   rsp + 0x30  (d) decoy_zero_ret: just after an indirect call in decoy_zero (nofp_decoys.c,
 *               with CFI), whose CFI puts its own return address at rsp + 0x40
 *   rsp + 0x38      0
 *   rsp + 0x40      0: a walk from (d) ends on a zero return address, which is no entry
 *   rsp + 0x48      the caller's rbp (pushed)
 *   rsp + 0x50      the true return address, into decoy_caller
 *
 * Its instructions alone tell the truth: push %rbp and sub $0x48 put the return address at
 * rsp + 0x50 after the prologue; add $0x48, pop %rbp and ret undo them. */

#define FUNCTION(name)			\
	.globl name;			\
	.type name, @function;		\
	.balign 16, 0xcc;		\
name:

#define END(name) .size name, . - name

	.text

/* Never called: its address is decoy (a). */
FUNCTION(decoy_unused)
	xor %eax, %eax
	ret
END(decoy_unused)

/* Never called: the address after its call is decoy (b). */
FUNCTION(decoy_stale)
	sub $8, %rsp
	call asm_decoy_leaf
	.globl decoy_stale_ret
decoy_stale_ret:
	add $8, %rsp
	ret
END(decoy_stale)

/* asm_decoy_leaf(n): plants the decoys, then counts n > 0 down in registers. */
FUNCTION(asm_decoy_leaf)
	push %rbp
	sub $0x48, %rsp
	lea decoy_unused(%rip), %rax
	mov %rax, 0x00(%rsp)
	lea decoy_stale_ret(%rip), %rax
	mov %rax, 0x08(%rsp)
	mov %rax, 0x18(%rsp)
	lea 0x20(%rsp), %rax
	mov %rax, 0x10(%rsp)
	movq $0, 0x20(%rsp)
	movq $0, 0x28(%rsp)
	lea decoy_zero_ret(%rip), %rax
	mov %rax, 0x30(%rsp)
	movq $0, 0x38(%rsp)
	movq $0, 0x40(%rsp)
	lea 0x10(%rsp), %rbp
	mov %rdi, %rax
1:	dec %rax
	jnz 1b
	add $0x48, %rsp
	pop %rbp
	ret
END(asm_decoy_leaf)

	.section .note.GNU-stack, "", @progbits
