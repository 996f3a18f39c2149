/* The unwind table, the CFI compiler's public face: finds an image's call-frame sections
 * (elf_sections.c), collects their FDEs in pc order (fde.c), runs each FDE's program
 * (dwarf_cfa.c) into compact rows (rows.c), and answers lookups by binary search.
 *
 * A table is compiled whole (hprof table, the vDSO, a JIT's unwinding info), or opened
 * lazily on a mapped file (a profiled binary, lazy_table.c): then only an index of FDE
 * starts is kept (fde_index.c), and a function's rows are compiled the first time a lookup
 * lands in it, into a cache shared by all lazy tables and bounded in bytes.
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
#include "cfi/lazy_table.h"
#include "cfi/rows.h"
#include "cfi/table.h"
#include "util/file_view.h"


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


void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	lazy_table__free(t->lazy);
	free(t->rows);
	free(t->wide);
	free(t->fde_starts);
	free(t->switches);
	free(t);
}



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
		return lazy_table__find(t->lazy, pc, NULL);
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

const char *unwind_table__go_function(const struct unwind_table *t, uint64_t pc)
{
	struct go_func f;

	if (!t || !t->lazy || !t->lazy->has_go || t->lazy->changed ||
	    !go_pclntab__func_at(&t->lazy->go, pc, &f))
		return NULL;
	return go_pclntab__name(&t->lazy->go, &f);
}

int unwind_table__function_start(const struct unwind_table *t, uint64_t pc, uint64_t *start)
{
	size_t lo = 0, hi;
	struct compiled_fn *fn;

	if (t && t->lazy) {
		if (!lazy_table__find(t->lazy, pc, &fn))
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


int unwind_table__gap(const struct unwind_table *t, uint64_t pc, uint64_t *lo, uint64_t *hi)
{
	size_t first_after, n = t ? t->nr_rows : 0;

	if (t && t->lazy)
		return lazy_table__gap(t->lazy, pc, lo, hi);
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


int unwind_table__open(const char *path, struct unwind_row_cache *cache,
		       struct unwind_table **out, char *errbuf, size_t errlen)
{
	struct cfi_err e = { .file = path, .buf = errbuf, .len = errlen };
	struct unwind_table *t;
	size_t bytes;
	int err;

	if (errlen)
		errbuf[0] = '\0';
	if (!path || !cache || !out)
		return -EINVAL;
	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return cfi_fail(&e, NULL, 0, "out of memory"), -ENOMEM;
	err = lazy_table__open(path, UNWIND_FILE_MAX_BYTES, cache, &t->lazy, &bytes, &e);
	if (err) {
		free(t);
		return err;
	}
	t->stats.fdes = lazy_table__fdes(t->lazy);
	t->stats.table_bytes = sizeof(*t) + bytes;
	*out = t;
	return 0;
}

bool cfi_table__lazy_function(const struct unwind_table *t, uint64_t pc,
			      struct unwind_fn_rows *out)
{
	struct compiled_fn *fn;

	if (!t || !t->lazy || !lazy_table__find(t->lazy, pc, &fn))
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
