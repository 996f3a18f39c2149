/* Functions without CFI, for tests/t_nocfi.sh (nofp_asm.c calls them). There is no .cfi_*
 * directive in this file and gas adds none, so no FDE covers these functions: an unwinder
 * can only find their callers from their instructions (or by guessing). Each is shaped
 * after code that compilers and hand-written libraries really emit:
 *
 *   asm_leaf      a leaf that keeps everything in registers: CFA = rsp + 8 everywhere
 *   asm_pushes    saves rbx and r12, takes 0x48 bytes of locals (CFA = rsp + 0x60 in its
 *                 body) and calls c_callee (C, with CFI) in a loop
 *   asm_multiret  four returns: one before anything is pushed, three after its loop, laid
 *                 out before and after the loop, one freeing the locals with lea; rbp holds
 *                 a small number (it is saved like rbx), never a frame pointer
 *   asm_savedsp   libjpeg-turbo's nasm prologue: realigns rsp to 32 bytes and keeps the
 *                 caller's rsp (less the pushed rbp) *in memory*, at the realigned rbp; the
 *                 epilogue reloads it with pop %rsp. In its body the CFA is *(rbp) + 16, a
 *                 rule no register gives; it calls c_callee in a loop, as asm_pushes does
 *   asm_pushjmp   calls asm_jumped as HotSpot's interpreter calls: it pushes the address
 *                 to return to and jumps, so that no call precedes that return address
 *   asm_jumped    a leaf loop, entered by asm_pushjmp's jump
 *   asm_movsaves  MKL's GEMM kernels' frame: one sub, then rbx, rbp and r12 saved by mov,
 *                 not by push, and rbp used as a counter; restored by mov before the add.
 *                 Its callers keep a frame pointer (CFA = rbp + 16), so their caller is
 *                 found only with the rbp it saved
 *
 * Alignment is filled with int3, so no byte before a function looks like a call. */

#define FUNCTION(name)			\
	.globl name;			\
	.type name, @function;		\
	.balign 16, 0xcc;		\
name:

#define END(name) .size name, . - name

	.text

/* asm_leaf(n): the sum n + (n - 1) + ... + 1, counted down in registers; n > 0. */
FUNCTION(asm_leaf)
	mov %rdi, %rax
	xor %edx, %edx
1:	add %rax, %rdx
	dec %rax
	jnz 1b
	mov %rdx, %rax
	ret
END(asm_leaf)

/* asm_pushes(n): n > 0 rounds of a short loop over a local, then c_callee(round). The
 * stack is 16-byte aligned at the call: 8 (return address) + 16 (pushes) + 0x48. */
FUNCTION(asm_pushes)
	push %rbx
	push %r12
	sub $0x48, %rsp
	mov %rdi, %rbx
	xor %r12d, %r12d
1:	movq $100, 0x20(%rsp)
2:	add %rbx, %r12
	decq 0x20(%rsp)
	jnz 2b
	mov %rbx, %rdi
	call c_callee
	add %rax, %r12
	dec %rbx
	jnz 1b
	mov %r12, %rax
	add $0x48, %rsp
	pop %r12
	pop %rbx
	ret
END(asm_pushes)

/* asm_multiret(n): counts n down, storing it into a local, and returns n & 3 through the
 * exit that n & 3 names; n = 0 returns at once. */
FUNCTION(asm_multiret)
	test %rdi, %rdi
	jnz 1f
	xor %eax, %eax
	ret				/* exit 0: nothing pushed */
1:	push %rbx
	push %rbp
	sub $0x18, %rsp
	mov %rdi, %rbx
	mov %edi, %ebp
	and $3, %ebp
	jmp .Lmultiret_loop
.Lmultiret_odd:				/* exit 1 and 3: before the loop in memory */
	mov %ebp, %eax
	add $0x18, %rsp
	pop %rbp
	pop %rbx
	ret
.Lmultiret_loop:
	mov %rbx, 0x8(%rsp)
	dec %rbx
	jnz .Lmultiret_loop
	test $1, %ebp
	jnz .Lmultiret_odd
	test %ebp, %ebp
	jnz .Lmultiret_two
	xor %eax, %eax			/* exit for 0 */
	add $0x18, %rsp
	pop %rbp
	pop %rbx
	ret
.Lmultiret_two:				/* exit for 2: the locals freed with lea */
	mov %ebp, %eax
	lea 0x18(%rsp), %rsp
	pop %rbp
	pop %rbx
	ret
END(asm_multiret)

/* asm_savedsp(n): asm_pushes's rounds in a frame laid out as libjpeg-turbo's SIMD
 * functions lay theirs out: rbp pushed, rsp realigned, the rsp after the push stored at the
 * new rbp, locals and saves below it. rsp is 16-byte aligned at the call (32-byte aligned
 * rbp, 0x40 of locals, two pushes). */
FUNCTION(asm_savedsp)
	push %rbp
	mov %rsp, %rax
	sub $4, %rsp
	and $-32, %rsp
	mov %rax, (%rsp)
	mov %rsp, %rbp
	lea -0x40(%rbp), %rsp
	push %rbx
	push %r12
	mov %rdi, %rbx
	xor %r12d, %r12d
1:	movq $100, -0x20(%rbp)
2:	add %rbx, %r12
	decq -0x20(%rbp)
	jnz 2b
	mov %rbx, %rdi
	call c_callee
	add %rax, %r12
	dec %rbx
	jnz 1b
	mov %r12, %rax
	pop %r12
	pop %rbx
	mov %rbp, %rsp
	pop %rsp
	pop %rbp
	ret
END(asm_savedsp)

/* asm_pushjmp(n): asm_jumped(n), entered by a jump with the return address pushed by hand
 * (HotSpot's interpreter enters a method so, and returns to an entry of its own). */
FUNCTION(asm_pushjmp)
	push %rbx
	mov %rdi, %rbx
	lea .Lpushjmp_back(%rip), %rax
	push %rax
	jmp asm_jumped
.Lpushjmp_back:
	add %rbx, %rax
	pop %rbx
	ret
END(asm_pushjmp)

/* asm_jumped(n): counts n down in registers; returns n. */
FUNCTION(asm_jumped)
	mov %rdi, %rax
1:	dec %rdi
	jnz 1b
	ret
END(asm_jumped)

/* asm_movsaves(n): n > 0 rounds of a loop counted down in rbp; returns a mix of the
 * rounds. CFA = rsp + 0x40 in its body, rbx at CFA - 0x40, rbp at CFA - 0x38. */
FUNCTION(asm_movsaves)
	sub $0x38, %rsp
	mov %rbx, (%rsp)
	mov %rbp, 0x8(%rsp)
	mov %r12, 0x10(%rsp)
	mov %rdi, %rbp
	xor %ebx, %ebx
	xor %r12d, %r12d
1:	add %rbp, %rbx
	xor %rbx, %r12
	dec %rbp
	jnz 1b
	mov %r12, %rax
	mov (%rsp), %rbx
	mov 0x8(%rsp), %rbp
	mov 0x10(%rsp), %r12
	add $0x38, %rsp
	ret
END(asm_movsaves)

	.section .note.GNU-stack, "", @progbits
