/* The memory image the CPython harnesses (fuzz_pycode.c, fuzz_pythreads.c) read as a
 * process's: the input's bytes at BASE, each 8-byte word whose top byte is 0xa5 made a
 * pointer into them (its low 32 bits an offset; past the end, memory nothing maps). */
#ifndef HPROF_FUZZ_PY_ARENA_H
#define HPROF_FUZZ_PY_ARENA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARENA (64u << 10)
#define POINTER_TAG 0xa5u
#define BASE 0x100000000ull

static uint8_t *arena;
static size_t arena_size;
static unsigned reads;

/* A python_read_fn over the arena. */
static bool read_arena(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	reads++;
	if (addr < BASE || addr - BASE > arena_size || len > arena_size - (addr - BASE))
		return false;
	memcpy(buf, arena + (addr - BASE), len);
	return true;
}

/* The arena from data[0, size) (at most MAX_ARENA), its tagged words made pointers. Returns
 * false when out of memory; arena_free() after. */
static bool arena_load(const uint8_t *data, size_t size)
{
	arena_size = size;
	arena = malloc(size ? size : 1);
	if (!arena)
		return false;
	memcpy(arena, data, size);
	for (size_t at = 0; at + 8 <= size; at += 8) {
		uint64_t word;

		memcpy(&word, arena + at, 8);
		if (word >> 56 != POINTER_TAG)
			continue;
		word = BASE + (uint32_t)word;
		memcpy(arena + at, &word, 8);
	}
	return true;
}

static void arena_free(void)
{
	free(arena);
	arena = NULL;
}

#endif
