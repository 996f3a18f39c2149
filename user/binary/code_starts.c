#include "binary/code_starts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "util/grow.h"

/* One swept stretch: [lo, hi) and the starts found in it, ascending. */
struct code_stretch {
	uint64_t lo, hi;
	uint64_t *starts;
	size_t nr_starts;
};

struct code_starts {
	struct code_stretch *stretches; /* ascending by lo, never overlapping */
	size_t nr, cap;
	size_t bytes;
};

/* ---- the sweep ---- */

void code_sweep__init(struct code_sweep *s, uint64_t lo, uint64_t hi, bool known_start)
{
	*s = (struct code_sweep){ .pc = lo, .lo = lo, .hi = hi, .at_boundary = known_start,
				  .first = known_start };
}

static bool is_padding(const ZydisDecodedInstruction *insn)
{
	return insn->mnemonic == ZYDIS_MNEMONIC_NOP || insn->mnemonic == ZYDIS_MNEMONIC_INT3;
}

/* Control does not fall through it to the next instruction. */
static bool ends_path(const ZydisDecodedInstruction *insn)
{
	return insn->meta.category == ZYDIS_CATEGORY_RET ||
	       insn->meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
	       insn->mnemonic == ZYDIS_MNEMONIC_UD2 || insn->mnemonic == ZYDIS_MNEMONIC_HLT;
}

/* How far ahead a lea's target is taken as a label of the function that computes it. */
#define CODE_LABEL_AHEAD 4096u

/* The target of a direct jump, call or branch, or false. */
static bool direct_target(const struct code_sweep *s, const ZydisDecodedInstruction *insn,
			  uint64_t *target)
{
	if (!insn->raw.imm[0].is_relative)
		return false;
	*target = s->pc + insn->length + (uint64_t)insn->raw.imm[0].value.s;
	return *target >= s->lo && *target < s->hi;
}

/* Updates the sweep for the instruction at s->pc and reports what it shows. */
static void sweep_step(struct code_sweep *s, const ZydisDecodedInstruction *insn,
		       code_mark_fn *mark, void *arg)
{
	uint64_t target;

	if (is_padding(insn)) {
		s->padded = true;
		return;
	}
	/* padding after a call: it does not return (abort, __stack_chk_fail) */
	if ((s->at_boundary && (s->first || s->pc % 16 == 0)) || (s->after_call && s->padded))
		mark(arg, CODE_MARK_BOUNDARY, s->pc, 0);
	s->first = s->padded = false;
	s->at_boundary = ends_path(insn);
	s->after_call = insn->mnemonic == ZYDIS_MNEMONIC_CALL;
	/* lea LABEL(%rip) a little ahead: a computed jump's target in the same function
	 * (GMP's mul_basecase); farther, or behind, it may take a function's address */
	if (insn->mnemonic == ZYDIS_MNEMONIC_LEA && (insn->attributes & ZYDIS_ATTRIB_IS_RELATIVE)) {
		target = s->pc + insn->length + (uint64_t)insn->raw.disp.value;
		if (target > s->pc && target - s->pc <= CODE_LABEL_AHEAD && target < s->hi)
			mark(arg, CODE_MARK_BRANCHED, target, s->pc);
		return;
	}
	if (!direct_target(s, insn, &target))
		return;
	if (insn->mnemonic == ZYDIS_MNEMONIC_CALL)
		mark(arg, CODE_MARK_CALLED, target, s->pc);
	else if (insn->meta.category == ZYDIS_CATEGORY_COND_BR)
		mark(arg, CODE_MARK_BRANCHED, target, s->pc);
	else if (insn->meta.category == ZYDIS_CATEGORY_UNCOND_BR && target <= s->pc)
		mark(arg, CODE_MARK_JUMPED_BACK, target, s->pc);
}

bool code_sweep__run(struct code_sweep *s, const struct code_bytes *code, code_mark_fn *mark,
		     void *arg)
{
	ZydisDecoder decoder;
	ZydisDecodedInstruction insn;
	uint64_t end = code->addr + code->len;

	ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	if (end > s->hi)
		end = s->hi;
	while (s->pc >= code->addr && s->pc < end) {
		size_t avail = (size_t)(end - s->pc);

		/* an instruction is at most 15 bytes: one nearer the window's end than that
		 * may be cut off, unless the stretch ends there too */
		if (avail < ZYDIS_MAX_INSTRUCTION_LENGTH && end != s->hi)
			break;
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(
			    &decoder, NULL, code->bytes + (s->pc - code->addr), avail, &insn))) {
			/* data, or a decode out of step: no start is claimed across it */
			s->pc++;
			s->at_boundary = s->first = s->padded = s->after_call = false;
			continue;
		}
		sweep_step(s, &insn, mark, arg);
		s->pc += insn.length;
	}
	return s->pc >= s->hi;
}

/* ---- stretches of a binary ---- */

/* Addresses, grown as a sweep reports them. */
struct addrs {
	uint64_t *v;
	size_t nr, cap;
};

/* A jump back: its target, and where it jumps from. */
struct jump_back {
	uint64_t target, from;
};

/* What a sweep reported: boundaries, call and branch targets, and jumps back. */
struct marks {
	struct addrs boundary, called, branched;
	struct jump_back *jumps; /* sorted by target, then from, once the sweep is done */
	size_t nr_jumps, jumps_cap;
	bool failed; /* out of memory */
};

static void add_addr(struct marks *m, struct addrs *a, uint64_t at)
{
	if (grow_array((void **)&a->v, &a->cap, a->nr + 1, sizeof(*a->v)) != 0) {
		m->failed = true;
		return;
	}
	a->v[a->nr++] = at;
}

static void add_mark(void *arg, enum code_mark mark, uint64_t at, uint64_t from)
{
	struct marks *m = arg;

	switch (mark) {
	case CODE_MARK_BOUNDARY:
		add_addr(m, &m->boundary, at);
		break;
	case CODE_MARK_CALLED:
		add_addr(m, &m->called, at);
		break;
	case CODE_MARK_BRANCHED:
		add_addr(m, &m->branched, at);
		break;
	case CODE_MARK_JUMPED_BACK:
		if (grow_array((void **)&m->jumps, &m->jumps_cap, m->nr_jumps + 1,
			       sizeof(*m->jumps)) != 0) {
			m->failed = true;
			break;
		}
		m->jumps[m->nr_jumps++] = (struct jump_back){ .target = at, .from = from };
		break;
	}
}

static void marks_free(struct marks *m)
{
	free(m->boundary.v);
	free(m->called.v);
	free(m->branched.v);
	free(m->jumps);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts and drops duplicates. */
static void sort_unique(struct addrs *a)
{
	size_t kept = 0;

	if (a->nr)
		qsort(a->v, a->nr, sizeof(*a->v), cmp_u64);
	for (size_t i = 0; i < a->nr; i++) {
		if (kept == 0 || a->v[kept - 1] != a->v[i])
			a->v[kept++] = a->v[i];
	}
	a->nr = kept;
}

/* The index of the first of the n sorted addresses v that is > at. */
static size_t index_above(const uint64_t *v, size_t n, uint64_t at)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static size_t first_above(const struct addrs *a, uint64_t at)
{
	return index_above(a->v, a->nr, at);
}

static bool contains(const struct addrs *a, uint64_t at)
{
	size_t i = first_above(a, at);

	return i > 0 && a->v[i - 1] == at;
}

static int cmp_jump(const void *a, const void *b)
{
	const struct jump_back *x = a, *y = b;

	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return x->from < y->from ? -1 : x->from > y->from;
}

/* A boundary a jump comes back to with no other start in between: a loop's head. The
 * nearest jump to it decides (m->jumps sorted). */
static bool is_loop_head(const struct marks *m, const struct addrs *starts, uint64_t at)
{
	size_t lo = 0, hi = m->nr_jumps, next;

	while (lo < hi) { /* the first jump whose target is >= at */
		size_t mid = lo + (hi - lo) / 2;

		if (m->jumps[mid].target < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == m->nr_jumps || m->jumps[lo].target != at)
		return false;
	next = first_above(starts, at);
	return next == starts->nr || starts->v[next] > m->jumps[lo].from;
}

/* The starts the marks show (see code_starts.h), into *out: sorted, unique. */
static int resolve_starts(struct marks *m, struct addrs *out)
{
	struct addrs starts = { 0 };
	size_t kept = 0;

	sort_unique(&m->boundary);
	sort_unique(&m->called);
	sort_unique(&m->branched);
	if (m->nr_jumps)
		qsort(m->jumps, m->nr_jumps, sizeof(*m->jumps), cmp_jump);
	for (size_t i = 0; i < m->boundary.nr; i++) {
		if (!contains(&m->branched, m->boundary.v[i]))
			add_addr(m, &starts, m->boundary.v[i]);
	}
	for (size_t i = 0; i < m->called.nr; i++)
		add_addr(m, &starts, m->called.v[i]);
	if (m->failed) {
		free(starts.v);
		return -ENOMEM;
	}
	sort_unique(&starts);
	/* judged against the starts before any is dropped: a loop's head stays out of the way
	 * of another's jump back */
	*out = (struct addrs){ .v = malloc((starts.nr ? starts.nr : 1) * sizeof(*starts.v)) };
	if (!out->v) {
		free(starts.v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < starts.nr; i++) {
		uint64_t at = starts.v[i];

		if (contains(&m->called, at) || !is_loop_head(m, &starts, at))
			out->v[kept++] = at;
	}
	out->nr = out->cap = kept;
	free(starts.v);
	return 0;
}

/* Bytes read per pread while sweeping. */
#define SWEEP_CHUNK (64u << 10)

/* Sweeps [lo, hi) of src's code into st. */
static int sweep_stretch(const struct code_source *src, uint64_t lo, uint64_t hi, bool known_start,
			 struct code_stretch *st)
{
	static uint8_t buf[SWEEP_CHUNK];
	struct marks m = { 0 };
	struct addrs starts;
	struct code_sweep s;
	ssize_t n;
	int err;

	code_sweep__init(&s, lo, hi, known_start);
	while (s.pc < hi) {
		uint64_t at = s.pc;
		struct code_bytes code;

		n = src->read(src->arg, at, buf, hi - at < SWEEP_CHUNK ? hi - at : SWEEP_CHUNK);
		if (n <= 0)
			break; /* what was swept stands; the rest finds no start */
		code = (struct code_bytes){ .bytes = buf, .addr = at, .len = (size_t)n };
		if (code_sweep__run(&s, &code, add_mark, &m) || s.pc == at)
			break;
	}
	err = resolve_starts(&m, &starts);
	marks_free(&m);
	if (err)
		return err;
	/* a read that failed part way (a file cut short under its pin) ends the stretch
	 * there: a start found before it must not name code after it */
	if (s.pc > lo && s.pc < hi)
		hi = s.pc;
	*st = (struct code_stretch){ .lo = lo, .hi = hi, .starts = starts.v,
				     .nr_starts = starts.nr };
	return 0;
}

/* The stretch to sweep for vaddr: what no FDE covers around it, within its segment, and
 * at most CODE_SWEEP_MAX bytes. */
static int stretch_bounds(const struct code_source *src, uint64_t vaddr, uint64_t *lo,
			  uint64_t *hi, bool *known_start)
{
	if (vaddr < src->seg_start || vaddr >= src->seg_end ||
	    unwind_table__gap(src->table, vaddr, lo, hi) != 0)
		return -ENOENT;
	/* a stretch from the segment's start begins at headers or other sections, not at a
	 * function's end */
	*known_start = *lo > src->seg_start;
	if (*lo < src->seg_start)
		*lo = src->seg_start;
	if (*hi > src->seg_end)
		*hi = src->seg_end;
	if (*hi - *lo > CODE_SWEEP_MAX) {
		uint64_t block = vaddr - vaddr % CODE_SWEEP_BLOCK;

		*known_start = *known_start && block <= *lo;
		if (block > *lo)
			*lo = block;
		if (*hi - *lo > CODE_SWEEP_BLOCK)
			*hi = *lo + CODE_SWEEP_BLOCK;
	}
	return 0;
}

/* The index of the first stretch with lo > vaddr. */
static size_t stretch_after(const struct code_starts *c, uint64_t vaddr)
{
	size_t lo = 0, hi = c->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->stretches[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The swept stretch holding vaddr, swept now if need be. */
static int stretch_for(struct code_starts *c, const struct code_source *src, uint64_t vaddr,
		       const struct code_stretch **out)
{
	size_t at = stretch_after(c, vaddr);
	struct code_stretch st;
	uint64_t lo, hi;
	bool known_start;
	int err;

	if (at > 0 && vaddr < c->stretches[at - 1].hi) {
		*out = &c->stretches[at - 1];
		return 0;
	}
	if (c->nr >= CODE_STRETCHES_MAX ||
	    stretch_bounds(src, vaddr, &lo, &hi, &known_start) != 0)
		return -ENOENT;
	/* a block of a large stretch may meet one swept before: stay clear of it */
	if (at > 0 && lo < c->stretches[at - 1].hi)
		lo = c->stretches[at - 1].hi, known_start = false;
	if (at < c->nr && hi > c->stretches[at].lo)
		hi = c->stretches[at].lo;
	if (grow_array((void **)&c->stretches, &c->cap, c->nr + 1, sizeof(*c->stretches)) != 0)
		return -ENOMEM;
	err = sweep_stretch(src, lo, hi, known_start, &st);
	if (err)
		return err;
	memmove(&c->stretches[at + 1], &c->stretches[at], (c->nr - at) * sizeof(*c->stretches));
	c->stretches[at] = st;
	c->nr++;
	c->bytes += sizeof(st) + st.nr_starts * sizeof(*st.starts);
	*out = &c->stretches[at];
	return 0;
}

int code_starts__find(struct code_starts **cache, const struct code_source *src,
		      uint64_t vaddr, uint64_t *start)
{
	const struct code_stretch *st;
	size_t above;
	int err;

	if (!*cache) {
		*cache = calloc(1, sizeof(**cache));
		if (!*cache)
			return -ENOMEM;
	}
	err = stretch_for(*cache, src, vaddr, &st);
	if (err)
		return err;
	if (vaddr >= st->hi)
		return -ENOENT;
	above = index_above(st->starts, st->nr_starts, vaddr);
	if (above == 0)
		return -ENOENT;
	*start = st->starts[above - 1];
	return 0;
}

size_t code_starts__bytes(const struct code_starts *c)
{
	return c ? sizeof(*c) + c->cap * sizeof(*c->stretches) + c->bytes : 0;
}

void code_starts__free(struct code_starts *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr; i++)
		free(c->stretches[i].starts);
	free(c->stretches);
	free(c);
}
