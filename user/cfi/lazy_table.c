/* Lazily compiled tables: a mapped file's index of FDE starts (fde_index.c), and each
 * function's rows compiled the first time a lookup lands in it (or a Go function's, from
 * .gopclntab), into a cache shared by all lazy tables and bounded in bytes (least recently
 * used out). A function is compiled with the bounds the whole table would give it, so
 * both give the same rules for every pc. */
#include "cfi/lazy_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/dwarf_cfa.h"
#include "cfi/fde.h"
#include "cfi/fde_index.h"
#include "cfi/rows.h"
#include "util/file_view.h"

int unwind_row_cache__new(size_t max_bytes, struct unwind_row_cache **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->stats.max_bytes = max_bytes;
	return 0;
}

void unwind_row_cache__stats(const struct unwind_row_cache *c, struct unwind_row_cache_stats *stats)
{
	if (c)
		*stats = c->stats;
	else
		memset(stats, 0, sizeof(*stats));
}

static void lru_unlink(struct unwind_row_cache *c, struct compiled_fn *fn)
{
	if (fn->lru_prev)
		fn->lru_prev->lru_next = fn->lru_next;
	else
		c->lru_head = fn->lru_next;
	if (fn->lru_next)
		fn->lru_next->lru_prev = fn->lru_prev;
	else
		c->lru_tail = fn->lru_prev;
	fn->lru_prev = fn->lru_next = NULL;
}

static void lru_push_front(struct unwind_row_cache *c, struct compiled_fn *fn)
{
	fn->lru_prev = NULL;
	fn->lru_next = c->lru_head;
	if (c->lru_head)
		c->lru_head->lru_prev = fn;
	c->lru_head = fn;
	if (!c->lru_tail)
		c->lru_tail = fn;
}

/* Takes fn out of the cache and its table, and frees it. */
static void fn_free(struct unwind_row_cache *c, struct compiled_fn *fn)
{
	struct lazy_table *owner = (struct lazy_table *)fn->key.owner;

	HASH_DEL(c->by_key, fn);
	lru_unlink(c, fn);
	if (fn->own_prev)
		fn->own_prev->own_next = fn->own_next;
	else
		owner->fns = fn->own_next;
	if (fn->own_next)
		fn->own_next->own_prev = fn->own_prev;
	if (owner->last == fn)
		owner->last = NULL;
	c->stats.bytes -= fn->bytes;
	c->stats.functions--;
	free(fn->rows);
	free(fn->wide);
	free(fn);
}

/* Evicts the least recently used functions until the cache fits, keeping keep (the one
 * just compiled, which a lookup is about to read). */
static void evict_to_fit(struct unwind_row_cache *c, const struct compiled_fn *keep)
{
	while (c->stats.bytes > c->stats.max_bytes && c->lru_tail && c->lru_tail != keep) {
		fn_free(c, c->lru_tail);
		c->stats.evictions++;
	}
}

void unwind_row_cache__free(struct unwind_row_cache *c)
{
	if (!c)
		return;
	while (c->lru_head)
		fn_free(c, c->lru_head);
	free(c);
}

/* Compiles index entry i's FDE into fn: the same bounds and rows as the whole-table
 * compile gives it (see compile()). */
static int compile_fn(struct lazy_table *lz, size_t i, struct compiled_fn *fn, struct cfi_err *e)
{
	struct unwind_stats scratch = { 0 };
	struct cfi_rows rows = { .stats = &scratch };
	struct cfi_sink sink = { cfi_rows__add_state, &rows };
	size_t n = cfi_fde_index__count(lz->index);
	struct cfi_cie cie;
	struct cfi_fde fde;
	uint64_t off, hi;
	uint8_t si;
	int err;

	cfi_fde_index__where(lz->index, i, &si, &off);
	if (si >= lz->elf.nr_sec)
		return -EINVAL;
	err = cfi_fde__parse_at(&lz->elf.sec[si], off, &cie, &fde, e);
	if (err)
		return err;
	cie.sec = si;
	if (fde.lo != cfi_fde_index__lo(lz->index, i))
		return cfi_fail(e, &lz->elf.sec[si], off, "FDE starts at 0x%llx, its index says 0x%llx",
				(unsigned long long)fde.lo,
				(unsigned long long)cfi_fde_index__lo(lz->index, i));
	hi = fde.hi;
	if (i + 1 < n && cfi_fde_index__lo(lz->index, i + 1) <= hi) {
		/* an overlapping FDE ends where the next begins */
		hi = cfi_fde_index__lo(lz->index, i + 1);
		fn->open_end = true;
	}
	fn->lo = fde.lo;
	fn->end = hi;
	if (fde.lo >= hi) {
		fn->skipped = true;
		return 0;
	}
	cfi_rows__reserve(&rows, (size_t)fde.insn_len + 2);
	err = cfi_run_fde(&lz->elf.sec[si], &cie, &fde, hi, &sink, e);
	if (!err && !fn->open_end)
		err = cfi_rows__end_function(&rows, hi);
	if (!err)
		cfi_rows__take(&rows, &fn->rows, &fn->nr_rows, &fn->wide, &fn->nr_wide);
	cfi_rows__release(&rows);
	/* a function is compiled once: the pages read go back (file_view__drop_touched) */
	file_view__touched(lz->view);
	return err;
}

/* A Go function's rows from its pcsp table: at each pc the CFA is rsp plus what the
 * function has pushed or reserved there, plus the return address. Go keeps a frame
 * pointer: a function that has a frame saved rbp just below its return address. The
 * functions Go's runtime marks as where its stacks start (goexit, mstart, rt0_go) have
 * no caller. */
struct go_rows {
	struct cfi_rows *rows;
	bool top;
	uint64_t end; /* of the last stretch */
};

static int add_go_delta(void *arg, uint64_t lo, uint64_t hi, int32_t delta)
{
	struct go_rows *g = arg;
	struct cfi_state state = {
		.cfa = { .reg = UNWIND_DWARF_RSP, .offset = (int64_t)delta + 8 },
		.ra = { .how = g->top ? CFI_REG_UNDEFINED : CFI_REG_OFFSET, .arg = -8 },
	};

	g->end = hi;
	if (delta >= 8)
		state.rbp = (struct cfi_reg_rule){ .how = CFI_REG_OFFSET, .arg = -16 };
	return cfi_rows__add_state(g->rows, lo, &state);
}

static int compile_go_fn(struct lazy_table *lz, uint32_t i, struct compiled_fn *fn)
{
	struct unwind_stats scratch = { 0 };
	struct cfi_rows rows = { .stats = &scratch };
	struct go_rows g = { &rows, false, 0 };
	struct go_func f;
	int err;

	if (!go_pclntab__func(&lz->go, i, &f))
		return -EINVAL;
	fn->lo = f.entry;
	fn->end = f.end;
	g.top = f.flag & GO_FUNC_TOPFRAME;
	err = go_pclntab__sp_deltas(&lz->go, &f, add_go_delta, &g);
	if (!err && g.end > f.entry)
		err = cfi_rows__end_function(&rows, g.end);
	if (!err)
		cfi_rows__take(&rows, &fn->rows, &fn->nr_rows, &fn->wide, &fn->nr_wide);
	cfi_rows__release(&rows);
	file_view__touched(lz->view);
	return err;
}

/* Index entry i's function (or a Go function's, GO_FN_KEY), compiled on first use. NULL
 * when out of memory or when the file changed under the table. */
static struct compiled_fn *lazy_fn(struct lazy_table *lz, uint64_t i)
{
	struct unwind_row_cache *c = lz->cache;
	struct fn_key key = { lz, i };
	struct compiled_fn *fn;
	struct cfi_err e = { .file = "", .buf = NULL, .len = 0 };

	HASH_FIND(hh, c->by_key, &key, sizeof(key), fn);
	if (fn) {
		c->stats.hits++;
		if (c->lru_head != fn) {
			lru_unlink(c, fn);
			lru_push_front(c, fn);
		}
		return fn;
	}
	if (lz->changed || (lz->view && file_view__changed(lz->view))) {
		if (!lz->changed)
			c->stats.changed_files++;
		lz->changed = true;
		return NULL;
	}
	c->stats.misses++;
	fn = calloc(1, sizeof(*fn));
	if (!fn)
		return NULL;
	fn->key = key;
	if ((i & GO_FN_KEY ? compile_go_fn(lz, (uint32_t)i, fn) : compile_fn(lz, (size_t)i, fn, &e)) ==
	    -ENOMEM) {
		free(fn->rows);
		free(fn->wide);
		free(fn);
		return NULL;
	} else if (!fn->skipped && !fn->nr_rows) {
		/* malformed, or a program that left no row: remembered, so not compiled again */
		free(fn->rows);
		free(fn->wide);
		fn->rows = NULL;
		fn->wide = NULL;
		fn->nr_wide = 0;
		fn->bad = true;
		c->stats.bad_fdes++;
	}
	fn->bytes = sizeof(*fn) + fn->nr_rows * sizeof(*fn->rows) + fn->nr_wide * sizeof(*fn->wide);
	HASH_ADD(hh, c->by_key, key, sizeof(fn->key), fn);
	lru_push_front(c, fn);
	fn->own_next = lz->fns;
	if (lz->fns)
		lz->fns->own_prev = fn;
	lz->fns = fn;
	c->stats.bytes += fn->bytes;
	c->stats.functions++;
	c->stats.compiled++;
	evict_to_fit(c, fn);
	return fn;
}

/* The function whose rows hold pc as the whole table would: the last FDE at or below
 * entry k that holds any pc. *found false when there is none (or too many that hold none
 * lie in the way); NULL when a function could not be had at all. */
static struct compiled_fn *holder_at_or_below(struct lazy_table *lz, size_t k, bool *found)
{
	*found = false;
	for (size_t steps = 0; steps <= LAZY_SKIP_MAX; steps++) {
		struct compiled_fn *fn = lazy_fn(lz, k);

		if (!fn)
			return NULL;
		if (!fn->skipped) {
			*found = true;
			return fn;
		}
		if (k == 0)
			return NULL;
		k--;
	}
	return NULL;
}

/* The row of fn covering pc (pc >= fn->lo), or NULL. */
static const struct unwind_row *fn_row(const struct compiled_fn *fn, uint64_t pc)
{
	const struct unwind_row *row;
	size_t lo;

	if (fn->bad || !fn->nr_rows)
		return NULL;
	if (pc >= fn->end) {
		/* past its end: its last row runs on only where no end marker stops it */
		row = &fn->rows[fn->nr_rows - 1];
		return fn->open_end && row->cfa_kind != UNWIND_CFA_END ? row : NULL;
	}
	lo = first_row_above(fn->rows, fn->nr_rows, pc);
	if (lo == 0)
		return NULL;
	row = &fn->rows[lo - 1];
	return row->cfa_kind == UNWIND_CFA_END ? NULL : row;
}

/* The function an FDE gives pc, or NULL. */
static struct compiled_fn *fde_fn(struct lazy_table *lz, uint64_t pc)
{
	bool found;
	size_t k;

	if (!cfi_fde_index__floor(lz->index, pc, &k))
		return NULL;
	return holder_at_or_below(lz, k, &found);
}

/* The function holding pc: its FDE's; a Go function's by .gopclntab where no FDE covers
 * pc; none for a Go function that switches stacks (unwind_table__switches_stack), whose
 * FDE (from Go's same tables) says nothing of the stack it moved to. */
static const struct unwind_row *lookup_fn(struct lazy_table *lz, uint64_t pc,
					  struct compiled_fn **out)
{
	const struct unwind_row *row = NULL;
	struct compiled_fn *fn;
	struct go_func gf;
	bool go = lz->has_go && go_pclntab__func_at(&lz->go, pc, &gf);

	if (go && (gf.flag & GO_FUNC_SPWRITE))
		return NULL;
	if (!go || !(gf.flag & GO_FUNC_TOPFRAME)) {
		fn = fde_fn(lz, pc);
		row = fn ? fn_row(fn, pc) : NULL;
	}
	if (!row && go) {
		fn = lazy_fn(lz, GO_FN_KEY | gf.index);
		row = fn ? fn_row(fn, pc) : NULL;
	}
	if (row)
		*out = fn;
	return row;
}

const struct unwind_row *lazy_table__find(struct lazy_table *lz, uint64_t pc,
					  struct compiled_fn **fn_out)
{
	struct compiled_fn *fn = lz->last;
	const struct unwind_row *row;

	if (lz->changed)
		return NULL;
	/* most lookups land in the function the last one did */
	if (!fn || fn->skipped || pc < fn->lo || pc >= fn->end) {
		row = lookup_fn(lz, pc, &fn);
	} else {
		lz->cache->stats.hits++;
		row = fn_row(fn, pc);
	}
	if (row) {
		lz->last = fn;
		if (fn_out)
			*fn_out = fn;
	}
	return row;
}

int lazy_table__gap(struct lazy_table *lz, uint64_t pc, uint64_t *lo, uint64_t *hi)
{
	size_t n = cfi_fde_index__count(lz->index), k, next;
	struct compiled_fn *fn = NULL;
	bool found = false;

	if (lazy_table__find(lz, pc, NULL))
		return -EEXIST;
	*lo = 0;
	*hi = UINT64_MAX;
	if (cfi_fde_index__floor(lz->index, pc, &k)) {
		fn = holder_at_or_below(lz, k, &found);
		if (found)
			*lo = fn->end; /* its end marker */
		next = k + 1;
	} else {
		next = 0;
	}
	/* the first row above pc: that of the next FDE holding any pc */
	for (size_t steps = 0; next < n && steps <= LAZY_SKIP_MAX; next++, steps++) {
		fn = lazy_fn(lz, next);
		if (!fn || !fn->skipped) {
			*hi = cfi_fde_index__lo(lz->index, next);
			break;
		}
	}
	return 0;
}

void lazy_table__free(struct lazy_table *lz)
{
	if (!lz)
		return;
	while (lz->fns)
		fn_free(lz->cache, lz->fns);
	cfi_fde_index__free(lz->index);
	cfi_elf__release(&lz->elf);
	file_view__close(lz->view);
	free(lz);
}

int lazy_table__open(const char *path, uint64_t max_bytes, struct unwind_row_cache *cache,
		     struct lazy_table **out, size_t *bytes, struct cfi_err *e)
{
	struct lazy_table *lz = calloc(1, sizeof(*lz));
	const uint8_t *hdr_table;
	size_t hdr_len;
	int err;

	*out = NULL;
	if (!lz)
		return cfi_fail(e, NULL, 0, "out of memory"), -ENOMEM;
	lz->cache = cache;
	err = file_view__open(path, max_bytes, &lz->view, e->buf, e->len);
	if (err)
		goto fail;
	lz->has_go = go_pclntab__from_elf(file_view__data(lz->view), file_view__size(lz->view),
					  &lz->go) == 0;
	err = cfi_elf__locate(file_view__data(lz->view), file_view__size(lz->view),
			      UNWIND_SRC_ALL, &lz->elf, e);
	if (err == -ENOENT && lz->has_go) {
		/* a Go binary stripped of .debug_frame, without C code: Go's tables only */
		err = 0;
		if (e->len)
			e->buf[0] = '\0';
	}
	if (err)
		goto fail;
	err = cfi_fde_index__build(&lz->elf, &lz->index, e);
	if (err)
		goto fail;
	/* the index check read the whole header table: only the pages lookups touch stay */
	if (cfi_fde_index__hdr_range(lz->index, &hdr_table, &hdr_len))
		file_view__drop_pages(lz->view, (uint64_t)(hdr_table - file_view__data(lz->view)),
				      hdr_len);
	*bytes = sizeof(*lz) + cfi_fde_index__bytes(lz->index);
	for (int i = 0; i < lz->elf.nr_sec; i++) {
		if (lz->elf.owned[i])
			*bytes += lz->elf.sec[i].size; /* decompressed .debug_frame */
	}
	*out = lz;
	return 0;
fail:
	lazy_table__free(lz);
	return err;
}

size_t lazy_table__fdes(const struct lazy_table *lz)
{
	return cfi_fde_index__count(lz->index);
}
