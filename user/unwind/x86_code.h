/* Instruction analysis of x86-64 code that has no CFI (hand-written assembly, JIT code,
 * trampolines): decode the function's instructions to find where its return address is
 * and where it saved its caller's rbp and rbx, in the shape of a CFI row's rules. Pure:
 * works on a window of code bytes that the caller read, which it treats as hostile (every
 * path, instruction and branch bounded). Decoding is Zydis's. */
#ifndef HPROF_X86_CODE_H
#define HPROF_X86_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Code bytes: bytes[i] is the byte at address addr + i. */
struct code_window {
	const uint8_t *bytes;
	uint64_t addr;
	size_t len;
};

/* The rules the analysis found at a pc, with the meanings of common/unwind_row.h's kinds:
 * cfa is UNWIND_CFA_SP_OFFSET, _BP_OFFSET, _R10_OFFSET, _R12_OFFSET.._R15_OFFSET, or
 * _EXPR_DEREF_SP or _EXPR_DEREF_BP plus cfa_addend;
 * rbp is UNWIND_RBP_UNCHANGED, _AT_CFA, _AT_SP or _UNDEFINED; rbx is UNWIND_RBX_UNCHANGED,
 * _AT_CFA or _UNDEFINED. */
struct code_rules {
	uint8_t cfa, rbp, rbx;
	bool from_start;    /* found by tracing from the function's start, not forward from pc */
	int32_t cfa_offset, rbp_offset, rbx_offset;
	/* added to the word a CFA rule of kind UNWIND_CFA_EXPR_DEREF_SP or _BP reads (a
	 * realigned frame that keeps the caller's rsp less its pushes in memory); 0 otherwise */
	int32_t cfa_addend;
	/* the return address is at CFA + ra_offset: -8, except where the code moved it (a
	 * callee of sljit's fast calls keeps it in its caller's top word: 0); unless
	 * ra_in_register */
	int32_t ra_offset;
	/* tracing forward, the return address is the value at pc of the register whose DWARF
	 * number is ra_register (a callee of sljit's fast calls that popped it into one; CFA
	 * then rsp-based, ra_offset 0) */
	bool ra_in_register;
	uint8_t ra_register;
	/* with CODE_NO_EXIT: a path ran past the end of the code read, so more code after it
	 * may hold the return (a JIT kernel of 100 KiB has one, at its end) */
	bool past_window;
	/* tracing forward, the exit was a jump out of the function, taken for a tail call: the
	 * return address at rsp there is the frame's only if the code was called, not jumped
	 * to and run in another function's frame (GHC's Haskell code jumps on so) */
	bool via_jump;
};

/* Why an analysis found nothing. */
enum code_fail {
	CODE_OK = 0,
	CODE_UNDECODABLE,   /* the pc's instruction, or every path from it, did not decode */
	CODE_NO_EXIT,       /* no return instruction within the bounds (loops, indirect jumps) */
	CODE_STACK_LOST,    /* rsp was set from something the analysis cannot follow */
	CODE_AMBIGUOUS,     /* tracing forward, returns found on different paths disagree
			     * (one ran into another function, past a call that does not return) */
	CODE_FAIL_COUNT,
};

const char *code_fail__name(enum code_fail fail);

/* The most code one analysis reads: a longer window is cut to this. */
#define CODE_MAX_WINDOW (256u << 10)
/* Most instructions one analysis decodes, and pending branches it keeps. */
#define CODE_MAX_INSNS 4096
#define CODE_MAX_BRANCHES 64
/* Returns that must agree, tracing forward, before the analysis trusts them. One: past a
 * call that does not return (abort, __stack_chk_fail) the trace runs into the next
 * function, whose returns then disagree with the true ones, and requiring agreement
 * turned half the right answers on libc's code into failures (bench/bench_analyze.c). The
 * walk checks each return address the analysis gives instead. */
#define CODE_EXITS 1

/* The rules at pc (an instruction's address: the sampled pc, or a return address), from
 * the function's start when it is known (start != 0, start <= pc) and pc is reached from
 * there, else by following the code forward from pc to its returns (up to CODE_EXITS of
 * them, on different paths, which must agree). With the
 * function's end known too (end != 0: [start, end) holds it, as a symbol's size says), the
 * trace stays inside it: a jump out is a tail call, a fall-through out (after a call that
 * does not return) goes nowhere. Returns CODE_OK with *out filled, or why not. */
enum code_fail x86_code__analyze(const struct code_window *code, uint64_t pc, uint64_t start,
				 uint64_t end, struct code_rules *out);

/* Tracing every path from the function's start (start; end as for x86_code__analyze):
 * the depths of its frame, CFA - rsp, where it jumps to code the trace cannot follow
 * (through a register or memory, out of the code read, or out of its known bounds),
 * distinct, at most max of them in depths, and the jumps' addresses in at (unless NULL).
 * That code runs in the function's frame: GHC's StgRun reserves 16 KiB and jumps to
 * Haskell code, which calls nothing on this stack. Returns how many. */
uint32_t x86_code__jump_depths(const struct code_window *code, uint64_t start, uint64_t end,
			       int32_t *depths, uint64_t *at, uint32_t max);

/* The same, tracing every path from pc on: where rsp is at those jumps, relative to rsp at
 * pc. Code that a trampoline jumped to may move rsp before it calls (GHC's Haskell code
 * subtracts 8 to align a C call, and adds it back before it jumps on): rsp at pc plus
 * such an offset is rsp as the trampoline left it. */
uint32_t x86_code__jump_offsets(const struct code_window *code, uint64_t pc, int32_t *offsets,
				uint32_t max);

/* What the bytes before a return address hold. */
enum code_call {
	CODE_CALL_NONE = 0,
	CODE_CALL_DIRECT,   /* call rel32: *target is where it goes */
	CODE_CALL_INDIRECT, /* call through a register or memory */
	/* JIT code whose bytes could not be read: its process exited before the copies
	 * held them (binary/code_copies.h). It may follow a call or not. */
	CODE_CALL_UNREADABLE,
};

static inline bool code_call__is_call(enum code_call call)
{
	return call == CODE_CALL_DIRECT || call == CODE_CALL_INDIRECT;
}

/* Whether the instruction that ends at ra (code must hold the bytes just before ra) is a
 * call. */
enum code_call x86_code__call_before(const struct code_window *code, uint64_t ra,
				     uint64_t *target);

#endif
