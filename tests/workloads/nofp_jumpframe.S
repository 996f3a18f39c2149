/* Assembly for tests/t_nocfi.sh (nofp_jumpframe.c calls it): a trampoline that runs code
 * in its own frame by jumping to it, as GHC's StgRun runs Haskell code.
 *
 *   jump_enter(code, n)  (with CFI) reserves 0x4030 bytes, saves the callee-saved
 *                        registers at their top (the CFI says where rbx and rbp are, as
 *                        GHC's does for StgRun), records its own return address in
 *                        jump_enter_ra, and jumps to code with n in r13 and where to
 *                        come back in rbx; jump_exit, reached by a jump, restores them and
 *                        returns. Its frame is 0x4038 deep at the jump, as StgRun's.
 *   jumped_spin          (no CFI, never returns) points rbp at a stack of its own, as
 *                        Haskell code keeps its stack pointer in rbp, loops n times,
 *                        then jumps on to jumped_more, as Haskell code jumps to the
 *                        next function.
 *   jumped_more          (no CFI) subtracts 8 from rsp to align a call, as GHC's code
 *                        does, calls jumped_c_work(n), adds 8 back and jumps back
 *                        through rbx.
 * No instruction in them says where a return address is: the one that the stack holds is
 * jump_enter's, after a direct call of jump_enter, not of either.
 *
 * Alignment is filled with int3, so no byte before a function looks like a call. */

#define FUNCTION(name)			\
	.globl name;			\
	.type name, @function;		\
	.balign 16, 0xcc;		\
name:

#define END(name) .size name, . - name

	.text

FUNCTION(jump_enter)
	.cfi_startproc
	sub $0x30, %rsp
	.cfi_adjust_cfa_offset 0x30
	mov %rsp, %rax
	sub $0x4000, %rsp
	.cfi_adjust_cfa_offset 0x4000
	mov %rbx, (%rax)
	.cfi_offset %rbx, -0x38
	mov %rbp, 8(%rax)
	.cfi_offset %rbp, -0x30
	mov %r12, 16(%rax)
	mov %r13, 24(%rax)
	mov %r14, 32(%rax)
	mov %r15, 40(%rax)
	mov 0x30(%rax), %rcx
	mov %rcx, jump_enter_ra(%rip)
	mov %rsi, %r13
	lea jump_exit(%rip), %rbx
	jmp *%rdi
jump_exit:
	add $0x4000, %rsp
	.cfi_adjust_cfa_offset -0x4000
	mov (%rsp), %rbx
	.cfi_restore %rbx
	mov 8(%rsp), %rbp
	.cfi_restore %rbp
	mov 16(%rsp), %r12
	mov 24(%rsp), %r13
	mov 32(%rsp), %r14
	mov 40(%rsp), %r15
	add $0x30, %rsp
	.cfi_adjust_cfa_offset -0x30
	ret
	.cfi_endproc
END(jump_enter)

FUNCTION(jumped_spin)
	lea jumped_stack+256(%rip), %rbp
	mov %r13, %rcx
	xor %eax, %eax
1:	add %rcx, %rax
	ror $7, %rax
	mov %rax, -8(%rbp)
	dec %rcx
	jnz 1b
	jmp jumped_more
END(jumped_spin)

FUNCTION(jumped_more)
	mov %r13, %rdi
	sub $8, %rsp
	call jumped_c_work
	add $8, %rsp
	jmp *%rbx
END(jumped_more)

	.bss
	.balign 8
	.globl jump_enter_ra
jump_enter_ra:
	.quad 0
	/* the jumped code's own stack, which rbp points into, as GHC's Sp points into the
	 * Haskell stack in the heap */
jumped_stack:
	.zero 256

	.section .note.GNU-stack, "", @progbits
