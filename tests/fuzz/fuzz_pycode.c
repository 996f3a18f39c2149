/* The code object reader and cache (user/python/code.c) over a memory image: the input is
 * a 16-byte header, then an arena laid out as a CPython process's memory, a code object at
 * its start. Header: byte 0 picks the version (3.8-3.13; 3.13 from 3.13.0's debug offsets),
 * bytes 1-4 the frame's instruction field, byte 5 bit 0: use bytes 6-9 as the frame's check
 * (else the check is folded from the arena, as the kernel folds it), bytes 10-11 the
 * offset of a second code object. An 8-byte word of the arena whose top byte is 0xa5 is a
 * pointer into it (its low 32 bits an offset; past the end, memory nothing maps). Frames of
 * both code objects are named, again from the cache, in a second process, after it is
 * forgotten; every name read whole. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python/code.h"
#include "python/layout.h"
#include "../unit/python_debug_offsets.h"
#include "py_arena.h"

#define CODE_TYPE 0xc0de00c0de00ull

static volatile size_t sink;

static void name(struct python_code_cache *c, uint32_t pid, const struct python_layout *l,
		 const struct hprof_py_frame *f)
{
	struct python_frame_name n;

	if (python_code_cache__name(c, pid, l, CODE_TYPE, f, read_arena, NULL, &n) == 0)
		sink ^= strlen(n.module) + strlen(n.qualname) + strlen(n.filename) +
			(size_t)n.line + (size_t)n.firstlineno + n.incomplete;
}

static struct hprof_py_frame frame(const struct python_layout *l, uint64_t code,
				   uint32_t instr, const uint8_t *hdr)
{
	struct hprof_py_frame f = {.code = code, .instr = instr};
	uint64_t w = 0;

	if (hdr[5] & 1)
		memcpy(&f.check, hdr + 6, 4);
	else if (read_arena(NULL, code + l->code_check, &w, 8)) {
		uint64_t name = 0, hash = 0;

		/* the name's hash, as the kernel folds it (common/python.h) */
		if (l->check_name && read_arena(NULL, code + l->check_name, &name, 8) &&
		    read_arena(NULL, name + HPROF_PY_STR_HASH, &hash, 8))
			w ^= hash;
		f.check = hprof_py__check(w);
	}
	return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t versions[] = {0x0308, 0x0309, 0x030a, 0x030b, 0x030c, 0x030d};
	uint8_t runtime[PYTHON_DEBUG_OFFSETS_SIZE] = "xdebugpy";
	struct python_code_cache *c;
	struct python_layout l;
	struct hprof_py_frame f1, f2;
	uint32_t instr;
	uint16_t second;

	if (size < 16 || size - 16 > MAX_ARENA)
		return 0;
	memcpy(runtime + 8, debug_offsets_313, sizeof(debug_offsets_313));
	if (python_layout__for_version(versions[data[0] % 6] << 16, runtime, sizeof(runtime), &l))
		abort();
	if (!arena_load(data + 16, size - 16))
		return 0;
	memcpy(&instr, data + 1, 4);
	memcpy(&second, data + 10, 2);
	f1 = frame(&l, BASE, instr, data);
	f2 = frame(&l, BASE + second, instr + 2, data);
	if (python_code_cache__new(PYTHON_CODE_CACHE_MIN_BYTES, &c) == 0) {
		name(c, 1, &l, &f1);
		name(c, 1, &l, &f2);
		name(c, 1, &l, &f1);
		f1.instr ^= HPROF_PY_ENTRY;
		name(c, 1, &l, &f1);
		name(c, 2, &l, &f2);
		python_code_cache__forget_pid(c, 1);
		name(c, 1, &l, &f2);
		f2.check ^= 1;
		name(c, 2, &l, &f2);
		python_code_cache__free(c);
	}
	arena_free();
	return 0;
}
