#include "proc/address_space.h"
#include "util/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct address_space {
	struct mapping *items; /* sorted by start, non-overlapping; paths owned */
	size_t nr, cap;
};

struct address_space *address_space__new(void)
{
	return calloc(1, sizeof(struct address_space));
}

static void free_path(struct mapping *m)
{
	free((char *)m->path);
	m->path = NULL;
}

void address_space__free(struct address_space *as)
{
	if (!as)
		return;
	for (size_t i = 0; i < as->nr; i++)
		free_path(&as->items[i]);
	free(as->items);
	free(as);
}

static int reserve(struct address_space *as, size_t more)
{
	return grow_array((void **)&as->items, &as->cap, as->nr + more, sizeof(*as->items));
}

struct address_space *address_space__clone(const struct address_space *as)
{
	struct address_space *copy = address_space__new();

	if (!copy || reserve(copy, as->nr)) {
		address_space__free(copy);
		return NULL;
	}
	for (size_t i = 0; i < as->nr; i++) {
		copy->items[i] = as->items[i];
		copy->items[i].path = strdup(as->items[i].path);
		if (!copy->items[i].path) {
			copy->nr = i;
			address_space__free(copy);
			return NULL;
		}
	}
	copy->nr = as->nr;
	return copy;
}

/* Index of the first mapping ending after addr. */
static size_t first_ending_after(const struct address_space *as, uint64_t addr)
{
	size_t lo = 0, hi = as->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (as->items[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Forgets what was resolved for a mapping whose range changed. */
static void reset_resolution(struct mapping *m)
{
	m->module = NULL;
	m->bias = 0;
	m->bias_err = 0;
}

int address_space__add(struct address_space *as, const struct mapping *m, const char *path)
{
	struct mapping added = *m, right = { 0 };
	size_t i, j;
	bool split = false;

	if (m->end <= m->start)
		return 0;
	/* One more slot for the new mapping, one for the right part of a split one. */
	if (reserve(as, 2))
		return -ENOMEM;
	added.path = strdup(path);
	if (!added.path)
		return -ENOMEM;
	reset_resolution(&added);
	i = first_ending_after(as, m->start);
	/* A mapping that starts before the new one keeps its left part, and when it also ends
	 * after it, its right part becomes a mapping of its own. */
	if (i < as->nr && as->items[i].start < m->start) {
		struct mapping *old = &as->items[i];

		if (old->end > m->end) {
			right = *old;
			right.path = strdup(old->path);
			if (!right.path) {
				free_path(&added);
				return -ENOMEM;
			}
			right.file_offset += m->end - old->start;
			right.start = m->end;
			reset_resolution(&right);
			split = true;
		}
		old->end = m->start;
		reset_resolution(old);
		i++;
	}
	/* Mappings inside the new one go; one that runs past its end loses its left part. */
	for (j = i; j < as->nr && as->items[j].end <= m->end; j++)
		free_path(&as->items[j]);
	if (j < as->nr && as->items[j].start < m->end) {
		struct mapping *old = &as->items[j];

		old->file_offset += m->end - old->start;
		old->start = m->end;
		reset_resolution(old);
	}
	/* items[i, j) are gone: put the new mapping (and the split's right part) there. */
	{
		size_t insert = 1 + split, removed = j - i;

		memmove(&as->items[i + insert], &as->items[j], (as->nr - j) * sizeof(*as->items));
		as->nr = as->nr - removed + insert;
		as->items[i] = added;
		if (split)
			as->items[i + 1] = right;
	}
	return 0;
}

int address_space__add_maps(struct address_space *as, const struct process_maps *maps)
{
	for (size_t i = 0; i < process_maps__count(maps); i++) {
		const struct mapping *m = process_maps__get(maps, i);
		int err = address_space__add(as, m, m->path);

		if (err)
			return err;
	}
	return 0;
}

struct mapping *address_space__find(const struct address_space *as, uint64_t addr)
{
	size_t i;

	if (!as)
		return NULL;
	i = first_ending_after(as, addr);
	return i < as->nr && as->items[i].start <= addr ? &as->items[i] : NULL;
}

size_t address_space__count(const struct address_space *as)
{
	return as ? as->nr : 0;
}

struct mapping *address_space__at(const struct address_space *as, size_t i)
{
	return as && i < as->nr ? &as->items[i] : NULL;
}
