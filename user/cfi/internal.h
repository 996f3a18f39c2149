/* The row sink shared by user/cfi/dwarf_cfa.c, which runs CFA programs, and
 * user/cfi/unwind_table.c, which builds and searches the table. Not an API:
 * user/cfi/unwind_table.h is. */
#ifndef HPROF_CFI_INTERNAL_H
#define HPROF_CFI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi/dwarf_cfa.h"
#include "cfi/unwind_table.h"

/* The table under construction (user/cfi/unwind_table.c): receives the states a CFA program goes
 * through and keeps one row wherever the rules change. */
struct cfi_sink {
	struct unwind_row *rows;
	size_t nr_rows, cap_rows;
	struct unwind_row_wide *wide;
	size_t nr_wide, cap_wide;
	struct cfi_state last_state; /* the DWARF state the last row came from */
	uint64_t last_rules;         /* the last row's rules (see row_rules) when not wide */
	bool last_rules_valid;
	bool have_last;              /* the last row has rules: false at the start and after
				      * an end marker */
	struct unwind_stats *stats;
};

/* True when state is the one the last row came from: most locations only change
 * registers hprof does not track, and this skips mapping them. */
static inline bool cfi_sink__unchanged(const struct cfi_sink *s, const struct cfi_state *st)
{
	return s->have_last && cfi_state__equal(st, &s->last_state);
}

int cfi_sink__row(struct cfi_sink *sink, uint64_t pc, const struct cfi_state *state,
		  const struct cfi_cie *cie);

/* Maps a DWARF state onto the row's rule kinds. */
void cfi_state__rules(const struct cfi_state *state, const struct cfi_cie *cie,
		      struct unwind_rules *rules);

#endif
