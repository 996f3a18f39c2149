/* The DWARF walk over random registers and stack bytes with a real table: libc's CFI,
 * compiled once. Input: libc's load base, ip, sp, bp and the copy's base (u64 each, little
 * endian), then the stack bytes, whose first two words are also rbx and rdi. A second
 * mapping has no CFI, its first byte a function entry, so every way a walk can end is
 * reachable. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/unwind_table.h"
#include "unwind/walk.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define HEADER 40
#define NO_CFI_START 0x400000ull
#define NO_CFI_END 0x401000ull

static struct unwind_table *libc_table;
static uint64_t libc_lo, libc_hi; /* ELF virtual addresses the table covers */

struct space {
	uint64_t base; /* libc's load bias */
};

static int find_map(void *ctx, uint64_t pc, struct unwind_map *map)
{
	const struct space *sp = ctx;

	if (pc >= NO_CFI_START && pc < NO_CFI_END) {
		*map = (struct unwind_map){ NO_CFI_START, NO_CFI_END, 0, NULL };
		return -ENODATA;
	}
	if (pc - sp->base < libc_lo || pc - sp->base >= libc_hi)
		return -ENOENT;
	*map = (struct unwind_map){ sp->base + libc_lo, sp->base + libc_hi, sp->base, libc_table };
	return 0;
}

static bool is_function_entry(void *ctx, uint64_t pc)
{
	(void)ctx;
	return pc == NO_CFI_START;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const struct unwind_row *rows;
	char err[256];
	size_t n;

	(void)argc;
	(void)argv;
	if (unwind_table__from_file(LIBC, UNWIND_SRC_ALL, &libc_table, err, sizeof(err))) {
		fprintf(stderr, "fuzz_unwind: %s\n", err);
		exit(1);
	}
	rows = unwind_table__rows(libc_table, &n);
	libc_lo = rows[0].pc;
	libc_hi = rows[n - 1].pc + 1;
	return 0;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct unwind_frame frames[UNWIND_MAX_FRAMES];
	struct space ctx;
	struct unwind_space space = { .find_map = find_map, .ctx = &ctx, .id = 1,
				      .symbols = { .is_function_entry = is_function_entry } };
	struct unwind_regs regs;
	struct stack_copy copy;
	struct unwind_result result;
	struct unwind_cache *cache;
	uint8_t *bytes;

	if (size < HEADER)
		return 0;
	ctx.base = u64_at(data) & ~0xfffull;
	regs = (struct unwind_regs){ .ip = u64_at(data + 8), .sp = u64_at(data + 16),
				     .bp = u64_at(data + 24), .bp_valid = true };
	if (size >= HEADER + 16) {
		regs.bx = u64_at(data + HEADER);
		regs.di = u64_at(data + HEADER + 8);
		regs.bx_valid = regs.di_valid = true;
	}
	/* a copy of its own, so reads past its end are caught */
	bytes = malloc(size - HEADER + 1);
	cache = unwind_cache__new();
	if (!bytes || !cache)
		goto cleanup;
	memcpy(bytes, data + HEADER, size - HEADER);
	copy = (struct stack_copy){ .bytes = bytes, .base = u64_at(data + 32), .len = size - HEADER };
	unwind__walk(&regs, &copy, &space, cache, frames, UNWIND_MAX_FRAMES, &result);
	/* again, through the rules the cache now holds */
	unwind__walk(&regs, &copy, &space, cache, frames, 16, &result);
	if (result.nr_frames > 16)
		abort();
cleanup:
	unwind_cache__free(cache);
	free(bytes);
	return 0;
}
