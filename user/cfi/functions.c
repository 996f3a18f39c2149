/* Tables of functions' rows, as slices of binaries keep them (binary/slice.h): a function's
 * rows taken out of a table, and a table made whole of such functions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/table.h"
#include "cfi/unwind_table.h"

/* The index of the first row whose pc is at or above pc. */
static size_t first_row_from(const struct unwind_row *rows, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A whole table's function holding pc: from its FDE's start up to the next FDE's start
 * (which it touches, no end marker between) or through its end marker. */
static int whole_function_rows(const struct unwind_table *t, const struct cfi_whole_table *w,
			       uint64_t pc, struct unwind_fn_rows *out)
{
	uint64_t start, next = UINT64_MAX;
	size_t i, k;

	if (!unwind_table__find(t, pc) || unwind_table__function_start(t, pc, &start) != 0)
		return -ENOENT;
	k = first_row_from(w->rows, w->nr_rows, start);
	for (size_t j = 0; j < w->nr_fde_starts; j++) {
		if (w->fde_starts[j] > start) {
			next = w->fde_starts[j];
			break;
		}
	}
	*out = (struct unwind_fn_rows){ .lo = start, .end = next, .open_end = true,
					.rows = &w->rows[k], .wide = w->wide,
					.nr_wide = w->nr_wide };
	for (i = k; i < w->nr_rows && w->rows[i].pc < next; i++) {
		if (w->rows[i].cfa_kind == UNWIND_CFA_END) {
			out->end = w->rows[i].pc;
			out->open_end = false;
			i++;
			break;
		}
	}
	out->nr_rows = i - k;
	return 0;
}

int unwind_table__function_rows(const struct unwind_table *t, uint64_t pc,
				struct unwind_fn_rows *out)
{
	struct cfi_whole_table w;

	if (cfi_table__whole(t, &w))
		return whole_function_rows(t, &w, pc, out);
	return cfi_table__lazy_function(t, pc, out) ? 0 : -ENOENT;
}

/* f's rows are in order, within its bounds, and index only its side table. */
static bool function_well_formed(const struct unwind_fn_rows *f, uint64_t prev_end)
{
	if (f->lo < prev_end || f->end < f->lo || (f->nr_rows && !f->rows) ||
	    (f->nr_wide && !f->wide))
		return false;
	for (size_t i = 0; i < f->nr_rows; i++) {
		const struct unwind_row *r = &f->rows[i];

		if (r->pc < f->lo || r->pc > f->end || (i && r->pc <= f->rows[i - 1].pc) ||
		    r->cfa_kind >= UNWIND_CFA_KIND_COUNT ||
		    (r->cfa_kind == UNWIND_CFA_END && i + 1 != f->nr_rows) ||
		    (r->ra_arg == UNWIND_ROW_WIDE && unwind_row_wide_index(r) >= f->nr_wide))
			return false;
	}
	return true;
}

static bool inputs_well_formed(const struct unwind_fn_rows *fns, size_t nr_fns,
			       const uint64_t (*switches)[2], size_t nr_switches, size_t *rows,
			       size_t *wide)
{
	uint64_t prev_end = 0;

	*rows = *wide = 0;
	for (size_t i = 0; i < nr_fns; i++) {
		if (!function_well_formed(&fns[i], prev_end))
			return false;
		prev_end = fns[i].end;
		*rows += fns[i].nr_rows + 1;
		*wide += fns[i].nr_wide;
	}
	for (size_t i = 0; i < nr_switches; i++) {
		if (switches[i][1] <= switches[i][0] || (i && switches[i][0] < switches[i - 1][1]))
			return false;
	}
	return *wide <= UINT32_MAX;
}

/* Appends f's rows to rows (its side-table indexes moved past the base entries before
 * its own), and an end marker where it ends and nothing runs on from it. */
static size_t append_function(const struct unwind_fn_rows *f, const struct unwind_fn_rows *next,
			      uint32_t base, struct unwind_row *rows)
{
	bool ended = f->nr_rows && f->rows[f->nr_rows - 1].cfa_kind == UNWIND_CFA_END;
	size_t n = 0;

	for (size_t j = 0; j < f->nr_rows; j++) {
		struct unwind_row r = f->rows[j];

		if (r.ra_arg == UNWIND_ROW_WIDE) {
			uint32_t idx = base + unwind_row_wide_index(&r);

			r.cfa_arg = (int16_t)(uint16_t)(idx & 0xffff);
			r.rbp_arg = (int16_t)(uint16_t)(idx >> 16);
		}
		rows[n++] = r;
	}
	if (!ended && !f->open_end && f->nr_rows && (!next || next->lo > f->end))
		rows[n++] = (struct unwind_row){ .pc = f->end, .cfa_kind = UNWIND_CFA_END };
	return n;
}

int unwind_table__from_functions(const struct unwind_fn_rows *fns, size_t nr_fns,
				 const uint64_t (*switches)[2], size_t nr_switches,
				 struct unwind_table **out)
{
	struct unwind_row *rows = NULL;
	struct unwind_row_wide *wide = NULL;
	uint64_t *starts = NULL, (*sw)[2] = NULL;
	struct cfi_whole_table w = { 0 };
	size_t nr_rows, nr_wide;

	*out = NULL;
	if (!inputs_well_formed(fns, nr_fns, switches, nr_switches, &nr_rows, &nr_wide))
		return -EINVAL;
	rows = malloc((nr_rows ? nr_rows : 1) * sizeof(*rows));
	wide = malloc((nr_wide ? nr_wide : 1) * sizeof(*wide));
	starts = malloc((nr_fns ? nr_fns : 1) * sizeof(*starts));
	sw = malloc((nr_switches ? nr_switches : 1) * sizeof(*sw));
	if (!rows || !wide || !starts || !sw)
		goto nomem;
	memcpy(sw, switches, nr_switches * sizeof(*sw));
	w = (struct cfi_whole_table){ .rows = rows, .wide = wide, .fde_starts = starts,
				      .nr_fde_starts = nr_fns, .switches = (const uint64_t (*)[2])sw,
				      .nr_switches = nr_switches };
	for (size_t i = 0; i < nr_fns; i++) {
		starts[i] = fns[i].lo;
		memcpy(&wide[w.nr_wide], fns[i].wide, fns[i].nr_wide * sizeof(*wide));
		w.nr_rows += append_function(&fns[i], i + 1 < nr_fns ? &fns[i + 1] : NULL,
					     (uint32_t)w.nr_wide, &rows[w.nr_rows]);
		w.nr_wide += fns[i].nr_wide;
	}
	*out = cfi_table__adopt(&w);
	if (*out)
		return 0;
nomem:
	free(rows);
	free(wide);
	free(starts);
	free(sw);
	return -ENOMEM;
}
