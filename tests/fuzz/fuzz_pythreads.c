/* A thread's Python frames read from userspace (user/python/threads.c) over a memory image:
 * the input is an 8-byte header, then an arena laid out as a CPython process's memory,
 * _PyRuntime at its start. Header: byte 0 picks the version (3.8-3.13; 3.13 from 3.13.0's
 * debug offsets), bytes 1-2 a second runtime's offset in the arena. An 8-byte word of the
 * arena whose top byte is 0xa5 is a pointer into it (its low 32 bits an offset; past the
 * end, memory nothing maps). The thread searched is FUZZ_FS_BASE's, then the one of the
 * arena's last word; whatever the arena holds, the walk must stay within its bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python/layout.h"
#include "python/threads.h"
#include "../unit/python_debug_offsets.h"
#include "py_arena.h"

#define FUZZ_FS_BASE 0x7f00f5000740ull

/* The most reads one walk may take (as tests/unit/test_python_threads.c counts them). */
#define MAX_READS (2 + 2 * HPROF_PY_MAX_THREADS + 2 + 2 * (2 * HPROF_PY_MAX_FRAMES + 1))

static void walk(const struct python_layout *l, uint64_t runtime, uint64_t fs_base)
{
	struct python_thread_frames *out = malloc(sizeof(*out));
	struct hprof_python_proc proc;
	volatile uint64_t sink = 0;

	if (!out)
		return;
	python_layout__kernel(l, runtime, &proc);
	reads = 0;
	python_thread__frames(&proc, fs_base, read_arena, NULL, out);
	if (reads > MAX_READS || out->nr > HPROF_PY_MAX_FRAMES || out->status < HPROF_PY_OK ||
	    out->status >= HPROF_PY_STATUS_COUNT || (out->status == HPROF_PY_CYCLE && out->nr))
		abort();
	for (uint32_t i = 0; i < out->nr; i++)
		sink ^= out->frames[i].code ^ out->frames[i].instr ^ out->frames[i].check;
	(void)sink;
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t versions[] = {0x0308, 0x0309, 0x030a, 0x030b, 0x030c, 0x030d};
	uint8_t runtime[PYTHON_DEBUG_OFFSETS_SIZE] = "xdebugpy";
	struct python_layout l;
	uint64_t last = 0;
	uint16_t second;

	if (size < 8 || size - 8 > MAX_ARENA)
		return 0;
	memcpy(runtime + 8, debug_offsets_313, sizeof(debug_offsets_313));
	if (python_layout__for_version(versions[data[0] % 6] << 16, runtime, sizeof(runtime), &l))
		abort();
	if (!arena_load(data + 8, size - 8))
		return 0;
	memcpy(&second, data + 1, 2);
	if (arena_size >= 8)
		memcpy(&last, arena + arena_size - 8, 8);
	walk(&l, BASE, FUZZ_FS_BASE);
	walk(&l, BASE + second, last);
	arena_free();
	return 0;
}
