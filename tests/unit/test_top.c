/* Unit tests of the top table (user/output/top.h) over the pinned chain fixtures: self and
 * inclusive shares with a recursive function counted once per sample, a root frame as a
 * function, one name in two binaries as one row naming both, ties by name, and the same
 * bytes whether the profile is keyed by name or by address and whatever order samples came
 * in. No BPF, no root, no live process. */
#include "fixture.h"

#include "binary/ksyms.h"
#include "binary/modules.h"
#include "output/profile.h"
#include "output/top.h"

static struct module_registry *registry;
static struct ksyms *ksyms;
static uint32_t nofp_id, fp_id;

#define KERNEL_TIMER_IRQ 0xffffffff81002010ull /* in asm_sysvec_apic_timer_interrupt */
#define TRUNCATED "[truncated: copy too short]"

static struct frame user(uint32_t module, uint64_t addr, bool caller)
{
	return (struct frame){ .module = module, .flags = caller ? FRAME_CALLER : 0, .addr = addr };
}

/* Appends return addresses ras[0..n) of module to frames. */
static uint32_t callers(struct frame *out, uint32_t at, uint32_t module, const uint64_t *ras,
			size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[at++] = user(module, ras[i], true);
	return at;
}

/* leaf -> c -> b -> a -> main -> start_main -> _start in one build; with recurse, b and a
 * twice (a -> b -> a -> b). */
static uint32_t chain_stack(struct frame *out, uint32_t at, const struct chain_build *b,
			    uint32_t module, bool recurse)
{
	const uint64_t plain[] = { b->ra_c, b->ra_b, b->ra_a, b->ra_main_a, RA_START_MAIN, RA_START };
	const uint64_t twice[] = { b->ra_c, b->ra_b, b->ra_a, b->ra_b, b->ra_a, b->ra_main_a,
				   RA_START_MAIN, RA_START };

	out[at++] = user(module, PC_LEAF_LOOP, false);
	return recurse ? callers(out, at, module, twice, 8) : callers(out, at, module, plain, 6);
}

struct input {
	const char *comm, *root;
	struct frame frames[16];
	uint32_t n;
	unsigned count;
};

#define NR_INPUTS 6
static struct input inputs[NR_INPUTS];

static void make_inputs(void)
{
	struct input *in = inputs;

	*in = (struct input){ "chain", NULL, .count = 3 };
	in->n = chain_stack(in->frames, 0, &CHAIN_NOFP, nofp_id, false);
	in++;
	/* the same names in another binary */
	*in = (struct input){ "chain_fp", NULL, .count = 1 };
	in->n = chain_stack(in->frames, 0, &CHAIN_FP, fp_id, false);
	in++;
	*in = (struct input){ "chain", NULL, .count = 2 };
	in->n = chain_stack(in->frames, 0, &CHAIN_NOFP, nofp_id, true);
	in++;
	*in = (struct input){ "chain", TRUNCATED, .count = 1 };
	in->n = 2;
	memcpy(in->frames, inputs[0].frames, 2 * sizeof(struct frame));
	in++;
	/* a root alone is its stack's innermost frame */
	*in = (struct input){ "chain", TRUNCATED, .count = 1 };
	in++;
	*in = (struct input){ "chain", NULL, .count = 1 };
	in->frames[0] = user(MODULE_KERNEL, KERNEL_TIMER_IRQ, false);
	in->n = chain_stack(in->frames, 1, &CHAIN_NOFP, nofp_id, false);
}

static char *table(bool by_name, bool reversed, size_t n)
{
	struct profile *p;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	if (profile__new(registry, ksyms, &p) != 0 || (by_name && profile__key_by_name(p) != 0))
		abort();
	for (unsigned k = 0; k < NR_INPUTS; k++) {
		const struct input *in = &inputs[reversed ? NR_INPUTS - 1 - k : k];

		for (unsigned c = 0; c < in->count; c++) {
			if (profile__add(p, in->comm, in->root, in->frames, in->n) != 0)
				abort();
		}
	}
	out = open_memstream(&text, &len);
	if (!out || top__write(p, registry, n, out) != 0)
		abort();
	fclose(out);
	profile__free(p);
	return text;
}

/* 9 samples. leaf: innermost in 7, on 8 stacks, in both builds (chain_nofp's 7 samples
 * first). a: on 7 stacks, twice on 2 of them. The root: innermost in 1, on 2. */
static const char TOP4[] =
	"top 4 of 9 functions by self samples, of 9 samples\n"
	"   self    incl  samples  module             function\n"
	" 77.78%  88.89%        7  chain_nofp +1      leaf\n"
	" 11.11%  22.22%        1  -                  [truncated: copy too short]\n"
	" 11.11%  11.11%        1  [kernel.kallsyms]  asm_sysvec_apic_timer_interrupt_[k]\n"
	"  0.00%  77.78%        0  chain_nofp +1      _start\n";

static void test_table(void)
{
	char *by_name = table(true, false, 4), *reversed = table(true, true, 4),
	     *by_addr = table(false, false, 4), *all = table(true, false, 100);

	check(strcmp(by_name, TOP4) == 0, "top 4: shares, samples, modules, ties by name");
	if (strcmp(by_name, TOP4) != 0)
		printf("# got:\n%s", by_name);
	check(strcmp(reversed, TOP4) == 0, "top 4: the same bytes whatever order samples came in");
	check(strcmp(by_addr, TOP4) == 0, "top 4: the same bytes keyed by address (with --pprof)");
	check(strstr(all, "top 9 of 9 functions") && strstr(all, "  0.00%  77.78%        0  chain_nofp +1      a\n"),
	      "recursion: a, twice on 2 of its 7 stacks, is on 77.78%% of the samples");
	if (!strstr(all, "  0.00%  77.78%        0  chain_nofp +1      a\n"))
		printf("# got:\n%s", all);
	free(by_name);
	free(reversed);
	free(by_addr);
	free(all);
}

int main(void)
{
	struct module *nofp, *fp;

	/* names come from the fixtures alone, never from the host's debug files */
	setenv("HPROF_DEBUG_DIR", fixture_path("no-debug-dir"), 1);
	if (module_registry__new(&registry) != 0 || ksyms__load(fixture_path("kallsyms"), &ksyms) != 0)
		abort();
	nofp = module_registry__get(registry, fixture_path(CHAIN_NOFP.file));
	fp = module_registry__get(registry, fixture_path(CHAIN_FP.file));
	if (!nofp || !fp || nofp->load_err || fp->load_err) {
		fprintf(stderr, "test_top: cannot load the chain fixtures\n");
		return 1;
	}
	nofp_id = nofp->id;
	fp_id = fp->id;
	make_inputs();
	test_table();
	module_registry__free(registry);
	ksyms__free(ksyms);
	return failures ? 1 : 0;
}
