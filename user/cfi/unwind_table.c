/* The unwind table: collects every FDE of the chosen sections, orders them by pc, runs
 * their CFA programs into compact rows (merging runs of equal rules, marking where a
 * function ends before the next begins) and answers lookups by binary search. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfi/fde.h"
#include "cfi/internal.h"
#include "util/grow.h"

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


static bool fits16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

/* A row's rules (the 8 bytes after pc) as one integer: equal rules, equal integers, as
 * long as neither row is wide. */
static inline uint64_t row_rules(const struct unwind_row *row)
{
	uint64_t v;

	memcpy(&v, &row->cfa_kind, sizeof(v));
	return v;
}

static bool wide_equal(const struct unwind_row_wide *w, const struct unwind_rules *r)
{
	return w->cfa_arg == r->cfa_offset && w->rbp_arg == r->rbp_offset && w->ra_arg == r->ra_offset;
}

static int push_row(struct cfi_sink *s, const struct unwind_row *row)
{
	if (s->nr_rows == s->cap_rows &&
	    grow_array((void **)&s->rows, &s->cap_rows, s->nr_rows + 1, sizeof(*row)))
		return -ENOMEM;
	s->rows[s->nr_rows++] = *row;
	return 0;
}

/* Appends the row unless the previous row has the same rules; *added says which. */
static int encode_row(struct cfi_sink *s, uint64_t pc, const struct unwind_rules *r, bool *added)
{
	const struct unwind_row *last = s->have_last ? &s->rows[s->nr_rows - 1] : NULL;
	struct unwind_row row = {
		.pc = pc,
		.cfa_kind = r->cfa,
		.rbp_kind = r->rbp,
		.ra_kind = r->ra,
	};

	*added = false;
	if (fits16(r->cfa_offset) && fits16(r->rbp_offset) && r->ra_offset > UNWIND_ROW_WIDE &&
	    r->ra_offset <= INT8_MAX) {
		row.cfa_arg = (__s16)r->cfa_offset;
		row.rbp_arg = (__s16)r->rbp_offset;
		row.ra_arg = (__s8)r->ra_offset;
		/* compare with a copy kept in the sink, not the row just stored */
		if (last && s->last_rules_valid && s->last_rules == row_rules(&row))
			return 0;
		*added = true;
		s->last_rules = row_rules(&row);
		s->last_rules_valid = true;
		return push_row(s, &row);
	}
	if (last && last->ra_arg == UNWIND_ROW_WIDE && last->cfa_kind == row.cfa_kind &&
	    last->rbp_kind == row.rbp_kind && last->ra_kind == row.ra_kind &&
	    wide_equal(&s->wide[unwind_row_wide_index(last)], r))
		return 0;
	if (s->nr_wide >= UINT32_MAX)
		return -E2BIG;
	if (s->nr_wide == s->cap_wide &&
	    grow_array((void **)&s->wide, &s->cap_wide, s->nr_wide + 1, sizeof(*s->wide)))
		return -ENOMEM;
	s->wide[s->nr_wide] = (struct unwind_row_wide){ r->cfa_offset, r->rbp_offset, r->ra_offset };
	s->last_rules_valid = false;
	row.ra_arg = UNWIND_ROW_WIDE;
	row.cfa_arg = (__s16)(__u16)(s->nr_wide & 0xffff);
	row.rbp_arg = (__s16)(__u16)(s->nr_wide >> 16);
	s->nr_wide++;
	s->stats->wide_rows++;
	*added = true;
	return push_row(s, &row);
}

static void count_row(struct unwind_stats *st, const struct unwind_rules *r)
{
	st->rows++;
	st->cfa[r->cfa]++;
	st->rbp[r->rbp]++;
	st->ra[r->ra]++;
	if (r->cfa == UNWIND_CFA_UNSUPPORTED)
		st->cfa_reason[r->cfa_reason]++;
	if (r->rbp == UNWIND_RBP_UNSUPPORTED)
		st->rbp_reason[r->rbp_reason]++;
	if (r->ra == UNWIND_RA_UNSUPPORTED)
		st->ra_reason[r->ra_reason]++;
}

int cfi_sink__row(struct cfi_sink *s, uint64_t pc, const struct cfi_state *state,
		  const struct cfi_cie *cie)
{
	struct unwind_rules r;
	bool added;
	int err;

	if (cfi_sink__unchanged(s, state))
		return 0;
	cfi_state__rules(state, cie, &r);
	err = encode_row(s, pc, &r, &added);
	if (err)
		return err;
	if (added)
		count_row(s->stats, &r);
	s->last_state = *state;
	s->have_last = true;
	return 0;
}

static int end_marker(struct cfi_sink *s, uint64_t pc)
{
	struct unwind_row row = { .pc = pc, .cfa_kind = UNWIND_CFA_END };

	s->have_last = false;
	s->stats->end_markers++;
	return push_row(s, &row);
}

static int compile(const struct cfi_elf *elf, struct unwind_table *t, struct cfi_err *e)
{
	struct cfi_fdes fdes;
	struct cfi_sink sink = { .stats = &t->stats };
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
	sink.cap_rows = insn_bytes + 2 * fdes.nr_fdes + 1;
	sink.rows = malloc(sink.cap_rows * sizeof(*sink.rows));
	t->fde_starts = malloc((fdes.nr_fdes ? fdes.nr_fdes : 1) * sizeof(*t->fde_starts));
	if (!t->fde_starts) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (!sink.rows)
		sink.cap_rows = 0;
	else if (sink.cap_rows * sizeof(*sink.rows) >= 4u << 20)
		/* large tables: fewer page faults while the rows are written */
		madvise((void *)((uintptr_t)sink.rows & ~(uintptr_t)4095),
			sink.cap_rows * sizeof(*sink.rows), MADV_HUGEPAGE);
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
			err = end_marker(&sink, hi);
			if (err)
				goto cleanup;
		}
	}
	t->rows = sink.nr_rows ? realloc(sink.rows, sink.nr_rows * sizeof(*sink.rows)) : NULL;
	if (sink.nr_rows && !t->rows)
		t->rows = sink.rows;
	else if (!sink.nr_rows)
		free(sink.rows);
	sink.rows = NULL;
	t->nr_rows = sink.nr_rows;
	t->wide = sink.wide;
	t->nr_wide = sink.nr_wide;
	sink.wide = NULL;
	err = 0;
cleanup:
	free(sink.rows);
	free(sink.wide);
	cfi_fdes__release(&fdes);
	return err;
}

static int from_image(const uint8_t *img, size_t size, const char *name, unsigned int sources,
		      struct unwind_table **out, struct cfi_err *e)
{
	struct unwind_table *t = NULL;
	struct cfi_elf elf;
	int err;

	*out = NULL;
	err = cfi_elf__locate(img, size, sources, &elf, e);
	if (err)
		return err;
	t = calloc(1, sizeof(*t));
	if (!t) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = compile(&elf, t, e);
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

static const char *name_of(const char *const *names, size_t n, unsigned int i)
{
	return i < n && names[i] ? names[i] : "?";
}

#define NAME_OF(names, i) name_of(names, sizeof(names) / sizeof(names[0]), i)

const char *unwind_cfa_kind__name(enum unwind_cfa_kind kind)
{
	static const char *const names[] = {
		[UNWIND_CFA_END] = "end",
		[UNWIND_CFA_SP_OFFSET] = "sp-offset",
		[UNWIND_CFA_BP_OFFSET] = "bp-offset",
		[UNWIND_CFA_EXPR_PLT] = "expr-plt",
		[UNWIND_CFA_EXPR_DEREF_SP] = "expr-deref-sp",
		[UNWIND_CFA_EXPR_DEREF_BP] = "expr-deref-bp",
		[UNWIND_CFA_UNSUPPORTED] = "unsupported",
	};
	return NAME_OF(names, kind);
}

const char *unwind_rbp_kind__name(enum unwind_rbp_kind kind)
{
	static const char *const names[] = {
		[UNWIND_RBP_UNCHANGED] = "unchanged",
		[UNWIND_RBP_UNDEFINED] = "undefined",
		[UNWIND_RBP_AT_CFA] = "at-cfa",
		[UNWIND_RBP_VAL_CFA] = "val-cfa",
		[UNWIND_RBP_AT_SP] = "at-sp",
		[UNWIND_RBP_AT_BP] = "at-bp",
		[UNWIND_RBP_UNSUPPORTED] = "unsupported",
	};
	return NAME_OF(names, kind);
}

const char *unwind_ra_kind__name(enum unwind_ra_kind kind)
{
	static const char *const names[] = {
		[UNWIND_RA_AT_CFA] = "at-cfa",
		[UNWIND_RA_UNDEFINED] = "undefined",
		[UNWIND_RA_AT_SP] = "at-sp",
		[UNWIND_RA_UNSUPPORTED] = "unsupported",
	};
	return NAME_OF(names, kind);
}

const char *unwind_reason__name(enum unwind_reason reason)
{
	static const char *const names[] = {
		[UNWIND_REASON_NONE] = "none",
		[UNWIND_REASON_CFA_REGISTER] = "cfa-register",
		[UNWIND_REASON_EXPRESSION] = "expression",
		[UNWIND_REASON_VAL_EXPRESSION] = "val-expression",
		[UNWIND_REASON_REGISTER] = "register",
		[UNWIND_REASON_VAL_OFFSET] = "val-offset",
		[UNWIND_REASON_SAME_VALUE] = "same-value",
	};
	return NAME_OF(names, reason);
}
