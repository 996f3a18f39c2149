/* The cache of compiled rows that lazily opened tables (unwind_table__open) share. */
#ifndef HPROF_CFI_ROW_CACHE_H
#define HPROF_CFI_ROW_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* Compiled rows of lazily opened tables, shared by all of them and bounded in bytes: the
 * least recently used function's rows go first. */
struct unwind_row_cache;

struct unwind_row_cache_stats {
	uint64_t max_bytes;  /* the bound */
	uint64_t bytes;      /* held now: rows, side tables and bookkeeping */
	uint64_t functions;  /* functions held now */
	uint64_t compiled;   /* functions compiled (again, after an eviction) */
	uint64_t hits;       /* lookups whose function was compiled already */
	uint64_t misses;     /* lookups that compiled their function */
	uint64_t evictions;
	uint64_t bad_fdes;   /* functions whose FDE was malformed: no rows */
	uint64_t changed_files; /* tables whose file changed under them: no more lookups */
};

int unwind_row_cache__new(size_t max_bytes, struct unwind_row_cache **out);
/* Every table opened on the cache must be freed first. Accepts NULL. */
void unwind_row_cache__free(struct unwind_row_cache *cache);
void unwind_row_cache__stats(const struct unwind_row_cache *cache,
			     struct unwind_row_cache_stats *stats);

#endif
