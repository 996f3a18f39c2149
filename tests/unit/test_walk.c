/* Unit tests of the DWARF walk (user/unwind/walk.h) over the pinned fixtures: the call
 * chain of tests/fixtures/chain.S, both builds, and the pinned vDSO image, mapped in a
 * model process; stacks laid out by replaying chain.S's prologues. The expected frames
 * are the return addresses objdump shows in the pinned files, and the registers where
 * the walk stops follow from the frame sizes chain.S sets. No BPF, no root, no live
 * process. Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include "fixture.h"

#include "unwind/walk.h"

/* __vdso_clock_gettime in the pinned vdso.so, after its prologue (push %rbp; mov %rsp,
 * %rbp; push %r14; push %rbx; and $-16, %rsp; sub $0x10, %rsp): CFA = rbp + 16. */
#define VDSO_CLOCK_GETTIME_BODY 0xb02

static struct unwind_table *chain_tables[2], *vdso_table;

struct walk {
	struct unwind_frame frames[64];
	struct unwind_result result;
};

/* Walks s from (ip, s->sp, s->bp) over len bytes copied from sp, at most max frames. */
static void walk_with(const struct model_process *p, uint64_t space_id,
		      struct unwind_cache *cache, const struct sim_stack *s, uint64_t ip,
		      uint64_t len, uint32_t max, struct walk *w)
{
	const struct unwind_regs regs = { .ip = ip, .sp = s->sp, .bp = s->bp, .bp_valid = true };
	const struct stack_copy copy = {
		.bytes = s->bytes + (s->sp - sim_base()), .base = s->sp, .len = len,
	};
	const struct unwind_space space = { .find_map = model_find_map, .ctx = (void *)p, .id = space_id };

	unwind__walk(&regs, &copy, &space, cache, w->frames, max, &w->result);
}

/* The same through a fresh cache and the usual model process. */
static void walk(const struct chain_build *b, const struct sim_stack *s, uint64_t ip,
		 uint64_t len, uint32_t max, struct walk *w)
{
	struct unwind_cache *cache = unwind_cache__new();
	struct model_process p;

	if (!cache)
		abort();
	model_init(&p, chain_tables[b->frame_pointer], vdso_table);
	walk_with(&p, 1, cache, s, ip, len, max, w);
	unwind_cache__free(cache);
}

static uint64_t to_top(const struct sim_stack *s)
{
	return SIM_STACK_TOP - s->sp;
}

static bool walked(const struct walk *w, enum unwind_end end, const uint64_t *want,
		   uint32_t nr_want)
{
	return w->result.end == end && frames_are(w->frames, w->result.nr_frames, want, nr_want);
}

static void report(bool ok, const struct walk *w, const char *what)
{
	check(ok, "%s (walked: %s, %s)", what, frames_text(w->frames, w->result.nr_frames),
	      unwind_end__name(w->result.end));
}

/* From leaf's loop to _start, in both builds: every frame, and the registers of the
 * outermost frame, the CFA start_main's 0x90-byte frame gives and the rbp _start cleared. */
static void test_complete(void)
{
	const struct chain_build *builds[] = { &CHAIN_NOFP, &CHAIN_FP };

	for (unsigned i = 0; i < 2; i++) {
		const struct chain_build *b = builds[i];
		const uint64_t want[] = {
			at(PC_LEAF_LOOP), at(b->ra_c), at(b->ra_b), at(b->ra_a), at(b->ra_main_a),
			at(RA_START_MAIN), at(RA_START),
		};
		struct sim_stack s;
		struct walk w;
		bool ok;

		sim_main_path_to_leaf(&s, b, NULL);
		walk(b, &s, at(PC_LEAF_LOOP), to_top(&s), 64, &w);
		report(walked(&w, UNWIND_END_COMPLETE, want, 7), &w,
		       b->frame_pointer ? "fp build: leaf to _start, complete"
					: "nofp build: leaf to _start, complete");
		ok = w.result.last.ip == at(RA_START) && w.result.last.sp == SIM_START_SP &&
		     w.result.last.bp == 0 && w.result.last.bp_valid && !w.result.started_stack;
		check(ok, "%s: the outermost frame is _start's, with its sp and the rbp it cleared",
		      b->file);
	}
}

/* The copy ends inside the stack: the walk stops at the first read past it, exactly. In
 * the nofp build a's return address is at sp + 0x88 (leaf 0x20, c 0x40, b 0x30 bytes). */
static void test_copy_short(void)
{
	const uint64_t three[] = { at(PC_LEAF_LOOP), at(CHAIN_NOFP.ra_c), at(CHAIN_NOFP.ra_b) };
	const uint64_t four[] = { at(PC_LEAF_LOOP), at(CHAIN_NOFP.ra_c), at(CHAIN_NOFP.ra_b),
				  at(CHAIN_NOFP.ra_a) };
	struct sim_stack s;
	struct walk w;

	sim_main_path_to_leaf(&s, &CHAIN_NOFP, NULL);
	walk(&CHAIN_NOFP, &s, at(PC_LEAF_LOOP), 0x90, 64, &w);
	report(walked(&w, UNWIND_END_COPY_SHORT, four, 4), &w,
	       "copy of 0x90 bytes: a's return address is its last word, copy too short after");
	walk(&CHAIN_NOFP, &s, at(PC_LEAF_LOOP), 0x8f, 64, &w);
	report(walked(&w, UNWIND_END_COPY_SHORT, three, 3), &w,
	       "copy one byte shorter: stops at b, copy too short");
	check(w.result.last.ip == at(CHAIN_NOFP.ra_b) && w.result.last.sp == s.sp + 0x60,
	      "copy too short: the last frame is b's, sp at c's CFA (sp + 0x60)");
	walk(&CHAIN_NOFP, &s, at(PC_LEAF_LOOP), 0, 64, &w);
	report(walked(&w, UNWIND_END_COPY_SHORT, three, 1), &w, "empty copy: the leaf alone");
}

/* main -> jit_code -> c -> leaf: jit_code has no CFI, so the walk stops at its frame. */
static void sim_jit_path_to_leaf(struct sim_stack *s, const struct chain_build *b)
{
	sim_start(s);
	sim_call(s, RA_START);
	sim_enter(s, false, LOCALS_START_MAIN);
	sim_call(s, RA_START_MAIN);
	sim_enter(s, b->frame_pointer, b->locals_main);
	sim_call(s, b->ra_main_jit);
	sim_enter(s, true, 0); /* jit_code: push %rbp; mov %rsp, %rbp */
	sim_call(s, RA_JIT_CODE);
	sim_enter(s, b->frame_pointer, b->locals_c);
	sim_call(s, b->ra_c);
	sim_enter(s, false, LOCALS_LEAF);
}

/* Overwrites c's return address (nofp build, main path): at sp + 0x58. */
static void sim_corrupt_c_return(struct sim_stack *s, uint64_t ra)
{
	sim_store(s, s->sp + 0x20 + 0x38, ra);
}

static void test_ends(void)
{
	const uint64_t no_cfi[] = { at(PC_LEAF_LOOP), at(CHAIN_NOFP.ra_c), at(RA_JIT_CODE) };
	const uint64_t anon[] = { at(PC_LEAF_LOOP), at(CHAIN_NOFP.ra_c), ANON_CODE_START + 0x105 };
	const uint64_t unmapped[] = { at(PC_LEAF_LOOP), at(CHAIN_NOFP.ra_c), 0x1005 };
	const uint64_t started[] = { at(PC_LEAF_LOOP), at(CHAIN_NOFP.ra_c), at(CHAIN_A) };
	const uint64_t depth[] = { at(PC_LEAF_LOOP), at(CHAIN_NOFP.ra_c), at(CHAIN_NOFP.ra_b) };
	struct sim_stack s;
	struct walk w;

	sim_jit_path_to_leaf(&s, &CHAIN_NOFP);
	walk(&CHAIN_NOFP, &s, at(PC_LEAF_LOOP), to_top(&s), 64, &w);
	report(walked(&w, UNWIND_END_NO_CFI, no_cfi, 3), &w,
	       "jit_code has no FDE: the walk stops at its frame, no CFI");

	sim_main_path_to_leaf(&s, &CHAIN_NOFP, NULL);
	sim_corrupt_c_return(&s, ANON_CODE_START + 0x105);
	walk(&CHAIN_NOFP, &s, at(PC_LEAF_LOOP), to_top(&s), 64, &w);
	report(walked(&w, UNWIND_END_NO_CFI, anon, 3), &w,
	       "a return into a mapping without a table: no CFI");

	sim_corrupt_c_return(&s, 0x1005);
	walk(&CHAIN_NOFP, &s, at(PC_LEAF_LOOP), to_top(&s), 64, &w);
	report(walked(&w, UNWIND_END_UNMAPPED, unmapped, 3), &w,
	       "a return address in no mapping: unmapped");

	/* makecontext pushes the start of the function it starts, not a return address */
	sim_corrupt_c_return(&s, at(CHAIN_A));
	walk(&CHAIN_NOFP, &s, at(PC_LEAF_LOOP), to_top(&s), 64, &w);
	report(walked(&w, UNWIND_END_COMPLETE, started, 3) && w.result.started_stack, &w,
	       "a return to a function's first byte starts a stack: complete, started_stack");

	sim_main_path_to_leaf(&s, &CHAIN_NOFP, NULL);
	walk(&CHAIN_NOFP, &s, at(PC_LEAF_LOOP), to_top(&s), 3, &w);
	report(walked(&w, UNWIND_END_DEPTH, depth, 3), &w, "at most 3 frames: three, too deep");
}

/* Samples in a prologue and an epilogue: the rows at those pcs, not the body's. */
static void test_prologue_epilogue(void)
{
	const struct chain_build *fp = &CHAIN_FP, *nofp = &CHAIN_NOFP;
	const uint64_t tail_nofp[] = { at(nofp->ra_b), at(nofp->ra_a), at(nofp->ra_main_a),
				       at(RA_START_MAIN), at(RA_START) };
	const uint64_t tail_fp[] = { at(fp->ra_b), at(fp->ra_a), at(fp->ra_main_a),
				     at(RA_START_MAIN), at(RA_START) };
	uint64_t want[6];
	struct sim_stack s;
	struct walk w;

	/* nofp: at c's first instruction, nothing pushed yet: CFA = rsp + 8 */
	sim_main_path_to_leaf(&s, nofp, NULL);
	s.sp += 8 + LOCALS_LEAF + nofp->locals_c; /* back to c's entry: sp at b's return */
	want[0] = at(CHAIN_C);
	memcpy(want + 1, tail_nofp, sizeof(tail_nofp));
	walk(nofp, &s, at(CHAIN_C), to_top(&s), 64, &w);
	report(walked(&w, UNWIND_END_COMPLETE, want, 6), &w,
	       "nofp: at c's first instruction (CFA = rsp + 8)");

	/* fp: after push %rbp, before mov: CFA = rsp + 16, the caller's rbp at CFA - 16 */
	sim_main_path_to_leaf(&s, fp, NULL);
	s.sp += 8 + LOCALS_LEAF + fp->locals_c; /* c's saved rbp */
	sim_load(&s, s.sp, &s.bp);              /* rbp still b's */
	want[0] = at(CHAIN_C + 1);
	memcpy(want + 1, tail_fp, sizeof(tail_fp));
	walk(fp, &s, at(CHAIN_C + 1), to_top(&s), 64, &w);
	report(walked(&w, UNWIND_END_COMPLETE, want, 6) && w.result.last.bp == 0, &w,
	       "fp: after c's push %rbp (CFA = rsp + 16, rbp saved at CFA - 16)");

	/* fp: at c's ret, after leave: rbp is b's again, CFA = rsp + 8 */
	s.sp += 8;
	want[0] = at(CHAIN_C + 0xe);
	walk(fp, &s, at(CHAIN_C + 0xe), to_top(&s), 64, &w);
	report(walked(&w, UNWIND_END_COMPLETE, want, 6) && w.result.last.bp == 0, &w,
	       "fp: at c's ret after leave (CFA = rsp + 8)");
}

/* start_main's last instruction calls exit_group: the return address is the end of
 * start_main's FDE, so only the call instruction's rows (at ra - 1) cover the frame. */
static void test_call_at_function_end(void)
{
	const uint64_t want[] = { at(PC_EXIT_GROUP_SYSCALL), at(RA_START_MAIN_EXIT), at(RA_START) };
	struct sim_stack s;
	struct walk w;

	sim_start(&s);
	sim_call(&s, RA_START);
	sim_enter(&s, false, LOCALS_START_MAIN);
	sim_call(&s, RA_START_MAIN_EXIT);
	walk(&CHAIN_NOFP, &s, at(PC_EXIT_GROUP_SYSCALL), to_top(&s), 64, &w);
	report(walked(&w, UNWIND_END_COMPLETE, want, 3), &w,
	       "a call as a function's last instruction: its caller's rows at ra - 1, complete");
}

/* The thread's path: thread_entry's return address is undefined (like clone3's). */
static void test_thread(void)
{
	const struct chain_build *b = &CHAIN_FP;
	const uint64_t want[] = { at(PC_LEAF_LOOP), at(b->ra_c), at(b->ra_worker),
				  at(RA_THREAD_ENTRY) };
	struct sim_stack s;
	struct walk w;

	sim_start(&s);
	sim_call(&s, RA_THREAD_ENTRY);
	sim_enter(&s, true, b->locals_worker);
	sim_call(&s, b->ra_worker);
	sim_enter(&s, true, b->locals_c);
	sim_call(&s, b->ra_c);
	sim_enter(&s, false, LOCALS_LEAF);
	walk(b, &s, at(PC_LEAF_LOOP), to_top(&s), 64, &w);
	report(walked(&w, UNWIND_END_COMPLETE, want, 4), &w,
	       "thread_entry -> worker -> c -> leaf: complete at thread_entry");
}

/* A leaf in the vDSO called from c: the walk crosses from the vDSO's table (rbp-based
 * CFA, a realigned stack) to the chain's. */
static void test_vdso_leaf(void)
{
	const struct chain_build *b = &CHAIN_NOFP;
	const uint64_t want[] = { VDSO_BIAS + VDSO_CLOCK_GETTIME_BODY, at(b->ra_c), at(b->ra_b),
				  at(b->ra_a), at(b->ra_main_a), at(RA_START_MAIN), at(RA_START) };
	struct sim_stack s;
	struct walk w;

	sim_main_path_to_leaf(&s, b, NULL);
	s.sp += LOCALS_LEAF; /* c's call pushed its return address: sp at it */
	sim_enter(&s, true, 0);
	sim_push(&s, 0x1414141414141414); /* r14 */
	sim_push(&s, 0xb0b0b0b0b0b0b0b0); /* rbx */
	s.sp = (s.sp & ~15ull) - 0x10;
	walk(b, &s, VDSO_BIAS + VDSO_CLOCK_GETTIME_BODY, to_top(&s), 64, &w);
	report(walked(&w, UNWIND_END_COMPLETE, want, 7) && w.result.last.bp == 0, &w,
	       "vDSO leaf (rbp-based CFA, realigned stack) into the chain, complete");
}

/* Cached rules: a second walk searches no table; other address spaces with the same
 * pcs have their own rules (here none: the chain mapped without its table), whichever
 * cache slots their ids give. */
static void test_cache(void)
{
	const struct chain_build *b = &CHAIN_NOFP;
	const uint64_t want[] = { at(PC_LEAF_LOOP), at(b->ra_c), at(b->ra_b), at(b->ra_a),
				  at(b->ra_main_a), at(RA_START_MAIN), at(RA_START) };
	struct unwind_cache *cache = unwind_cache__new();
	struct unwind_cache_stats first, second;
	struct model_process p, no_table;
	uint64_t wrong = 0;
	struct sim_stack s;
	struct walk w;

	if (!cache)
		abort();
	model_init(&p, chain_tables[0], NULL);
	sim_main_path_to_leaf(&s, b, NULL);
	walk_with(&p, 1, cache, &s, at(PC_LEAF_LOOP), to_top(&s), 64, &w);
	unwind_cache__stats(cache, &first);
	walk_with(&p, 1, cache, &s, at(PC_LEAF_LOOP), to_top(&s), 64, &w);
	unwind_cache__stats(cache, &second);
	report(walked(&w, UNWIND_END_COMPLETE, want, 7) && first.misses == 7 &&
		       second.misses == first.misses,
	       &w, "the same walk again: the same frames, no table searched");

	/* more ids than the cache has slots: some share space 1's slots */
	model_init(&no_table, NULL, NULL);
	for (uint64_t id = 2; id < 2 + 8192; id++) {
		walk_with(&p, 1, cache, &s, at(PC_LEAF_LOOP), to_top(&s), 64, &w);
		walk_with(&no_table, id, cache, &s, at(PC_LEAF_LOOP), to_top(&s), 64, &w);
		if (!walked(&w, UNWIND_END_NO_CFI, want, 1))
			wrong++;
	}
	check(wrong == 0, "8192 other address space ids, the same pcs without CFI: no CFI each "
			  "time, never space 1's cached rules (%llu wrong)",
	      (unsigned long long)wrong);
	unwind_cache__free(cache);
}

/* HPROF_DEBUG=unwind's trace of the complete walk: one line per frame, the stop. */
static void test_trace(void)
{
	struct unwind_cache *cache = unwind_cache__new();
	struct model_process p;
	struct sim_stack s;
	char *text = NULL, *stop;
	size_t len = 0, frames = 0;
	FILE *out = open_memstream(&text, &len);

	if (!cache || !out)
		abort();
	model_init(&p, chain_tables[0], NULL);
	sim_main_path_to_leaf(&s, &CHAIN_NOFP, NULL);
	const struct unwind_regs regs = { .ip = at(PC_LEAF_LOOP), .sp = s.sp, .bp = s.bp, .bp_valid = true };
	const struct stack_copy copy = { .bytes = s.bytes + (s.sp - sim_base()), .base = s.sp,
					 .len = to_top(&s) };
	const struct unwind_space space = { .find_map = model_find_map, .ctx = &p, .id = 1 };

	unwind__trace(&regs, &copy, &space, cache, out);
	fclose(out);
	for (char *l = text; (l = strstr(l, "unwind: #")); l++)
		frames++;
	stop = strstr(text, "unwind: stopped: ");
	check(frames == 7 && stop && strcmp(stop, "unwind: stopped: complete\n") == 0 &&
		      strstr(text, "-> cfa 0x7ffd0002ffc0 ra 0x5555555544c7"),
	      "trace: 7 frames, start_main's CFA and _start's return address, stopped: complete");
	free(text);
	unwind_cache__free(cache);
}

int main(void)
{
	size_t len;
	uint8_t *vdso = fixture_read("vdso.so", &len);
	char err[256];

	chain_tables[0] = fixture_table(CHAIN_NOFP.file);
	chain_tables[1] = fixture_table(CHAIN_FP.file);
	if (unwind_table__from_image(vdso, len, "vdso.so", UNWIND_SRC_ALL | UNWIND_SRC_VIA_HDR,
				     &vdso_table, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	test_complete();
	test_copy_short();
	test_ends();
	test_prologue_epilogue();
	test_call_at_function_end();
	test_thread();
	test_vdso_leaf();
	test_cache();
	test_trace();
	unwind_table__free(chain_tables[0]);
	unwind_table__free(chain_tables[1]);
	unwind_table__free(vdso_table);
	free(vdso);
	return failures ? 1 : 0;
}
