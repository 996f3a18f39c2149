/* Unit tests of the walk's rules on registers besides rsp and rbp, over the pinned fixture
 * tests/fixtures/regs (regs.S): a CFA based on rbx found through a callee's save, a return
 * address kept in rdi, and the psABI's rule at a function's entry where there is no CFI
 * (DT_INIT, DT_FINI). Stacks are laid out by replaying regs.S's code; every address below
 * was read from the pinned file with binutils (tests/fixtures/README.md). No BPF, no root,
 * no live process. Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include "fixture.h"

#include "binary/symbols.h"
#include "unwind/walk.h"

/* regs.S as built (nm -n, objdump -d, readelf -d) */
enum {
	REGS_INIT = 0x1f1,       /* _init, the first byte of .init: DT_INIT */
	REGS_FINI = 0x391,       /* _fini, the first byte of .fini: DT_FINI */
	REGS_MAIN = 0x200,
	REGS_TEXT_END = 0x4b0,   /* the executable PT_LOAD is [0, 0x4b0) */
	REGS_START = 0x380,      /* _start, the ELF entry point */
	RA_START_TO_MAIN = 0x387,
	RA_MAIN_TO_BX_FRAME = 0x209,
	RA_MAIN_TO_RDI_LEAF = 0x20e,
	RA_MAIN_TO_RDI_FRAME = 0x213,
	RA_MAIN_TO_INIT = 0x218,
	RA_MAIN_TO_FINI = 0x21d,
	RA_BX_FRAME_TO_SAVES_BX = 0x251,
	RA_SAVES_BX_TO_BX_LEAF = 0x28f,
	RA_RDI_FRAME_TO_BX_LEAF = 0x346,
	PC_BX_FRAME_BODY = 0x248, /* after `and $-64, %rsp`: CFA = rbx + 16 */
	PC_BX_LEAF_LOOP = 0x2c5,
	PC_RDI_LEAF_LOOP = 0x306, /* CFA = rsp + 0, return address in rdi */
	PC_RDI_LEAF_PUSHED = 0x30b, /* after `push %rdi`: CFA = rsp + 8, still in rdi */
};

/* Where the model process has regs mapped. */
#define REGS_BIAS 0x5555aaaa0000ull
/* main's rbx, which bx_frame saves (a pc nowhere: a walk that reads it as a return
 * address ends unmapped); saves_bx overwrites rbx with this. */
#define MAIN_RBX 0x1111222233334444ull
#define SAVES_BX_RBX 0x5a5a5a5aull

static struct unwind_table *regs_table;
static struct elf_symbols *regs_syms;

static uint64_t r(uint64_t vaddr)
{
	return REGS_BIAS + vaddr;
}

static bool is_function_entry(void *ctx, uint64_t pc)
{
	(void)ctx;
	return pc - REGS_BIAS < REGS_TEXT_END &&
	       elf_symbols__is_function_entry(regs_syms, pc - REGS_BIAS);
}

/* A stack being laid out: the sim_stack and the registers regs.S's code left. */
struct machine {
	struct sim_stack s;
	uint64_t bx, di;
};

static void call(struct machine *m, uint64_t ra_vaddr)
{
	sim_push(&m->s, r(ra_vaddr));
}

/* _start -> main, after main's `sub $8, %rsp` */
static void in_main(struct machine *m)
{
	sim_start(&m->s);
	m->bx = MAIN_RBX;
	m->di = 0;
	call(m, RA_START_TO_MAIN);
	m->s.sp -= 8;
}

/* main -> bx_frame, after its prologue (push %rbx; mov %rsp, %rbx; and $-64, %rsp; sub
 * $64, %rsp) */
static void in_bx_frame(struct machine *m)
{
	in_main(m);
	call(m, RA_MAIN_TO_BX_FRAME);
	sim_push(&m->s, m->bx);
	m->bx = m->s.sp;
	m->s.sp &= ~63ull;
	m->s.sp -= 64;
}

/* ... bx_frame -> saves_bx -> bx_leaf, in bx_leaf's loop */
static void in_bx_leaf(struct machine *m)
{
	in_bx_frame(m);
	call(m, RA_BX_FRAME_TO_SAVES_BX);
	sim_push(&m->s, m->bx);
	m->s.sp -= 16;
	m->bx = SAVES_BX_RBX;
	call(m, RA_SAVES_BX_TO_BX_LEAF);
}

struct walk {
	struct unwind_frame frames[16];
	struct unwind_result result;
};

/* Walks m's stack from ip (a vaddr of regs), every byte from sp to the top copied. */
static void walk(const struct machine *m, uint64_t ip, bool bx_valid, bool di_valid,
		 bool entries, struct walk *w)
{
	const struct unwind_regs regs = {
		.ip = r(ip), .sp = m->s.sp, .bp = m->s.bp, .bp_valid = true,
		.bx = m->bx, .bx_valid = bx_valid, .di = m->di, .di_valid = di_valid,
	};
	const struct stack_copy copy = {
		.bytes = m->s.bytes + (m->s.sp - sim_base()), .base = m->s.sp,
		.len = SIM_STACK_TOP - m->s.sp,
	};
	struct unwind_cache *cache = unwind_cache__new();
	struct model_process p;
	struct unwind_space space;

	if (!cache)
		abort();
	p.nr = 0;
	model_add(&p, REGS_BIAS, REGS_BIAS + 0x1000, REGS_BIAS, regs_table, REGS_START);
	space = (struct unwind_space){
		.find_map = model_find_map, .ctx = &p, .id = 1,
		.symbols = { .is_function_entry = entries ? is_function_entry : NULL },
	};
	unwind__walk(&regs, &copy, &space, cache, w->frames, 16, &w->result);
	unwind_cache__free(cache);
}

/* The frames are exactly want (vaddrs of regs), the first exact, and the walk ended so. */
static void expect(const struct walk *w, enum unwind_end end, const uint64_t *want,
		   uint32_t nr_want, const char *what)
{
	uint64_t pcs[16];
	char got[256];
	size_t len = 0;

	for (uint32_t i = 0; i < nr_want && i < 16; i++)
		pcs[i] = r(want[i]);
	got[0] = '\0';
	for (uint32_t i = 0; i < w->result.nr_frames && len < sizeof(got) - 24; i++)
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%#llx%s", i ? " " : "",
					(unsigned long long)(w->frames[i].pc - REGS_BIAS),
					w->frames[i].exact ? "!" : "");
	check(w->result.end == end && frames_are(w->frames, w->result.nr_frames, pcs, nr_want),
	      "%s (walked: %s, %s)", what, got, unwind_end__name(w->result.end));
}

/* bx_frame's CFA is rbx + 16, and rbx is saves_bx's to restore: from bx_leaf the walk
 * must find it in saves_bx's save, whatever the sampled rbx is (saves_bx overwrote it). */
static void test_cfa_from_rbx(void)
{
	const uint64_t want[] = { PC_BX_LEAF_LOOP, RA_SAVES_BX_TO_BX_LEAF, RA_BX_FRAME_TO_SAVES_BX,
				  RA_MAIN_TO_BX_FRAME, RA_START_TO_MAIN };
	struct machine m;
	struct walk w;

	in_bx_leaf(&m);
	walk(&m, PC_BX_LEAF_LOOP, true, false, false, &w);
	expect(&w, UNWIND_END_COMPLETE, want, 5,
	       "bx_leaf to _start through bx_frame's CFA = rbx + 16, rbx from saves_bx's save");
	walk(&m, PC_BX_LEAF_LOOP, false, false, false, &w);
	expect(&w, UNWIND_END_COMPLETE, want, 5,
	       "the same without the sampled rbx: saves_bx's save is all the walk needs");
}

/* Two bx_frames on one stack (as if saves_bx had called bx_frame again): each one's rbx is
 * in the saves_bx below it, found by following rbx from the sample up to each. */
static void test_two_rbx_frames(void)
{
	const uint64_t want[] = { PC_BX_LEAF_LOOP, RA_SAVES_BX_TO_BX_LEAF, RA_BX_FRAME_TO_SAVES_BX,
				  RA_SAVES_BX_TO_BX_LEAF, RA_BX_FRAME_TO_SAVES_BX,
				  RA_MAIN_TO_BX_FRAME, RA_START_TO_MAIN };
	struct machine m;
	struct walk w;

	in_bx_leaf(&m); /* saves_bx's call, here of bx_frame again: */
	sim_push(&m.s, m.bx);
	m.bx = m.s.sp;
	m.s.sp &= ~63ull;
	m.s.sp -= 64;
	call(&m, RA_BX_FRAME_TO_SAVES_BX);
	sim_push(&m.s, m.bx);
	m.s.sp -= 16;
	m.bx = SAVES_BX_RBX + 1;
	call(&m, RA_SAVES_BX_TO_BX_LEAF);
	walk(&m, PC_BX_LEAF_LOOP, true, false, false, &w);
	expect(&w, UNWIND_END_COMPLETE, want, 7, "two bx_frames, each one's rbx from its saves_bx");
}

/* A sample in bx_frame itself: its CFA needs the sampled rbx. */
static void test_rbx_leaf(void)
{
	const uint64_t want[] = { PC_BX_FRAME_BODY, RA_MAIN_TO_BX_FRAME, RA_START_TO_MAIN };
	struct machine m;
	struct walk w;

	in_bx_frame(&m);
	walk(&m, PC_BX_FRAME_BODY, true, false, false, &w);
	expect(&w, UNWIND_END_COMPLETE, want, 3, "bx_frame as the leaf: CFA = the sampled rbx + 16");
	walk(&m, PC_BX_FRAME_BODY, false, false, false, &w);
	expect(&w, UNWIND_END_UNSUPPORTED, want, 1,
	       "bx_frame as the leaf without the sampled rbx: unsupported, not guessed");
}

/* rdi_leaf popped its return address into rdi (like __vfork): the first frame's rdi. */
static void test_ra_in_rdi(void)
{
	const uint64_t want[] = { PC_RDI_LEAF_LOOP, RA_MAIN_TO_RDI_LEAF, RA_START_TO_MAIN };
	const uint64_t pushed[] = { PC_RDI_LEAF_PUSHED, RA_MAIN_TO_RDI_LEAF, RA_START_TO_MAIN };
	struct machine m;
	struct walk w;

	in_main(&m);
	m.di = r(RA_MAIN_TO_RDI_LEAF); /* call, then pop %rdi */
	walk(&m, PC_RDI_LEAF_LOOP, true, true, false, &w);
	expect(&w, UNWIND_END_COMPLETE, want, 3,
	       "rdi_leaf: return address from the sampled rdi, CFA = rsp + 0");
	walk(&m, PC_RDI_LEAF_LOOP, true, false, false, &w);
	expect(&w, UNWIND_END_UNSUPPORTED, want, 1, "rdi_leaf without the sampled rdi: unsupported");
	sim_push(&m.s, m.di); /* push %rdi */
	walk(&m, PC_RDI_LEAF_PUSHED, true, true, false, &w);
	expect(&w, UNWIND_END_COMPLETE, pushed, 3,
	       "rdi_leaf after push %rdi: CFA = rsp + 8, return address still from rdi");
}

/* rdi_frame keeps its return address in rdi while it calls bx_leaf: only the first frame's
 * rdi is known, so its frame stops the walk, even with the sampled rdi right. */
static void test_ra_in_rdi_not_leaf(void)
{
	const uint64_t want[] = { PC_BX_LEAF_LOOP, RA_RDI_FRAME_TO_BX_LEAF };
	struct machine m;
	struct walk w;

	in_main(&m);
	m.di = r(RA_MAIN_TO_RDI_FRAME);
	call(&m, RA_RDI_FRAME_TO_BX_LEAF);
	walk(&m, PC_BX_LEAF_LOOP, true, true, false, &w);
	expect(&w, UNWIND_END_UNSUPPORTED, want, 2,
	       "a return address in rdi in a frame that is not the first: unsupported");
}

/* _init and _fini have no CFI; at their first instruction the psABI's rule holds. */
static void test_function_entry(void)
{
	const uint64_t init[] = { REGS_INIT, RA_MAIN_TO_INIT, RA_START_TO_MAIN };
	const uint64_t fini[] = { REGS_FINI, RA_MAIN_TO_FINI, RA_START_TO_MAIN };
	struct machine m;
	struct walk w;

	in_main(&m);
	call(&m, RA_MAIN_TO_INIT);
	walk(&m, REGS_INIT, true, true, true, &w);
	expect(&w, UNWIND_END_COMPLETE, init, 3, "at _init's entry (DT_INIT, no CFI): CFA = rsp + 8");
	walk(&m, REGS_INIT, true, true, false, &w);
	expect(&w, UNWIND_END_NO_CFI, init, 1, "the same with no function entries known: no CFI");
	m.s.sp -= 8; /* sub $8, %rsp */
	walk(&m, REGS_INIT + 4, true, true, true, &w);
	expect(&w, UNWIND_END_NO_CFI, (const uint64_t[]){ REGS_INIT + 4 }, 1,
	       "past _init's first instruction: no CFI, no rule");
	in_main(&m);
	call(&m, RA_MAIN_TO_FINI);
	walk(&m, REGS_FINI, true, true, true, &w);
	expect(&w, UNWIND_END_COMPLETE, fini, 3, "at _fini's entry (DT_FINI, no CFI): CFA = rsp + 8");
}

/* A return address just past _init's first byte looks up _init's entry (ra - 1): a caller
 * frame's pc follows a call, it is never an entry, and the rule must not apply there. */
static void test_entry_not_for_callers(void)
{
	const uint64_t want[] = { PC_BX_LEAF_LOOP, REGS_INIT + 1 };
	struct machine m;
	struct walk w;

	in_main(&m);
	call(&m, REGS_INIT + 1);
	walk(&m, PC_BX_LEAF_LOOP, true, true, true, &w);
	expect(&w, UNWIND_END_NO_CFI, want, 2,
	       "a caller frame at a function's entry + 1: no CFI, the entry rule is the leaf's only");
}

/* What the rows and the ELF file say, against binutils' reading of the pinned file. */
static void test_fixture(void)
{
	const struct unwind_row *row;
	struct unwind_rules rules;
	bool ok;

	row = unwind_table__find(regs_table, PC_BX_FRAME_BODY);
	ok = row != NULL;
	if (ok) {
		unwind_table__decode(regs_table, row, &rules);
		ok = rules.cfa == UNWIND_CFA_BX_OFFSET && rules.cfa_offset == 16 &&
		     rules.rbx == UNWIND_RBX_AT_CFA && rules.rbx_offset == -16;
	}
	check(ok, "bx_frame's body: CFA rbx+16, rbx c-16 (readelf -wF)");
	row = unwind_table__find(regs_table, PC_RDI_LEAF_LOOP);
	ok = row != NULL;
	if (ok) {
		unwind_table__decode(regs_table, row, &rules);
		ok = rules.cfa == UNWIND_CFA_SP_OFFSET && rules.cfa_offset == 0 &&
		     rules.ra == UNWIND_RA_REGISTER && rules.ra_offset == UNWIND_DWARF_RDI;
	}
	check(ok, "rdi_leaf's loop: CFA rsp+0, ra r5 (rdi) (readelf -wF)");
	check(!unwind_table__find(regs_table, REGS_INIT) && !unwind_table__find(regs_table, REGS_FINI),
	      "_init and _fini have no CFI");
	check(elf_symbols__is_function_entry(regs_syms, REGS_INIT) &&
		      elf_symbols__is_function_entry(regs_syms, REGS_FINI),
	      "DT_INIT and DT_FINI (readelf -d: 0x1f1, 0x391) are function entries");
	check(!elf_symbols__is_function_entry(regs_syms, REGS_INIT + 1) &&
		      !elf_symbols__is_function_entry(regs_syms, REGS_MAIN) &&
		      !elf_symbols__is_function_entry(regs_syms, REGS_START),
	      "nothing else is: not _init + 1, main or the ELF entry point");
}

/* A file without .init, .fini or a dynamic section names no function entry. */
static void test_no_entries(void)
{
	struct elf_symbols *syms = NULL;
	char err[256];
	bool none = true;

	if (elf_symbols__load(fixture_path("chain_nofp"), &syms, err, sizeof(err)) != 0) {
		check(false, "chain_nofp's symbols: %s", err);
		return;
	}
	for (uint64_t vaddr = 0; vaddr < CHAIN_TEXT_SEGMENT; vaddr++)
		none &= !elf_symbols__is_function_entry(syms, vaddr);
	check(none, "chain_nofp (no .init, .fini, DT_INIT or DT_FINI) names no function entry");
	elf_symbols__free(syms);
}

int main(void)
{
	char err[256];

	regs_table = fixture_table("regs");
	if (elf_symbols__load(fixture_path("regs"), &regs_syms, err, sizeof(err)) != 0) {
		fprintf(stderr, "fixture: %s\n", err);
		return 1;
	}
	test_fixture();
	test_cfa_from_rbx();
	test_two_rbx_frames();
	test_rbx_leaf();
	test_ra_in_rdi();
	test_ra_in_rdi_not_leaf();
	test_function_entry();
	test_entry_not_for_callers();
	test_no_entries();
	elf_symbols__free(regs_syms);
	unwind_table__free(regs_table);
	return failures ? 1 : 0;
}
