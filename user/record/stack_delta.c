#include "record/stack_delta.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

/* A thread's last copy, whole: the bytes [sp, sp + len) of the copy numbered seq. */
struct image {
	uint32_t tid;
	uint64_t seq;
	uint32_t len;
	uint8_t *bytes;
	UT_hash_handle hh;
};

struct stack_delta {
	struct image *by_tid; /* least recently used first */
	size_t nr, bytes, max_images, max_bytes;
	stack_delta_resend_fn resend;
	void *resend_ctx;
	uint64_t drop_every, kept;
	struct stack_delta_stats stats;
	uint8_t *out;   /* the record handed on, HPROF_SAMPLE_MAX_SIZE */
	uint8_t *stack; /* the stack being rebuilt, HPROF_MAX_STACK_COPY */
};

int stack_delta__new(size_t max_images, size_t max_bytes, struct stack_delta **out)
{
	struct stack_delta *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->max_images = max_images;
	d->max_bytes = max_bytes;
	d->out = malloc(HPROF_SAMPLE_MAX_SIZE);
	d->stack = malloc(HPROF_MAX_STACK_COPY);
	if (!d->out || !d->stack) {
		stack_delta__free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void stack_delta__set_resend_hook(struct stack_delta *d, stack_delta_resend_fn fn, void *ctx)
{
	d->resend = fn;
	d->resend_ctx = ctx;
}

void stack_delta__set_drop_every(struct stack_delta *d, uint64_t n)
{
	d->drop_every = n;
}

static void drop(struct stack_delta *d, struct image *im)
{
	HASH_DEL(d->by_tid, im);
	d->nr--;
	d->bytes -= im->len;
	free(im->bytes);
	free(im);
}

static void request_resend(struct stack_delta *d, uint32_t tid)
{
	if (d->resend)
		d->resend(d->resend_ctx, tid);
}

/* The least recently used images go until one more of len bytes fits; the kernel sends
 * their threads' next copies whole rather than deltas against what is gone. */
static void make_room(struct stack_delta *d, size_t len)
{
	while (d->by_tid && (d->nr >= d->max_images || d->bytes + len > d->max_bytes)) {
		struct image *oldest = d->by_tid;
		uint32_t tid = oldest->tid;

		drop(d, oldest);
		d->stats.evicted++;
		request_resend(d, tid);
	}
}

/* Keeps stack (len bytes) as the thread's copy numbered seq. */
static int remember(struct stack_delta *d, uint32_t tid, uint64_t seq, const uint8_t *stack,
		    uint32_t len)
{
	struct image *im;

	HASH_FIND(hh, d->by_tid, &tid, sizeof(tid), im);
	if (im)
		drop(d, im);
	make_room(d, len);
	if (len > d->max_bytes || d->max_images == 0)
		return 0;
	im = calloc(1, sizeof(*im));
	if (!im || !(im->bytes = malloc(len ? len : 1))) {
		free(im);
		return -ENOMEM;
	}
	im->tid = tid;
	im->seq = seq;
	im->len = len;
	memcpy(im->bytes, stack, len);
	HASH_ADD(hh, d->by_tid, tid, sizeof(im->tid), im);
	d->nr++;
	d->bytes += len;
	if (d->drop_every && ++d->kept % d->drop_every == 0) {
		drop(d, im);
		d->stats.dropped++;
	}
	return 0;
}

static bool chunk_sent(const struct hprof_delta_parts *p, uint32_t i)
{
	uint64_t word;

	if (!p->map)
		return true;
	memcpy(&word, p->map + (i / 64) * 8, sizeof(word));
	return (word >> (i % 64)) & 1;
}

/* No bit set for a chunk the copy does not have. */
static bool map_within_chunks(const struct hprof_delta_parts *p)
{
	uint32_t n = p->hdr.nr_chunks, words = hprof_delta__map_words(n);
	uint64_t last;

	if (!p->map || n % 64 == 0)
		return true;
	memcpy(&last, p->map + (words - 1) * 8ull, sizeof(last));
	return (last >> (n % 64)) == 0;
}

/* Bytes the payload must hold: the untracked ones and the chunks sent. */
static uint64_t payload_needed(const struct hprof_delta_parts *p)
{
	uint64_t need = hprof_delta__untracked(p->hdr.full_len);
	__u64 lo, hi;

	for (uint32_t i = 0; i < p->hdr.nr_chunks; i++) {
		if (!chunk_sent(p, i))
			continue;
		hi = hprof_delta__chunk(p->hdr.full_len, i, &lo);
		need += hi - lo;
	}
	return need;
}

/* Whether the parts add up: a map with no bit beyond the chunks, a payload of exactly
 * what it says is sent. */
static bool delta_adds_up(const struct hprof_delta_parts *p)
{
	return p->hdr.full_len > 0 && map_within_chunks(p) && payload_needed(p) == p->payload_len;
}

/* Rebuilds the whole copy into d->stack: the untracked bytes, then chunk by chunk from the
 * lowest address, from the payload when sent, else from the image of the copy the delta
 * is against. False when a chunk left out is not in that image as it must be. */
static bool rebuild_stack(struct stack_delta *d, const struct hprof_delta_parts *p,
			  const struct image *base)
{
	uint64_t full_len = p->hdr.full_len, at = hprof_delta__untracked(full_len);
	const uint8_t *payload = p->payload;

	memcpy(d->stack, payload, at);
	payload += at;
	for (uint32_t i = p->hdr.nr_chunks; i-- > 0;) {
		__u64 lo, hi = hprof_delta__chunk(full_len, i, &lo), blo, bhi;

		if (chunk_sent(p, i)) {
			memcpy(d->stack + lo, payload, hi - lo);
			payload += hi - lo;
			continue;
		}
		if (!base || base->seq != p->hdr.base_seq || i >= hprof_delta__nr_chunks(base->len))
			return false;
		bhi = hprof_delta__chunk(base->len, i, &blo);
		if (bhi - blo != hi - lo)
			return false;
		memcpy(d->stack + lo, base->bytes + blo, hi - lo);
	}
	return true;
}

/* The record handed on: rec's header and frames, flags and stack replaced, its tail and
 * Python frames. */
static size_t build_record(struct stack_delta *d, const struct hprof_sample *rec,
			   uint32_t flags, uint32_t stack_len)
{
	struct hprof_sample *out = (struct hprof_sample *)d->out;
	uint64_t head = hprof_sample__head_len(rec);
	uint64_t after = rec->tail_len + hprof_sample__after_tail_len(rec);

	memcpy(out, rec, head);
	out->flags = flags;
	out->stack_len = stack_len;
	memcpy(hprof_sample__stack_to_fill(out), d->stack, stack_len);
	/* the tail, the Python frames and the Go section after it */
	memcpy(hprof_sample__stack_to_fill(out) + stack_len, hprof_sample__tail(rec), after);
	return head + stack_len + after;
}

static void verify(struct stack_delta *d, const struct hprof_delta_parts *p)
{
	if (!p->image)
		return;
	d->stats.verified++;
	if (memcmp(d->stack, p->image, p->hdr.full_len) != 0)
		d->stats.verify_mismatch++;
}

int stack_delta__rebuild(struct stack_delta *d, const void *rec, size_t size, const void **out,
			 size_t *out_size)
{
	const struct hprof_sample *s = rec;
	uint32_t flags = s->flags & ~SAMPLE_STACK_DELTA;
	struct hprof_delta_parts p;
	struct image *base;

	*out = rec;
	*out_size = size;
	if (size < sizeof(*s) || !(s->flags & SAMPLE_STACK_DELTA))
		return 0;
	HASH_FIND(hh, d->by_tid, &s->tid, sizeof(s->tid), base);
	if (!hprof_sample__wire_well_formed(s, size) || !hprof_sample__delta_parts(s, &p) ||
	    !delta_adds_up(&p)) {
		/* What the kernel holds for the thread is now unknown: start again. */
		d->stats.malformed++;
		if (base)
			drop(d, base);
		request_resend(d, s->tid);
		return 0;
	}
	if (!rebuild_stack(d, &p, p.hdr.base_seq ? base : NULL)) {
		d->stats.base_missing++;
		if (base)
			drop(d, base);
		request_resend(d, s->tid);
		*out_size = build_record(d, s, flags | SAMPLE_DELTA_BASE_MISSING, 0);
		*out = d->out;
		return 0;
	}
	if (p.hdr.base_seq)
		d->stats.deltas++;
	else
		d->stats.full++;
	verify(d, &p);
	*out_size = build_record(d, s, flags, p.hdr.full_len);
	*out = d->out;
	return remember(d, s->tid, p.hdr.seq, d->stack, p.hdr.full_len);
}

void stack_delta__forget(struct stack_delta *d, uint32_t tid)
{
	struct image *im;

	HASH_FIND(hh, d->by_tid, &tid, sizeof(tid), im);
	if (im)
		drop(d, im);
}

size_t stack_delta__nr_images(const struct stack_delta *d)
{
	return d->nr;
}

const struct stack_delta_stats *stack_delta__stats(const struct stack_delta *d)
{
	return &d->stats;
}

void stack_delta__free(struct stack_delta *d)
{
	struct image *im, *tmp;

	if (!d)
		return;
	HASH_ITER(hh, d->by_tid, im, tmp) {
		HASH_DEL(d->by_tid, im);
		free(im->bytes);
		free(im);
	}
	free(d->out);
	free(d->stack);
	free(d);
}
