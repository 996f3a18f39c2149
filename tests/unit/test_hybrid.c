/* Unit tests of the choice between the kernel's frame-pointer chain and the DWARF walk
 * (user/unwind/hybrid.h) over the pinned call chain (tests/fixtures/chain.S): samples
 * built byte by byte from a stack laid out by chain.S's prologues, with the chain the
 * kernel's walk reads from it, in a model process. Each case names the frames and the
 * method a right answer has, from the return addresses objdump shows in the pinned
 * files. No BPF, no root, no live process. Prints one "ok - NAME" / "not ok - NAME" line
 * per check. */
#include "fixture.h"

#include "binary/symbols.h"
#include "unwind/hybrid.h"
#include "unwind/x86_code.h"

static struct unwind_table *chain_tables[2];

/* ---- the model process, as the session's callbacks see it ---- */

static bool model_is_mapped(void *ctx, uint64_t pc)
{
	return model_find(ctx, pc) != NULL;
}

/* As the resolver does it: within ELF_ENTRY_CODE_MAX bytes from the ELF entry point. */
static bool model_is_entry_code(void *ctx, uint64_t pc, bool caller)
{
	const struct model_map *m = model_find(ctx, pc);
	uint64_t vaddr;

	if (!m || !m->entry)
		return false;
	vaddr = pc - m->bias - (caller ? 1 : 0);
	return vaddr >= m->entry && vaddr - m->entry < ELF_ENTRY_CODE_MAX;
}

/* start_main plays glibc's __libc_start_call_main: the chain's start-up routine. */
static bool model_in_start_routine(void *ctx, uint64_t pc)
{
	const struct model_map *m = model_find(ctx, pc);
	uint64_t vaddr = pc - CHAIN_BIAS - 1;

	return m && m->start == CHAIN_BIAS && vaddr >= CHAIN_START_MAIN && vaddr < CHAIN_MAIN;
}

/* jit_code, which has no CFI, plays a function whose entry its binary names (as DT_INIT
 * names crti.o's _init). */
static bool model_is_function_entry(void *ctx, uint64_t pc)
{
	(void)ctx;
	return pc == at(CHAIN_JIT_CODE);
}

static struct model_process process;

/* When set, the space analyses code without CFI with it and knows no function entry. */
static unwind_analyze_fn analyze_hook;

static struct hybrid_space model_space(const struct chain_build *b)
{
	model_init(&process, chain_tables[b->frame_pointer], NULL);
	return (struct hybrid_space){
		/* one id per build (and analysis): the hybrid's rule cache is keyed by it */
		.walk = { .find_map = model_find_map, .ctx = &process,
			  .id = 1 + b->frame_pointer + (analyze_hook ? 2 : 0),
			  .code = { .analyze = analyze_hook },
			  .symbols = { .is_function_entry =
					       analyze_hook ? NULL : model_is_function_entry,
				       .is_entry_code = model_is_entry_code } },
		.is_mapped = model_is_mapped,
		.in_start_routine = model_in_start_routine,
		.pid = MODEL_PID,
	};
}

/* What the thread hook was told. */
static struct {
	unsigned calls;
	uint32_t tid;
	uint64_t base, fp_tail, fp_tail_ip;
} told;

static void thread_hook(void *ctx, uint32_t tid, uint64_t base, uint64_t fp_tail,
			uint64_t fp_tail_ip)
{
	(void)ctx;
	told.calls++;
	told.tid = tid;
	told.base = base;
	told.fp_tail = fp_tail;
	told.fp_tail_ip = fp_tail_ip;
}

static struct hybrid *new_hybrid(bool dwarf)
{
	struct hybrid *h;

	if (hybrid__new(dwarf, &h) != 0)
		abort();
	hybrid__set_thread_hook(h, thread_hook, NULL);
	memset(&told, 0, sizeof(told));
	return h;
}

/* ---- samples ---- */

/* The window the kernel copies from the chain's last record (kernel/hprof.bpf.c's
 * copy_fp_tail): up to HPROF_FP_TAIL_WINDOW bytes, not past the stack's end, and only
 * when the stack copy does not hold them. */
static uint32_t kernel_tail_len(uint64_t sp, uint32_t stack_len, uint64_t tail)
{
	uint64_t len = HPROF_FP_TAIL_WINDOW, copy_end = sp + stack_len;

	if (tail == 0 || tail < sp || tail >= SIM_STACK_TOP)
		return 0;
	if (SIM_STACK_TOP - tail < len)
		len = (SIM_STACK_TOP - tail) & ~7ull;
	if (tail < copy_end && copy_end - tail >= len)
		return 0;
	return (uint32_t)len;
}

struct sampled {
	uint64_t ips[32];
	uint32_t nr_ips;
	uint64_t fp_tail_frame;
	struct hprof_sample *sample;
	struct unwind_frame out[HYBRID_MAX_FRAMES];
	uint32_t n;
	enum stack_method method;
	enum unwind_end reason;
};

/* A sample of s stopped at ip, with stack_len bytes copied from sp (at most to the
 * stack's end) and, with tail, the kernel's window at the chain's end; then the hybrid's
 * stack for it. */
static void sample_and_pick(struct hybrid *h, const struct chain_build *b,
			    const struct sim_stack *s, uint64_t ip, uint64_t stack_len, bool tail,
			    uint32_t flags, uint32_t tid, struct sampled *r)
{
	const struct hybrid_space space = model_space(b);
	struct sample_spec spec = {
		.ip = ip, .sp = s->sp, .bp = s->bp, .tid = tid, .flags = flags,
	};
	struct user_stack stack;
	size_t size;

	if (stack_len > SIM_STACK_TOP - s->sp)
		stack_len = SIM_STACK_TOP - s->sp;
	r->nr_ips = kernel_fp_chain(s, ip, s->bp, r->ips, 32, &r->fp_tail_frame);
	spec.ips = r->ips;
	spec.nr_ips = r->nr_ips;
	spec.fp_tail_frame = r->fp_tail_frame;
	spec.stack_len = (uint32_t)stack_len;
	spec.tail_len = tail ? kernel_tail_len(s->sp, spec.stack_len, r->fp_tail_frame) : 0;
	r->sample = build_sample(s, &spec, &size);
	stack = hybrid__user_stack(h, &space, r->sample, r->out);
	r->n = stack.nr_frames;
	r->method = stack.method;
	r->reason = stack.reason;
	free(r->sample);
	r->sample = NULL;
}

static bool chain_is(const struct sampled *r, const uint64_t *want, uint32_t nr_want)
{
	if (r->nr_ips != nr_want)
		return false;
	for (uint32_t i = 0; i < nr_want; i++) {
		if (r->ips[i] != want[i])
			return false;
	}
	return true;
}

static void report(bool ok, const struct sampled *r, const char *what)
{
	check(ok, "%s (got %s: %s%s%s)", what, hybrid__method_name(r->method),
	      frames_text(r->out, r->n), r->method == METHOD_TRUNCATED ? ", " : "",
	      r->method == METHOD_TRUNCATED ? hybrid__truncated_root(r->reason) : "");
}

static bool picked(const struct sampled *r, enum stack_method method, const uint64_t *want,
		   uint32_t nr_want)
{
	return r->method == method && frames_are(r->out, r->n, want, nr_want);
}

/* thread_entry -> worker -> c [-> leaf] in the frame-pointer build. */
static void sim_thread_path(struct sim_stack *s, bool to_leaf)
{
	const struct chain_build *b = &CHAIN_FP;

	sim_start(s);
	sim_call(s, RA_THREAD_ENTRY);
	sim_enter(s, true, b->locals_worker);
	sim_call(s, b->ra_worker);
	sim_enter(s, true, b->locals_c);
	if (!to_leaf)
		return;
	sim_call(s, b->ra_c);
	sim_enter(s, false, LOCALS_LEAF);
}

/* main -> jit_code -> c -> leaf: jit_code keeps a frame record but has no CFI. */
static void sim_jit_path(struct sim_stack *s, const struct chain_build *b)
{
	sim_start(s);
	sim_call(s, RA_START);
	sim_enter(s, false, LOCALS_START_MAIN);
	sim_call(s, RA_START_MAIN);
	sim_enter(s, b->frame_pointer, b->locals_main);
	sim_call(s, b->ra_main_jit);
	sim_enter(s, true, 0);
	sim_call(s, RA_JIT_CODE);
	sim_enter(s, b->frame_pointer, b->locals_c);
	sim_call(s, b->ra_c);
	sim_enter(s, false, LOCALS_LEAF);
}

/* Back from leaf to c's call instruction (c's body, after its prologue). */
static uint64_t sim_back_to_c(struct sim_stack *s, const struct chain_build *b)
{
	s->sp += LOCALS_LEAF + 8;
	return at(b->ra_c - 5);
}

/* ---- the cases ---- */

/* A right chain from a leaf that keeps its frame pointer, to thread_entry (whose return
 * address is undefined): the chain as it is. */
static void test_fp_complete(void)
{
	const struct chain_build *b = &CHAIN_FP;
	const uint64_t want[] = { at(b->ra_c - 5), at(b->ra_worker), at(RA_THREAD_ENTRY) };
	struct hybrid *h = new_hybrid(true);
	static struct sampled r;
	struct sim_stack s;

	sim_thread_path(&s, false);
	sample_and_pick(h, b, &s, at(b->ra_c - 5), UINT32_MAX, true, 0, 1, &r);
	report(picked(&r, METHOD_FP, want, 3) && hybrid__stats(h)->fp_complete == 1, &r,
	       "fp: c's chain reaches thread_entry and c keeps rbp: fp, the chain as it is");
	hybrid__free(h);
}

/* leaf keeps no frame pointer: the kernel's chain skips c, though it reaches the entry.
 * The walk over the copy has every frame. */
static void test_leaf_without_fp(void)
{
	const struct chain_build *b = &CHAIN_FP;
	const uint64_t chain[] = { at(PC_LEAF_LOOP), at(b->ra_worker), at(RA_THREAD_ENTRY) };
	const uint64_t want[] = { at(PC_LEAF_LOOP), at(b->ra_c), at(b->ra_worker),
				  at(RA_THREAD_ENTRY) };
	struct hybrid *h = new_hybrid(true);
	static struct sampled r;
	struct sim_stack s;

	sim_thread_path(&s, true);
	sample_and_pick(h, b, &s, at(PC_LEAF_LOOP), UINT32_MAX, true, 0, 7, &r);
	check(chain_is(&r, chain, 3), "fp, leaf: the kernel's chain skips c (leaf keeps no rbp)");
	report(picked(&r, METHOD_DWARF, want, 4), &r,
	       "fp, leaf: the walk over the copy, c included: dwarf");
	check(told.calls == 1 && told.tid == 7 && told.base == SIM_START_SP && told.fp_tail == 0,
	      "fp, leaf: the thread's stack base (worker's CFA) is told, no chain end (the "
	      "chain was wrong)");
	hybrid__free(h);

	/* Without a copy there is nothing to find c with: the chain, which lacks it, is not
	 * taken as complete. */
	h = new_hybrid(true);
	sample_and_pick(h, b, &s, at(PC_LEAF_LOOP), 0, false, 0, 7, &r);
	report(picked(&r, METHOD_TRUNCATED, chain, 3) && r.reason == UNWIND_END_NO_COPY, &r,
	       "fp, leaf, no copy: the chain that skips c is truncated, no stack copy");
	hybrid__free(h);
}

/* The walk runs out of copy in c; c owns the rbp the chain starts from, so the chain
 * carries on from c's caller, and from main's frame record the walk over the kernel's
 * window reaches _start. Without the window, the frames learned for the thread finish
 * it; a thread that learned nothing is truncated, copy too short. */
static void test_stitch(void)
{
	const struct chain_build *b = &CHAIN_FP;
	const uint64_t chain[] = { at(PC_LEAF_LOOP), at(b->ra_b), at(b->ra_a), at(b->ra_main_a),
				   at(RA_START_MAIN) };
	const uint64_t want[] = { at(PC_LEAF_LOOP), at(b->ra_c), at(b->ra_b), at(b->ra_a),
				  at(b->ra_main_a), at(RA_START_MAIN), at(RA_START) };
	struct hybrid *h = new_hybrid(true);
	static struct sampled r;
	uint64_t main_record;
	struct sim_stack s;

	sim_main_path_to_leaf(&s, b, &main_record);
	/* 0x58 bytes: leaf's frame and c's up to its saved rbp, not b's return address */
	sample_and_pick(h, b, &s, at(PC_LEAF_LOOP), 0x58, true, 0, 1, &r);
	check(chain_is(&r, chain, 5) && r.fp_tail_frame == main_record,
	      "stitch: the kernel's chain skips c and ends at main's record");
	report(picked(&r, METHOD_DWARF_FP, want, 7) && hybrid__stats(h)->fp_tails == 1, &r,
	       "stitch: walk leaf, c; chain b, a, main, start_main; walk to _start: dwarf+fp");

	/* the walk from main's record reached _start: thread 1 has learned where its chains
	 * end and the frame beyond */
	sample_and_pick(h, b, &s, at(PC_LEAF_LOOP), 0x58, false, 0, 1, &r);
	report(picked(&r, METHOD_DWARF_FP, want, 7) && hybrid__stats(h)->fp_tails_learned == 1,
	       &r, "stitch without the window, same thread: the learned _start frame ends it");

	sample_and_pick(h, b, &s, at(PC_LEAF_LOOP), 0x58, false, 0, 2, &r);
	report(picked(&r, METHOD_TRUNCATED, want, 2) && r.reason == UNWIND_END_COPY_SHORT &&
		       strcmp(hybrid__truncated_root(r.reason), "[truncated: copy too short]") == 0,
	       &r, "stitch without the window, another thread: truncated after c, copy too short");

	/* the kernel found the chain's end off the sampled stack (SBCL's Lisp stack leads
	 * back to the C stack): a chain that ends in the start routine is complete there */
	sample_and_pick(h, b, &s, at(PC_LEAF_LOOP), 0x58, false, SAMPLE_FP_TAIL_OFF_STACK, 3, &r);
	report(picked(&r, METHOD_DWARF_FP, want, 6), &r,
	       "stitch, the chain's end off the sampled stack: leaf, c, then the chain to start_main");

	/* 0x10 bytes: not even leaf's return address. leaf did not set the rbp the chain
	 * starts from, so joining there would lose c */
	sample_and_pick(h, b, &s, at(PC_LEAF_LOOP), 0x10, true, 0, 2, &r);
	report(picked(&r, METHOD_TRUNCATED, want, 1) && r.reason == UNWIND_END_COPY_SHORT, &r,
	       "no stitch where the walk stops in a function without rbp (leaf): truncated");
	hybrid__free(h);
}

/* A leaf-only copy as the kernel makes one (HPROF_LEAF_COPY bytes), sized for the simulated
 * stack, which is smaller than a real one: it ends in start_main's frame. */
#define SIM_LEAF_COPY 256
_Static_assert(SIM_LEAF_COPY <= HPROF_LEAF_COPY, "no larger than the kernel's");

/* c keeps its frame pointer; the copy (SIM_LEAF_COPY bytes) ends in start_main, whose
 * frame is not on the chain: the chain as it is, finished by a walk from main's record
 * over the kernel's window. The walk reached the entry, so the thread's base and chain
 * end are learned; a later sample that copied only the leaf gets the learned frames. */
static void test_finish_and_learn(void)
{
	const struct chain_build *b = &CHAIN_FP;
	const uint64_t want[] = { at(b->ra_c - 5), at(b->ra_b), at(b->ra_a), at(b->ra_main_a),
				  at(RA_START_MAIN), at(RA_START) };
	struct hybrid *h = new_hybrid(true);
	static struct sampled r;
	uint64_t main_record, ip;
	struct sim_stack s;

	sim_main_path_to_leaf(&s, b, &main_record);
	ip = sim_back_to_c(&s, b);
	sample_and_pick(h, b, &s, ip, SIM_LEAF_COPY, true, 0, 3, &r);
	report(picked(&r, METHOD_DWARF_FP, want, 6) && hybrid__stats(h)->fp_tails == 1, &r,
	       "finish: the chain from c to start_main, then _start walked from main's record");
	check(told.calls == 1 && told.tid == 3 && told.base == SIM_START_SP &&
		      told.fp_tail == main_record && told.fp_tail_ip == at(RA_START_MAIN),
	      "finish: the thread's base, and its chains' end at main's record, are told");

	sample_and_pick(h, b, &s, ip, SIM_LEAF_COPY, false, SAMPLE_COPY_FP, 3, &r);
	report(picked(&r, METHOD_DWARF_FP, want, 6) && hybrid__stats(h)->fp_tails_learned == 1 &&
		       told.calls == 1,
	       &r, "learned: a leaf-only copy of the thread ends with the learned _start frame");

	sample_and_pick(h, b, &s, ip, SIM_LEAF_COPY, false, SAMPLE_COPY_FP, 4, &r);
	report(picked(&r, METHOD_TRUNCATED, want, 5) && r.reason == UNWIND_END_COPY_SHORT, &r,
	       "learned: another thread has learned nothing: truncated at start_main");

	/* the kernel's entry goes with the thread: a later thread given the tid would claim it */
	hybrid__forget_thread(h, 4);
	check(told.calls == 1, "exit: a thread never learned tells the kernel nothing");
	hybrid__forget_thread(h, 3);
	check(told.calls == 2 && told.tid == 3 && told.base == 0 && told.fp_tail == 0,
	      "exit: a learned thread's exit tells the kernel to forget it");
	hybrid__forget_thread(h, 3);
	check(told.calls == 2, "exit: told once");
	hybrid__free(h);
}

/* jit_code has a frame record but no CFI: the walk stops there, and the chain, which
 * holds jit_code's record, carries on. */
static void test_jit(void)
{
	const struct chain_build *builds[] = { &CHAIN_NOFP, &CHAIN_FP };

	for (unsigned i = 0; i < 2; i++) {
		const struct chain_build *b = builds[i];
		const uint64_t want[] = { at(PC_LEAF_LOOP), at(b->ra_c), at(RA_JIT_CODE),
					  at(b->ra_main_jit), at(RA_START_MAIN), at(RA_START) };
		struct hybrid *h = new_hybrid(true);
		static struct sampled r;
		struct sim_stack s;

		sim_jit_path(&s, b);
		sample_and_pick(h, b, &s, at(PC_LEAF_LOOP), UINT32_MAX, true, 0, 1, &r);
		report(picked(&r, METHOD_DWARF_FP, want, 6), &r,
		       b->frame_pointer
			       ? "fp: walk to jit_code (no CFI), chain to start_main, walk to _start"
			       : "nofp: walk to jit_code (no CFI), its record to main, walk to _start");
		hybrid__free(h);
	}
}

/* Frame pointers only (--no-dwarf): a chain ending in the start-up routine is complete;
 * one ending elsewhere is broken. With DWARF but no copy, a broken chain is truncated,
 * no stack copy. */
/* The stack as main has just called jit_code: _start, start_main and main's frames. */
static void sim_main_calls_jit_code(struct sim_stack *s, const struct chain_build *b)
{
	sim_start(s);
	sim_call(s, RA_START);
	sim_enter(s, false, LOCALS_START_MAIN);
	sim_call(s, RA_START_MAIN);
	sim_enter(s, true, b->locals_main);
	sim_call(s, b->ra_main_jit);
}

/* At jit_code's first instruction (no CFI, a known function entry), rbp is still main's:
 * the kernel's chain goes from jit_code to main's caller, skipping main, and would join a
 * walk stopped at jit_code as if jit_code owned rbp (dwarf+fp without main). The psABI's
 * rule at the entry gives every frame. */
static void test_function_entry(void)
{
	const struct chain_build *b = &CHAIN_FP;
	const uint64_t want[] = { at(CHAIN_JIT_CODE), at(b->ra_main_jit), at(RA_START_MAIN),
				  at(RA_START) };
	struct hybrid *h = new_hybrid(true);
	static struct sampled r;
	struct sim_stack s;

	sim_main_calls_jit_code(&s, b);
	sample_and_pick(h, b, &s, at(CHAIN_JIT_CODE), UINT32_MAX, true, 0, 1, &r);
	report(picked(&r, METHOD_DWARF, want, 4), &r,
	       "function entry without CFI: the walk from the psABI's rule, main kept");
	hybrid__free(h);
}

/* An analysis of jit_code's first instruction that finds the return address at rsp,
 * CFA = rsp + 8, but loses rbp (as Mono's JIT code lost it to a lea 0x0(%rbp),%rbp nop that
 * x86_code.c took for a write): main's CFA = rbp + 16 then stops the walk. No other pc is
 * analysed. */
static int model_analyze_entry(void *ctx, uint64_t pc, struct code_rules *rules)
{
	(void)ctx;
	if (pc != at(CHAIN_JIT_CODE))
		return CODE_UNDECODABLE;
	memset(rules, 0, sizeof(*rules));
	rules->cfa = UNWIND_CFA_SP_OFFSET;
	rules->cfa_offset = 8;
	rules->rbp = UNWIND_RBP_UNDEFINED;
	rules->rbx = UNWIND_RBX_UNCHANGED;
	rules->ra_offset = -8;
	return CODE_OK;
}

/* The same sample with no function entry known, but the analysis of the code: its rules
 * say the leaf keeps no frame pointer (Mono's JIT code keeps none). The walk stops at main;
 * the chain, which skips main, must not finish it: the stack stays truncated, every frame
 * it has right. */
static void test_analysed_leaf_without_fp(void)
{
	const struct chain_build *b = &CHAIN_FP;
	const uint64_t want[] = { at(CHAIN_JIT_CODE), at(b->ra_main_jit) };
	struct hybrid *h = new_hybrid(true);
	static struct sampled r;
	struct sim_stack s;

	sim_main_calls_jit_code(&s, b);
	analyze_hook = model_analyze_entry;
	sample_and_pick(h, b, &s, at(CHAIN_JIT_CODE), UINT32_MAX, true, 0, 1, &r);
	analyze_hook = NULL;
	report(picked(&r, METHOD_TRUNCATED, want, 2), &r,
	       "JIT code the analysis finds keeping no frame pointer, the walk stopped at main: "
	       "truncated, not the chain that skips main");
	hybrid__free(h);
}

static void test_without_walk(void)
{
	const struct chain_build *fp = &CHAIN_FP, *nofp = &CHAIN_NOFP;
	const uint64_t want_fp[] = { at(fp->ra_c - 5), at(fp->ra_b), at(fp->ra_a),
				     at(fp->ra_main_a), at(RA_START_MAIN) };
	const uint64_t want_jit[] = { at(PC_LEAF_LOOP), at(nofp->ra_main_jit) };
	struct hybrid *h = new_hybrid(false);
	static struct sampled r;
	struct sim_stack s;
	uint64_t ip;

	sim_main_path_to_leaf(&s, fp, NULL);
	ip = sim_back_to_c(&s, fp);
	sample_and_pick(h, fp, &s, ip, 0, false, 0, 1, &r);
	report(picked(&r, METHOD_FP, want_fp, 5), &r,
	       "no-dwarf: a chain ending in start_main (the start-up routine) is complete: fp");

	sim_jit_path(&s, nofp);
	sample_and_pick(h, nofp, &s, at(PC_LEAF_LOOP), 0, false, 0, 1, &r);
	report(picked(&r, METHOD_TRUNCATED, want_jit, 2) && r.reason == UNWIND_END_FP_ONLY &&
		       strcmp(hybrid__truncated_root(r.reason),
			      "[truncated: frame-pointer chain broken]") == 0,
	       &r, "no-dwarf: a chain ending in main is broken: truncated");
	hybrid__free(h);

	h = new_hybrid(true);
	sample_and_pick(h, nofp, &s, at(PC_LEAF_LOOP), 0, false, 0, 1, &r);
	report(picked(&r, METHOD_TRUNCATED, want_jit, 2) && r.reason == UNWIND_END_NO_COPY &&
		       strcmp(hybrid__truncated_root(r.reason), "[truncated: no stack copy]") == 0,
	       &r, "dwarf, no copy: a broken chain is truncated, no stack copy");
	hybrid__free(h);
}

int main(void)
{
	chain_tables[0] = fixture_table(CHAIN_NOFP.file);
	chain_tables[1] = fixture_table(CHAIN_FP.file);
	test_fp_complete();
	test_leaf_without_fp();
	test_stitch();
	test_finish_and_learn();
	test_jit();
	test_function_entry();
	test_analysed_leaf_without_fp();
	test_without_walk();
	unwind_table__free(chain_tables[0]);
	unwind_table__free(chain_tables[1]);
	return failures ? 1 : 0;
}
