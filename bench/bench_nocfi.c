/* bench_nocfi [WALKS]: the warm cost of a frame without CFI against a frame with CFI.
 *
 * The pinned call chain of tests/fixtures/chain.S (no frame pointers), stopped in leaf:
 * _start -> start_main -> main -> a -> b -> c -> leaf, 7 frames. Walked WALKS times (default
 * 2,000,000) as it is, by CFI, and again with main, a, b, c and leaf taken to have no CFI,
 * so that their callers are found by the analysis of their code, as a session does it: the
 * analysis and the check that each return address follows a call cached per address
 * (user/unwind/code_cache.h), the walk's own rule cache warm. The two alternate in blocks,
 * so that a slow spell of the shared machine hits both; the best block counts.
 *
 * Prints ns per walk and per frame for each, and their ratio per frame (the goal: <= 2x).
 * Lines starting "bench:" are for bench/b_nocfi.sh. */
#include <time.h>

#include "../tests/unit/fixture.h"
#include "unwind/code_cache.h"
#include "unwind/walk.h"
#include "unwind/x86_code.h"

#define BLOCKS 20

struct bench_space {
	struct model_process p;
	const uint8_t *code;
	struct code_cache *cache;
	bool without_cfi;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int find_map(void *ctx, uint64_t pc, struct unwind_map *map)
{
	struct bench_space *b = ctx;

	if (b->without_cfi && pc >= at(CHAIN_MAIN) && pc < at(CHAIN_JIT_CODE))
		return -ENODATA;
	return model_find_map(&b->p, pc, map);
}

static struct code_window window(const struct bench_space *b)
{
	return (struct code_window){ b->code, CHAIN_BIAS, CHAIN_TEXT_SEGMENT };
}

static int analyze(void *ctx, uint64_t pc, struct code_rules *rules)
{
	struct bench_space *b = ctx;
	const struct code_window code = window(b);
	enum code_fail fail;

	if (code_cache__rules(b->cache, 1, pc, &fail, rules))
		return fail;
	fail = x86_code__analyze(&code, pc, 0, 0, rules);
	code_cache__put_rules(b->cache, 1, pc, fail, rules);
	return fail;
}

static int call_before(void *ctx, uint64_t ra, uint64_t *target)
{
	struct bench_space *b = ctx;
	const struct code_window code = window(b);
	enum code_call call;
	int64_t delta;

	if (code_cache__call(b->cache, 1, ra, &call, &delta)) {
		*target = ra + (uint64_t)delta;
		return call;
	}
	call = x86_code__call_before(&code, ra, target);
	code_cache__put_call(b->cache, 1, ra, call, (int64_t)(*target - ra));
	return call;
}

/* The best ns per walk over the blocks of each kind, alternating. */
static void run(struct bench_space *spaces, const struct sim_stack *s, uint64_t walks,
		double *best)
{
	const struct unwind_regs regs = { .ip = at(PC_LEAF_LOOP), .sp = s->sp, .bp = s->bp,
					  .bp_valid = true };
	const struct stack_copy copy = { .bytes = s->bytes + (s->sp - sim_base()), .base = s->sp,
					 .len = SIM_STACK_TOP - s->sp };
	struct unwind_cache *caches[2] = { unwind_cache__new(), unwind_cache__new() };
	struct unwind_frame frames[16];
	struct unwind_result result;

	if (!caches[0] || !caches[1])
		abort();
	best[0] = best[1] = 1e18;
	for (int block = 0; block < BLOCKS * 2; block++) {
		int kind = block & 1;
		const struct unwind_space space = {
			.find_map = find_map, .ctx = &spaces[kind], .id = 1,
			.code = { .analyze = analyze, .call_before = call_before },
		};
		uint64_t t0 = now_ns();
		double ns;

		for (uint64_t i = 0; i < walks / BLOCKS; i++) {
			unwind__walk(&regs, &copy, &space, caches[kind], frames, 16, &result);
			__asm__ volatile("" ::: "memory");
		}
		ns = (double)(now_ns() - t0) / (double)(walks / BLOCKS);
		if (result.end != UNWIND_END_COMPLETE || result.nr_frames != 7) {
			fprintf(stderr, "bench_nocfi: the %s walk did not find the chain\n",
				kind ? "no-CFI" : "CFI");
			exit(1);
		}
		if (ns < best[kind])
			best[kind] = ns;
	}
	unwind_cache__free(caches[0]);
	unwind_cache__free(caches[1]);
}

int main(int argc, char **argv)
{
	uint64_t walks = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
	struct unwind_table *table = fixture_table(CHAIN_NOFP.file);
	struct bench_space spaces[2] = { 0 };
	struct sim_stack s;
	double best[2], per_frame[2];
	size_t len;
	uint8_t *code = fixture_read(CHAIN_NOFP.file, &len);

	if (len < CHAIN_TEXT_SEGMENT || walks < BLOCKS)
		return 1;
	for (int kind = 0; kind < 2; kind++) {
		model_init(&spaces[kind].p, table, NULL);
		spaces[kind].code = code;
		spaces[kind].cache = code_cache__new();
		spaces[kind].without_cfi = kind == 1;
	}
	sim_main_path_to_leaf(&s, &CHAIN_NOFP, NULL);
	run(spaces, &s, walks, best);
	/* 7 frames, 6 steps; of the no-CFI walk's steps 5 go through the analysis */
	for (int kind = 0; kind < 2; kind++)
		per_frame[kind] = best[kind] / 6;
	printf("bench: cfi walk_ns %.1f step_ns %.1f\n", best[0], per_frame[0]);
	printf("bench: nocfi walk_ns %.1f step_ns %.1f\n", best[1], per_frame[1]);
	/* the analysed steps alone: the no-CFI walk's extra time over its 5 analysed steps,
	 * plus what a CFI step costs */
	printf("bench: ratio analysed_step_over_cfi_step %.2f\n",
	       ((best[1] - best[0]) / 5 + per_frame[0]) / per_frame[0]);
	for (int kind = 0; kind < 2; kind++)
		code_cache__free(spaces[kind].cache);
	unwind_table__free(table);
	free(code);
	return 0;
}
