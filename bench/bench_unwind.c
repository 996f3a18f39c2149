/* bench_unwind CAPTURE [PASSES [hprof|libunwind]]: replays a raw capture (hprof --raw) through hprof's DWARF
 * walk and through libunwind driven remotely over the same registers and stack copies
 * (tests/tools/walkers.h), and prints ns per sample and per frame:
 *
 * - warm:        tables built and in cache; best pass of PASSES over every sample. The
 *                stack copies (megabytes) come from L2/L3 as they would from the ring buffer.
 * - cold tables: a new session (hprof) or new address spaces and an empty module cache
 *                (libunwind), first pass: hprof compiles each binary's CFI on first use,
 *                libunwind opens the files and fills its caches.
 * - hot:         each sample walked HOT_REPEAT times in a row, so its stack bytes are in
 *                L1 too: the walk's compute alone, without the first touch of the copy.
 * - cold caches: tables built, but 64 MiB of memory written before each sample so the
 *                walk starts from DRAM; each sample timed on its own.
 *
 * Warm and hot passes of the two walkers alternate in blocks (BLOCK), so a slow spell of
 * the shared machine hits both. hprof's rule cache persists across passes, as it does
 * across the samples of a recording.
 *
 * With a third argument (hprof or libunwind) runs only that walker's warm passes, for
 * profiling. Only the walks are timed, not loading the capture. Lines starting "bench:" are for
 * bench/b_unwind.sh. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/tools/walkers.h"

#define EVICT_BYTES (64u << 20) /* well past this machine's last-level cache */
#define HOT_REPEAT 8
#define BLOCK 5 /* passes of one walker before switching to the other */

struct bench {
	struct capture_file *cap;
	struct unwind_frame *frames;
	uint64_t *pcs;
	uint8_t *evict;
	uint64_t samples; /* walkable samples */
	uint64_t hprof_frames, lu_frames;
	uint64_t agree;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void evict_caches(struct bench *b)
{
	for (size_t i = 0; i < EVICT_BYTES; i += 64)
		b->evict[i]++;
}

static int new_session(struct bench *b, struct session **out)
{
	uint32_t pid;
	const char *text, *path;
	struct map_event e;
	size_t len;
	int err = session__new(true, out);

	if (err)
		return err;
	session__set_replay(*out);
	for (size_t i = 0; i < b->cap->nr_recs; i++) {
		if (capture_rec__maps(&b->cap->recs[i], &pid, &text, &len))
			err = session__load_maps(*out, pid, text, len);
		/* Every sample is walked many times, after all mappings are known: an exit would
		 * forget the process. */
		else if (capture_rec__map_event(&b->cap->recs[i], &e, &path) &&
			 e.type != MAP_EVENT_EXIT)
			err = session__handle_map_event(*out, &e, path);
		if (err)
			return err;
	}
	return 0;
}

static int new_lu(struct bench *b, struct lu_unwinder **out)
{
	uint32_t pid;
	const char *text, *path;
	struct map_event e;
	size_t len;
	int err = lu_unwinder__new(true, out);

	if (err)
		return err;
	for (size_t i = 0; i < b->cap->nr_recs; i++) {
		if (capture_rec__maps(&b->cap->recs[i], &pid, &text, &len))
			err = lu_unwinder__load_maps(*out, pid, text, len);
		/* Every sample is walked many times, after all mappings are known: an exit would
		 * forget the process. */
		else if (capture_rec__map_event(&b->cap->recs[i], &e, &path) &&
			 e.type != MAP_EVENT_EXIT)
			err = lu_unwinder__map_event(*out, &e, path);
		if (err)
			return err;
	}
	return 0;
}

static const struct hprof_sample *walkable(const struct capture_rec *r)
{
	const struct hprof_sample *s = capture_rec__sample(r);

	return s && walk__skip_reason(s, r->len) == WALK_SKIP_NONE ? s : NULL;
}

/* One pass of hprof's walk over every sample: total ns (each sample timed alone, after
 * evicting the caches, when cold). hot: each sample walked HOT_REPEAT times, ns per walk. */
static uint64_t hprof_pass_hot(struct bench *b, struct session *s, bool hot)
{
	struct unwind_result res;
	uint64_t start = now_ns();
	int repeat = hot ? HOT_REPEAT : 1;

	for (size_t i = 0; i < b->cap->nr_recs; i++) {
		const struct hprof_sample *smp = walkable(&b->cap->recs[i]);

		for (int k = 0; smp && k < repeat; k++)
			session__walk_sample(s, smp, b->cap->recs[i].len, b->frames,
					     UNWIND_MAX_FRAMES, &res);
	}
	return (now_ns() - start) / repeat;
}

static uint64_t lu_pass_hot(struct bench *b, struct lu_unwinder *u)
{
	uint64_t start = now_ns();
	uint32_t n;

	for (size_t i = 0; i < b->cap->nr_recs; i++) {
		const struct hprof_sample *smp = walkable(&b->cap->recs[i]);

		for (int k = 0; smp && k < HOT_REPEAT; k++)
			lu_unwinder__walk(u, smp, b->pcs, UNWIND_MAX_FRAMES, &n);
	}
	return (now_ns() - start) / HOT_REPEAT;
}

static uint64_t hprof_pass(struct bench *b, struct session *s, bool cold, uint64_t *frames)
{
	struct unwind_result res;
	uint64_t total = 0, start = now_ns();

	*frames = 0;
	for (size_t i = 0; i < b->cap->nr_recs; i++) {
		const struct hprof_sample *smp = walkable(&b->cap->recs[i]);
		uint64_t t0;

		if (!smp)
			continue;
		if (cold)
			evict_caches(b);
		t0 = now_ns();
		session__walk_sample(s, smp, b->cap->recs[i].len, b->frames, UNWIND_MAX_FRAMES, &res);
		if (cold)
			total += now_ns() - t0;
		*frames += res.nr_frames;
	}
	return cold ? total : now_ns() - start;
}

static uint64_t lu_pass(struct bench *b, struct lu_unwinder *u, bool cold, uint64_t *frames)
{
	uint64_t total = 0, start = now_ns();
	uint32_t n;

	*frames = 0;
	for (size_t i = 0; i < b->cap->nr_recs; i++) {
		const struct hprof_sample *smp = walkable(&b->cap->recs[i]);
		uint64_t t0;

		if (!smp)
			continue;
		if (cold)
			evict_caches(b);
		t0 = now_ns();
		lu_unwinder__walk(u, smp, b->pcs, UNWIND_MAX_FRAMES, &n);
		if (cold)
			total += now_ns() - t0;
		*frames += n;
	}
	return cold ? total : now_ns() - start;
}

/* Same frames from both walkers, sample by sample (the cross-check's full-stack rule). */
static int count_agreement(struct bench *b, struct session *s, struct lu_unwinder *u)
{
	struct unwind_result res;
	uint32_t n;

	for (size_t i = 0; i < b->cap->nr_recs; i++) {
		const struct hprof_sample *smp = walkable(&b->cap->recs[i]);
		bool same;

		if (!smp)
			continue;
		b->samples++;
		if (session__walk_sample(s, smp, b->cap->recs[i].len, b->frames, UNWIND_MAX_FRAMES,
					 &res))
			return -ENOMEM;
		lu_unwinder__walk(u, smp, b->pcs, UNWIND_MAX_FRAMES, &n);
		same = n >= res.nr_frames;
		for (uint32_t k = 0; same && k < res.nr_frames; k++)
			same = b->frames[k].pc == b->pcs[k];
		b->agree += same;
	}
	return 0;
}

static void print_line(const char *who, const char *how, uint64_t ns, uint64_t samples,
		       uint64_t frames)
{
	double per_sample = samples ? (double)ns / samples : 0;
	double per_frame = frames ? (double)ns / frames : 0;

	printf("bench: %s %s ns_per_sample %.1f ns_per_frame %.2f\n", who, how, per_sample,
	       per_frame);
}

/* Warm passes of one walker only, for profiling it (perf record -- bench_unwind ...). */
static int run_only(struct bench *b, int passes, bool hprof)
{
	struct session *s = NULL;
	struct lu_unwinder *u = NULL;
	uint64_t frames, ns = 0;
	int err = hprof ? new_session(b, &s) : new_lu(b, &u);

	for (int p = 0; !err && p < passes; p++)
		ns += hprof ? hprof_pass(b, s, false, &frames) : lu_pass(b, u, false, &frames);
	if (!err)
		printf("# %s: %d passes, %.3f ms\n", hprof ? "hprof" : "libunwind", passes, ns / 1e6);
	session__free(s);
	lu_unwinder__free(u);
	return err;
}

static int run(struct bench *b, int passes)
{
	struct session *s = NULL;
	struct lu_unwinder *u = NULL;
	struct unwind_cache_stats cache_before, cache_after;
	uint64_t ns, best, best_lu, frames;
	int err;

	/* cold tables: everything built during the first pass */
	err = new_session(b, &s);
	if (err)
		goto cleanup;
	ns = hprof_pass(b, s, false, &frames);
	b->hprof_frames = frames;
	printf("# hprof cold tables: first pass %.3f ms\n", ns / 1e6);
	err = new_lu(b, &u);
	if (err)
		goto cleanup;
	best = lu_pass(b, u, false, &frames);
	b->lu_frames = frames;
	printf("# libunwind cold tables: first pass %.3f ms\n", best / 1e6);
	err = count_agreement(b, s, u);
	if (err)
		goto cleanup;
	printf("bench: samples %llu hprof_frames %llu libunwind_frames %llu agree %llu\n",
	       (unsigned long long)b->samples, (unsigned long long)b->hprof_frames,
	       (unsigned long long)b->lu_frames, (unsigned long long)b->agree);
	print_line("hprof", "cold_tables", ns, b->samples, b->hprof_frames);
	print_line("libunwind", "cold_tables", best, b->samples, b->lu_frames);

	/* hprof's and libunwind's passes alternate in blocks, so both see the same machine (on
	 * a shared host a busy neighbour can halve either's speed for seconds at a time) while
	 * each walker's own data stays warm from one pass to the next within a block. */
	session__unwind_cache_stats(s, &cache_before);
	best = best_lu = UINT64_MAX;
	for (int p = 0; p < passes; p += BLOCK) {
		for (int k = 0; k < BLOCK; k++) {
			ns = hprof_pass(b, s, false, &frames);
			best = ns < best ? ns : best;
		}
		for (int k = 0; k < BLOCK; k++) {
			ns = lu_pass(b, u, false, &frames);
			best_lu = ns < best_lu ? ns : best_lu;
		}
	}
	session__unwind_cache_stats(s, &cache_after);
	printf("# hprof rule cache: %.2f%% of frame lookups searched a table in the warm passes\n",
	       100.0 * (cache_after.misses - cache_before.misses) /
		       ((double)b->hprof_frames * ((passes + BLOCK - 1) / BLOCK * BLOCK)));
	print_line("hprof", "warm", best, b->samples, b->hprof_frames);
	print_line("libunwind", "warm", best_lu, b->samples, b->lu_frames);

	best = best_lu = UINT64_MAX;
	for (int p = 0; p < passes; p += BLOCK) {
		for (int k = 0; k < BLOCK; k++) {
			ns = hprof_pass_hot(b, s, true);
			best = ns < best ? ns : best;
		}
		for (int k = 0; k < BLOCK; k++) {
			ns = lu_pass_hot(b, u);
			best_lu = ns < best_lu ? ns : best_lu;
		}
	}
	print_line("hprof", "hot", best, b->samples, b->hprof_frames);
	print_line("libunwind", "hot", best_lu, b->samples, b->lu_frames);

	ns = hprof_pass(b, s, true, &frames);
	print_line("hprof", "cold_caches", ns, b->samples, b->hprof_frames);
	ns = lu_pass(b, u, true, &frames);
	print_line("libunwind", "cold_caches", ns, b->samples, b->lu_frames);
cleanup:
	session__free(s);
	lu_unwinder__free(u);
	return err;
}

int main(int argc, char **argv)
{
	struct bench b = { 0 };
	char msg[512] = "";
	int passes = argc > 2 ? atoi(argv[2]) : 20;
	const char *only = argc > 3 ? argv[3] : NULL;
	int err;

	if (argc < 2 || argc > 4 || passes < 1 ||
	    (only && strcmp(only, "hprof") != 0 && strcmp(only, "libunwind") != 0)) {
		fprintf(stderr, "usage: bench_unwind CAPTURE [PASSES [hprof|libunwind]]\n");
		return 2;
	}
	err = capture_file__load(argv[1], &b.cap, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "bench_unwind: %s\n", msg[0] ? msg : strerror(-err));
		return 2;
	}
	b.frames = calloc(UNWIND_MAX_FRAMES, sizeof(*b.frames));
	b.pcs = calloc(UNWIND_MAX_FRAMES, sizeof(*b.pcs));
	b.evict = calloc(1, EVICT_BYTES);
	if (!b.frames || !b.pcs || !b.evict)
		err = -ENOMEM;
	else
		err = only ? run_only(&b, passes, strcmp(only, "hprof") == 0) : run(&b, passes);
	if (err)
		fprintf(stderr, "bench_unwind: %s: %s\n", argv[1], strerror(-err));
	capture_file__free(b.cap);
	free(b.frames);
	free(b.pcs);
	free(b.evict);
	return err ? 1 : 0;
}
