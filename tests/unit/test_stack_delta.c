/* Unit tests for rebuilding delta copies (user/record/stack_delta.h): records made here as
 * the BPF program makes them (common/sample.h, struct hprof_stack_delta) rebuild into the
 * whole copy, frames and tail kept; a delta against a copy not held (a sequence gap, a tid
 * reused, another thread's copy, an image evicted or forgotten, a base of another length)
 * loses its stack under SAMPLE_DELTA_BASE_MISSING and asks for a whole copy; records that
 * do not add up (a map claiming chunks the copy has not, a payload too short or too long,
 * lengths beyond their limits or overflowing) are handed on unchanged, for the session to
 * count as malformed; random records never crash it. Prints one "ok - NAME" /
 * "not ok - NAME" line per check. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/stack_delta.h"
#include "check.h"

/* Which tids were asked to start again, in order. */
struct resends {
	uint32_t tids[64];
	size_t nr;
};

static void note_resend(void *ctx, uint32_t tid)
{
	struct resends *r = ctx;

	if (r->nr < sizeof(r->tids) / sizeof(r->tids[0]))
		r->tids[r->nr++] = tid;
}

static struct stack_delta *new_deltas(size_t max_images, size_t max_bytes, struct resends *r)
{
	struct stack_delta *d;

	if (stack_delta__new(max_images, max_bytes, &d))
		abort();
	memset(r, 0, sizeof(*r));
	stack_delta__set_resend_hook(d, note_resend, r);
	return d;
}

/* A record being made: the header, frames and tail fixed by the test. */
#define NR_USER 3
#define NR_KERNEL 2
#define TAIL_LEN 16

struct made {
	uint8_t buf[HPROF_SAMPLE_MAX_WIRE_SIZE];
	size_t size;
};

/* The delta of now (len bytes of stack) against prev (prev_len bytes; NULL: a whole copy,
 * base_seq 0): chunks counted down from the end, sent when their bytes or length differ,
 * as the kernel's hashes find. */
static void make(struct made *m, uint32_t tid, uint64_t seq, uint64_t base_seq,
		 const uint8_t *now, uint32_t len, const uint8_t *prev, uint32_t prev_len,
		 const uint8_t *verify_image)
{
	struct hprof_sample *s = (struct hprof_sample *)m->buf;
	struct hprof_stack_delta hdr = {
		.seq = seq, .base_seq = base_seq, .full_len = len,
		.nr_chunks = hprof_delta__nr_chunks(len),
		.flags = verify_image ? HPROF_DELTA_VERIFY : 0,
	};
	uint64_t map[HPROF_DELTA_MAP_WORDS] = { 0 }, untracked = hprof_delta__untracked(len);
	uint32_t words = base_seq ? hprof_delta__map_words(hdr.nr_chunks) : 0;
	uint8_t *region, *payload;
	__u64 lo, hi, plo, phi;

	memset(m->buf, 0, sizeof(struct hprof_sample));
	s->tid = tid;
	s->pid = 1000;
	s->user_sp = 0x7ffd0000;
	s->flags = SAMPLE_USER_REGS | SAMPLE_COPY_LEARNED | SAMPLE_STACK_DELTA;
	s->nr_user = NR_USER;
	s->nr_kernel = NR_KERNEL;
	s->tail_len = TAIL_LEN;
	for (uint32_t i = 0; i < NR_USER + NR_KERNEL; i++) {
		uint64_t ip = 0x400000 + i;

		memcpy((uint8_t *)hprof_sample__stack_to_fill(s) - (NR_USER + NR_KERNEL - i) * 8, &ip, 8);
	}
	region = hprof_sample__stack_to_fill(s);
	payload = region + sizeof(hdr) + words * 8;
	memcpy(payload, now, untracked);
	payload += untracked;
	for (uint32_t i = hdr.nr_chunks; i-- > 0;) {
		hi = hprof_delta__chunk(len, i, &lo);
		if (prev && base_seq && i < hprof_delta__nr_chunks(prev_len)) {
			phi = hprof_delta__chunk(prev_len, i, &plo);
			if (phi - plo == hi - lo && memcmp(prev + plo, now + lo, hi - lo) == 0)
				continue;
		}
		map[i / 64] |= 1ull << (i % 64);
		memcpy(payload, now + lo, hi - lo);
		payload += hi - lo;
	}
	memcpy(region, &hdr, sizeof(hdr));
	memcpy(region + sizeof(hdr), map, words * 8);
	if (verify_image) {
		memcpy(payload, verify_image, len);
		payload += len;
	}
	s->stack_len = payload - region;
	memset(payload, 0xee, TAIL_LEN);
	m->size = payload + TAIL_LEN - m->buf;
}

/* Sets bit i of a made delta's map (the test's own hostile records). */
static void set_map_bit(struct made *m, uint32_t i)
{
	struct hprof_sample *s = (struct hprof_sample *)m->buf;
	uint8_t *map = hprof_sample__stack_to_fill(s) + sizeof(struct hprof_stack_delta);
	uint64_t word;

	memcpy(&word, map + (i / 64) * 8, 8);
	word |= 1ull << (i % 64);
	memcpy(map + (i / 64) * 8, &word, 8);
}

static void set_header(struct made *m, const struct hprof_stack_delta *hdr)
{
	memcpy(hprof_sample__stack_to_fill((struct hprof_sample *)m->buf), hdr, sizeof(*hdr));
}

static struct hprof_stack_delta get_header(const struct made *m)
{
	struct hprof_stack_delta hdr;

	memcpy(&hdr, hprof_sample__stack((const struct hprof_sample *)m->buf), sizeof(hdr));
	return hdr;
}

/* What rebuilding m gave. */
struct got {
	const struct hprof_sample *s;
	size_t size;
	bool rebuilt;  /* a record of its own, not m handed back */
	bool lost;     /* SAMPLE_DELTA_BASE_MISSING */
};

static struct got rebuild(struct stack_delta *d, const struct made *m)
{
	const void *out;
	size_t size;
	struct got g = { 0 };

	if (stack_delta__rebuild(d, m->buf, m->size, &out, &size))
		abort();
	g.s = out;
	g.size = size;
	g.rebuilt = out != (const void *)m->buf;
	g.lost = g.rebuilt && (g.s->flags & SAMPLE_DELTA_BASE_MISSING);
	return g;
}

/* The rebuilt record is the one the kernel would have sent whole: stack, frames, tail. */
static bool is_whole(const struct got *g, const uint8_t *stack, uint32_t len)
{
	const struct hprof_sample *s = g->s;
	uint8_t tail[TAIL_LEN];

	memset(tail, 0xee, sizeof(tail));
	if (!g->rebuilt || !hprof_sample__well_formed(s, g->size) || s->stack_len != len ||
	    (s->flags & (SAMPLE_STACK_DELTA | SAMPLE_DELTA_BASE_MISSING)) || s->nr_user != NR_USER ||
	    s->nr_kernel != NR_KERNEL || s->tail_len != TAIL_LEN ||
	    g->size != hprof_sample__head_len(s) + len + TAIL_LEN)
		return false;
	for (uint32_t i = 0; i < NR_USER; i++)
		if (hprof_sample__user_ip(s, i) != 0x400000 + i)
			return false;
	for (uint32_t i = 0; i < NR_KERNEL; i++)
		if (hprof_sample__kernel_ip(s, i) != 0x400000 + NR_USER + i)
			return false;
	return memcmp(hprof_sample__stack(s), stack, len) == 0 &&
	       memcmp(hprof_sample__tail(s), tail, TAIL_LEN) == 0;
}

static bool lost_stack(const struct got *g)
{
	return g->lost && hprof_sample__well_formed(g->s, g->size) && g->s->stack_len == 0 &&
	       g->s->tail_len == TAIL_LEN && !(g->s->flags & SAMPLE_STACK_DELTA);
}

static void fill_random(uint8_t *p, size_t len, unsigned *seed)
{
	for (size_t i = 0; i < len; i++) {
		*seed = *seed * 1103515245u + 12345u;
		p[i] = *seed >> 16;
	}
}

/* A stack of len bytes: prev's, with the words at the offsets given changed. */
static void changed_copy(uint8_t *out, const uint8_t *prev, uint32_t len, const uint32_t *at,
			 size_t nr)
{
	memcpy(out, prev, len);
	for (size_t i = 0; i < nr; i++)
		out[at[i]] ^= 0x5a;
}

static uint8_t a[HPROF_MAX_STACK_COPY], b[HPROF_MAX_STACK_COPY], c[HPROF_MAX_STACK_COPY];
static struct made m;

/* A whole copy, then deltas against it, for stacks of a given length. */
static void test_sequence(uint32_t len)
{
	struct resends r;
	struct stack_delta *d = new_deltas(16, 1 << 20, &r);
	unsigned seed = len;
	uint32_t changes[] = { 0, len / 2, len - 1 };
	struct got g;
	uint32_t delta_len;

	fill_random(a, len, &seed);
	make(&m, 7, 100, 0, a, len, NULL, 0, NULL);
	g = rebuild(d, &m);
	check(is_whole(&g, a, len), "len %u: a whole copy rebuilds as itself", len);
	changed_copy(b, a, len, changes, 3);
	make(&m, 7, 101, 100, b, len, a, len, NULL);
	delta_len = ((struct hprof_sample *)m.buf)->stack_len;
	g = rebuild(d, &m);
	check(is_whole(&g, b, len), "len %u: a delta against it rebuilds the new copy", len);
	check(len < 4 * HPROF_DELTA_CHUNK ||
		      delta_len - hprof_delta__untracked(len) < (len - hprof_delta__untracked(len)) / 2,
	      "len %u: the delta is short (%u bytes, %lu of them below the tracked chunks)", len,
	      delta_len, (unsigned long)hprof_delta__untracked(len));
	make(&m, 7, 102, 101, b, len, b, len, NULL);
	g = rebuild(d, &m);
	check(is_whole(&g, b, len), "len %u: a delta with no chunk changed rebuilds it", len);
	make(&m, 7, 103, 101, b, len, b, len, NULL);
	g = rebuild(d, &m);
	check(lost_stack(&g) && r.nr == 1 && r.tids[0] == 7,
	      "len %u: a delta against a copy already replaced is lost, a whole copy asked for",
	      len);
	make(&m, 7, 104, 103, b, len, b, len, NULL);
	g = rebuild(d, &m);
	check(lost_stack(&g), "len %u: and the delta after it too (its base was never rebuilt)", len);
	const struct stack_delta_stats *st = stack_delta__stats(d);
	check(st->full == 1 && st->deltas == 2 && st->base_missing == 2 && st->malformed == 0,
	      "len %u: counted: 1 whole, 2 deltas, 2 lost (%lu %lu %lu %lu)", len,
	      (unsigned long)st->full, (unsigned long)st->deltas, (unsigned long)st->base_missing,
	      (unsigned long)st->malformed);
	stack_delta__free(d);
}

static void test_threads_and_tids(void)
{
	struct resends r;
	struct stack_delta *d = new_deltas(16, 1 << 20, &r);
	unsigned seed = 3;
	uint32_t len = 1000, at[] = { 10 };
	struct got g;

	fill_random(a, len, &seed);
	fill_random(c, len, &seed);
	make(&m, 1, 50, 0, a, len, NULL, 0, NULL);
	rebuild(d, &m);
	make(&m, 2, 50, 0, c, len, NULL, 0, NULL);
	rebuild(d, &m);
	changed_copy(b, a, len, at, 1);
	make(&m, 1, 51, 50, b, len, a, len, NULL);
	g = rebuild(d, &m);
	check(is_whole(&g, b, len), "threads: each thread's deltas go against its own copy");
	changed_copy(a, c, len, at, 1);
	make(&m, 2, 51, 50, a, len, c, len, NULL);
	g = rebuild(d, &m);
	check(is_whole(&g, a, len), "threads: the other thread's too");
	stack_delta__forget(d, 1);
	make(&m, 1, 52, 51, b, len, b, len, NULL);
	g = rebuild(d, &m);
	check(lost_stack(&g), "tid reuse: after the thread exits, a delta for its tid is lost");
	make(&m, 1, 9000, 0, c, len, NULL, 0, NULL);
	g = rebuild(d, &m);
	check(is_whole(&g, c, len), "tid reuse: a new thread's whole copy starts again");
	make(&m, 3, 51, 50, b, len, b, len, NULL);
	g = rebuild(d, &m);
	check(lost_stack(&g), "tid: a delta for a tid never seen is lost, even with another's seq");
	/* every chunk sent: nothing is needed from a base */
	make(&m, 4, 77, 76, c, len, NULL, 0, NULL);
	g = rebuild(d, &m);
	check(is_whole(&g, c, len), "a delta that sends every chunk rebuilds with no base held");
	stack_delta__free(d);
}

/* A base of another length: chunk i is not the same bytes. */
static void test_other_length(void)
{
	struct resends r;
	struct stack_delta *d = new_deltas(16, 1 << 20, &r);
	unsigned seed = 5;
	struct got g;

	fill_random(a, 1000, &seed);
	make(&m, 1, 10, 0, a, 1000, NULL, 0, NULL);
	rebuild(d, &m);
	/* 8 bytes more at sp: the chunk at sp is longer than the base's, yet left out */
	memcpy(b + 8, a, 1000);
	memset(b, 1, 8);
	make(&m, 1, 11, 10, b, 1008, b, 1008, NULL);
	g = rebuild(d, &m);
	check(lost_stack(&g), "a delta leaving out a chunk whose length differs in the base is lost");
	stack_delta__free(d);
}

static void test_hostile(void)
{
	struct resends r;
	struct stack_delta *d = new_deltas(16, 1 << 20, &r);
	unsigned seed = 11;
	uint32_t len = 300; /* 5 chunks: 4 whole, one of 44 bytes */
	struct hprof_stack_delta hdr;
	struct got g;
	size_t before;

	fill_random(a, len, &seed);
	make(&m, 1, 10, 0, a, len, NULL, 0, NULL);
	rebuild(d, &m);
	make(&m, 1, 11, 10, a, len, a, len, NULL);
	set_map_bit(&m, 5);
	g = rebuild(d, &m);
	check(!g.rebuilt && !hprof_sample__well_formed(g.s, g.size),
	      "hostile: a map bit beyond the copy's chunks: handed on, malformed");
	check(r.nr == 1 && r.tids[0] == 1, "hostile: and the thread starts again");
	make(&m, 1, 10, 0, a, len, NULL, 0, NULL);
	rebuild(d, &m);
	make(&m, 1, 11, 10, a, len, a, len, NULL);
	set_map_bit(&m, 63);
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: a map bit at the word's end, beyond the chunks");
	make(&m, 1, 11, 10, a, len, a, len, NULL);
	set_map_bit(&m, 2); /* claims chunk 2 sent, but no bytes for it */
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: a payload shorter than the map says");
	make(&m, 1, 11, 10, a, len, NULL, 0, NULL); /* every chunk sent */
	((struct hprof_sample *)m.buf)->stack_len -= 8;
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: a payload cut short");
	make(&m, 1, 11, 10, a, len, NULL, 0, NULL);
	((struct hprof_sample *)m.buf)->stack_len += 8;
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: a payload longer than the map says (or the record short)");
	make(&m, 1, 11, 0, a, len, NULL, 0, NULL);
	m.size -= TAIL_LEN + 1;
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: a record shorter than its lengths");
	make(&m, 1, 11, 0, a, len, NULL, 0, NULL);
	hdr = get_header(&m);
	hdr.full_len = HPROF_MAX_STACK_COPY + 64;
	hdr.nr_chunks = hprof_delta__nr_chunks(hdr.full_len);
	set_header(&m, &hdr);
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: full_len beyond the largest copy");
	hdr.full_len = 0xffffffffu;
	hdr.nr_chunks = HPROF_DELTA_MAX_CHUNKS;
	set_header(&m, &hdr);
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: full_len overflowing");
	make(&m, 1, 11, 0, a, len, NULL, 0, NULL);
	hdr = get_header(&m);
	hdr.nr_chunks = 4;
	set_header(&m, &hdr);
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: nr_chunks not the copy's");
	hdr.nr_chunks = 5;
	hdr.flags = 0x80;
	set_header(&m, &hdr);
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: unknown flags");
	hdr.flags = 0;
	hdr.seq = 0;
	set_header(&m, &hdr);
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: sequence 0");
	make(&m, 1, 11, 0, a, len, NULL, 0, NULL);
	((struct hprof_sample *)m.buf)->stack_len = 8;
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: a stack region shorter than the delta header");
	make(&m, 1, 11, 0, a, len, NULL, 0, NULL);
	((struct hprof_sample *)m.buf)->stack_len = HPROF_MAX_STACK_WIRE + 8;
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: a stack region beyond the largest delta");
	make(&m, 1, 11, 0, a, len, NULL, 0, NULL);
	((struct hprof_sample *)m.buf)->nr_user = HPROF_MAX_FP_DEPTH + 1;
	g = rebuild(d, &m);
	check(!g.rebuilt, "hostile: too many frames");
	before = stack_delta__stats(d)->malformed;
	check(before == 14, "hostile: each counted malformed (%zu)", before);
	make(&m, 1, 11, 0, a, len, NULL, 0, NULL);
	((struct hprof_sample *)m.buf)->flags &= ~SAMPLE_STACK_DELTA;
	g = rebuild(d, &m);
	check(!g.rebuilt && g.size == m.size, "a record that is no delta is handed on as it is");
	g.s = NULL;
	{
		const void *out;
		size_t size;

		check(stack_delta__rebuild(d, m.buf, 10, &out, &size) == 0 && out == m.buf &&
			      size == 10,
		      "a record shorter than a header is handed on as it is");
	}
	stack_delta__free(d);
}

static void test_random_records(void)
{
	struct resends r;
	struct stack_delta *d = new_deltas(4, 1 << 16, &r);
	unsigned seed = 99;
	uint64_t survived = 0;

	for (int n = 0; n < 20000; n++) {
		struct hprof_sample *s = (struct hprof_sample *)m.buf;
		uint32_t len = 8 + (n * 37) % 20000;

		fill_random(a, len, &seed);
		make(&m, n % 5, 1 + n % 3, n % 2, a, len, NULL, 0, NULL);
		/* flip some header and region bytes, and the record's size */
		for (int k = 0; k < 4; k++) {
			uint32_t at;

			seed = seed * 1103515245u + 12345u;
			at = (seed >> 4) % (m.size < 300 ? m.size : 300);
			m.buf[at] ^= 1 << (seed & 7);
		}
		s->flags |= SAMPLE_STACK_DELTA;
		seed = seed * 1103515245u + 12345u;
		if (seed & 1)
			m.size = (seed >> 3) % (m.size + 1);
		rebuild(d, &m);
		survived++;
	}
	check(survived == 20000, "random records: 20000 rebuilt or refused without a crash");
	stack_delta__free(d);
}

static void test_caps_and_verify(void)
{
	struct resends r;
	struct stack_delta *d = new_deltas(2, 1 << 20, &r);
	unsigned seed = 13;
	uint32_t len = 512;
	struct got g;

	fill_random(a, len, &seed);
	for (uint32_t tid = 1; tid <= 3; tid++) {
		make(&m, tid, 10, 0, a, len, NULL, 0, NULL);
		rebuild(d, &m);
	}
	check(stack_delta__nr_images(d) == 2 && stack_delta__stats(d)->evicted == 1 && r.nr == 1 &&
		      r.tids[0] == 1,
	      "cap: a third thread evicts the least recently used image, whose thread starts again");
	make(&m, 1, 11, 10, a, len, a, len, NULL);
	g = rebuild(d, &m);
	check(lost_stack(&g), "cap: a delta against the evicted image is lost");
	stack_delta__free(d);

	d = new_deltas(16, 1000, &r);
	make(&m, 1, 10, 0, a, len, NULL, 0, NULL);
	rebuild(d, &m);
	make(&m, 2, 10, 0, a, len, NULL, 0, NULL);
	rebuild(d, &m);
	check(stack_delta__nr_images(d) == 1 && r.nr == 1 && r.tids[0] == 1,
	      "cap: images beyond the byte cap evict the oldest");
	stack_delta__free(d);

	d = new_deltas(16, 1 << 20, &r);
	make(&m, 1, 10, 0, a, len, NULL, 0, a);
	g = rebuild(d, &m);
	check(is_whole(&g, a, len) && stack_delta__stats(d)->verified == 1 &&
		      stack_delta__stats(d)->verify_mismatch == 0,
	      "verify: a copy sent along that matches is counted checked");
	memcpy(b, a, len);
	b[100] ^= 1;
	make(&m, 1, 11, 10, a, len, a, len, b);
	g = rebuild(d, &m);
	check(stack_delta__stats(d)->verify_mismatch == 1,
	      "verify: a copy sent along that differs from the rebuilt one is counted");
	stack_delta__free(d);

	d = new_deltas(16, 1 << 20, &r);
	stack_delta__set_drop_every(d, 2);
	make(&m, 1, 10, 0, a, len, NULL, 0, NULL);
	rebuild(d, &m);
	make(&m, 1, 11, 10, a, len, a, len, NULL);
	g = rebuild(d, &m);
	check(is_whole(&g, a, len), "drop every 2nd: the delta after the first image rebuilds");
	make(&m, 1, 12, 11, a, len, a, len, NULL);
	g = rebuild(d, &m);
	check(lost_stack(&g) && stack_delta__stats(d)->dropped == 1,
	      "drop every 2nd: the delta after the dropped image is lost");
	stack_delta__free(d);
}

int main(void)
{
	static const uint32_t lengths[] = {
		8, 56, 64, 72, 1000, 4096, 4104,
		HPROF_DELTA_MAX_CHUNKS * HPROF_DELTA_CHUNK - 8,
		HPROF_DELTA_MAX_CHUNKS * HPROF_DELTA_CHUNK,
		HPROF_DELTA_MAX_CHUNKS * HPROF_DELTA_CHUNK + 8,
		HPROF_MAX_STACK_COPY,
	};

	for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++)
		test_sequence(lengths[i]);
	test_threads_and_tids();
	test_other_length();
	test_hostile();
	test_random_records();
	test_caps_and_verify();
	return failures ? 1 : 0;
}
