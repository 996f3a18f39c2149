#include "util/tid_set.h"

#include <errno.h>
#include <stdlib.h>

/* Linear probing; a removal shifts the entries after it back, so no slot is ever a
 * tombstone and a lookup stops at the first empty one. */
struct tid_set {
	uint32_t *slots; /* 0: empty */
	size_t mask;     /* slots - 1, a power of two; 0 before the first add */
	size_t nr;
};

#define MIN_SLOTS 256

struct tid_set *tid_set__new(void)
{
	return calloc(1, sizeof(struct tid_set));
}

static size_t home(const struct tid_set *s, uint32_t tid)
{
	return (size_t)((tid * 0x9e3779b1u) >> 7) & s->mask;
}

/* The slot of tid, or the empty slot where it would go. Needs slots. */
static size_t probe(const struct tid_set *s, uint32_t tid)
{
	size_t at = home(s, tid);

	while (s->slots[at] && s->slots[at] != tid)
		at = (at + 1) & s->mask;
	return at;
}

static int resize(struct tid_set *s, size_t size)
{
	uint32_t *old = s->slots;
	size_t old_size = old ? s->mask + 1 : 0;

	s->slots = calloc(size, sizeof(*s->slots));
	if (!s->slots) {
		s->slots = old;
		return -ENOMEM;
	}
	s->mask = size - 1;
	for (size_t i = 0; i < old_size; i++) {
		if (old[i])
			s->slots[probe(s, old[i])] = old[i];
	}
	free(old);
	return 0;
}

int tid_set__add(struct tid_set *s, uint32_t tid)
{
	size_t size = s->slots ? s->mask + 1 : 0, at;

	if (tid == 0)
		return -EINVAL;
	if (s->slots && s->slots[probe(s, tid)] == tid)
		return 0;
	if (s->nr >= TID_SET_MAX)
		return -ENOSPC;
	/* at most half full */
	if ((s->nr + 1) * 2 > size && resize(s, size ? size * 2 : MIN_SLOTS))
		return -ENOMEM;
	at = probe(s, tid);
	s->slots[at] = tid;
	s->nr++;
	return 0;
}

bool tid_set__contains(const struct tid_set *s, uint32_t tid)
{
	return s->slots && tid && s->slots[probe(s, tid)] == tid;
}

void tid_set__remove(struct tid_set *s, uint32_t tid)
{
	size_t hole, at;

	if (!tid_set__contains(s, tid))
		return;
	hole = probe(s, tid);
	s->slots[hole] = 0;
	s->nr--;
	/* entries after the hole that would not be found past it move into it */
	for (at = (hole + 1) & s->mask; s->slots[at]; at = (at + 1) & s->mask) {
		size_t want = home(s, s->slots[at]);

		/* at's entry stays unless its home lies cyclically outside (hole, at] */
		if (((at - want) & s->mask) >= ((at - hole) & s->mask)) {
			s->slots[hole] = s->slots[at];
			s->slots[at] = 0;
			hole = at;
		}
	}
}

void tid_set__keep_if(struct tid_set *s, bool (*keep)(uint32_t tid, void *ctx), void *ctx)
{
	size_t size = s->slots ? s->mask + 1 : 0;
	uint32_t *old = s->slots, *slots;

	if (!size || !(slots = calloc(size, sizeof(*slots))))
		return; /* out of memory: all are kept */
	s->slots = slots;
	s->nr = 0;
	for (size_t i = 0; i < size; i++) {
		if (old[i] && keep(old[i], ctx)) {
			s->slots[probe(s, old[i])] = old[i];
			s->nr++;
		}
	}
	free(old);
}

size_t tid_set__count(const struct tid_set *s)
{
	return s ? s->nr : 0;
}

void tid_set__free(struct tid_set *s)
{
	if (!s)
		return;
	free(s->slots);
	free(s);
}
