#include "record/reorder.h"
#include "util/grow.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct held {
	uint64_t time_ns;
	uint64_t seq; /* arrival order breaks the remaining ties: each source is in order */
	enum reorder_kind kind;
	size_t len;
	uint8_t data[];
};

/* A binary min-heap of held records. */
struct reorder {
	struct held **heap;
	size_t nr, cap;
	uint64_t next_seq;
};

struct reorder *reorder__new(void)
{
	return calloc(1, sizeof(struct reorder));
}

void reorder__free(struct reorder *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->nr; i++)
		free(q->heap[i]);
	free(q->heap);
	free(q);
}

size_t reorder__pending(const struct reorder *q)
{
	return q->nr;
}

static bool before(const struct held *a, const struct held *b)
{
	if (a->time_ns != b->time_ns)
		return a->time_ns < b->time_ns;
	if (a->kind != b->kind)
		return a->kind < b->kind;
	return a->seq < b->seq;
}

static void swap(struct held **a, struct held **b)
{
	struct held *t = *a;

	*a = *b;
	*b = t;
}

static void sift_up(struct reorder *q, size_t i)
{
	while (i > 0 && before(q->heap[i], q->heap[(i - 1) / 2])) {
		swap(&q->heap[i], &q->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
}

static void sift_down(struct reorder *q, size_t i)
{
	for (;;) {
		size_t least = i, l = 2 * i + 1, r = l + 1;

		if (l < q->nr && before(q->heap[l], q->heap[least]))
			least = l;
		if (r < q->nr && before(q->heap[r], q->heap[least]))
			least = r;
		if (least == i)
			return;
		swap(&q->heap[i], &q->heap[least]);
		i = least;
	}
}

int reorder__push(struct reorder *q, uint64_t time_ns, enum reorder_kind kind, const void *data,
		  size_t len)
{
	struct held *h;

	if (grow_array((void **)&q->heap, &q->cap, q->nr + 1, sizeof(*q->heap)))
		return -ENOMEM;
	h = malloc(sizeof(*h) + len);
	if (!h)
		return -ENOMEM;
	h->time_ns = time_ns;
	h->seq = q->next_seq++;
	h->kind = kind;
	h->len = len;
	memcpy(h->data, data, len);
	q->heap[q->nr] = h;
	sift_up(q, q->nr++);
	return 0;
}

int reorder__flush(struct reorder *q, uint64_t before_ns, reorder_fn fn, void *ctx)
{
	while (q->nr > 0 && q->heap[0]->time_ns < before_ns) {
		struct held *h = q->heap[0];
		int err;

		q->heap[0] = q->heap[--q->nr];
		sift_down(q, 0);
		err = fn(ctx, h->kind, h->data, h->len);
		free(h);
		if (err)
			return err;
	}
	return 0;
}
