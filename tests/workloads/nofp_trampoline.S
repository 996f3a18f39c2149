/* A trampoline without CFI, shaped like CPython's perf trampoline (Python/asm_trampoline.S),
 * for tests/t_nocfi.sh (nofp_trampoline.c calls it, or a copy of it). There is no .cfi_*
 * directive in this file and gas adds none, so no FDE covers it.
 *
 * py_trampoline(a, b, fn): fn(a, b), from a frame record of its own. CPython copies the
 * bytes from py_trampoline to py_trampoline_end into executable memory it maps, one copy
 * per Python function; nofp_trampoline.c does the same. The code uses no address of its
 * own, so a copy runs anywhere. */

	.text
	.globl py_trampoline
	.type py_trampoline, @function
	.balign 16, 0xcc
py_trampoline:
	push %rbp
	mov %rsp, %rbp
	call *%rdx
	pop %rbp
	ret
	.size py_trampoline, . - py_trampoline
	.globl py_trampoline_end
py_trampoline_end:

	.section .note.GNU-stack, "", @progbits
