/* The DWARF walk replayed in userspace over a sample's copied stack: from the sampled
 * ip/sp/bp, find each pc's unwind row, compute the CFA, read the return address and the
 * caller's rbp from the copy, and repeat. Never reads anything but the copy. */
#ifndef HPROF_UNWIND_H
#define HPROF_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ehframe.h"

/* Deepest walk; deeper stacks end truncated (UNWIND_END_DEPTH). */
#define UNWIND_MAX_FRAMES 2048

struct unwind_regs {
	uint64_t ip, sp, bp;
	bool bp_valid; /* false once rbp's value is lost (an undefined or unsupported rule) */
};

/* User memory from base to base + len, copied at sample time. */
struct stack_copy {
	const uint8_t *bytes;
	uint64_t base;
	uint64_t len;
};

/* Why a walk stopped. Everything but COMPLETE leaves the stack truncated. */
enum unwind_end {
	UNWIND_END_COMPLETE = 0,  /* reached a frame whose return address is undefined */
	UNWIND_END_COPY_SHORT,    /* needed a read outside the copied stack */
	UNWIND_END_NO_CFI,        /* no unwind row covers a pc */
	UNWIND_END_UNSUPPORTED,   /* the row's rule is one hprof cannot evaluate */
	UNWIND_END_UNMAPPED,      /* a pc lies outside any known mapping */
	UNWIND_END_BAD_FRAME,     /* the CFA did not move up the stack */
	UNWIND_END_DEPTH,         /* UNWIND_MAX_FRAMES reached */
	UNWIND_END_COUNT,
};

const char *unwind_end__name(enum unwind_end end);

/* Where to find the rows for a pc: the table of the mapping holding it and the load bias
 * (table address = pc - bias). Returns 0, -ENOENT for a pc in no mapping, or -ENODATA
 * for a mapping without CFI. */
typedef int (*unwind_find_table_fn)(void *ctx, uint64_t pc, const struct unwind_table **table,
				    uint64_t *bias);

struct unwind_frame {
	uint64_t pc;
	bool exact; /* the pc itself (first frame, or interrupted by a signal), not a return address */
};

struct unwind_result {
	enum unwind_end end;
	uint32_t nr_frames;
	struct unwind_regs last; /* registers of the outermost frame reached */
};

/* Walks from regs over copy, writing up to max frames (innermost first). */
void unwind__walk(const struct unwind_regs *regs, const struct stack_copy *copy,
		  unwind_find_table_fn find_table, void *ctx, struct unwind_frame *frames,
		  uint32_t max, struct unwind_result *result);

/* Reads 8 bytes at addr from the copy; false when any of them lies outside it. */
bool stack_copy__read_u64(const struct stack_copy *copy, uint64_t addr, uint64_t *value);

#endif
