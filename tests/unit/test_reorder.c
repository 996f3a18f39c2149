/* Unit tests for putting samples and mapping events back in time order
 * (user/record/reorder.h): records pushed at random times come out oldest first, only those
 * older than the bound; of equal times, events go before samples and otherwise arrival order
 * holds; the data is a copy; an error from the callback stops the flush. Prints one
 * "ok - NAME" / "not ok - NAME" line per check. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/reorder.h"
#include "check.h"

/* What a pushed record carries: its time, kind and arrival number, to check against. */
struct record {
	uint64_t time;
	uint32_t kind;
	uint32_t seq;
};

/* What the flush handed on, in order. */
struct handed {
	struct record *got;
	size_t nr, cap;
	size_t bad_len;
	int fail_at; /* return -EIO on this call (1-based); 0: never */
};

static int collect(void *ctx, enum reorder_kind kind, const void *data, size_t len)
{
	struct handed *h = ctx;
	struct record r;

	if (len != sizeof(r)) {
		h->bad_len++;
		return 0;
	}
	memcpy(&r, data, sizeof(r));
	if ((uint32_t)kind != r.kind)
		h->bad_len++;
	if (h->nr == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 64;
		h->got = realloc(h->got, h->cap * sizeof(*h->got));
		if (!h->got)
			abort();
	}
	h->got[h->nr++] = r;
	if (h->fail_at && (int)h->nr == h->fail_at)
		return -EIO;
	return 0;
}

static struct reorder *new_queue(void)
{
	struct reorder *q = reorder__new();

	if (!q)
		abort();
	return q;
}

static void push(struct reorder *q, uint64_t time, enum reorder_kind kind, uint32_t seq)
{
	struct record r = { .time = time, .kind = kind, .seq = seq };

	if (reorder__push(q, time, kind, &r, sizeof(r)) != 0)
		abort();
}

/* got[from, to) in the queue's order: by time, events first, then arrival. */
static bool in_order(const struct handed *h, size_t from, size_t to)
{
	for (size_t i = from + 1; i < to; i++) {
		const struct record *a = &h->got[i - 1], *b = &h->got[i];

		if (a->time > b->time || (a->time == b->time && a->kind > b->kind) ||
		    (a->time == b->time && a->kind == b->kind && a->seq > b->seq))
			return false;
	}
	return true;
}

static void test_random_times(void)
{
	enum { N = 20000 };
	struct reorder *q = new_queue();
	struct handed h = { 0 };
	static bool seen[N];
	uint64_t bound = 500000, late = 0;
	unsigned seed = 7, dup = 0, missing = 0;
	size_t first;

	for (uint32_t i = 0; i < N; i++) {
		/* Few distinct times, so that ties are common. */
		seed = seed * 1103515245u + 12345u;
		uint64_t time = (seed >> 8) % 1000 * 1000;

		seed = seed * 1103515245u + 12345u;
		push(q, time, (seed >> 16) & 1 ? REORDER_SAMPLE : REORDER_EVENT, i);
		late += time >= bound;
	}
	check(reorder__pending(q) == N, "random: %d records held", N);
	check(reorder__flush(q, bound, collect, &h) == 0, "random: flush up to a bound succeeds");
	first = h.nr;
	bool all_older = true;
	for (size_t i = 0; i < h.nr; i++)
		all_older &= h.got[i].time < bound;
	check(all_older && first == N - late, "random: exactly the records older than the bound (%zu)", first);
	check(reorder__pending(q) == late, "random: the others stay (%zu)", reorder__pending(q));
	check(in_order(&h, 0, first), "random: handed on by time, events first, then arrival order");
	check(reorder__flush(q, bound, collect, &h) == 0 && h.nr == first,
	      "random: a second flush to the same bound hands on nothing");
	check(reorder__flush(q, UINT64_MAX, collect, &h) == 0 && reorder__pending(q) == 0,
	      "random: UINT64_MAX flushes the rest");
	check(in_order(&h, 0, h.nr), "random: the whole sequence is in order");
	for (size_t i = 0; i < h.nr; i++) {
		dup += seen[h.got[i].seq];
		seen[h.got[i].seq] = true;
	}
	for (uint32_t i = 0; i < N; i++)
		missing += !seen[i];
	check(h.nr == N && dup == 0 && missing == 0 && h.bad_len == 0,
	      "random: every record exactly once, data and kind intact (%u repeated, %u missing)", dup,
	      missing);
	free(h.got);
	reorder__free(q);
}

static void test_ties(void)
{
	struct reorder *q = new_queue();
	struct handed h = { 0 };
	static const uint32_t want[] = { 6, 1, 3, 0, 2, 4, 5 };
	bool same = true;

	push(q, 10, REORDER_SAMPLE, 0);
	push(q, 10, REORDER_EVENT, 1);
	push(q, 10, REORDER_SAMPLE, 2);
	push(q, 10, REORDER_EVENT, 3);
	push(q, 10, REORDER_SAMPLE, 4);
	push(q, 11, REORDER_EVENT, 5);
	push(q, 9, REORDER_SAMPLE, 6);
	reorder__flush(q, UINT64_MAX, collect, &h);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		same &= i < h.nr && h.got[i].seq == want[i];
	check(same && h.nr == 7, "ties: of equal times events before samples, each in arrival order");
	free(h.got);
	reorder__free(q);
}

static void test_bound_is_exclusive(void)
{
	struct reorder *q = new_queue();
	struct handed h = { 0 };

	push(q, 99, REORDER_SAMPLE, 0);
	push(q, 100, REORDER_EVENT, 1);
	push(q, 100, REORDER_SAMPLE, 2);
	reorder__flush(q, 100, collect, &h);
	check(h.nr == 1 && h.got[0].seq == 0 && reorder__pending(q) == 2,
	      "bound: a record at the bound waits");
	/* A record that arrives later with an older time still goes before the held ones. */
	push(q, 50, REORDER_SAMPLE, 3);
	reorder__flush(q, UINT64_MAX, collect, &h);
	check(h.nr == 4 && h.got[1].seq == 3 && h.got[2].seq == 1 && h.got[3].seq == 2,
	      "bound: a late record older than those held goes first");
	free(h.got);
	reorder__free(q);
}

static void test_copies(void)
{
	struct reorder *q = new_queue();
	struct handed h = { 0 };
	struct record r = { .time = 5, .kind = REORDER_EVENT, .seq = 42 };

	if (reorder__push(q, 5, REORDER_EVENT, &r, sizeof(r)) != 0 ||
	    reorder__push(q, 6, REORDER_SAMPLE, "", 0) != 0)
		abort();
	memset(&r, 0xff, sizeof(r));
	reorder__flush(q, UINT64_MAX, collect, &h);
	check(h.nr == 1 && h.got[0].seq == 42 && h.got[0].time == 5 && h.bad_len == 1,
	      "copies: the data pushed, not the buffer's later contents; an empty record keeps its length");
	free(h.got);
	reorder__free(q);
}

static void test_error_stops(void)
{
	struct reorder *q = new_queue();
	struct handed h = { .fail_at = 3 };

	for (uint32_t i = 0; i < 10; i++)
		push(q, i, REORDER_SAMPLE, i);
	check(reorder__flush(q, UINT64_MAX, collect, &h) == -EIO, "error: the callback's error is returned");
	check(h.nr == 3 && reorder__pending(q) == 7, "error: the flush stops at the failed record");
	h.fail_at = 0;
	reorder__flush(q, UINT64_MAX, collect, &h);
	check(h.nr == 10 && h.got[3].seq == 3 && in_order(&h, 0, h.nr),
	      "error: a later flush goes on from the next record");
	push(q, 20, REORDER_EVENT, 10);
	free(h.got);
	reorder__free(q); /* with a record held */
	reorder__free(NULL);
}

/* What a reused block must not show: bytes of the record it held before. Each record is
 * its length and seq repeated; a flush checks every byte. */
struct sized_check {
	size_t records, bad;
};

static uint8_t fill_byte(size_t len, uint32_t seq, size_t at)
{
	return (uint8_t)(len * 31 + seq * 7 + at);
}

static int check_sized(void *ctx, enum reorder_kind kind, const void *data, size_t len)
{
	struct sized_check *c = ctx;
	const uint8_t *p = data;
	uint32_t seq;

	(void)kind;
	c->records++;
	if (len < sizeof(seq)) {
		c->bad++;
		return 0;
	}
	memcpy(&seq, p, sizeof(seq));
	for (size_t at = sizeof(seq); at < len; at++) {
		if (p[at] != fill_byte(len, seq, at)) {
			c->bad++;
			break;
		}
	}
	return 0;
}

/* Blocks freed by a flush are used again by later pushes, of every size from a few bytes
 * to more than the largest kept class: no record sees another's bytes or length. */
static void test_reused_blocks(void)
{
	struct reorder *q = new_queue();
	struct sized_check c = { 0 };
	static uint8_t buf[200000];
	uint32_t seed = 99, seq = 0;
	size_t pushed = 0;

	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 40; i++) {
			size_t len;

			seed = seed * 1103515245u + 12345u;
			len = 4 + (seed >> 8) % ((seed & 7) == 0 ? sizeof(buf) - 4 : 600);
			memcpy(buf, &seq, sizeof(seq));
			for (size_t at = sizeof(seq); at < len; at++)
				buf[at] = fill_byte(len, seq, at);
			if (reorder__push(q, (uint64_t)round * 100 + (uint64_t)i, REORDER_SAMPLE, buf,
					  len) == 0)
				pushed++;
			seq++;
		}
		/* half of them out: the rest stay while the next round reuses their blocks */
		reorder__flush(q, (uint64_t)round * 100 + 20, check_sized, &c);
	}
	reorder__flush(q, UINT64_MAX, check_sized, &c);
	check(pushed == 2000 && c.records == pushed && c.bad == 0,
	      "reused blocks: %zu records of 4 to %zu bytes came out whole (%zu bad)", c.records,
	      sizeof(buf), c.bad);
	reorder__free(q);
}

int main(void)
{
	test_random_times();
	test_ties();
	test_bound_is_exclusive();
	test_copies();
	test_error_stops();
	test_reused_blocks();
	return failures ? 1 : 0;
}
