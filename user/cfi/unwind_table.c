/* The unwind table, the CFI compiler's public face: finds an image's call-frame sections
 * (elf_sections.c), collects their FDEs in pc order (fde.c), runs each FDE's program
 * (dwarf_cfa.c) into compact rows (rows.c), and answers lookups by binary search. */
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

#include "cfi/elf_sections.h"
#include "cfi/fde.h"
#include "cfi/reader.h"
#include "cfi/rows.h"

struct unwind_table {
	struct unwind_row *rows;
	size_t nr_rows;
	struct unwind_row_wide *wide;
	size_t nr_wide;
	/* where each compiled FDE begins, ascending: rows cannot say, since adjacent FDEs
	 * with equal rules share a row and leave no end marker between them */
	uint64_t *fde_starts;
	size_t nr_fde_starts;
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
	free(t->rows);
	free(t->wide);
	free(t->fde_starts);
	free(t);
}

const struct unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t pc)
{
	size_t lo = 0, hi;
	const struct unwind_row *row;

	if (!t || t->nr_rows == 0)
		return NULL;
	hi = t->nr_rows;
	/* the first row with pc > target; the one before it covers the target */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	row = &t->rows[lo - 1];
	return row->cfa_kind == UNWIND_CFA_END ? NULL : row;
}

int unwind_table__function_start(const struct unwind_table *t, uint64_t pc, uint64_t *start)
{
	size_t lo = 0, hi;

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
	size_t first_after = 0, n = t ? t->nr_rows : 0, high = n;

	/* the first row with pc > target, as in unwind_table__find */
	while (first_after < high) {
		size_t mid = first_after + (high - first_after) / 2;

		if (t->rows[mid].pc <= pc)
			first_after = mid + 1;
		else
			high = mid;
	}
	if (first_after > 0 && t->rows[first_after - 1].cfa_kind != UNWIND_CFA_END)
		return -EEXIST;
	*lo = first_after > 0 ? t->rows[first_after - 1].pc : 0;
	*hi = first_after < n ? t->rows[first_after].pc : UINT64_MAX;
	return 0;
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

		if (i < t->nr_wide) {
			r->cfa_offset = t->wide[i].cfa_arg;
			r->rbp_offset = t->wide[i].rbp_arg;
			r->ra_offset = t->wide[i].ra_arg;
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
