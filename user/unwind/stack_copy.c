/* Reading a sample's stack copy: 8 bytes at a time, bounds-checked, pages the kernel
 * could not copy (holes) told apart from bytes outside every copy. */
#include "unwind/walk_internal.h"

#include <string.h>

/* The 8 bytes at addr lie on a page of the copy marked as a hole. */
static bool in_hole(const struct stack_copy *copy, uint64_t addr)
{
	uint64_t first = copy->base / STACK_COPY_PAGE;
	uint64_t lo = addr / STACK_COPY_PAGE - first, hi = (addr + 7) / STACK_COPY_PAGE - first;

	return (lo < 64 && (copy->holes >> lo & 1)) || (hi < 64 && (copy->holes >> hi & 1));
}

/* One copy alone; a hole only if the copy holds all 8 bytes. */
static enum stack_read read_one(const struct stack_copy *copy, uint64_t addr, uint64_t *value)
{
	/* addr - base wraps for addr < base, so one comparison covers both ends. */
	uint64_t off = addr - copy->base;

	if (off > copy->len || copy->len - off < 8)
		return STACK_READ_OUTSIDE;
	if (copy->holes && in_hole(copy, addr))
		return STACK_READ_HOLE;
	memcpy(value, copy->bytes + off, sizeof(*value));
	return STACK_READ_OK;
}

/* Copies are few (two, for a handler on an alternate stack): a bounded list. */
#define MAX_COPIES 4

enum stack_read stack_copy__read(const struct stack_copy *copy, uint64_t addr, uint64_t *value)
{
	enum stack_read found = STACK_READ_OUTSIDE;

	for (uint32_t i = 0; copy && i < MAX_COPIES; copy = copy->more, i++) {
		enum stack_read r = read_one(copy, addr, value);

		if (r == STACK_READ_OK)
			return r;
		if (r == STACK_READ_HOLE)
			found = r;
	}
	return found;
}

uint64_t stack_copy__len_before_holes(const struct stack_copy *copy)
{
	uint64_t page_end;

	if (!copy->holes)
		return copy->len;
	/* the first hole's page starts where the page before it ends */
	page_end = (copy->base / STACK_COPY_PAGE + (uint64_t)__builtin_ctzll(copy->holes)) *
		   STACK_COPY_PAGE;
	if (page_end <= copy->base)
		return 0;
	return page_end - copy->base < copy->len ? page_end - copy->base : copy->len;
}

struct copy_view copy_view(const struct stack_copy *copy, bool *hole)
{
	uint64_t len = stack_copy__len_before_holes(copy);

	*hole = false;
	return (struct copy_view){
		.bytes = copy->bytes,
		.base = copy->base,
		.limit = len > 7 ? len - 7 : 0,
		.copy = copy,
		.hole = hole,
	};
}

__attribute__((noinline)) bool read_elsewhere(const struct copy_view *v, uint64_t addr,
						     uint64_t *value)
{
	enum stack_read r = stack_copy__read(v->copy, addr, value);

	if (r == STACK_READ_HOLE)
		*v->hole = true;
	return r == STACK_READ_OK;
}
