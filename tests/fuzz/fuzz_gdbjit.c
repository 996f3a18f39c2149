/* The reader of gdb's JIT interface (user/binary/gdb_jit.c), over this very process's
 * memory: the input is an arena laid out as a registering program's memory would be, its
 * first 24 bytes the descriptor. An 8-byte word whose top byte is 0xa5 is a pointer into
 * the arena (its low 32 bits an offset; past the arena's end, an address nothing maps);
 * other words stay as they are. The list is read, every object it names compiled, and the
 * input's last 8 bytes looked up as an address, rows and name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binary/gdb_jit.h"

#define MAX_ARENA (64u << 10)
#define POINTER_TAG 0xa5u

static volatile uint64_t sink;

/* Tagged words become the arena's addresses. */
static void place_pointers(uint8_t *arena, size_t size)
{
	for (size_t at = 0; at + 8 <= size; at += 8) {
		uint64_t word;

		memcpy(&word, arena + at, 8);
		if (word >> 56 != POINTER_TAG)
			continue;
		word = (uint32_t)word < size ? (uint64_t)(uintptr_t)(arena + (uint32_t)word)
					     : 0x1000; /* nothing is mapped there */
		memcpy(arena + at, &word, 8);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct unwind_table *table;
	struct gdb_jit_stats st = { 0 };
	uint64_t addr = 0, start, end;
	struct gdb_jit *gj;
	uint8_t *arena;

	if (size < 24 || size > MAX_ARENA || !(arena = aligned_alloc(8, (size + 7) & ~(size_t)7)))
		return 0;
	memcpy(arena, data, size);
	memcpy(&addr, data + size - 8, 8);
	place_pointers(arena, size);
	gj = gdb_jit__new((uint32_t)getpid(), (uint64_t)(uintptr_t)arena);
	if (gj) {
		if (gdb_jit__find(gj, addr, &table, &start, &end) == 0)
			sink = (uint64_t)(uintptr_t)unwind_table__find(table, addr) ^ start ^ end;
		sink ^= (uint64_t)(uintptr_t)gdb_jit__lookup(gj, addr);
		gdb_jit__stats(gj, &st);
		sink ^= st.objects + gdb_jit__bytes(gj);
		gdb_jit__free(gj);
	}
	free(arena);
	return 0;
}
