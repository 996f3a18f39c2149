/* Functions without CFI that move rsp off the thread's stack, to a workspace on the heap,
 * and run their callee there (nofp_switch.c calls them), as oneDNN's GEMM kernels and
 * green-thread runtimes do. Each keeps the way back, the rsp it had, where such code keeps
 * it:
 *
 *   switch_reg    in a callee-saved register (r12) while the workspace is in use
 *   switch_area   at the top of the workspace, reloaded with pop %rsp
 *   switch_frame  in its own frame on the thread's stack, found by rbp (mov %rbp, %rsp)
 *
 * switch_X(n, top, fn) calls fn(n) with rsp at top (16-byte aligned) and returns what fn
 * returns. There is no .cfi_* directive in this file: an unwinder finds their callers from
 * their instructions only. Alignment is filled with int3. */

#define FUNCTION(name)			\
	.globl name;			\
	.type name, @function;		\
	.balign 16, 0xcc;		\
name:

#define END(name) .size name, . - name

	.text

FUNCTION(switch_reg)
	push %r12
	mov %rsp, %r12
	mov %rsi, %rsp
	call *%rdx
	mov %r12, %rsp
	pop %r12
	ret
END(switch_reg)

FUNCTION(switch_area)
	push %rbx
	mov %rsp, %rax
	lea -16(%rsi), %rsp
	mov %rax, (%rsp)
	call *%rdx
	pop %rsp
	pop %rbx
	ret
END(switch_area)

FUNCTION(switch_frame)
	push %rbp
	mov %rsp, %rbp
	push %rbx
	sub $8, %rsp
	mov %rsi, %rsp
	call *%rdx
	lea -8(%rbp), %rsp
	pop %rbx
	pop %rbp
	ret
END(switch_frame)

	.section .note.GNU-stack, "", @progbits
