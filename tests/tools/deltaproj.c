/* deltaproj CAPTURE [COMM]: what a raw capture's samples (hprof --raw) would have cost had
 * each copy to a thread's learned base sent only the chunks that changed since the thread's
 * previous such copy (bench/README.md, "Delta copies"). Chunks are measured down from the
 * base (chunk 0 ends at the base; the one holding sp may be partial); a chunk is sent when
 * its bytes or its extent differ from the previous copy's, as a kernel comparing hashes of
 * (length, bytes) per chunk would find; a delta also carries one bit per chunk, in 8-byte
 * words. Copies not to a learned base (a thread's first ones, FP-leaf copies) and the first
 * copy after the base changed are counted whole. With COMM, only samples of that command.
 *
 * Prints the samples' mean record size as sent; what the deltas carry of the stack for
 * chunks of 8 (a floor: words), 32, 64, 128 and 256 bytes; and the mean record size per
 * sample with deltas, without refreshes and with a full copy every 64th of a thread's. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "walkers.h"

static const unsigned chunk_sizes[] = { 8, 32, 64, 128, 256 };
static const unsigned refreshes[] = { 0, 64 };
#define NR_CHUNK_SIZES (sizeof(chunk_sizes) / sizeof(chunk_sizes[0]))
#define NR_REFRESHES (sizeof(refreshes) / sizeof(refreshes[0]))

struct image {
	uint32_t tid;
	uint64_t sp, base;
	uint8_t *bytes; /* [sp, base) */
	uint64_t tracked;
	UT_hash_handle hh;
};

struct projection {
	uint64_t bytes[NR_CHUNK_SIZES][NR_REFRESHES];
	uint64_t delta_stack[NR_CHUNK_SIZES]; /* stack bytes of the deltas alone */
};

/* Bytes a delta of s against prev sends for its stack: the changed chunks and a bitmap. */
static uint64_t delta_bytes(const struct image *prev, const struct hprof_sample *s, unsigned c)
{
	uint64_t base = s->user_sp + s->stack_len, sent = 0, nr_chunks = 0;
	const uint8_t *now = hprof_sample__stack(s);

	for (uint64_t hi = base, lo; hi > s->user_sp; hi = lo) {
		lo = hi - s->user_sp > c ? hi - c : s->user_sp;
		/* a whole chunk was whole before too; a partial one started at the same sp */
		bool same_extent = hi - lo == c ? prev->sp <= lo : prev->sp == lo;

		nr_chunks++;
		if (same_extent &&
		    memcmp(now + (lo - s->user_sp), prev->bytes + (lo - prev->sp), hi - lo) == 0)
			continue;
		sent += hi - lo;
	}
	return sent + (nr_chunks + 63) / 64 * 8;
}

static int remember(struct image **images, const struct hprof_sample *s, struct image **out)
{
	struct image *im;
	uint8_t *bytes;

	HASH_FIND(hh, *images, &s->tid, sizeof(s->tid), im);
	if (!im) {
		im = calloc(1, sizeof(*im));
		if (!im)
			return -ENOMEM;
		im->tid = s->tid;
		HASH_ADD(hh, *images, tid, sizeof(im->tid), im);
	}
	bytes = realloc(im->bytes, s->stack_len ? s->stack_len : 1);
	if (!bytes)
		return -ENOMEM;
	im->bytes = bytes;
	memcpy(im->bytes, hprof_sample__stack(s), s->stack_len);
	im->sp = s->user_sp;
	im->base = s->user_sp + s->stack_len;
	*out = im;
	return 0;
}

int main(int argc, char **argv)
{
	struct image *images = NULL, *im, *tmp;
	struct projection p = { 0 };
	uint64_t samples = 0, sent = 0, learned = 0, deltas = 0, stack_sent = 0;
	uint64_t other = 0, other_bytes = 0, delta_full = 0;
	struct capture_file *cap;
	char msg[512] = "";
	int err = 0;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: deltaproj CAPTURE [COMM]\n");
		return 2;
	}
	err = capture_file__load(argv[1], &cap, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "deltaproj: %s\n", msg[0] ? msg : strerror(-err));
		return 2;
	}
	for (size_t i = 0; i < cap->nr_recs && !err; i++) {
		const struct capture_rec *r = &cap->recs[i];
		const struct hprof_sample *s = capture_rec__sample(r);
		char comm[HPROF_COMM_LEN + 1] = { 0 };

		if (r->type != CAPTURE_SAMPLE || !s || !hprof_sample__well_formed(s, r->len))
			continue;
		memcpy(comm, s->comm, HPROF_COMM_LEN);
		if (argc == 3 && strcmp(comm, argv[2]) != 0)
			continue;
		samples++;
		sent += r->len;
		if (!(s->flags & SAMPLE_COPY_LEARNED) || !s->stack_len) {
			other++;
			other_bytes += r->len;
			for (unsigned c = 0; c < NR_CHUNK_SIZES; c++)
				for (unsigned f = 0; f < NR_REFRESHES; f++)
					p.bytes[c][f] += r->len;
			continue;
		}
		learned++;
		stack_sent += s->stack_len;
		HASH_FIND(hh, images, &s->tid, sizeof(s->tid), im);
		if (im && im->base != s->user_sp + s->stack_len)
			im = NULL;
		deltas += im != NULL;
		delta_full += im ? s->stack_len : 0;
		for (unsigned c = 0; c < NR_CHUNK_SIZES; c++) {
			uint64_t d = im ? delta_bytes(im, s, chunk_sizes[c]) : s->stack_len;

			if (im)
				p.delta_stack[c] += d;
			for (unsigned f = 0; f < NR_REFRESHES; f++) {
				bool refresh = !im || (refreshes[f] && im->tracked % refreshes[f] == 0);

				p.bytes[c][f] += r->len - s->stack_len + (refresh ? s->stack_len : d);
			}
		}
		err = remember(&images, s, &im);
		if (!err)
			im->tracked++;
	}
	if (!err) {
		printf("deltaproj: samples %llu, %.0f B/smp as sent; %llu copies to a learned base "
		       "(%.0f stack B each), %llu of them after one with the same base\n",
		       (unsigned long long)samples, samples ? (double)sent / samples : 0.0,
		       (unsigned long long)learned, learned ? (double)stack_sent / learned : 0.0,
		       (unsigned long long)deltas);
		printf("deltaproj: other samples %llu, %.0f B each\n", (unsigned long long)other,
		       other ? (double)other_bytes / other : 0.0);
		for (unsigned c = 0; c < NR_CHUNK_SIZES; c++)
			printf("deltaproj: chunk %u: deltas carry %.0f of %.0f stack B each\n",
			       chunk_sizes[c], deltas ? (double)p.delta_stack[c] / deltas : 0.0,
			       deltas ? (double)delta_full / deltas : 0.0);
		for (unsigned c = 0; c < NR_CHUNK_SIZES; c++)
			for (unsigned f = 0; f < NR_REFRESHES; f++)
				printf("deltaproj: chunk %u refresh %u: %.0f B/smp\n", chunk_sizes[c],
				       refreshes[f], samples ? (double)p.bytes[c][f] / samples : 0.0);
	} else {
		fprintf(stderr, "deltaproj: %s\n", strerror(-err));
	}
	HASH_ITER(hh, images, im, tmp) {
		HASH_DEL(images, im);
		free(im->bytes);
		free(im);
	}
	capture_file__free(cap);
	return err ? 2 : 0;
}
