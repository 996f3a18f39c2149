/* Unit tests for the memory a sample carries: reads from a stack copy and the memory copied
 * with it (the stack a signal interrupted), pages the kernel could not read (holes), the
 * record's layout when a replay limits its copy, and the DWARF walk over all of it, on the
 * CFI of build/workloads/nofp_bigframe (a function with a 16 KiB frame). Prints one
 * "ok - NAME" / "not ok - NAME" line per check. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary/symbols.h"
#include "cfi/unwind_table.h"
#include "sample.h"
#include "unwind/walk.h"
#include "check.h"

#define BIGFRAME "build/workloads/nofp_bigframe"
#define PAGE STACK_COPY_PAGE

static void put_u64(uint8_t *bytes, uint64_t off, uint64_t v)
{
	memcpy(bytes + off, &v, sizeof(v));
}

static enum stack_read read_at(const struct stack_copy *copy, uint64_t addr, uint64_t *v)
{
	*v = 0;
	return stack_copy__read(copy, addr, v);
}

/* Two copies: the stack from a handler's sp, its second page a hole, and the interrupted
 * stack above, which also holds the first copy's last page. */
static void test_reads(void)
{
	static uint8_t low[3 * PAGE], high[2 * PAGE];
	const uint64_t low_base = 0x10000 + 0x800, high_base = 0x12000;
	struct stack_copy interrupted = { high, high_base, sizeof(high), 0, NULL };
	struct stack_copy stack = { low, low_base, sizeof(low), 1u << 1, &interrupted };
	uint64_t v;

	put_u64(low, 0, 11);
	put_u64(low, 0x7f8, 12);     /* last word of the first page (0x10ff8) */
	put_u64(low, 0x1000, 0);     /* in the hole (0x11800) */
	put_u64(high, 0x100, 21);    /* 0x12100: in both copies, the first one's third page */
	put_u64(low, 0x1900, 21);
	put_u64(high, 0x1ff8, 22);   /* the interrupted copy's last word */
	check(read_at(&stack, low_base, &v) == STACK_READ_OK && v == 11, "read: the first word");
	check(read_at(&stack, 0x10ff8, &v) == STACK_READ_OK && v == 12,
	      "read: the last word before the hole");
	check(read_at(&stack, 0x10ffc, &v) == STACK_READ_HOLE,
	      "read: a word that runs into the hole is a hole");
	check(read_at(&stack, 0x11800, &v) == STACK_READ_HOLE, "read: a word in the hole");
	check(read_at(&stack, 0x12100, &v) == STACK_READ_OK && v == 21,
	      "read: a word above the hole, held by both copies");
	check(read_at(&stack, 0x13ff8, &v) == STACK_READ_OK && v == 22,
	      "read: the interrupted copy's last word");
	check(read_at(&stack, 0x13ffc, &v) == STACK_READ_OUTSIDE, "read: past both copies");
	check(read_at(&stack, low_base - 8, &v) == STACK_READ_OUTSIDE, "read: below both copies");
	check(read_at(&stack, UINT64_MAX - 3, &v) == STACK_READ_OUTSIDE,
	      "read: at the top of the address space");
	check(stack_copy__len_before_holes(&stack) == 0x800,
	      "the bytes before the first hole end with its page");
	stack.holes = 1;
	check(stack_copy__len_before_holes(&stack) == 0 && read_at(&stack, low_base, &v) ==
								      STACK_READ_HOLE,
	      "a hole on the first page leaves nothing before it");
	stack.holes = 0;
	check(stack_copy__len_before_holes(&stack) == sizeof(low), "no hole: the whole copy");
}

/* The largest copy: 33 pages (a copy that starts mid-page), its holes past the 32nd page
 * marked and read as such. */
static void test_large_copy(void)
{
	static uint8_t bytes[HPROF_MAX_STACK_COPY];
	const uint64_t base = 0x7f0000000800;
	struct stack_copy copy = { bytes, base, sizeof(bytes), 1ull << 32 | 1ull << 20, NULL };
	const uint64_t last_page = (base + sizeof(bytes) - 1) / PAGE * PAGE;
	uint64_t v;

	check(HPROF_MAX_STACK_CHUNKS == 33 && strtoul(HPROF_MAX_STACK_COPY_TEXT, NULL, 10) ==
						       HPROF_MAX_STACK_COPY,
	      "the largest copy is %s bytes, 33 pages at most", HPROF_MAX_STACK_COPY_TEXT);
	put_u64(bytes, sizeof(bytes) - 8, 7);
	check(read_at(&copy, last_page, &v) == STACK_READ_HOLE,
	      "a hole on the 33rd page is read as one");
	check(read_at(&copy, last_page - 8, &v) == STACK_READ_OK,
	      "the page before it is read");
	check(stack_copy__len_before_holes(&copy) == (base / PAGE + 20) * PAGE - base,
	      "the bytes before the first hole end with its page");
	check(hprof_sample__holes_within(copy.holes, base, sizeof(bytes)) == copy.holes &&
		      hprof_sample__holes_within(copy.holes, base, 32 * PAGE - 0x800) == 1ull << 20,
	      "a limit keeps the holes of the pages within it");
}

/* A record with a stack of 100 bytes, an interrupted stack of 50 and a tail of 16. */
struct record {
	struct hprof_sample s;
	uint8_t data[200];
};

static void fill(struct record *r, __u64 *size)
{
	memset(r, 0, sizeof(*r));
	r->s.user_sp = 0x1000 - 40; /* the stack's last 60 bytes are on the next page */
	r->s.stack_len = 100;
	r->s.stack_holes = 3;
	r->s.interrupted_sp = 0x5000;
	r->s.interrupted_len = 50;
	r->s.interrupted_holes = 1;
	r->s.tail_len = 16;
	for (uint32_t i = 0; i < 166; i++)
		r->data[i] = (uint8_t)(i < 100 ? 1 : i < 150 ? 2 : 3);
	*size = sizeof(r->s) + 166;
}

static void test_limit(void)
{
	struct record r;
	__u64 size;

	fill(&r, &size);
	check(hprof_sample__well_formed(&r.s, size), "limit: the record is well formed");
	hprof_sample__limit_copy(&r.s, &size, 120);
	check(r.s.stack_len == 100 && r.s.interrupted_len == 20 && size == sizeof(r.s) + 136 &&
		      r.data[99] == 1 && r.data[100] == 2 && r.data[119] == 2 && r.data[120] == 3 &&
		      r.data[135] == 3 && hprof_sample__tail(&r.s) == r.data + 120,
	      "limit: the interrupted stack is cut, the tail moves down");
	fill(&r, &size);
	hprof_sample__limit_copy(&r.s, &size, 30);
	check(r.s.stack_len == 30 && r.s.interrupted_len == 0 && r.s.interrupted_sp == 0 &&
		      r.s.stack_holes == 1 && r.s.interrupted_holes == 0 &&
		      size == sizeof(r.s) + 46 && r.data[30] == 3 &&
		      hprof_sample__well_formed(&r.s, size),
	      "limit: the stack is cut, the interrupted stack goes, holes past the cut go");
	/* a window below the base: its upper bytes stay, the frames next to the base */
	fill(&r, &size);
	r.s.flags |= SAMPLE_COPY_BASE_WINDOW;
	r.s.interrupted_len = 48;
	r.s.interrupted_holes = 0;
	for (uint32_t i = 100; i < 148; i++)
		r.data[i] = (uint8_t)(10 + (i - 100) / 8); /* word w of the window: 10 + w */
	for (uint32_t i = 148; i < 164; i++)
		r.data[i] = 3;
	size = sizeof(r.s) + 164;
	hprof_sample__limit_copy(&r.s, &size, 120);
	check(r.s.stack_len == 100 && r.s.interrupted_len == 16 && r.s.interrupted_sp == 0x5020 &&
		      size == sizeof(r.s) + 132 && r.data[100] == 14 && r.data[115] == 15 &&
		      r.data[116] == 3 && hprof_sample__tail(&r.s) == r.data + 116 &&
		      hprof_sample__well_formed(&r.s, size),
	      "limit: a window below the base keeps its upper words, whole");
	fill(&r, &size);
	hprof_sample__limit_copy(&r.s, &size, 1000);
	check(r.s.stack_len == 100 && r.s.interrupted_len == 50 && size == sizeof(r.s) + 166,
	      "limit: a copy within the limit stays");
	r.s.interrupted_len = HPROF_MAX_STACK_COPY;
	check(!hprof_sample__well_formed(&r.s, 1u << 20),
	      "well formed: both copies within the ceiling");
	check(hprof_sample__holes_within(0xffffffffu, 0xff8, 9) == 3 &&
		      hprof_sample__holes_within(0xffffffffu, 0x1000, 0) == 0 &&
		      hprof_sample__holes_within(0xffffffffu, 0x1000, 0x1000) == 1,
	      "holes within: the pages the bytes touch");
}

/* The walk on nofp_bigframe's CFI, loaded at its link addresses. */
struct space {
	struct unwind_table *table;
	uint64_t lo, hi;
};

static int find_map(void *ctx, uint64_t pc, struct unwind_map *map)
{
	const struct space *s = ctx;

	if (pc < s->lo || pc >= s->hi)
		return -ENOENT;
	*map = (struct unwind_map){ s->lo, s->hi, 0, s->table };
	return 0;
}

/* The row of with_buffer whose CFA is furthest above sp: past its 16 KiB buffer. */
static const struct unwind_row *deepest_row(const struct unwind_table *table,
					    const struct elf_symbols *syms, int64_t *cfa)
{
	const struct unwind_row *rows, *best = NULL;
	struct unwind_rules rules;
	uint64_t offset;
	size_t n;

	rows = unwind_table__rows(table, &n);
	for (size_t i = 0; i < n; i++) {
		const char *name = elf_symbols__lookup(syms, rows[i].pc, &offset);

		if (!name || strcmp(name, "with_buffer") != 0)
			continue;
		unwind_table__decode(table, &rows[i], &rules);
		if (rules.cfa == UNWIND_CFA_SP_OFFSET && rules.ra == UNWIND_RA_AT_CFA &&
		    (!best || rules.cfa_offset > *cfa)) {
			best = &rows[i];
			*cfa = rules.cfa_offset;
		}
	}
	return best;
}

static void test_walk(void)
{
	static uint8_t low[8 * PAGE], high[PAGE];
	static struct unwind_frame frames[8];
	struct elf_symbols *syms = NULL;
	struct space ctx = { 0 };
	struct unwind_space space = { .find_map = find_map, .ctx = &ctx, .id = 1 };
	struct unwind_cache *cache = unwind_cache__new();
	struct unwind_result result;
	const struct unwind_row *row, *rows;
	const uint64_t sp = 0x7ff000000000ull - sizeof(low);
	struct stack_copy interrupted = { high, 0, sizeof(high), 0, NULL };
	struct stack_copy copy = { low, sp, sizeof(low), 0, NULL };
	uint64_t ra_slot, main_ra = 0xdead0000;
	struct unwind_regs regs;
	int64_t cfa = 0;
	char err[256];
	size_t n;

	if (!cache || unwind_table__from_file(BIGFRAME, UNWIND_SRC_ALL, &ctx.table, err, sizeof(err)) ||
	    elf_symbols__load(BIGFRAME, &syms, err, sizeof(err))) {
		check(false, "walk: nofp_bigframe's CFI and symbols load");
		printf("# %s\n", err);
		goto cleanup;
	}
	rows = unwind_table__rows(ctx.table, &n);
	ctx.lo = rows[0].pc;
	ctx.hi = rows[n - 1].pc + 1;
	row = deepest_row(ctx.table, syms, &cfa);
	if (!row || cfa < 16384 || cfa > (int64_t)sizeof(low) - 16) {
		check(false, "walk: with_buffer's frame holds its buffer");
		goto cleanup;
	}
	/* with_buffer at that row, its return address (outside any mapping) cfa - 8
	 * above sp, on a page the copy could not read */
	regs = (struct unwind_regs){ .ip = row->pc, .sp = sp, .bp = 0, .bp_valid = true };
	ra_slot = (uint64_t)cfa - 8;
	copy.holes = 1u << (ra_slot / PAGE);
	unwind__walk(&regs, &copy, &space, cache, frames, 8, &result);
	check(result.end == UNWIND_END_COPY_HOLE && result.nr_frames == 1,
	      "walk: a return address on a hole ends the walk there, for that reason");
	copy.holes = 0;
	unwind__walk(&regs, &copy, &space, cache, frames, 8, &result);
	check(result.end == UNWIND_END_ZERO_RA && result.nr_frames == 1 && result.last.ip == 0,
	      "walk: the same zeros, unmarked, end it as a zero return address, not complete "
	      "(with_buffer is no entry)");
	put_u64(low, ra_slot, main_ra);
	copy.holes = 1u << (ra_slot / PAGE);
	interrupted.base = sp + (ra_slot & ~(uint64_t)(PAGE - 1));
	put_u64(high, ra_slot % PAGE, main_ra);
	copy.more = &interrupted;
	unwind__walk(&regs, &copy, &space, cache, frames, 8, &result);
	check(result.nr_frames == 2 && frames[1].pc == main_ra && result.end == UNWIND_END_UNMAPPED,
	      "walk: a word in a hole of one copy is read from another that holds it");
	copy.more = NULL;
	copy.holes = 0;
	copy.len = ra_slot;
	unwind__walk(&regs, &copy, &space, cache, frames, 8, &result);
	check(result.end == UNWIND_END_COPY_SHORT, "walk: past the copy's end is still short");
cleanup:
	unwind_cache__free(cache);
	unwind_table__free(ctx.table);
	elf_symbols__free(syms);
}

int main(void)
{
	test_reads();
	test_large_copy();
	test_limit();
	test_walk();
	return failures ? 1 : 0;
}
