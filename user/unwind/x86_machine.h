/* The abstract machine of the instruction analysis (x86_code.c): what the code does to
 * rsp, rbp, rbx, the registers that may hold a realigned frame's rsp, and the stack words
 * it stores to, each value named as a base the analysis cannot know plus an offset.
 * Internal to x86_code.c and x86_machine.c. */
#ifndef HPROF_UNWIND_X86_MACHINE_H
#define HPROF_UNWIND_X86_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

#include <Zydis/Zydis.h>

/* A register's value as the analysis knows it: base + off, where a base is a value the
 * analysis cannot know but can name. */
enum base {
	BASE_NONE = 0, /* not known */
	BASE_CFA,      /* the caller's rsp (tracing from the function's start) */
	BASE_SP0,      /* rsp at pc (tracing forward from pc) */
	BASE_BP0,      /* rbp at pc (tracing forward from pc) */
	BASE_BX0,      /* rbx at pc (tracing forward from pc): not an address */
	BASE_CALLER,   /* the caller's own value of the register (rbp or rbx): not an address */
	BASE_LOADED,   /* loaded from where the caller's value was saved (see struct reg) */
	BASE_R0,       /* r10 (BASE_R0 + 0), r12 .. r15 (+ 2 .. 5) at pc, tracing forward: hand-
			* written code keeps rsp in one while it realigns rsp (dav1d's x86inc) */
	BASE_R0_LAST = BASE_R0 + 5,
	BASE_DEREF,    /* the word at state.deref as it was at pc (tracing forward): the rsp a
			* realigned frame keeps in memory and reloads with pop %rsp (libjpeg-
			* turbo's nasm: CFA = *(rbp) + 16 in the body) */
};

/* r10 and r12-r15, tracked for the rsp a function keeps in one (index: DWARF number - 10;
 * r11 is not tracked). */
#define NR_DRAP 6

/* Tracing forward, the words of the stack the code stores to, and what the general
 * registers loaded from the stack, so that a return finds its return address where the
 * code moved it: sljit's fast calls (PCRE2's JIT) enter with pop (%rsp), which moves the
 * return address into the caller's top word, and return with mov (%rsp),%rax; push %rax;
 * ret. A word is 8 bytes at SP0 + an offset; WORD_UNKNOWN: a value the analysis cannot
 * name. Stores through other registers than rsp (and rbp or a DRAP register holding
 * rsp + N) are taken not to reach the words a return reads. */
#define NR_WORDS 16
#define NR_GPRS 16
#define WORD_UNKNOWN INT32_MIN
#define CODE_MAX_WORD (1 << 24)
/* A general register's value at pc (rax..r15 by Zydis's order), as a word or a register
 * holds it: sljit's fast calls also pop the return address into a register and return
 * with push %reg; ret. Below every word's offset (CODE_MAX_WORD). */
#define WORD_REGISTER(i) (INT32_MIN + 1 + (int32_t)(i))
#define WORD_IS_REGISTER(v) ((v) > WORD_UNKNOWN && (v) <= WORD_REGISTER(NR_GPRS - 1))

struct word {
	int32_t at;    /* SP0 + at */
	int32_t holds; /* the word at SP0 + holds at pc, a WORD_REGISTER, or WORD_UNKNOWN */
};

struct val {
	uint8_t base;
	int64_t off;
};

/* rbp or rbx: its value, and where the caller's value of it is in memory. */
struct reg {
	struct val val;
	struct val caller_at; /* BASE_NONE: nowhere known */
};

struct state {
	uint64_t pc;
	struct val sp;
	struct reg bp, bx;
	struct val drap[NR_DRAP];
	struct val deref; /* BASE_DEREF's word: SP0 or BP0 + an offset */
	bool from_start; /* tracing from the function's start, not forward from pc */
	/* tracing forward: rax..r15 (by Zydis's order; rsp's unused) as the word at SP0 + n
	 * at pc they were loaded from, a register's value at pc (WORD_REGISTER: their own
	 * until written), else WORD_UNKNOWN; the words stored to since pc */
	int32_t gpr[NR_GPRS];
	struct word words[NR_WORDS];
	uint8_t nr_words;
	int32_t forgotten; /* words at or below SP0 + forgotten may have been stored to */
	/* at a return: the return address is at SP0 + ra_at (ra_moved), or register ra_at's
	 * value at pc (ra_moved, WORD_IS_REGISTER(ra_at)), else at rsp; nowhere the analysis
	 * can name (ra_lost) */
	bool ra_moved, ra_lost;
	/* the exit is a jump out of the function, taken for a tail call, not a return */
	bool tail_jump;
	int32_t ra_at;
};

static inline bool val_is(struct val v, uint8_t base, int64_t off)
{
	return v.base == base && v.off == off;
}

/* A value an address can be computed from (rsp or rbp as a base). */
static inline bool val_addressable(struct val v)
{
	return v.base == BASE_CFA || v.base == BASE_SP0 || v.base == BASE_BP0 ||
	       (v.base >= BASE_R0 && v.base <= BASE_R0_LAST) || v.base == BASE_DEREF;
}

static inline struct val val_add(struct val v, int64_t delta)
{
	if (!val_addressable(v))
		return (struct val){ BASE_NONE, 0 };
	v.off += delta;
	return v;
}

/* The instruction's effect on the state (rsp, rbp, rbx, the DRAP registers, the words). */
void x86_machine__apply(struct state *s, const ZydisDecodedInstruction *insn,
			const ZydisDecodedOperand *ops);
/* The word at SP0 + at as the trace has it: what was stored there since pc, else the word
 * that was there at pc; WORD_UNKNOWN when it cannot be named. */
int32_t x86_machine__word_at(const struct state *s, int64_t at);

#endif
