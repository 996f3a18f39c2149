#include "binary/code_copies.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

struct copy {
	uint64_t addr;
	size_t len;
	uint8_t *bytes;
};

struct code_copies {
	struct copy *copies; /* sorted by addr, disjoint and not adjacent */
	size_t nr, cap;
	uint64_t bytes;
	uint64_t max_bytes;
	uint64_t reads;
};

struct code_copies *code_copies__new(void)
{
	struct code_copies *c = calloc(1, sizeof(struct code_copies));

	if (c)
		c->max_bytes = CODE_COPIES_MAX_BYTES;
	return c;
}

struct code_copies *code_copies__new_unbounded(void)
{
	struct code_copies *c = code_copies__new();

	if (c)
		c->max_bytes = UINT64_MAX;
	return c;
}

/* The first copy that ends after addr (index nr if none). */
static size_t first_ending_after(const struct code_copies *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->copies[mid].addr + c->copies[mid].len <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Where no copy may grow: the newer bytes replace what copies [first, last) hold of
 * [addr, addr + len), in place. */
static void overwrite(struct code_copies *c, size_t first, size_t last, uint64_t addr,
		      const uint8_t *bytes, size_t len)
{
	for (size_t i = first; i < last; i++) {
		struct copy *k = &c->copies[i];
		uint64_t from = k->addr > addr ? k->addr : addr;
		uint64_t to = k->addr + k->len < addr + len ? k->addr + k->len : addr + len;

		if (from < to)
			memcpy(k->bytes + (from - k->addr), bytes + (from - addr), to - from);
	}
}

/* Copies [first, last) and the new range [addr, end) become one copy at index first. */
static void merge(struct code_copies *c, size_t first, size_t last, uint64_t addr,
		  const uint8_t *bytes, size_t len)
{
	uint64_t lo = addr, hi = addr + len, held = 0;
	uint8_t *merged;

	if (first < last) {
		lo = c->copies[first].addr < lo ? c->copies[first].addr : lo;
		hi = c->copies[last - 1].addr + c->copies[last - 1].len > hi
			     ? c->copies[last - 1].addr + c->copies[last - 1].len
			     : hi;
	}
	for (size_t i = first; i < last; i++)
		held += c->copies[i].len;
	if (c->bytes - held + (hi - lo) > c->max_bytes || !(merged = malloc(hi - lo))) {
		overwrite(c, first, last, addr, bytes, len);
		return;
	}
	for (size_t i = first; i < last; i++) {
		memcpy(merged + (c->copies[i].addr - lo), c->copies[i].bytes, c->copies[i].len);
		free(c->copies[i].bytes);
	}
	memcpy(merged + (addr - lo), bytes, len); /* the newer bytes win */
	c->bytes = c->bytes - held + (hi - lo);
	c->copies[first] = (struct copy){ .addr = lo, .len = hi - lo, .bytes = merged };
	memmove(&c->copies[first + 1], &c->copies[last], (c->nr - last) * sizeof(*c->copies));
	c->nr -= last - first - 1;
}

/* A new copy of [addr, addr + len) at index at, touching no other. */
static void insert(struct code_copies *c, size_t at, uint64_t addr, const uint8_t *bytes,
		   size_t len)
{
	uint8_t *copy;

	if (c->bytes + len > c->max_bytes ||
	    grow_array((void **)&c->copies, &c->cap, c->nr + 1, sizeof(*c->copies)) ||
	    !(copy = malloc(len)))
		return;
	memcpy(copy, bytes, len);
	memmove(&c->copies[at + 1], &c->copies[at], (c->nr - at) * sizeof(*c->copies));
	c->copies[at] = (struct copy){ .addr = addr, .len = len, .bytes = copy };
	c->nr++;
	c->bytes += len;
}

void code_copies__add(struct code_copies *c, uint64_t addr, const uint8_t *bytes, size_t len)
{
	size_t first, last;

	if (!c || !len || addr + len < addr)
		return;
	/* the copies that overlap [addr, addr + len) or touch it */
	first = first_ending_after(c, addr ? addr - 1 : 0);
	last = first;
	while (last < c->nr && c->copies[last].addr <= addr + len)
		last++;
	if (first == last)
		insert(c, first, addr, bytes, len);
	else if (last - first == 1 && c->copies[first].addr <= addr &&
		 c->copies[first].addr + c->copies[first].len >= addr + len)
		memcpy(c->copies[first].bytes + (addr - c->copies[first].addr), bytes, len);
	else
		merge(c, first, last, addr, bytes, len);
}

ssize_t code_copies__read(struct code_copies *c, uint64_t addr, uint8_t *buf, size_t len)
{
	const struct copy *copy;
	size_t i, n;

	if (!c)
		return -ENOENT;
	i = first_ending_after(c, addr);
	if (i == c->nr || c->copies[i].addr > addr)
		return -ENOENT;
	copy = &c->copies[i];
	n = copy->addr + copy->len - addr;
	n = n < len ? n : len;
	memcpy(buf, copy->bytes + (addr - copy->addr), n);
	c->reads++;
	return (ssize_t)n;
}

bool code_copies__holds(const struct code_copies *c, uint64_t addr, const uint8_t *bytes,
			size_t len)
{
	const struct copy *copy;
	size_t i;

	if (!c || !len)
		return false;
	i = first_ending_after(c, addr);
	if (i == c->nr || c->copies[i].addr > addr)
		return false;
	copy = &c->copies[i];
	return copy->addr + copy->len - addr >= len &&
	       memcmp(copy->bytes + (addr - copy->addr), bytes, len) == 0;
}

void code_copies__each(const struct code_copies *c,
		       void (*fn)(void *ctx, uint64_t addr, const uint8_t *bytes, size_t len),
		       void *ctx)
{
	for (size_t i = 0; c && i < c->nr; i++)
		fn(ctx, c->copies[i].addr, c->copies[i].bytes, c->copies[i].len);
}

uint64_t code_copies__count(const struct code_copies *c)
{
	return c ? c->nr : 0;
}

uint64_t code_copies__bytes(const struct code_copies *c)
{
	return c ? c->bytes : 0;
}

uint64_t code_copies__reads(const struct code_copies *c)
{
	return c ? c->reads : 0;
}

void code_copies__free(struct code_copies *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr; i++)
		free(c->copies[i].bytes);
	free(c->copies);
	free(c);
}
