/* Rows under construction: the states CFA programs go through, mapped onto the row's rule
 * kinds and kept as compact rows (common/unwind_row.h) wherever the rules change, with an
 * end marker where a function ends before the next begins. */
#ifndef HPROF_CFI_ROWS_H
#define HPROF_CFI_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi/dwarf_cfa.h"
#include "cfi/types.h"

struct cfi_rows {
	struct unwind_row *rows;
	size_t nr_rows, cap_rows;
	struct unwind_row_wide *wide;
	size_t nr_wide, cap_wide;
	uint64_t last_rules;        /* the last row's rules (see row_rules) when not wide */
	bool last_rules_valid;
	bool have_last;             /* the last row has rules: false at the start and after
				     * an end marker */
	struct unwind_stats *stats; /* counts rows, end markers and wide rows */
};

/* Makes room for n rows up front. Not an error when memory is short: rows then grow. */
void cfi_rows__reserve(struct cfi_rows *rows, size_t n);

/* A struct cfi_sink's callback (ctx is the struct cfi_rows): the row for state from pc on,
 * unless the last row has the same rules. */
int cfi_rows__add_state(void *rows, uint64_t pc, const struct cfi_state *state);

/* Marks pc as the end of a function that the next row does not continue. */
int cfi_rows__end_function(struct cfi_rows *rows, uint64_t pc);

/* Hands the rows (shrunk to fit) and their side table over to the caller. */
void cfi_rows__take(struct cfi_rows *rows, struct unwind_row **out, size_t *nr_out,
		    struct unwind_row_wide **wide, size_t *nr_wide);

/* Frees what was not taken. */
void cfi_rows__release(struct cfi_rows *rows);

#endif
