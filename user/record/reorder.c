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
	uint32_t size_class; /* of its block; POOL_CLASSES: malloc'd to measure */
	size_t len;
	struct held *next_free;
	uint8_t data[];
};

/* Freed blocks are kept for reuse, by size class (powers of two from 256 bytes). Under
 * process and thread churn most records are small mapping events, thousands a second held
 * for the reorder window, and a malloc and free for each one was a tenth of hprof serve's
 * CPU. A class keeps up to POOL_KEEP_BYTES of blocks: what a flush gives back is what the
 * next drains take (two of the largest: whole stack copies). */
#define POOL_MIN_SHIFT 8
#define POOL_CLASSES 10 /* 256 bytes to 128 KiB */
#define POOL_KEEP_BYTES (512u << 10)

/* A binary min-heap of held records. */
struct reorder {
	struct held **heap;
	size_t nr, cap;
	uint64_t next_seq;
	struct held *free_blocks[POOL_CLASSES];
	uint32_t nr_free[POOL_CLASSES];
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
	for (uint32_t c = 0; c < POOL_CLASSES; c++) {
		while (q->free_blocks[c]) {
			struct held *h = q->free_blocks[c];

			q->free_blocks[c] = h->next_free;
			free(h);
		}
	}
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

/* The class of a block holding len bytes of data; POOL_CLASSES when none is that large. */
static uint32_t class_for(size_t len)
{
	size_t need = sizeof(struct held) + len;
	uint32_t c = 0;

	while (c < POOL_CLASSES && need > ((size_t)1 << (POOL_MIN_SHIFT + c)))
		c++;
	return c;
}

/* A block for len bytes of data: a kept one of its class, else a new one. */
static struct held *take_block(struct reorder *q, size_t len)
{
	uint32_t c = class_for(len);
	struct held *h;

	if (c < POOL_CLASSES && q->free_blocks[c]) {
		h = q->free_blocks[c];
		q->free_blocks[c] = h->next_free;
		q->nr_free[c]--;
		return h;
	}
	h = malloc(c < POOL_CLASSES ? (size_t)1 << (POOL_MIN_SHIFT + c) : sizeof(*h) + len);
	if (h)
		h->size_class = c;
	return h;
}

static void give_block(struct reorder *q, struct held *h)
{
	uint32_t c = h->size_class;

	if (c >= POOL_CLASSES ||
	    ((size_t)q->nr_free[c] + 1) << (POOL_MIN_SHIFT + c) > POOL_KEEP_BYTES) {
		free(h);
		return;
	}
	h->next_free = q->free_blocks[c];
	q->free_blocks[c] = h;
	q->nr_free[c]++;
}

int reorder__push(struct reorder *q, uint64_t time_ns, enum reorder_kind kind, const void *data,
		  size_t len)
{
	struct held *h;

	if (grow_array((void **)&q->heap, &q->cap, q->nr + 1, sizeof(*q->heap)))
		return -ENOMEM;
	h = take_block(q, len);
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
		give_block(q, h);
		if (err)
			return err;
	}
	return 0;
}
