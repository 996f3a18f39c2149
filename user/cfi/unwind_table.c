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

/* ---- collecting FDEs ---- */

struct collect {
	struct cfi_cie *cies;     /* append-only: FDEs keep indices into it */
	size_t nr_cies, cap_cies;
	uint32_t *order;          /* CIE indices sorted by (section, offset) */
	size_t cap_order;
	uint32_t last_cie;        /* most FDEs use the CIE the previous one used */
	struct cfi_fde *fdes;
	size_t nr_fdes, cap_fdes;
	const struct cfi_elf *elf;
	struct cfi_err *e;
};

static bool cie_before(const struct cfi_cie *c, uint8_t si, uint64_t off)
{
	return c->sec < si || (c->sec == si && c->off < off);
}

/* Index of the CIE at off in section si, parsing it on first use. */
static int cie_index(struct collect *co, uint8_t si, uint64_t off, uint32_t *out)
{
	size_t lo = 0, hi = co->nr_cies;
	struct cfi_cie *c;
	int err;

	if (co->nr_cies && co->cies[co->last_cie].off == off && co->cies[co->last_cie].sec == si) {
		*out = co->last_cie;
		return 0;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cie_before(&co->cies[co->order[mid]], si, off))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < co->nr_cies) {
		c = &co->cies[co->order[lo]];
		if (c->sec == si && c->off == off) {
			co->last_cie = co->order[lo];
			*out = co->last_cie;
			return 0;
		}
	}
	if (co->nr_cies >= UINT32_MAX)
		return -E2BIG;
	if (co->nr_cies == co->cap_cies &&
	    grow_array((void **)&co->cies, &co->cap_cies, co->nr_cies + 1, sizeof(*co->cies)))
		return -ENOMEM;
	if (co->nr_cies == co->cap_order &&
	    grow_array((void **)&co->order, &co->cap_order, co->nr_cies + 1, sizeof(*co->order)))
		return -ENOMEM;
	err = cfi_parse_cie(&co->elf->sec[si], off, &co->cies[co->nr_cies], co->e);
	if (err)
		return err;
	co->cies[co->nr_cies].sec = si;
	/* CIEs usually come in section order, so this moves nothing */
	memmove(&co->order[lo + 1], &co->order[lo], (co->nr_cies - lo) * sizeof(*co->order));
	co->order[lo] = (uint32_t)co->nr_cies;
	co->last_cie = (uint32_t)co->nr_cies++;
	*out = co->last_cie;
	return 0;
}

/* Collects the section's FDEs; *used is how far the entries went (for .eh_frame found
 * through .eh_frame_hdr, up to the zero terminator rather than the segment's end). */
static int collect_section(struct collect *co, uint8_t si, uint64_t *used)
{
	const struct cfi_section *sec = &co->elf->sec[si];
	uint64_t off = 0, next, cie_off, body, body_end;
	enum cfi_entry_kind kind;
	uint32_t ci;
	int err;

	/* each entry is at least 4 bytes long, so this ends */
	while (off < sec->size) {
		next = off;
		err = cfi_next_entry(sec, &next, &kind, &cie_off, &body, &body_end, co->e);
		if (err)
			return err;
		if (kind == CFI_ENTRY_ZERO && sec->stop_at_zero) {
			*used = next;
			return 0;
		}
		if (kind == CFI_ENTRY_CIE) {
			err = cie_index(co, si, off, &ci);
			if (err)
				return err;
		} else if (kind == CFI_ENTRY_FDE) {
			err = cie_index(co, si, cie_off, &ci);
			if (err)
				return err;
			if (co->nr_fdes == co->cap_fdes &&
			    grow_array((void **)&co->fdes, &co->cap_fdes, co->nr_fdes + 1,
				       sizeof(*co->fdes)))
				return -ENOMEM;
			err = cfi_parse_fde(sec, &co->cies[ci], off, body, body_end,
					    &co->fdes[co->nr_fdes], co->e);
			if (err)
				return err;
			co->fdes[co->nr_fdes].cie = ci;
			co->nr_fdes++;
		}
		off = next;
	}
	*used = off;
	return 0;
}

struct sort_key {
	uint64_t lo;
	uint32_t idx;
};

/* FDE indices ordered by start pc. A stable LSD radix sort: FDEs starting at the same pc
 * keep collection order (.debug_frame before .eh_frame, then section offset), so the later
 * one wins. Byte positions where every start agrees are skipped. */
static int sort_fdes(const struct collect *co, uint32_t **order)
{
	size_t n = co->nr_fdes, cnt[256];
	struct sort_key *a, *b, *t;
	uint64_t all_or = 0, all_and = ~0ull;
	bool sorted = true;
	int err = 0;

	*order = malloc((n ? n : 1) * sizeof(**order));
	a = malloc((n ? n : 1) * sizeof(*a));
	b = malloc((n ? n : 1) * sizeof(*b));
	if (!*order || !a || !b) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		a[i] = (struct sort_key){ co->fdes[i].lo, (uint32_t)i };
		all_or |= a[i].lo;
		all_and &= a[i].lo;
		sorted &= i == 0 || a[i - 1].lo <= a[i].lo;
	}
	for (unsigned int shift = 0; shift < 64 && !sorted; shift += 8) {
		size_t sum = 0;

		if ((((all_or ^ all_and) >> shift) & 0xff) == 0)
			continue;
		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(a[i].lo >> shift) & 0xff]++;
		for (int d = 0; d < 256; d++) {
			size_t c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			b[cnt[(a[i].lo >> shift) & 0xff]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	for (size_t i = 0; i < n; i++)
		(*order)[i] = a[i].idx;
cleanup:
	free(a);
	free(b);
	if (err) {
		free(*order);
		*order = NULL;
	}
	return err;
}

static int compile(const struct cfi_elf *elf, struct unwind_table *t, struct cfi_err *e)
{
	struct collect co = { .elf = elf, .e = e };
	struct cfi_sink sink = { .stats = &t->stats };
	uint32_t *order = NULL;
	size_t insn_bytes = 0;
	int err;

	for (int i = 0; i < elf->nr_sec; i++) {
		uint64_t used = 0;

		err = collect_section(&co, (uint8_t)i, &used);
		if (err)
			goto cleanup;
		t->stats.cfi_bytes += used;
	}
	err = sort_fdes(&co, &order);
	if (err)
		goto cleanup;
	/* rows are bounded by program bytes plus a first row and an end marker per FDE;
	 * reserving that up front avoids copying on growth, and untouched pages cost nothing */
	for (size_t i = 0; i < co.nr_fdes; i++)
		insn_bytes += co.fdes[i].insn_len;
	sink.cap_rows = insn_bytes + 2 * co.nr_fdes + 1;
	sink.rows = malloc(sink.cap_rows * sizeof(*sink.rows));
	t->fde_starts = malloc((co.nr_fdes ? co.nr_fdes : 1) * sizeof(*t->fde_starts));
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
	for (size_t i = 0; i < co.nr_fdes; i++) {
		const struct cfi_fde *f = &co.fdes[order[i]];
		const struct cfi_cie *cie = &co.cies[f->cie];
		uint64_t hi = f->hi;
		bool touches_next = false;

		t->stats.fdes++;
		if (i + 1 < co.nr_fdes && co.fdes[order[i + 1]].lo <= hi) {
			/* an overlapping FDE ends where the next begins */
			hi = co.fdes[order[i + 1]].lo;
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
	free(order);
	free(co.cies);
	free(co.order);
	free(co.fdes);
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
