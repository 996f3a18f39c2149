/* Warm naming of Python frames: what user/python/stack.c does per Python frame of a sample
 * once the code cache holds its code objects (python_code_cache__name, a hit, then
 * python_names__intern of the name), over a synthetic memory image of CPython 3.12 code
 * objects, str and bytes objects (user/python/layout.h), in ns per frame. Samples of FRAMES
 * frames (a recursion through DISTINCT functions, each frame at one of a few call sites, as
 * a real stack's are) are named PASSES times; the best pass counts. Goal: <= 100 ns a frame.
 *
 * usage: bench_pynames [-f FRAMES] [-d DISTINCT] [-n PASSES] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "binary/python_names.h"
#include "python/code.h"
#include "python/layout.h"

#define GOAL_NS_PER_FRAME 100.0
#define BASE 0x7f0000000000ull
#define IMAGE_SIZE (1u << 20)
#define CODE_TYPE 0x55550000a000ull
#define UNITS 64

static uint8_t image[IMAGE_SIZE];
static size_t image_used;

static bool read_image(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > IMAGE_SIZE || len > IMAGE_SIZE - (addr - BASE))
		return false;
	memcpy(buf, image + (addr - BASE), len);
	return true;
}

static uint64_t alloc(size_t len)
{
	uint64_t at = BASE + image_used;

	image_used = (image_used + len + 15) & ~(size_t)15;
	if (image_used > IMAGE_SIZE) {
		fprintf(stderr, "bench_pynames: image full\n");
		exit(1);
	}
	return at;
}

static void put(uint64_t addr, const void *v, size_t len)
{
	memcpy(image + (addr - BASE), v, len);
}

static void put64(uint64_t addr, uint64_t v) { put(addr, &v, 8); }
static void put32(uint64_t addr, uint32_t v) { put(addr, &v, 4); }

/* A compact ASCII str, as CPython makes a code object's names. */
static uint64_t make_str(const struct python_layout *l, const char *s)
{
	size_t n = strlen(s);
	uint64_t o = alloc(l->str_ascii_data + n + 1);

	put64(o + l->str_length, n);
	put32(o + l->str_state, PYTHON_STR_COMPACT | PYTHON_STR_ASCII | 1u << PYTHON_STR_KIND_SHIFT);
	put(o + l->str_ascii_data, s, n);
	return o;
}

/* A code object of UNITS code units, its location table one line per 8 units. */
static uint64_t make_code(const struct python_layout *l, const char *name, uint64_t file,
			  int firstlineno, uint32_t serial)
{
	uint8_t table[UNITS / 8 * 2];
	uint64_t c = alloc(l->code_adaptive + UNITS * 2), t;

	/* entries of 8 units, each one line further: code 13 (no columns), a signed varint */
	for (size_t i = 0; i < sizeof(table); i += 2) {
		table[i] = 0x80 | 13 << 3 | 7;
		table[i + 1] = 0x02;
	}
	t = alloc(l->bytes_data + sizeof(table) + 1);
	put64(t + l->bytes_size, sizeof(table));
	put(t + l->bytes_data, table, sizeof(table));
	put64(c + l->object_type, CODE_TYPE);
	put64(c + l->code_size, UNITS);
	put32(c + l->code_firstlineno, (uint32_t)firstlineno);
	put32(c + l->code_version, serial);
	put64(c + l->code_name, make_str(l, name));
	put64(c + l->code_qualname, make_str(l, name));
	put64(c + l->code_filename, file);
	put64(c + l->code_linetable, t);
	return c;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int frames = 50, distinct = 10, passes = 200, opt;
	struct python_code_cache *cache;
	struct python_names *names = python_names__new();
	struct python_layout l;
	struct hprof_py_frame *sample;
	uint64_t file, *codes, sink = 0;
	double best = 1e9;

	while ((opt = getopt(argc, argv, "f:d:n:")) != -1) {
		if (opt == 'f')
			frames = atoi(optarg);
		else if (opt == 'd')
			distinct = atoi(optarg);
		else if (opt == 'n')
			passes = atoi(optarg);
		else
			return 2;
	}
	if (frames < 1 || distinct < 1 || passes < 1 || !names ||
	    python_layout__for_version(0x030c0000, NULL, 0, &l) ||
	    python_code_cache__new(8u << 20, &cache))
		return 2;
	file = make_str(&l, "/srv/app/handlers/recursion.py");
	codes = calloc((size_t)distinct, sizeof(*codes));
	sample = calloc((size_t)frames, sizeof(*sample));
	if (!codes || !sample)
		return 2;
	for (int i = 0; i < distinct; i++) {
		char name[64];

		snprintf(name, sizeof(name), "Handler.step_%d", i);
		codes[i] = make_code(&l, name, file, 10 + 20 * i, (uint32_t)i + 1);
	}
	/* the sample as the kernel gives it: each frame's code, instruction and check */
	for (int i = 0; i < frames; i++) {
		uint64_t c = codes[i % distinct], w;

		memcpy(&w, image + (c + l.code_check - BASE), 8);
		sample[i].code = c;
		/* one of 3 call sites of each function */
		sample[i].instr = (uint32_t)(l.code_adaptive + 2 * (8 * (i % 3) + 5)) | HPROF_PY_ENTRY;
		sample[i].check = hprof_py__check(w);
	}
	for (int p = 0; p < passes + 1; p++) {
		double t0 = now(), t;

		for (int i = 0; i < frames; i++) {
			struct python_frame_name n;
			struct python_location loc;
			uint64_t id;

			/* as python_stack__merge's name_frames */
			if (python_code_cache__name(cache, 42, &l, CODE_TYPE, &sample[i], read_image,
						    NULL, &n))
				return 1;
			loc = (struct python_location){ .module = n.module, .function = n.qualname,
							.file = n.filename, .line = n.line > 0 ? n.line : 0 };
			if (python_names__intern(names, &loc, &id))
				return 1;
			sink += id;
		}
		t = now() - t0;
		/* the first pass fills the cache: not warm */
		if (p > 0 && t < best)
			best = t;
	}
	printf("frames %d distinct %d passes %d names %zu warm_ns_per_frame %.1f goal %.0f %s (sink %llu)\n",
	       frames, distinct, passes, python_names__count(names), best * 1e9 / frames,
	       GOAL_NS_PER_FRAME, best * 1e9 / frames <= GOAL_NS_PER_FRAME ? "met" : "missed",
	       (unsigned long long)(sink & 1));
	python_code_cache__free(cache);
	python_names__free(names);
	free(codes);
	free(sample);
	return 0;
}
