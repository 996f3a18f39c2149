#include "binary/name_cache.h"

#include <stdlib.h>
#include <string.h>

struct entry {
	struct frame key;
	char *name; /* NULL: an empty slot */
	bool used;  /* asked for since the last sweep */
};

/* Open addressing; a sweep builds the table anew, so nothing is ever removed in place. */
struct name_cache {
	struct entry *slots;
	size_t mask; /* slots - 1, a power of two; 0 before the first put */
	size_t nr;
	size_t name_bytes;
};

struct name_cache *name_cache__new(void)
{
	return calloc(1, sizeof(struct name_cache));
}

static uint64_t frame_hash(const struct frame *f)
{
	uint64_t h = f->addr * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)f->module << 1 | (f->flags & FRAME_CALLER)) * 0xc2b2ae3d27d4eb4full;
	return h ^ (h >> 29);
}

static bool same_key(const struct frame *a, const struct frame *b)
{
	return a->addr == b->addr && a->module == b->module &&
	       (a->flags & FRAME_CALLER) == (b->flags & FRAME_CALLER);
}

static struct entry *find(struct name_cache *c, const struct frame *f)
{
	if (!c->slots)
		return NULL;
	for (size_t at = frame_hash(f) & c->mask;; at = (at + 1) & c->mask) {
		struct entry *e = &c->slots[at];

		if (!e->name || same_key(&e->key, f))
			return e;
	}
}

const char *name_cache__get(struct name_cache *c, const struct frame *f)
{
	struct entry *e = find(c, f);

	if (!e || !e->name)
		return NULL;
	e->used = true;
	return e->name;
}

/* Puts e (its name taken) in slots of mask + 1 entries that hold room for it. */
static void place(struct entry *slots, size_t mask, const struct entry *e)
{
	size_t at = frame_hash(&e->key) & mask;

	while (slots[at].name)
		at = (at + 1) & mask;
	slots[at] = *e;
}

/* Moves the entries kept (all, or the used ones with their marks cleared) to a table of
 * size slots; frees the others' names. Returns -1, changing nothing, out of memory. */
static int rebuild(struct name_cache *c, size_t size, bool used_only)
{
	struct entry *slots = calloc(size, sizeof(*slots));
	size_t old = c->slots ? c->mask + 1 : 0;

	if (!slots)
		return -1;
	c->nr = 0;
	c->name_bytes = 0;
	for (size_t i = 0; i < old; i++) {
		struct entry e = c->slots[i];

		if (!e.name)
			continue;
		if (used_only && !e.used) {
			free(e.name);
			continue;
		}
		if (used_only)
			e.used = false;
		place(slots, size - 1, &e);
		c->nr++;
		c->name_bytes += strlen(e.name) + 1;
	}
	free(c->slots);
	c->slots = slots;
	c->mask = size - 1;
	return 0;
}

void name_cache__put(struct name_cache *c, const struct frame *f, const char *name)
{
	struct entry e = { .key = *f, .used = true };
	size_t size = c->slots ? c->mask + 1 : 0;

	if (c->nr >= NAME_CACHE_MAX)
		return;
	/* at most half full: probes stay short */
	if ((c->nr + 1) * 2 > size && rebuild(c, size ? size * 2 : 1024, false))
		return;
	if (find(c, f)->name)
		return;
	e.key.flags &= FRAME_CALLER;
	e.name = strdup(name);
	if (!e.name)
		return;
	place(c->slots, c->mask, &e);
	c->nr++;
	c->name_bytes += strlen(name) + 1;
}

void name_cache__sweep(struct name_cache *c)
{
	size_t size = 1024;

	if (!c || !c->slots)
		return;
	while (size < NAME_CACHE_MAX * 2 && size < c->nr * 2)
		size *= 2;
	rebuild(c, size, true);
}

size_t name_cache__count(const struct name_cache *c)
{
	return c ? c->nr : 0;
}

size_t name_cache__bytes(const struct name_cache *c)
{
	return c ? (c->slots ? (c->mask + 1) * sizeof(struct entry) : 0) + c->name_bytes : 0;
}

void name_cache__free(struct name_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->slots && i <= c->mask; i++)
		free(c->slots[i].name);
	free(c->slots);
	free(c);
}
