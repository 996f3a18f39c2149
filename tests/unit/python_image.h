/* A synthetic memory image of a CPython process for the unit tests of user/python/: objects
 * allocated one after another from BASE, read back through read_image (a python_read_fn)
 * as process_memory__read reads a live process, reads counted. The including test defines
 * BASE and IMAGE_SIZE, and allocates image. */
#ifndef HPROF_TESTS_PYTHON_IMAGE_H
#define HPROF_TESTS_PYTHON_IMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python/layout.h"
#include "python_debug_offsets.h"

static uint8_t *image;
static size_t image_used;
static unsigned reads;

static bool read_image(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	reads++;
	if (addr < BASE || addr - BASE > IMAGE_SIZE || len > IMAGE_SIZE - (addr - BASE))
		return false;
	memcpy(buf, image + (addr - BASE), len);
	return true;
}

static uint64_t alloc(size_t len)
{
	uint64_t at = BASE + image_used;

	image_used = (image_used + len + 15) & ~(size_t)15;
	if (image_used > IMAGE_SIZE)
		abort();
	return at;
}

static uint8_t *at(uint64_t addr)
{
	return image + (addr - BASE);
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(at(addr), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(at(addr), &v, 4);
}

/* The layout of 3.minor (3.13: from 3.13.0's debug offsets). */
static struct python_layout layout(uint32_t minor)
{
	struct python_layout l;
	uint8_t runtime[PYTHON_DEBUG_OFFSETS_SIZE] = "xdebugpy";

	if (minor == 13)
		memcpy(runtime + 8, debug_offsets_313, sizeof(debug_offsets_313));
	if (python_layout__for_version(3u << 24 | minor << 16, runtime, sizeof(runtime), &l))
		abort();
	return l;
}

#endif
