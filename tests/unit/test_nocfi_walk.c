/* The walk through code without CFI (user/unwind/walk.c with user/unwind/x86_code.c) on the
 * pinned call chain of tests/fixtures/chain.S: main, a, b, c and leaf are taken to have no
 * CFI (the model's lookup says so for their pcs), and the walk must still find every
 * frame, by the analysis of their code (the pinned file's bytes), by their frame records,
 * or by scanning past planted decoys. The true frames are the chain's return addresses,
 * as objdump shows them (tests/fixtures/README.md), the same the walk with CFI finds. */
#include "fixture.h"

#include "unwind/walk.h"
#include "unwind/x86_code.h"

static struct unwind_table *chain_tables[2];
static uint8_t *chain_files[2];

/* What the model's callbacks see: the process, which of its callbacks work, and counts. */
struct nocfi_model {
	struct model_process p;
	uint64_t nocfi_from; /* the chain's functions from this one to leaf have no CFI */
	const uint8_t *code; /* the chain's text segment, at CHAIN_BIAS */
	bool analyze, symbols;
	uint64_t unnamed_from; /* with symbols: the chain's functions from this one have none */
	uint32_t analyses;
	const struct code_rules *fixed; /* the analysis's rules for every pc, when set */
	bool r8_valid;                  /* the sample holds r8, at r8 */
	uint64_t r8;
};

static int find_map(void *ctx, uint64_t pc, struct unwind_map *map)
{
	struct nocfi_model *m = ctx;
	uint64_t from = at(m->nocfi_from ? m->nocfi_from : CHAIN_MAIN);

	/* the functions taken to have no CFI */
	if (pc >= from && pc < at(CHAIN_JIT_CODE))
		return -ENODATA;
	return model_find_map(&m->p, pc, map);
}

static struct code_window chain_code(const struct nocfi_model *m)
{
	return (struct code_window){ m->code, CHAIN_BIAS, CHAIN_TEXT_SEGMENT };
}

/* The chain's symbols: each function 64-byte aligned from start_main to leaf. */
static int function_start(void *ctx, uint64_t pc, uint64_t *start)
{
	struct nocfi_model *m = ctx;

	if (!m->symbols || pc < at(CHAIN_START_MAIN) || pc >= at(CHAIN_JIT_CODE) ||
	    (m->unnamed_from && pc >= at(m->unnamed_from)))
		return -ENOENT;
	*start = CHAIN_BIAS + ((pc - CHAIN_BIAS) & ~63ull);
	return 0;
}

static int analyze(void *ctx, uint64_t pc, struct code_rules *rules)
{
	struct nocfi_model *m = ctx;
	const struct code_window code = chain_code(m);
	uint64_t start = 0;

	if (!m->analyze)
		return CODE_UNDECODABLE;
	m->analyses++;
	if (m->fixed) {
		*rules = *m->fixed;
		return CODE_OK;
	}
	function_start(ctx, pc, &start);
	return x86_code__analyze(&code, pc, start, start ? start + 64 : 0, rules);
}

static int call_before(void *ctx, uint64_t ra, uint64_t *target)
{
	const struct code_window code = chain_code(ctx);

	return x86_code__call_before(&code, ra, target);
}

static bool is_entry_code(void *ctx, uint64_t pc, bool caller)
{
	(void)ctx;
	return pc - (caller ? 1 : 0) - at(CHAIN_START) < 0x40;
}

struct walk {
	struct unwind_frame frames[64];
	struct unwind_result result;
	struct unwind_cache_stats stats;
};

static void walk(struct nocfi_model *m, const struct chain_build *b, const struct sim_stack *s,
		 uint64_t ip, bool no_scan, struct walk *w)
{
	const struct unwind_regs regs = { .ip = ip, .sp = s->sp, .bp = s->bp, .bp_valid = true,
					  .r8_valid = m->r8_valid, .r8 = m->r8 };
	const struct stack_copy copy = {
		.bytes = s->bytes + (s->sp - sim_base()), .base = s->sp, .len = SIM_STACK_TOP - s->sp,
	};
	const struct unwind_space space = {
		.find_map = find_map, .ctx = m, .id = 1,
		.code = { .analyze = analyze, .call_before = call_before },
		.symbols = { .function_start = function_start, .is_entry_code = is_entry_code },
		.no_scan = no_scan,
	};
	struct unwind_cache *cache = unwind_cache__new();

	if (!cache)
		abort();
	m->code = chain_files[b->frame_pointer];
	model_init(&m->p, chain_tables[b->frame_pointer], NULL);
	unwind__walk(&regs, &copy, &space, cache, w->frames, 64, &w->result);
	unwind_cache__stats(cache, &w->stats);
	unwind_cache__free(cache);
}

/* The frames of _start -> start_main -> main -> a -> b -> c -> leaf, leaf's loop first. */
static uint32_t true_frames(const struct chain_build *b, uint64_t *want)
{
	const uint64_t frames[] = { at(PC_LEAF_LOOP), at(b->ra_c), at(b->ra_b), at(b->ra_a),
				    at(b->ra_main_a), at(RA_START_MAIN), at(RA_START) };

	memcpy(want, frames, sizeof(frames));
	return sizeof(frames) / sizeof(frames[0]);
}

/* Frames 1..n-2 (c up to start_main: the callers of frames without CFI) were found so. */
static bool found_by(const struct walk *w, enum unwind_found how)
{
	for (uint32_t i = 1; i + 1 < w->result.nr_frames; i++) {
		if (w->frames[i].found != how)
			return false;
	}
	return w->result.nr_frames > 2;
}

static void test_analysis(const struct chain_build *b, bool symbols)
{
	struct nocfi_model m = { .analyze = true, .symbols = symbols };
	const char *how = symbols ? "from the start" : "forward";
	struct sim_stack s;
	uint64_t want[8];
	uint32_t n = true_frames(b, want);
	struct walk w;

	sim_main_path_to_leaf(&s, b, NULL);
	walk(&m, b, &s, at(PC_LEAF_LOOP), false, &w);
	check(w.result.end == UNWIND_END_COMPLETE && frames_are(w.frames, w.result.nr_frames, want, n),
	      "%s, analysis %s: every frame of the chain (%s)", b->file, how,
	      frames_text(w.frames, w.result.nr_frames));
	check(found_by(&w, UNWIND_FOUND_ANALYSIS) && w.frames[n - 1].found == UNWIND_FOUND_CFI,
	      "%s, analysis %s: the callers of code without CFI were found by analysis, _start by CFI",
	      b->file, how);
	check(w.result.found == (1u << UNWIND_FOUND_CONTEXT | 1u << UNWIND_FOUND_ANALYSIS |
				 1u << UNWIND_FOUND_CFI),
	      "%s, analysis %s: the walk reports the ways it found frames (%#x)", b->file, how,
	      w.result.found);
}

/* The walk's frames from the i-th on are want's pcs. */
static bool same_pcs(const struct walk *w, uint32_t i, const uint64_t *want, uint32_t n)
{
	if (w->result.nr_frames != i + n)
		return false;
	for (uint32_t k = 0; k < n; k++) {
		if (w->frames[i + k].pc != want[k])
			return false;
	}
	return true;
}

/* The frame-pointer build without analysis: main, a, b and c keep frame records, leaf
 * does not, so leaf's own rows stay (it is given CFI here) and the rest are frame records. */
static void test_frame_records(void)
{
	struct nocfi_model m = { .analyze = false };
	const struct chain_build *b = &CHAIN_FP;
	struct sim_stack s;
	uint64_t want[8];
	uint32_t n = true_frames(b, want);
	struct walk w;

	sim_main_path_to_leaf(&s, b, NULL);
	/* from c's frame, as a walk from leaf (with CFI) would reach it */
	s.sp += LOCALS_LEAF + 8;
	walk(&m, b, &s, at(b->ra_c) - 1, false, &w);
	check(w.result.end == UNWIND_END_COMPLETE && same_pcs(&w, 1, want + 2, n - 2) &&
		      w.frames[1].found == UNWIND_FOUND_FRAME_POINTER &&
		      w.stats.nocfi_frames[UNWIND_FOUND_FRAME_POINTER] == 4,
	      "chain_fp, no analysis: b, a, main and start_main by c's, b's, a's and main's frame records (%s)",
	      frames_text(w.frames, w.result.nr_frames));
}

/* The no-frame-pointer build without analysis, leaf without CFI: its caller only by a
 * scan, which must pass over a code pointer that follows no call and a return address
 * after a call into another function, planted in leaf's locals. (A scan's trial walk does
 * not scan again: with every function of the chain without CFI and no analysis, nothing
 * would complete.) */
static void test_scan(void)
{
	struct nocfi_model m = { .analyze = false, .symbols = true, .nocfi_from = CHAIN_LEAF };
	const struct chain_build *b = &CHAIN_NOFP;
	struct sim_stack s;
	uint64_t want[8];
	uint32_t n = true_frames(b, want);
	struct walk w;

	sim_main_path_to_leaf(&s, b, NULL);
	sim_store(&s, s.sp, at(CHAIN_A));          /* a function's first byte: no call before it */
	sim_store(&s, s.sp + 8, at(b->ra_main_a)); /* after main's call of a, not of leaf */
	walk(&m, b, &s, at(PC_LEAF_LOOP), false, &w);
	check(w.result.nr_frames > 1 && w.frames[1].pc == at(b->ra_c) &&
		      w.frames[1].found == UNWIND_FOUND_SCAN,
	      "scan: leaf's caller c found by scanning (%s)", frames_text(w.frames, w.result.nr_frames));
	check(w.stats.scan_rejected_code == 2 && w.stats.scan_rejected_walk == 0,
	      "scan: both decoys rejected by their code (%lu), and nothing by a walk (%lu)",
	      (unsigned long)w.stats.scan_rejected_code, (unsigned long)w.stats.scan_rejected_walk);
	check(w.result.end == UNWIND_END_COMPLETE && frames_are(w.frames, w.result.nr_frames, want, n),
	      "scan: then every frame of the chain, by scans and CFI (%s)",
	      frames_text(w.frames, w.result.nr_frames));
	walk(&m, b, &s, at(PC_LEAF_LOOP), true, &w);
	check(w.result.end == UNWIND_END_NO_CFI && w.result.nr_frames == 1,
	      "scan: with scanning off, the walk stops at leaf, no CFI");
}

/* A scan's candidate must also lead to the stack's start: a return address after a call of
 * leaf (c's) whose frame above is garbage is rejected by its trial walk. */
static void test_scan_trial(void)
{
	struct nocfi_model m = { .analyze = false, .symbols = true, .nocfi_from = CHAIN_LEAF };
	const struct chain_build *b = &CHAIN_NOFP;
	struct sim_stack s;
	struct walk w;

	sim_main_path_to_leaf(&s, b, NULL);
	/* a stale copy of c's return address right at sp: c's frame would then start at
	 * sp + 8, where leaf's locals (SIM_FILL) lie, not b's return address */
	sim_store(&s, s.sp, at(b->ra_c));
	walk(&m, b, &s, at(PC_LEAF_LOOP), false, &w);
	check(w.stats.scan_rejected_walk >= 1 && w.frames[1].pc == at(b->ra_c) &&
		      w.result.end == UNWIND_END_COMPLETE && w.result.nr_frames == 7,
	      "scan: a stale return address whose walk does not reach the start is passed over (%lu rejected)",
	      (unsigned long)w.stats.scan_rejected_walk);
}

/* A stale return address whose walk does reach the start: leaf's locals hold b's return
 * address after its call of c, and the words that make b's frame there lead on to main
 * (main's return address after its call of a), start_main and _start. leaf has no symbol,
 * so a direct call below it may be into it and the scan is not sure of any candidate; b's
 * frame is passed over as stale, its caller having called a (a symbol's start), not b, and
 * c is found. */
static void test_scan_stale(void)
{
	struct nocfi_model m = { .analyze = false, .symbols = true, .unnamed_from = CHAIN_LEAF,
				 .nocfi_from = CHAIN_LEAF };
	const struct chain_build *b = &CHAIN_NOFP;
	struct sim_stack s;
	uint64_t want[8];
	uint32_t n = true_frames(b, want);
	struct walk w;

	sim_main_path_to_leaf(&s, b, NULL);
	/* b's frame at sp + 8: its CFA at sp + 0x38, main's at sp + 0x48, start_main's at
	 * sp + 0xd8 */
	sim_store(&s, s.sp, at(b->ra_b));
	sim_store(&s, s.sp + 0x30, at(b->ra_main_a));
	sim_store(&s, s.sp + 0x40, at(RA_START_MAIN));
	sim_store(&s, s.sp + 0xd0, at(RA_START));
	walk(&m, b, &s, at(PC_LEAF_LOOP), false, &w);
	check(w.stats.scan_rejected_stale == 1 && w.result.end == UNWIND_END_COMPLETE &&
		      frames_are(w.frames, w.result.nr_frames, want, n),
	      "scan: a stale return address whose walk reaches the start is passed over as stale (%lu), and the chain found (%s)",
	      (unsigned long)w.stats.scan_rejected_stale, frames_text(w.frames, w.result.nr_frames));
}

/* A callee that moved its return address into its caller's top word (sljit's fast calls:
 * pop (%rsp)) runs with its caller's rsp: CFA = rsp + 0, the return address at CFA + 0.
 * leaf is taken to be one: c's frame from sp, c's return address into it at sp. The walk
 * goes on from c with the same sp; a return address that names the frame's own pc again
 * at the same sp is no caller. */
static void test_return_address_in_caller(void)
{
	const struct code_rules moved = { .cfa = UNWIND_CFA_SP_OFFSET, .cfa_offset = 0,
					  .ra_offset = 0, .rbp = UNWIND_RBP_UNCHANGED,
					  .rbx = UNWIND_RBX_UNCHANGED };
	struct nocfi_model m = { .analyze = true, .nocfi_from = CHAIN_LEAF, .fixed = &moved };
	const struct chain_build *b = &CHAIN_NOFP;
	struct sim_stack s;
	uint64_t want[8];
	uint32_t n = true_frames(b, want);
	struct walk w;

	sim_main_path_to_leaf(&s, b, NULL);
	s.sp += LOCALS_LEAF + 8; /* c's sp */
	sim_store(&s, s.sp, at(b->ra_c));
	walk(&m, b, &s, at(PC_LEAF_LOOP), false, &w);
	check(w.result.end == UNWIND_END_COMPLETE && frames_are(w.frames, w.result.nr_frames, want, n) &&
		      w.frames[1].found == UNWIND_FOUND_ANALYSIS,
	      "return address moved into the caller's top word: the caller at the same sp, then every frame (%s)",
	      frames_text(w.frames, w.result.nr_frames));
	sim_store(&s, s.sp, at(PC_LEAF_LOOP));
	walk(&m, b, &s, at(PC_LEAF_LOOP), true, &w);
	check(w.result.end != UNWIND_END_COMPLETE && w.result.nr_frames == 1,
	      "the frame's own pc again at the same sp is no caller (%s)",
	      unwind_end__name(w.result.end));
}

/* A callee that popped its return address into a register (sljit's fast calls: pop %r8,
 * or PCRE2's reload into rax before push %rax; ret) runs with its caller's rsp: CFA = rsp
 * + 0, the return address in the register. leaf is taken to be one, called by c. The
 * sampled register is read where the sample holds it; else the word at the CFA (the
 * caller's top word, where the reload read it from) is taken, checked as any caller. */
static void test_return_address_in_register(void)
{
	const struct code_rules in_r8 = { .cfa = UNWIND_CFA_SP_OFFSET, .cfa_offset = 0,
					  .ra_in_register = true, .ra_register = UNWIND_DWARF_R8,
					  .rbp = UNWIND_RBP_UNCHANGED, .rbx = UNWIND_RBX_UNCHANGED };
	struct nocfi_model m = { .analyze = true, .nocfi_from = CHAIN_LEAF, .fixed = &in_r8 };
	const struct chain_build *b = &CHAIN_NOFP;
	struct sim_stack s;
	uint64_t want[8];
	uint32_t n = true_frames(b, want);
	struct walk w;

	sim_main_path_to_leaf(&s, b, NULL);
	s.sp += LOCALS_LEAF + 8; /* c's sp */
	sim_store(&s, s.sp, 0x1234); /* c's top word: no return address */
	m.r8_valid = true;
	m.r8 = at(b->ra_c);
	walk(&m, b, &s, at(PC_LEAF_LOOP), true, &w);
	check(w.result.end == UNWIND_END_COMPLETE && frames_are(w.frames, w.result.nr_frames, want, n) &&
		      w.stats.analysis_ra_register == 1 && w.stats.analysis_ra_top_word == 0,
	      "return address in r8, sampled: the caller at the same sp, then every frame (%s; %lu read)",
	      frames_text(w.frames, w.result.nr_frames), (unsigned long)w.stats.analysis_ra_register);
	m.r8_valid = false; /* a capture older than r8 */
	walk(&m, b, &s, at(PC_LEAF_LOOP), true, &w);
	check(w.result.end != UNWIND_END_COMPLETE && w.result.nr_frames == 1,
	      "return address in a register the sample lacks, no return address in the top word: no caller (%s)",
	      unwind_end__name(w.result.end));
	sim_store(&s, s.sp, at(b->ra_c));
	walk(&m, b, &s, at(PC_LEAF_LOOP), true, &w);
	check(w.result.end == UNWIND_END_COMPLETE && frames_are(w.frames, w.result.nr_frames, want, n) &&
		      w.stats.analysis_ra_top_word == 1,
	      "return address in a register the sample lacks: the caller's top word taken (%s; %lu so)",
	      frames_text(w.frames, w.result.nr_frames), (unsigned long)w.stats.analysis_ra_top_word);
}

int main(void)
{
	size_t len;

	for (int fp = 0; fp < 2; fp++) {
		const char *file = fp ? CHAIN_FP.file : CHAIN_NOFP.file;

		chain_tables[fp] = fixture_table(file);
		chain_files[fp] = fixture_read(file, &len);
		if (len < CHAIN_TEXT_SEGMENT) {
			fprintf(stderr, "%s: shorter than its text segment\n", file);
			return 1;
		}
	}
	test_analysis(&CHAIN_NOFP, false);
	test_analysis(&CHAIN_NOFP, true);
	test_analysis(&CHAIN_FP, false);
	test_analysis(&CHAIN_FP, true);
	test_frame_records();
	test_scan();
	test_scan_trial();
	test_scan_stale();
	test_return_address_in_caller();
	test_return_address_in_register();
	return failures ? 1 : 0;
}
