#include "util/range_map.h"

#include <errno.h>
#include <stdlib.h>

/* A range being merged, in the order it was added (seq): the map's own segments first. */
struct item {
	uint64_t start, end;
	uint32_t value;
	uint32_t seq;
};

static int compare_item_start(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A max-heap of item indices by seq: the latest range covering the sweep's position. */
struct heap {
	uint32_t *idx;
	size_t n;
	const struct item *items;
};

static bool heap_later(const struct heap *h, size_t a, size_t b)
{
	return h->items[h->idx[a]].seq > h->items[h->idx[b]].seq;
}

static void heap_swap(struct heap *h, size_t a, size_t b)
{
	uint32_t t = h->idx[a];

	h->idx[a] = h->idx[b];
	h->idx[b] = t;
}

static void heap_push(struct heap *h, uint32_t i)
{
	size_t c = h->n++;

	h->idx[c] = i;
	while (c > 0 && heap_later(h, c, (c - 1) / 2)) {
		heap_swap(h, c, (c - 1) / 2);
		c = (c - 1) / 2;
	}
}

static void heap_pop(struct heap *h)
{
	size_t c = 0;

	h->idx[0] = h->idx[--h->n];
	for (;;) {
		size_t l = 2 * c + 1, r = l + 1, top = c;

		if (l < h->n && heap_later(h, l, top))
			top = l;
		if (r < h->n && heap_later(h, r, top))
			top = r;
		if (top == c)
			return;
		heap_swap(h, c, top);
		c = top;
	}
}

/* Sweeps the boundaries of items (sorted by start) left to right; between two boundaries
 * the latest covering item wins. Writes at most 2n segments to out; returns how many. */
static size_t sweep(const struct item *items, size_t n, const uint64_t *points, size_t nr_points,
		    uint32_t *heap_idx, struct range_map_seg *out)
{
	struct heap h = { .idx = heap_idx, .items = items };
	size_t next = 0, nr = 0;

	for (size_t i = 0; i + 1 < nr_points; i++) {
		uint64_t x = points[i];
		const struct item *top;

		while (next < n && items[next].start <= x)
			heap_push(&h, (uint32_t)next++);
		while (h.n && items[h.idx[0]].end <= x)
			heap_pop(&h);
		if (!h.n)
			continue;
		top = &items[h.idx[0]];
		if (nr && out[nr - 1].end == x && out[nr - 1].value == top->value)
			out[nr - 1].end = points[i + 1];
		else
			out[nr++] = (struct range_map_seg){ x, points[i + 1], top->value };
	}
	return nr;
}

int range_map__add(struct range_map *m, const struct range_map_seg *added, size_t nr_added)
{
	size_t n = m->nr_segs + nr_added, nr_points = 0;
	struct item *items = NULL;
	uint64_t *points = NULL;
	uint32_t *heap_idx = NULL;
	struct range_map_seg *out = NULL;
	int err = 0;

	if (nr_added == 0)
		return 0;
	/* seq and heap indices are 32-bit */
	if (nr_added >= UINT32_MAX || n >= UINT32_MAX)
		return -ENOMEM;
	items = malloc(n * sizeof(*items));
	points = malloc(2 * n * sizeof(*points));
	heap_idx = malloc(n * sizeof(*heap_idx));
	out = malloc(2 * n * sizeof(*out));
	if (!items || !points || !heap_idx || !out) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* the map's segments are disjoint: they can all be equally old */
	for (size_t i = 0; i < m->nr_segs; i++)
		items[i] = (struct item){ m->segs[i].start, m->segs[i].end, m->segs[i].value, 0 };
	for (size_t i = 0; i < nr_added; i++)
		items[m->nr_segs + i] = (struct item){ added[i].start, added[i].end, added[i].value,
						       (uint32_t)(i + 1) };
	qsort(items, n, sizeof(*items), compare_item_start);
	for (size_t i = 0; i < n; i++) {
		points[2 * i] = items[i].start;
		points[2 * i + 1] = items[i].end;
	}
	qsort(points, 2 * n, sizeof(*points), compare_u64);
	for (size_t i = 0; i < 2 * n; i++) {
		if (nr_points == 0 || points[nr_points - 1] != points[i])
			points[nr_points++] = points[i];
	}
	free(m->segs);
	m->segs = out;
	m->nr_segs = sweep(items, n, points, nr_points, heap_idx, out);
	out = NULL;
cleanup:
	free(items);
	free(points);
	free(heap_idx);
	free(out);
	return err;
}

/* The index of the segment holding addr, or m->nr_segs. */
static size_t find_seg(const struct range_map *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nr_segs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct range_map_seg *s = &m->segs[mid];

		if (addr < s->start)
			hi = mid;
		else if (addr >= s->end)
			lo = mid + 1;
		else
			return mid;
	}
	return m->nr_segs;
}

bool range_map__find(const struct range_map *m, uint64_t addr, uint32_t *value)
{
	size_t i = find_seg(m, addr);

	if (i == m->nr_segs)
		return false;
	*value = m->segs[i].value;
	return true;
}

bool range_map__extent(const struct range_map *m, uint64_t addr, uint64_t *start, uint64_t *end)
{
	size_t i = find_seg(m, addr), lo, hi;

	if (i == m->nr_segs)
		return false;
	for (lo = i; lo > 0 && m->segs[lo - 1].end == m->segs[lo].start &&
		     m->segs[lo - 1].value == m->segs[i].value;
	     lo--)
		;
	for (hi = i; hi + 1 < m->nr_segs && m->segs[hi + 1].start == m->segs[hi].end &&
		     m->segs[hi + 1].value == m->segs[i].value;
	     hi++)
		;
	*start = m->segs[lo].start;
	*end = m->segs[hi].end;
	return true;
}

void range_map__release(struct range_map *m)
{
	free(m->segs);
	m->segs = NULL;
	m->nr_segs = 0;
}
