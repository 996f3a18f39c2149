#include "unwind/threads.h"

#include <stdlib.h>

struct thread_table {
	struct thread_info *by_tid; /* in insertion order: the oldest first */
	size_t nr;
};

struct thread_table *thread_table__new(void)
{
	return calloc(1, sizeof(struct thread_table));
}

struct thread_info *thread_table__get(struct thread_table *t, uint32_t tid, int create)
{
	struct thread_info *ti;

	HASH_FIND(hh, t->by_tid, &tid, sizeof(tid), ti);
	if (ti || !create)
		return ti;
	if (t->nr >= THREAD_TABLE_MAX) {
		struct thread_info *oldest = t->by_tid;

		HASH_DEL(t->by_tid, oldest);
		free(oldest->deep);
		free(oldest);
		t->nr--;
	}
	ti = calloc(1, sizeof(*ti));
	if (!ti)
		return NULL;
	ti->tid = tid;
	HASH_ADD(hh, t->by_tid, tid, sizeof(ti->tid), ti);
	t->nr++;
	return ti;
}

void thread_table__remove(struct thread_table *t, uint32_t tid)
{
	struct thread_info *ti = thread_table__get(t, tid, 0);

	if (!ti)
		return;
	HASH_DEL(t->by_tid, ti);
	free(ti->deep);
	free(ti);
	t->nr--;
}

size_t thread_table__count(const struct thread_table *t)
{
	return t->nr;
}

void thread_table__free(struct thread_table *t)
{
	struct thread_info *ti, *tmp;

	if (!t)
		return;
	HASH_ITER(hh, t->by_tid, ti, tmp) {
		HASH_DEL(t->by_tid, ti);
		free(ti->deep);
		free(ti);
	}
	free(t);
}

bool thread_info__deep_frame(const struct thread_info *ti, uint64_t sp, uint64_t *pc)
{
	const struct thread_deep_frames *d = ti->deep;

	for (uint32_t i = 0; d && i < d->nr; i++) {
		if (d->frames[i].sp == sp) {
			*pc = d->frames[i].pc;
			return true;
		}
	}
	return false;
}

static struct thread_deep_frame *deep_slot(struct thread_deep_frames *d, uint64_t sp)
{
	uint32_t oldest = 0;

	for (uint32_t i = 0; i < d->nr; i++) {
		if (d->frames[i].sp == sp)
			return &d->frames[i];
		if (d->frames[i].walk < d->frames[oldest].walk)
			oldest = i;
	}
	return d->nr < THREAD_DEEP_FRAMES ? &d->frames[d->nr++] : &d->frames[oldest];
}

void thread_deep_frames__merge(struct thread_deep_frames *d, const struct thread_deep_frame *walk,
			       uint32_t n)
{
	d->walks++;
	for (uint32_t i = 0; i < n; i++) {
		struct thread_deep_frame *slot = deep_slot(d, walk[i].sp);

		*slot = walk[i];
		slot->walk = d->walks;
	}
}
