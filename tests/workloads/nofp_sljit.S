/* Code without CFI in the shape of sljit's fast calls, the calls PCRE2's JIT makes between
 * the pieces of a compiled pattern (nofp_sljit.c calls sljit_matcher). A fast call is a
 * plain call; its callee moves the return address off the top of the stack at once, and
 * runs with its caller's rsp:
 *
 *   fast_top_piece    pop (%rsp): into its caller's top word (PCRE2's LOCALS0); leaves with
 *                     mov (%rsp),%rax; push %rax; ret, as PCRE2's pieces do
 *   fast_slot_piece   pop 0x8(%rsp): into a slot of its caller's frame (LOCALS1); leaves
 *                     with push 0x8(%rsp); ret (sljit's return from memory)
 *   fast_reg_leaf     pop %r8: into a register (PCRE2's UTF helpers); push %r8; ret
 *   fast_nest_outer   pop (%rsp), and calls fast_reg_nested (pop %r8) in the middle: fast
 *                     calls two deep, both at the matcher's rsp
 *
 * sljit_matcher(rounds) is the caller, entered as sljit enters compiled code: it saves
 * rbx, r15, r14, r13 and rbp and moves rsp down 0x80 bytes for its locals. Each piece runs
 * a loop of 1-16 rounds (a generator in r14 picks how many), so that its loop's exit is
 * mispredicted now and then and samples land on the instructions after it too (PCRE2's
 * reload of the return address into rax among them). There is no .cfi_* directive in this
 * file; alignment is filled with int3. */

#define FUNCTION(name)			\
	.globl name;			\
	.type name, @function;		\
	.balign 16, 0xcc;		\
name:

#define END(name) .size name, . - name

/* rcx = 1..16 from the generator in r14 (an LCG), then a loop of rcx rounds (label: a
 * local numeric label, 8 or 9). */
#define SPIN(label)					\
	imul $1103515245, %r14, %r14;		\
	add $12345, %r14;			\
	mov %r14, %rcx;					\
	shr $60, %rcx;					\
	add $1, %rcx;					\
label:	imul %rcx, %rdx;				\
	add $1, %rdx;					\
	sub $1, %rcx;					\
	jnz label##b

	.text

FUNCTION(sljit_matcher)
	push %rbx
	push %r15
	push %r14
	push %r13
	push %rbp
	sub $0x80, %rsp
	mov %rdi, %r13
	mov %rdi, %r14
	xor %edx, %edx
	movq $0, (%rsp)
	movq $0, 0x8(%rsp)
1:	call fast_top_piece
	call fast_slot_piece
	call fast_reg_leaf
	call fast_nest_outer
	SPIN(9)
	sub $1, %r13
	jnz 1b
	mov %rdx, %rax
	add $0x80, %rsp
	pop %rbp
	pop %r13
	pop %r14
	pop %r15
	pop %rbx
	ret
END(sljit_matcher)

FUNCTION(fast_top_piece)
	pop (%rsp)
	SPIN(8)
	mov (%rsp), %rax
	push %rax
	ret
END(fast_top_piece)

FUNCTION(fast_slot_piece)
	pop 0x8(%rsp)
	SPIN(8)
	push 0x8(%rsp)
	ret
END(fast_slot_piece)

FUNCTION(fast_reg_leaf)
	pop %r8
	SPIN(8)
	push %r8
	ret
END(fast_reg_leaf)

FUNCTION(fast_nest_outer)
	pop (%rsp)
	SPIN(8)
	call fast_reg_nested
	SPIN(9)
	mov (%rsp), %rax
	push %rax
	ret
END(fast_nest_outer)

FUNCTION(fast_reg_nested)
	pop %r8
	SPIN(8)
	push %r8
	ret
END(fast_reg_nested)

	.section .note.GNU-stack, "", @progbits
