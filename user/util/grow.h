/* Growing arrays by doubling: one helper for the stages under user/ (flamegraph/, a
 * library of its own, keeps its own). */
#ifndef HPROF_UTIL_GROW_H
#define HPROF_UTIL_GROW_H

#include <stddef.h>

/* Makes *p (of *cap elements of elem bytes) hold at least need elements, doubling from 64.
 * Returns 0 or -ENOMEM (*p and *cap unchanged). */
int grow_array(void **p, size_t *cap, size_t need, size_t elem);

#endif
