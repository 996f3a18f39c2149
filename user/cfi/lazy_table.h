/* Lazily compiled tables (unwind_table__open): an index of a mapped file's FDE starts,
 * and each function's rows compiled the first time a lookup lands in it, into a cache
 * shared by all lazy tables and bounded in bytes (least recently used out). Internal to
 * user/cfi/: unwind_table.c answers lookups through it. */
#ifndef HPROF_CFI_LAZY_TABLE_H
#define HPROF_CFI_LAZY_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uthash.h>

#include "cfi/elf_sections.h"
#include "cfi/go_pclntab.h"
#include "cfi/reader.h"
#include "cfi/row_cache.h"
#include "unwind_row.h"

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

/* The index of the first of n rows (sorted by pc) whose pc is above pc: the row before it,
 * if any, covers pc. */
static inline size_t first_row_above(const struct unwind_row *rows, size_t n, uint64_t pc)
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

/* Opens path (max_bytes at most) lazily into cache; *bytes: what the table holds besides
 * the cache's rows. */
int lazy_table__open(const char *path, uint64_t max_bytes, struct unwind_row_cache *cache,
		     struct lazy_table **out, size_t *bytes, struct cfi_err *e);
void lazy_table__free(struct lazy_table *lz);
size_t lazy_table__fdes(const struct lazy_table *lz);
/* The row holding pc, compiling its function if it was not; *fn_out (may be NULL) gets
 * the function. NULL when no row holds pc. */
const struct unwind_row *lazy_table__find(struct lazy_table *lz, uint64_t pc,
					  struct compiled_fn **fn_out);
/* As unwind_table__gap. */
int lazy_table__gap(struct lazy_table *lz, uint64_t pc, uint64_t *lo, uint64_t *hi);

#endif
