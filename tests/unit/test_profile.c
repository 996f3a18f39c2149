/* Unit tests of the profile (user/output/profile.h) over the pinned fixtures: frames of
 * the chain (tests/fixtures/chain_nofp), of its stripped copy and of a pinned kallsyms,
 * aggregated and folded; the exact bytes of the folded output for a fixed input, and an
 * order that does not depend on the order samples came in. Then one sample through a
 * whole session (replay mode, the chain mapped from a maps text) to its folded line.
 * No BPF, no root, no live process. Prints one "ok - NAME" / "not ok - NAME" line per
 * check. */
#include "fixture.h"

#include "binary/ksyms.h"
#include "binary/modules.h"
#include "binary/name_cache.h"
#include "output/profile.h"
#include "session.h"

static struct module_registry *registry;
static struct ksyms *ksyms;
static uint32_t chain_id, stripped_id;

#define KERNEL_TIMER_IRQ 0xffffffff81002010ull /* in asm_sysvec_apic_timer_interrupt */

static struct frame user(uint32_t module, uint64_t addr, bool caller)
{
	return (struct frame){ .module = module, .flags = caller ? FRAME_CALLER : 0, .addr = addr };
}

/* leaf (at pc) to _start in chain_nofp's module, after prefix frames. */
static uint32_t main_path(struct frame *out, uint32_t module, uint64_t pc)
{
	const struct chain_build *b = &CHAIN_NOFP;
	const uint64_t ras[] = { b->ra_c, b->ra_b, b->ra_a, b->ra_main_a, RA_START_MAIN, RA_START };
	uint32_t n = 0;

	out[n++] = user(module, pc, false);
	for (unsigned i = 0; i < sizeof(ras) / sizeof(ras[0]); i++)
		out[n++] = user(module, ras[i], true);
	return n;
}

/* One sample to add: comm, root, frames, how many times. */
struct input {
	const char *comm, *root;
	struct frame frames[16];
	uint32_t n;
	unsigned count;
};

#define NR_INPUTS 9
static struct input inputs[NR_INPUTS];

static void make_inputs(void)
{
	struct input *in = inputs;

	/* the chain from leaf's loop, 3 times; from leaf's prologue (other address, same
	 * names) twice: one folded line of 5 */
	*in = (struct input){ "chain", NULL, .count = 3 };
	in->n = main_path(in->frames, chain_id, PC_LEAF_LOOP);
	in++;
	*in = (struct input){ "chain", NULL, .count = 2 };
	in->n = main_path(in->frames, chain_id, CHAIN_LEAF + 4);
	in++;
	/* truncated: leaf and c, under the reason's root */
	*in = (struct input){ "chain", "[truncated: copy too short]", .count = 1 };
	in->n = 2;
	memcpy(in->frames, inputs[0].frames, 2 * sizeof(struct frame));
	in++;
	/* a timer interrupt in the kernel over leaf */
	*in = (struct input){ "chain", NULL, .count = 1 };
	in->frames[0] = user(MODULE_KERNEL, KERNEL_TIMER_IRQ, false);
	in->n = 1 + main_path(in->frames + 1, chain_id, PC_LEAF_LOOP);
	in++;
	/* the stripped copy: named after the FDE holding each pc, _start at the entry */
	*in = (struct input){ "stripped", NULL, .count = 1 };
	in->n = main_path(in->frames, stripped_id, PC_LEAF_LOOP);
	in++;
	/* leaf called from an address no mapping holds */
	*in = (struct input){ "chain", NULL, .count = 1 };
	in->frames[0] = user(chain_id, PC_LEAF_LOOP, false);
	in->frames[1] = user(MODULE_UNMAPPED, 0x1005, true);
	in->n = 2;
	in++;
	/* a comm with the folded format's separator and a control character */
	*in = (struct input){ "we;ird\tname", NULL, .count = 1 };
	in->frames[0] = user(chain_id, PC_LEAF_LOOP, false);
	in->n = 1;
	in++;
	/* leaf's padding after its ret: no symbol, no FDE */
	*in = (struct input){ "chain", NULL, .count = 1 };
	in->frames[0] = user(chain_id, 0x415, false);
	in->n = 1;
	in++;
	/* no comm */
	*in = (struct input){ "", NULL, .count = 1 };
	in->frames[0] = user(chain_id, PC_LEAF_LOOP, false);
	in->n = 1;
}

/* Sorted lines, names merged (leaf's two addresses), separators and control characters
 * replaced. */
static const char FOLDED[] =
	"?;leaf 1\n"
	"chain;[truncated: copy too short];c;leaf 1\n"
	"chain;[unmapped]+0x1005;leaf 1\n"
	"chain;_start;start_main;main;a;b;c;leaf 5\n"
	"chain;_start;start_main;main;a;b;c;leaf;asm_sysvec_apic_timer_interrupt_[k] 1\n"
	"chain;chain_nofp+0x415 1\n"
	"stripped;_start;chain_nofp_stripped+0x2c0;chain_nofp_stripped+0x300;"
	"chain_nofp_stripped+0x340;chain_nofp_stripped+0x380;chain_nofp_stripped+0x3c0;"
	"chain_nofp_stripped+0x400 1\n"
	"we:ird?name;leaf 1\n";

static struct profile *profile_of(bool reversed, bool by_name)
{
	struct profile *p;

	if (profile__new(registry, ksyms, &p) != 0 || (by_name && profile__key_by_name(p) != 0))
		abort();
	for (unsigned k = 0; k < NR_INPUTS; k++) {
		const struct input *in = &inputs[reversed ? NR_INPUTS - 1 - k : k];

		for (unsigned c = 0; c < in->count; c++) {
			if (profile__add(p, in->comm, in->root, in->frames, in->n) != 0)
				abort();
		}
	}
	return p;
}

static char *folded(struct profile *p)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out || profile__write_folded(p, out) != 0)
		abort();
	fclose(out);
	return text;
}

/* The distinct stacks in for_each order, as "comm/root/innermost frame/count" lines. */
static int describe(void *ctx, const struct profile_stack *stack)
{
	FILE *out = ctx;

	fprintf(out, "%s/%s/%u:%#llx/%u/%llu\n", stack->comm, stack->root ? stack->root : "-",
		stack->frames[0].module, (unsigned long long)stack->frames[0].addr,
		stack->nr_frames, (unsigned long long)stack->count);
	return 0;
}

static char *stacks(struct profile *p)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out || profile__for_each_stack(p, describe, out) != 0)
		abort();
	fclose(out);
	return text;
}

static void test_folded(void)
{
	struct profile *p = profile_of(false, false), *q = profile_of(true, false);
	char *a = folded(p), *b = folded(q), *sa = stacks(p), *sb = stacks(q);
	char want_stacks[1024];

	check(profile__nr_stacks(p) == 9 && profile__nr_samples(p) == 12,
	      "9 distinct stacks, 12 samples (leaf's two addresses are two stacks)");
	check(strcmp(a, FOLDED) == 0, "folded output, exact bytes");
	if (strcmp(a, FOLDED) != 0)
		printf("# got:\n%s# want:\n%s", a, FOLDED);
	check(strcmp(a, b) == 0, "the same samples in reverse order: the same folded bytes");
	/* comm, then no root before a root, then frames innermost first by module (the
	 * kernel's 0 and [unmapped]'s 1 before files), address, flags */
	snprintf(want_stacks, sizeof(want_stacks),
		 "?/-/%u:0x409/1/1\n"
		 "chain/-/0:0x%llx/8/1\n"
		 "chain/-/%u:0x404/7/2\n"
		 "chain/-/%u:0x409/2/1\n"
		 "chain/-/%u:0x409/7/3\n"
		 "chain/-/%u:0x415/1/1\n"
		 "chain/[truncated: copy too short]/%u:0x409/2/1\n"
		 "stripped/-/%u:0x409/7/1\n"
		 "we;ird\tname/-/%u:0x409/1/1\n",
		 chain_id, (unsigned long long)KERNEL_TIMER_IRQ, chain_id, chain_id, chain_id,
		 chain_id, chain_id, stripped_id, chain_id);
	check(strcmp(sa, want_stacks) == 0 && strcmp(sa, sb) == 0,
	      "for_each_stack: an order fixed by comm, root and frames, whatever the input order");
	if (strcmp(sa, want_stacks) != 0)
		printf("# got:\n%s# want:\n%s", sa, want_stacks);
	free(a);
	free(b);
	free(sa);
	free(sb);
	profile__free(p);
	profile__free(q);
}

/* The distinct stacks in for_each order, named: "comm/root/frames outermost first/count". */
struct named_stacks {
	struct profile *p;
	FILE *out;
};

static int describe_named(void *ctx, const struct profile_stack *stack)
{
	struct named_stacks *ns = ctx;

	fprintf(ns->out, "%s/%s/", stack->comm, stack->root ? stack->root : "-");
	for (uint32_t i = stack->nr_frames; i-- > 0;)
		fprintf(ns->out, "%s,", profile__frame_name(ns->p, &stack->frames[i]));
	fprintf(ns->out, "/%llu\n", (unsigned long long)stack->count);
	return 0;
}

static char *named_stacks(struct profile *p)
{
	struct named_stacks ns = { .p = p };
	char *text = NULL;
	size_t len = 0;

	ns.out = open_memstream(&text, &len);
	if (!ns.out || profile__for_each_stack(p, describe_named, &ns) != 0)
		abort();
	fclose(ns.out);
	return text;
}

/* Keyed by name: leaf's two addresses are one stack; the outputs are those of the profile
 * keyed by address, in an order that does not depend on which address came first. */
static void test_by_name(void)
{
	struct profile *p = profile_of(false, true), *q = profile_of(true, true),
		       *by_addr = profile_of(false, false);
	char *a = folded(p), *b = folded(q), *sa = named_stacks(p), *sb = named_stacks(q);
	struct profile_memory mp, ma;

	check(profile__nr_stacks(p) == 8 && profile__nr_samples(p) == 12,
	      "by name: 8 distinct stacks, 12 samples (leaf's two addresses are one)");
	check(strcmp(a, FOLDED) == 0 && strcmp(b, FOLDED) == 0,
	      "by name: the same folded bytes as by address, in either input order");
	check(strcmp(sa, sb) == 0 && strstr(sa, "chain/-/_start,start_main,main,a,b,c,leaf,/5\n"),
	      "by name: for_each_stack in one order whatever the input order, leaf's samples as one");
	if (strcmp(sa, sb) != 0)
		printf("# in order:\n%s# reversed:\n%s", sa, sb);
	profile__memory(p, &mp);
	profile__memory(by_addr, &ma);
	check(mp.nodes < ma.nodes, "by name: fewer nodes than by address");
	check(profile__key_by_name(by_addr) == -EBUSY, "by name: refused once samples are counted");
	free(a);
	free(b);
	free(sa);
	free(sb);
	profile__free(p);
	profile__free(q);
	profile__free(by_addr);
}

/* Counting again (profile__recount_inline, after debug files were fetched) with no DWARF
 * to expand: the same stacks, counts and names, by address and by name; without
 * profile__expand_inline, nothing to do. */
static void test_recount(void)
{
	for (int by_name = 0; by_name <= 1; by_name++) {
		struct profile *p, *q = profile_of(false, by_name);
		char *before = folded(q), *stacks_before = stacks(q), *after, *stacks_after;
		int err;

		if (profile__new(registry, ksyms, &p) != 0 ||
		    (by_name && profile__key_by_name(p) != 0) || profile__expand_inline(p, true, true))
			abort();
		for (unsigned k = 0; k < NR_INPUTS; k++) {
			for (unsigned c = 0; c < inputs[k].count; c++) {
				if (profile__add(p, inputs[k].comm, inputs[k].root, inputs[k].frames,
						 inputs[k].n) != 0)
					abort();
			}
		}
		err = profile__recount_inline(p);
		after = folded(p);
		stacks_after = stacks(p);
		check(err == 0 && strcmp(after, before) == 0 && strcmp(stacks_after, stacks_before) == 0 &&
			      profile__nr_samples(p) == 12 && profile__nr_stacks(p) == profile__nr_stacks(q),
		      "recount%s: the same folded bytes, stacks and counts", by_name ? " by name" : "");
		if (strcmp(after, before) != 0)
			printf("# before:\n%s# after:\n%s", before, after);
		check(profile__recount_inline(q) == 0 && profile__nr_samples(q) == 12,
		      "recount%s without inline expansion: nothing done", by_name ? " by name" : "");
		free(before);
		free(after);
		free(stacks_before);
		free(stacks_after);
		profile__free(p);
		profile__free(q);
	}
}

static bool named(struct profile *p, struct frame f, const char *want)
{
	const char *name = profile__frame_name(p, &f);
	bool ok = name && strcmp(name, want) == 0;

	if (!ok)
		printf("# %u:%#llx is named %s, not %s\n", f.module, (unsigned long long)f.addr,
		       name ? name : "(null)", want);
	return ok;
}

/* Frame names one by one, each from what the fixture holds at that address. */
static void test_frame_names(void)
{
	struct profile *p;

	if (profile__new(registry, ksyms, &p) != 0)
		abort();
	check(named(p, user(chain_id, CHAIN_NOFP.ra_c, true), "c"),
	      "a return address names the call before it: c");
	check(named(p, user(chain_id, CHAIN_C, false), "c") &&
		      named(p, user(chain_id, CHAIN_C - 1, false), "chain_nofp+0x3bf"),
	      "an exact pc: c's first byte is c, the byte before is padding (no symbol, no FDE)");
	check(named(p, user(chain_id, RA_START_MAIN_EXIT, true), "start_main") &&
		      named(p, user(stripped_id, RA_START_MAIN_EXIT, true),
			    "chain_nofp_stripped+0x2c0"),
	      "a return address just past its function (a call as its last instruction) names it");
	check(named(p, user(chain_id, CHAIN_A, true), "a"),
	      "a return address at a's first byte (after main's padding) names a");
	check(named(p, user(stripped_id, CHAIN_NOFP.ra_b, true), "chain_nofp_stripped+0x380") &&
		      named(p, user(stripped_id, CHAIN_NOFP.ra_a, true),
			    "chain_nofp_stripped+0x340"),
	      "stripped: named by the FDE's start, whatever the address in it");
	check(named(p, user(stripped_id, CHAIN_START, false), "_start") &&
		      named(p, user(stripped_id, RA_START, true), "_start"),
	      "stripped: the ELF entry's FDE is _start");
	check(named(p, user(stripped_id, RA_JIT_CODE, true), "chain_nofp_stripped+0x440"),
	      "stripped: no symbol and no FDE (jit_code): after the start its code shows, the "
	      "first instruction past the padding after leaf's FDE");
	check(named(p, user(MODULE_KERNEL, KERNEL_TIMER_IRQ, false),
		    "asm_sysvec_apic_timer_interrupt_[k]") &&
		      named(p, user(MODULE_KERNEL, 0xffffffff81003001, true), "arch_cpu_idle_[k]") &&
		      named(p, user(MODULE_KERNEL, 0xffffffffc0000040, false),
			    "bpf_prog_6deef7357e7b4530_hprof_[k]"),
	      "kernel: t, W and a BPF program's symbol of the pinned kallsyms, _[k]");
	check(named(p, user(MODULE_KERNEL, 0xffffffff80000000, false),
		    "[kernel]+0xffffffff80000000_[k]"),
	      "kernel: below every symbol, the address");
	check(named(p, user(MODULE_ANON, 0x7f0000000105, false), "[jit]") &&
		      named(p, user(MODULE_UNMAPPED, 0x1005, true), "[unmapped]+0x1005"),
	      "pseudo-modules: [jit], [unmapped]+ADDR");
	profile__free(p);
}

/* Python frames (MODULE_PYTHON, ids in the registry's python_names): work.spin ran on
 * lines 5 and 6 under app.run. Folded stacks merge the lines; keyed by name, the profile
 * keeps them apart (the SVG's tooltips tell one line from several) in an order of their
 * content; hprof serve's name cache names them right, window after window. */
static void test_python(void)
{
	struct python_names *names = module_registry__python_names(registry);
	/* line 6 interned first: ids in the other order than lines */
	const struct python_location locs[] = {
		{ "work", "spin", "/srv/work.py", 3, 6 },
		{ "work", "spin", "/srv/work.py", 3, 5 },
		{ "app", "run", "/srv/app.py", 10, 12 },
	};
	const char *want = "py;app.run;work.spin 3\n"
			   "py;app.run;work.spin;asm_sysvec_apic_timer_interrupt_[k] 1\n";
	struct frame stacks_in[3][3];
	const uint32_t lens[3] = { 2, 2, 3 }, counts[3] = { 2, 1, 1 };
	uint64_t id[3];
	struct name_cache *cache = name_cache__new();
	bool folded_ok = true, cached_ok = true;
	char *sa = NULL, *sb = NULL;

	for (int i = 0; i < 3; i++) {
		if (python_names__intern(names, &locs[i], &id[i]) != 0)
			abort();
	}
	for (int i = 0; i < 3; i++) {
		stacks_in[i][0] = (struct frame){ .module = MODULE_PYTHON, .addr = id[i == 0] };
		stacks_in[i][1] = (struct frame){ .module = MODULE_PYTHON, .addr = id[2] };
	}
	/* the kernel over line 6: reversed, line 6's node comes first */
	stacks_in[2][2] = stacks_in[2][1];
	stacks_in[2][1] = stacks_in[2][0];
	stacks_in[2][0] = user(MODULE_KERNEL, KERNEL_TIMER_IRQ, false);
	for (int variant = 0; variant < 4; variant++) {
		bool by_name = variant & 1, reversed = variant & 2;
		struct profile *p;
		char *text;

		if (profile__new(registry, ksyms, &p) != 0 || (by_name && profile__key_by_name(p) != 0))
			abort();
		profile__use_name_cache(p, cache);
		for (int k = 0; k < 3; k++) {
			int i = reversed ? 2 - k : k;

			for (uint32_t c = 0; c < counts[i]; c++) {
				if (profile__add(p, "py", NULL, stacks_in[i], lens[i]) != 0)
					abort();
			}
		}
		text = folded(p);
		folded_ok &= strcmp(text, want) == 0;
		if (strcmp(text, want) != 0)
			printf("# got:\n%s", text);
		free(text);
		if (by_name && profile__nr_stacks(p) != 3)
			folded_ok = false;
		if (by_name)
			*(reversed ? &sb : &sa) = stacks(p);
		/* the kernel's name is kept; Python's cost nothing to make again */
		cached_ok &= name_cache__count(cache) == 1;
		profile__free(p);
		name_cache__sweep(cache);
	}
	check(folded_ok, "python: lines of a function folded as one, by name or by address, "
			 "with a name cache, in either input order");
	check(sa && sb && strcmp(sa, sb) == 0, "python: by name, lines kept apart, in one order "
					       "whatever the input order");
	if (sa && sb && strcmp(sa, sb) != 0)
		printf("# in order:\n%s# reversed:\n%s", sa, sb);
	check(cached_ok, "python: names not kept in the name cache");
	free(sa);
	free(sb);
	name_cache__free(cache);
}

/* One sample, as a capture replays it: the fp build's leaf, the copy ending in c, the
 * kernel's window at main's record; through the session's processes, resolver, hybrid
 * and profile. */
static void test_session(void)
{
	const struct chain_build *b = &CHAIN_FP;
	char path[PATH_MAX], maps[PATH_MAX + 128], *text = NULL;
	uint64_t ips[16], tail_frame, main_record;
	struct sample_spec spec = { 0 };
	struct hprof_sample *sample;
	static struct sim_stack s;
	struct session *session;
	size_t size, len = 0;
	FILE *out;

	if (!realpath(fixture_path(b->file), path) || session__new(true, &session) != 0)
		abort();
	session__set_replay(session);
	snprintf(maps, sizeof(maps), "%llx-%llx r-xp 00000000 00:00 0 %s\n",
		 CHAIN_BIAS, CHAIN_BIAS + 0x1000, path);
	if (session__load_maps(session, MODEL_PID, maps, strlen(maps)) != 0)
		abort();
	sim_main_path_to_leaf(&s, b, &main_record);
	spec.ip = at(PC_LEAF_LOOP);
	spec.sp = s.sp;
	spec.bp = s.bp;
	spec.tid = MODEL_PID;
	spec.ips = ips;
	spec.nr_ips = kernel_fp_chain(&s, spec.ip, s.bp, ips, 16, &tail_frame);
	spec.fp_tail_frame = tail_frame;
	spec.stack_len = 0x58;
	spec.tail_len = (uint32_t)(SIM_STACK_TOP - tail_frame);
	sample = build_sample(&s, &spec, &size);
	check(session__handle_sample(session, sample, size) == 0 &&
		      session__stats(session)->methods[METHOD_DWARF_FP] == 1,
	      "session: the sample is handled, dwarf+fp");
	out = open_memstream(&text, &len);
	if (!out || profile__write_folded(session__profile(session), out) != 0)
		abort();
	fclose(out);
	check(strcmp(text, "chain;_start;start_main;main;a;b;c;leaf 1\n") == 0,
	      "session: the folded line names every frame from _start to leaf");
	if (strcmp(text, "chain;_start;start_main;main;a;b;c;leaf 1\n") != 0)
		printf("# got: %s", text);
	free(text);
	free(sample);
	session__free(session);
}

int main(void)
{
	struct module *chain, *stripped;

	/* names come from the fixtures alone, never from the host's debug files */
	setenv("HPROF_DEBUG_DIR", fixture_path("no-debug-dir"), 1);
	if (module_registry__new(&registry) != 0 || ksyms__load(fixture_path("kallsyms"), &ksyms) != 0)
		abort();
	chain = module_registry__get(registry, fixture_path(CHAIN_NOFP.file));
	stripped = module_registry__get(registry, fixture_path("chain_nofp_stripped"));
	if (!chain || !stripped || chain->load_err) {
		fprintf(stderr, "test_profile: cannot load the chain fixtures\n");
		return 1;
	}
	chain_id = chain->id;
	stripped_id = stripped->id;
	make_inputs();
	test_folded();
	test_by_name();
	test_recount();
	test_frame_names();
	test_python();
	test_session();
	module_registry__free(registry);
	ksyms__free(ksyms);
	return failures ? 1 : 0;
}
