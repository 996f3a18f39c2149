/* Assembly without CFI for tests/t_nocfi.sh (nofp_realign.c calls it): a frame laid out as
 * BEAM's JIT lays out process_main's, the frame every Erlang scheduler's C calls run under.
 *
 *   asm_realign_big(n)  reserves 0x4110 bytes below the rsp it was called with, realigns
 *                       rsp to 64 bytes, keeps the caller's rsp in rbx (pushed first), and
 *                       calls c_callee(n) from the bottom. Nothing else is written: the
 *                       pages in between are never touched, so the kernel cannot copy
 *                       them. Its return address lies ~16.5 KiB above c_callee's frame; no
 *                       instruction says where (rsp is restored from rbx), so only a scan
 *                       that reads past the untouched pages finds it.
 *
 * Alignment is filled with int3, so no byte before a function looks like a call. */

#define FUNCTION(name)			\
	.globl name;			\
	.type name, @function;		\
	.balign 16, 0xcc;		\
name:

#define END(name) .size name, . - name

	.text

FUNCTION(asm_realign_big)
	push %rbx
	mov %rsp, %rbx
	sub $0x4110, %rsp
	and $-64, %rsp
	call c_callee
	mov %rbx, %rsp
	pop %rbx
	ret
END(asm_realign_big)

	.section .note.GNU-stack, "", @progbits
