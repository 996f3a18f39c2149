/* Where the functions of a binary's code that has neither CFI nor symbols start (a
 * stripped library's hand-written assembly), so that its frames are named once per
 * function ("libx.so+0xSTART") rather than once per address. Found by a linear sweep of
 * the stretch of code no FDE covers, decoded with Zydis. A start is:
 *   - the target of a direct call from the stretch into it;
 *   - the stretch's first instruction past padding, where the stretch begins at the end
 *     of a function's CFI;
 *   - an instruction at a 16-byte boundary, after padding, after an instruction control
 *     cannot fall through (ret, jmp, ud2, hlt): assemblers align functions. Unless code
 *     branches to it: a conditional branch's target is inside a function, and so is the
 *     target of a jump back to it with no other start in between (a loop's head, which
 *     assemblers align too, entered by a jump past it: GMP's and x86inc's loops).
 * Padding is nop and int3. What it finds depends on the file's bytes and the address
 * alone, never on which samples came first, so names are the same run after run. */
#ifndef HPROF_BINARY_CODE_STARTS_H
#define HPROF_BINARY_CODE_STARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

#include "cfi/unwind_table.h"

/* A stretch is swept whole up to this size; in a larger one, the aligned block of
 * CODE_SWEEP_BLOCK bytes around the address. */
#define CODE_SWEEP_MAX (16u << 20)
#define CODE_SWEEP_BLOCK (1u << 20)
/* Stretches swept per binary, at most. */
#define CODE_STRETCHES_MAX 4096u

/* The stretches of one binary swept so far, and the starts found in each. */
struct code_starts;

/* Code bytes: bytes[i] is the byte at address addr + i. */
struct code_bytes {
	const uint8_t *bytes;
	uint64_t addr;
	size_t len;
};

/* What the sweep reports about an address. */
enum code_mark {
	CODE_MARK_BOUNDARY, /* first past a path's end and padding, at a 16-byte boundary, or
			     * the stretch's first instruction from a known start */
	CODE_MARK_CALLED,   /* a direct call's target */
	CODE_MARK_BRANCHED, /* a conditional branch's target */
	CODE_MARK_JUMPED_BACK, /* a jump's target, behind the jump (from) */
};

/* A sweep of [lo, hi) in progress, fed a window of bytes at a time. */
struct code_sweep {
	uint64_t pc;      /* the next instruction's address */
	uint64_t lo, hi;  /* only targets in [lo, hi) are reported */
	bool at_boundary; /* the previous instruction (bar padding) ends a path */
	bool first;       /* only padding seen yet, from a known boundary */
	bool padded;      /* padding seen since the boundary */
	bool after_call;  /* the previous instruction (bar padding) is a call */
};

typedef void code_mark_fn(void *arg, enum code_mark mark, uint64_t at, uint64_t from);

/* Starts a sweep of [lo, hi); known_start: lo is where a function may start (the end of a
 * function's CFI), not an arbitrary point inside code. */
void code_sweep__init(struct code_sweep *s, uint64_t lo, uint64_t hi, bool known_start);
/* Decodes on from s->pc through code (which must hold the bytes at s->pc), stopping before
 * an instruction that could run past the window's end unless that end is s->hi, and calls
 * mark(arg, mark, at, from) for each address it learns something of (from: the
 * instruction that branches there). Returns whether the sweep reached s->hi. */
bool code_sweep__run(struct code_sweep *s, const struct code_bytes *code, code_mark_fn *mark,
		     void *arg);

/* Where a binary's code is, for its sweeps: its CFI, the bounds of the segment being
 * named, and how to read its bytes at a virtual address (as code__read_vaddr). */
struct code_source {
	const struct unwind_table *table; /* NULL: no CFI at all */
	uint64_t seg_start, seg_end;
	ssize_t (*read)(void *arg, uint64_t vaddr, uint8_t *buf, size_t len);
	void *arg;
};

/* The start of the function holding vaddr (an ELF virtual address in [seg_start, seg_end)
 * that src->table does not cover), sweeping its stretch the first time one of its
 * addresses is asked for (*cache holds the sweeps; created on first use). Returns 0, or
 * -ENOENT (no start found below vaddr in its stretch, code that cannot be read), -ENOMEM. */
int code_starts__find(struct code_starts **cache, const struct code_source *src,
		      uint64_t vaddr, uint64_t *start);
/* Bytes the sweeps hold. */
size_t code_starts__bytes(const struct code_starts *cache);
void code_starts__free(struct code_starts *cache);

#endif
