/* The unwind table, the CFI compiler's public face: finds an image's call-frame sections
 * (elf_sections.c), collects their FDEs in pc order (fde.c), runs each FDE's program
 * (dwarf_cfa.c) into compact rows (rows.c), and answers lookups by binary search.
 *
 * A table is compiled whole (hprof table, the vDSO, a JIT's unwinding info), or opened
 * lazily on a mapped file (a profiled binary): then only an index of FDE starts is kept
 * (fde_index.c), and a function's rows are compiled the first time a lookup lands in it,
 * into a cache shared by all lazy tables and bounded in bytes (least recently used out).
 * Both give the same rules for every pc: each FDE is compiled with the same bounds, and
 * where the whole table would let a function's last row run on (an FDE overlapping the
 * next), the lazy one does too. */
#include "cfi/unwind_table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uthash.h>

#include "cfi/elf_sections.h"
#include "cfi/fde.h"
#include "cfi/fde_index.h"
#include "cfi/reader.h"
#include "cfi/go_pclntab.h"
#include "cfi/rows.h"
#include "cfi/table.h"
#include "util/file_view.h"

/* Steps over FDEs that hold no pc (empty ranges, duplicates of the next start) that one
 * lookup takes before giving up: real binaries have a few; a hostile one gets no rows. */
#define LAZY_SKIP_MAX 64

struct lazy_table;

/* One FDE's rows, or one Go function's, compiled on first use. */
struct fn_key {
	const struct lazy_table *owner;
	uint64_t entry; /* index entry, or GO_FN_KEY | the function's index in .gopclntab */
};

#define GO_FN_KEY (1ull << 63)

struct compiled_fn {
	struct fn_key key;
	uint64_t lo, end; /* the rows cover [lo, end) */
	bool open_end;    /* no end marker at end: the whole table's last row of this FDE
			   * runs on until the next FDE that holds a pc */
	bool skipped;     /* holds no pc: an empty range, or the next FDE starts here too */
	bool bad;         /* malformed: no rows */
	struct unwind_row *rows;
	size_t nr_rows;
	struct unwind_row_wide *wide;
	size_t nr_wide;
	size_t bytes;
	struct compiled_fn *lru_prev, *lru_next; /* in the cache, most recent first */
	struct compiled_fn *own_prev, *own_next; /* in its table */
	UT_hash_handle hh;
};

struct unwind_row_cache {
	struct compiled_fn *by_key;
	struct compiled_fn *lru_head, *lru_tail;
	struct unwind_row_cache_stats stats;
};

/* What a lazily opened table holds besides its index. */
struct lazy_table {
	struct file_view *view;
	struct cfi_elf elf;
	struct cfi_fde_index *index;
	struct unwind_row_cache *cache;
	struct compiled_fn *fns;   /* this table's functions in the cache */
	struct compiled_fn *last;  /* the function the last lookup landed in */
	bool changed;              /* the file changed under the table: no more lookups */
	/* Go's function table, where the file has one: rows for Go code no FDE covers (a
	 * binary stripped of .debug_frame), and Go's word on where its stacks end */
	bool has_go;
	struct go_pclntab go;
};

struct unwind_table {
	struct lazy_table *lazy; /* NULL: compiled whole */
	struct unwind_row *rows;
	size_t nr_rows;
	struct unwind_row_wide *wide;
	size_t nr_wide;
	/* where each compiled FDE begins, ascending: rows cannot say, since adjacent FDEs
	 * with equal rules share a row and leave no end marker between them */
	uint64_t *fde_starts;
	size_t nr_fde_starts;
	/* a table made of a slice's functions: stretches that switch stacks, ascending */
	uint64_t (*switches)[2];
	size_t nr_switches;
	struct unwind_stats stats;
};

static int compile(const struct cfi_elf *elf, struct unwind_table *t, struct cfi_err *e)
{
	struct cfi_fdes fdes;
	struct cfi_rows rows = { .stats = &t->stats };
	struct cfi_sink sink = { cfi_rows__add_state, &rows };
	size_t insn_bytes = 0;
	int err;

	err = cfi_fdes__collect(elf, &fdes, e);
	if (err)
		goto cleanup;
	t->stats.cfi_bytes = fdes.cfi_bytes;
	/* rows are bounded by program bytes plus a first row and an end marker per FDE;
	 * reserving that up front avoids copying on growth, and untouched pages cost nothing */
	for (size_t i = 0; i < fdes.nr_fdes; i++)
		insn_bytes += fdes.fdes[i].insn_len;
	cfi_rows__reserve(&rows, insn_bytes + 2 * fdes.nr_fdes + 1);
	t->fde_starts = malloc((fdes.nr_fdes ? fdes.nr_fdes : 1) * sizeof(*t->fde_starts));
	if (!t->fde_starts) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < fdes.nr_fdes; i++) {
		const struct cfi_fde *f = &fdes.fdes[fdes.by_pc[i]];
		const struct cfi_cie *cie = &fdes.cies[f->cie];
		uint64_t hi = f->hi;
		bool touches_next = false;

		t->stats.fdes++;
		if (i + 1 < fdes.nr_fdes && fdes.fdes[fdes.by_pc[i + 1]].lo <= hi) {
			/* an overlapping FDE ends where the next begins */
			hi = fdes.fdes[fdes.by_pc[i + 1]].lo;
			touches_next = true;
		}
		if (f->lo >= hi)
			continue;
		/* of FDEs at one pc only the last gets here, so starts strictly ascend */
		t->fde_starts[t->nr_fde_starts++] = f->lo;
		err = cfi_run_fde(&elf->sec[cie->sec], cie, f, hi, &sink, e);
		if (err)
			goto cleanup;
		if (!touches_next) {
			err = cfi_rows__end_function(&rows, hi);
			if (err)
				goto cleanup;
		}
	}
	cfi_rows__take(&rows, &t->rows, &t->nr_rows, &t->wide, &t->nr_wide);
cleanup:
	cfi_rows__release(&rows);
	cfi_fdes__release(&fdes);
	return err;
}

/* Compiles the sections elf found into *out. */
static int from_sections(struct cfi_elf *elf, const char *name, struct unwind_table **out,
			 struct cfi_err *e)
{
	struct unwind_table *t;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = compile(elf, t, e);
	if (err)
		goto cleanup;
	t->stats.table_bytes = sizeof(*t) + t->nr_rows * sizeof(*t->rows) +
			       t->nr_wide * sizeof(*t->wide) +
			       t->nr_fde_starts * sizeof(*t->fde_starts);
	*out = t;
	t = NULL;
cleanup:
	if (err == -ENOMEM)
		cfi_fail(e, NULL, 0, "out of memory compiling %s", name);
	unwind_table__free(t);
	return err;
}

static int from_image(const uint8_t *img, size_t size, const char *name, unsigned int sources,
		      struct unwind_table **out, struct cfi_err *e)
{
	struct cfi_elf elf;
	int err;

	*out = NULL;
	err = cfi_elf__locate(img, size, sources, &elf, e);
	if (err)
		return err;
	err = from_sections(&elf, name, out, e);
	cfi_elf__release(&elf);
	return err;
}

int unwind_table__from_image(const void *image, size_t size, const char *name,
			     unsigned int sources, struct unwind_table **out, char *err,
			     size_t errlen)
{
	struct cfi_err e = { .file = name ? name : "<memory>", .buf = err, .len = errlen };

	if (errlen)
		err[0] = '\0';
	if (!image || !out)
		return -EINVAL;
	return from_image(image, size, e.file, sources, out, &e);
}

int unwind_table__from_eh_frame(const void *eh_frame, size_t size, uint64_t section_addr,
				const char *name, struct unwind_table **out, char *err,
				size_t errlen)
{
	struct cfi_err e = { .file = name ? name : "<memory>", .buf = err, .len = errlen };
	struct cfi_elf elf = { .nr_sec = 1 };

	if (errlen)
		err[0] = '\0';
	if (!eh_frame || !out)
		return -EINVAL;
	*out = NULL;
	if (size == 0) {
		cfi_fail(&e, NULL, 0, "empty .eh_frame");
		return -ENOENT;
	}
	/* as .eh_frame found through .eh_frame_hdr: its end is a zero terminator, if any */
	elf.sec[0] = (struct cfi_section){ .data = eh_frame, .size = size, .vaddr = section_addr,
					   .is_eh = true, .stop_at_zero = true,
					   .name = ".eh_frame" };
	return from_sections(&elf, e.file, out, &e);
}

int unwind_table__from_file(const char *path, unsigned int sources, struct unwind_table **out,
			    char *errbuf, size_t errlen)
{
	struct cfi_err e = { .file = path, .buf = errbuf, .len = errlen };
	void *map = MAP_FAILED;
	struct stat st;
	int fd = -1, err;

	if (errlen)
		errbuf[0] = '\0';
	if (!path || !out)
		return -EINVAL;
	*out = NULL;
	/* O_NONBLOCK: a FIFO named by a profiled process must not block hprof */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		err = -errno;
		cfi_fail(&e, NULL, 0, "%s", strerror(-err));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		err = -EINVAL;
		cfi_fail(&e, NULL, 0, "not a regular, non-empty file");
		goto cleanup;
	}
	if ((uint64_t)st.st_size > UNWIND_FILE_MAX_BYTES) {
		err = -EFBIG;
		cfi_fail(&e, NULL, 0, "larger than %llu bytes", (unsigned long long)UNWIND_FILE_MAX_BYTES);
		goto cleanup;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		cfi_fail(&e, NULL, 0, "mmap: %s", strerror(-err));
		goto cleanup;
	}
	err = from_image(map, (size_t)st.st_size, path, sources, out, &e);
cleanup:
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	if (fd >= 0)
		close(fd);
	return err;
}

static void lazy_free(struct lazy_table *lz);

void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	lazy_free(t->lazy);
	free(t->rows);
	free(t->wide);
	free(t->fde_starts);
	free(t->switches);
	free(t);
}

/* The index of the first of n rows (sorted by pc) whose pc is above pc: the row before it,
 * if any, covers pc. */
static size_t first_row_above(const struct unwind_row *rows, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct unwind_row *lazy_find(struct lazy_table *lz, uint64_t pc,
					  struct compiled_fn **fn_out);

/* pc lies in a stretch a slice says switches stacks. */
static bool in_switch(const struct unwind_table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nr_switches;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->switches[mid][1] <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->nr_switches && t->switches[lo][0] <= pc;
}

const struct unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t pc)
{
	size_t lo;
	const struct unwind_row *row;

	if (t && t->lazy)
		return lazy_find(t->lazy, pc, NULL);
	if (!t || t->nr_rows == 0 || in_switch(t, pc))
		return NULL;
	lo = first_row_above(t->rows, t->nr_rows, pc);
	if (lo == 0)
		return NULL;
	row = &t->rows[lo - 1];
	return row->cfa_kind == UNWIND_CFA_END ? NULL : row;
}

bool unwind_table__switches_stack(const struct unwind_table *t, uint64_t pc)
{
	struct go_func f;

	if (t && !t->lazy)
		return in_switch(t, pc);
	return t && t->lazy && t->lazy->has_go && !t->lazy->changed &&
	       go_pclntab__func_at(&t->lazy->go, pc, &f) && (f.flag & GO_FUNC_SPWRITE);
}

int unwind_table__function_start(const struct unwind_table *t, uint64_t pc, uint64_t *start)
{
	size_t lo = 0, hi;
	struct compiled_fn *fn;

	if (t && t->lazy) {
		if (!lazy_find(t->lazy, pc, &fn))
			return -ENOENT;
		*start = fn->lo;
		return 0;
	}
	if (!unwind_table__find(t, pc))
		return -ENOENT;
	hi = t->nr_fde_starts;
	/* the first start > pc; a covered pc always has one at or below it */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->fde_starts[mid] <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	*start = t->fde_starts[lo - 1];
	return 0;
}

static int lazy_gap(struct lazy_table *lz, uint64_t pc, uint64_t *lo, uint64_t *hi);

int unwind_table__gap(const struct unwind_table *t, uint64_t pc, uint64_t *lo, uint64_t *hi)
{
	size_t first_after, n = t ? t->nr_rows : 0;

	if (t && t->lazy)
		return lazy_gap(t->lazy, pc, lo, hi);
	first_after = n ? first_row_above(t->rows, n, pc) : 0;
	if (first_after > 0 && t->rows[first_after - 1].cfa_kind != UNWIND_CFA_END)
		return -EEXIST;
	*lo = first_after > 0 ? t->rows[first_after - 1].pc : 0;
	*hi = first_after < n ? t->rows[first_after].pc : UINT64_MAX;
	return 0;
}

bool unwind_table__rules_at(const struct unwind_table *t, uint64_t pc, struct unwind_rules *rules)
{
	const struct unwind_row *row = unwind_table__find(t, pc);

	if (!row)
		return false;
	unwind_table__decode(t, row, rules);
	return true;
}

const struct unwind_row *unwind_table__rows(const struct unwind_table *t, size_t *nr_rows)
{
	*nr_rows = t ? t->nr_rows : 0;
	return t ? t->rows : NULL;
}

void unwind_table__decode(const struct unwind_table *t, const struct unwind_row *row,
			  struct unwind_rules *r)
{
	memset(r, 0, sizeof(*r));
	r->cfa = row->cfa_kind;
	r->rbp = row->rbp_kind;
	r->ra = row->ra_kind;
	r->rbx = unwind_row_rbx_kind(row->rbx);
	r->rbx_offset = unwind_row_rbx_offset(row->rbx);
	if (row->ra_arg == UNWIND_ROW_WIDE) {
		uint32_t i = unwind_row_wide_index(row);
		const struct unwind_row_wide *wide = t->wide;
		size_t nr_wide = t->nr_wide;
		const struct compiled_fn *fn = t->lazy ? t->lazy->last : NULL;

		if (t->lazy) {
			/* the row came from the last lookup, so from its function */
			bool ours = fn && row >= fn->rows && row < fn->rows + fn->nr_rows;

			wide = ours ? fn->wide : NULL;
			nr_wide = ours ? fn->nr_wide : 0;
		}
		if (i < nr_wide) {
			r->cfa_offset = wide[i].cfa_arg;
			r->rbp_offset = wide[i].rbp_arg;
			r->ra_offset = wide[i].ra_arg;
		}
	} else {
		r->cfa_offset = row->cfa_arg;
		r->rbp_offset = row->rbp_arg;
		r->ra_offset = row->ra_arg;
	}
	if (r->cfa == UNWIND_CFA_UNSUPPORTED)
		r->cfa_reason = (enum unwind_reason)r->cfa_offset;
	if (r->rbp == UNWIND_RBP_UNSUPPORTED)
		r->rbp_reason = (enum unwind_reason)r->rbp_offset;
	if (r->ra == UNWIND_RA_UNSUPPORTED)
		r->ra_reason = (enum unwind_reason)r->ra_offset;
}

void unwind_table__stats(const struct unwind_table *t, struct unwind_stats *stats)
{
	if (t)
		*stats = t->stats;
	else
		memset(stats, 0, sizeof(*stats));
}

/* ---- lazily compiled tables ---- */

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

static const struct unwind_row *lazy_find(struct lazy_table *lz, uint64_t pc,
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

static int lazy_gap(struct lazy_table *lz, uint64_t pc, uint64_t *lo, uint64_t *hi)
{
	size_t n = cfi_fde_index__count(lz->index), k, next;
	struct compiled_fn *fn = NULL;
	bool found = false;

	if (lazy_find(lz, pc, NULL))
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

static void lazy_free(struct lazy_table *lz)
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

int unwind_table__open(const char *path, struct unwind_row_cache *cache,
		       struct unwind_table **out, char *errbuf, size_t errlen)
{
	struct cfi_err e = { .file = path, .buf = errbuf, .len = errlen };
	struct unwind_table *t = NULL;
	struct lazy_table *lz = NULL;
	const uint8_t *hdr_table;
	size_t hdr_len;
	int err;

	if (errlen)
		errbuf[0] = '\0';
	if (!path || !cache || !out)
		return -EINVAL;
	*out = NULL;
	t = calloc(1, sizeof(*t));
	lz = calloc(1, sizeof(*lz));
	if (!t || !lz) {
		err = -ENOMEM;
		cfi_fail(&e, NULL, 0, "out of memory");
		goto cleanup;
	}
	t->lazy = lz;
	lz->cache = cache;
	err = file_view__open(path, UNWIND_FILE_MAX_BYTES, &lz->view, errbuf, errlen);
	if (err)
		goto cleanup;
	lz->has_go = go_pclntab__from_elf(file_view__data(lz->view), file_view__size(lz->view),
					  &lz->go) == 0;
	err = cfi_elf__locate(file_view__data(lz->view), file_view__size(lz->view),
			      UNWIND_SRC_ALL, &lz->elf, &e);
	if (err == -ENOENT && lz->has_go) {
		/* a Go binary stripped of .debug_frame, without C code: Go's tables only */
		err = 0;
		if (errlen)
			errbuf[0] = '\0';
	}
	if (err)
		goto cleanup;
	err = cfi_fde_index__build(&lz->elf, &lz->index, &e);
	if (err)
		goto cleanup;
	/* the index check read the whole header table: only the pages lookups touch stay */
	if (cfi_fde_index__hdr_range(lz->index, &hdr_table, &hdr_len))
		file_view__drop_pages(lz->view, (uint64_t)(hdr_table - file_view__data(lz->view)),
				      hdr_len);
	t->stats.fdes = cfi_fde_index__count(lz->index);
	t->stats.table_bytes = sizeof(*t) + sizeof(*lz) + cfi_fde_index__bytes(lz->index);
	for (int i = 0; i < lz->elf.nr_sec; i++) {
		if (lz->elf.owned[i])
			t->stats.table_bytes += lz->elf.sec[i].size; /* decompressed .debug_frame */
	}
	*out = t;
	return 0;
cleanup:
	unwind_table__free(t);
	if (!t)
		free(lz);
	return err;
}


bool cfi_table__lazy_function(const struct unwind_table *t, uint64_t pc,
			      struct unwind_fn_rows *out)
{
	struct compiled_fn *fn;

	if (!t || !t->lazy || !lazy_find(t->lazy, pc, &fn))
		return false;
	*out = (struct unwind_fn_rows){ .lo = fn->lo, .end = fn->end, .open_end = fn->open_end,
					.rows = fn->rows, .nr_rows = fn->nr_rows,
					.wide = fn->wide, .nr_wide = fn->nr_wide };
	return true;
}

bool cfi_table__whole(const struct unwind_table *t, struct cfi_whole_table *out)
{
	if (!t || t->lazy)
		return false;
	*out = (struct cfi_whole_table){ .rows = t->rows, .nr_rows = t->nr_rows, .wide = t->wide,
					 .nr_wide = t->nr_wide, .fde_starts = t->fde_starts,
					 .nr_fde_starts = t->nr_fde_starts,
					 .switches = t->switches, .nr_switches = t->nr_switches };
	return true;
}

struct unwind_table *cfi_table__adopt(const struct cfi_whole_table *w)
{
	struct unwind_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->rows = (struct unwind_row *)w->rows;
	t->nr_rows = w->nr_rows;
	t->wide = (struct unwind_row_wide *)w->wide;
	t->nr_wide = w->nr_wide;
	t->fde_starts = (uint64_t *)w->fde_starts;
	t->nr_fde_starts = w->nr_fde_starts;
	t->switches = (uint64_t (*)[2])w->switches;
	t->nr_switches = w->nr_switches;
	t->stats.fdes = w->nr_fde_starts;
	for (size_t i = 0; i < w->nr_rows; i++)
		t->stats.rows += w->rows[i].cfa_kind != UNWIND_CFA_END;
	t->stats.table_bytes = sizeof(*t) + t->nr_rows * sizeof(*t->rows) +
			       t->nr_wide * sizeof(*t->wide) +
			       t->nr_fde_starts * sizeof(*t->fde_starts) +
			       t->nr_switches * sizeof(*t->switches);
	return t;
}
