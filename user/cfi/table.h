/* What the files of the CFI compiler that build tables of given rows (functions.c) need
 * of a table's insides (unwind_table.c): a lazily opened table's function, as compiled,
 * and a table compiled whole, looked at or made of arrays. Internal to user/cfi/. */
#ifndef HPROF_CFI_TABLE_H
#define HPROF_CFI_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind_row.h"

/* unwind_table.h's, declared rather than included: unwind_table.c includes this file, and
 * a folder's files include each other one way only (tests/check_deps.py) */
struct unwind_table;
struct unwind_fn_rows;

/* A table compiled whole: its arrays (see struct unwind_table in unwind_table.c). */
struct cfi_whole_table {
	const struct unwind_row *rows;
	size_t nr_rows;
	const struct unwind_row_wide *wide;
	size_t nr_wide;
	const uint64_t *fde_starts;
	size_t nr_fde_starts;
	const uint64_t (*switches)[2];
	size_t nr_switches;
};

/* A lazily opened table's function holding pc, compiled if it was not: false when no
 * rows hold pc, or t is not a lazy table. */
bool cfi_table__lazy_function(const struct unwind_table *t, uint64_t pc,
			      struct unwind_fn_rows *out);
/* A table compiled whole, as it is: false for a lazy table. */
bool cfi_table__whole(const struct unwind_table *t, struct cfi_whole_table *out);
/* A table compiled whole of w's arrays, malloc'd, which it takes over (freed with it).
 * NULL when out of memory (the arrays are then the caller's still). */
struct unwind_table *cfi_table__adopt(const struct cfi_whole_table *w);

#endif
