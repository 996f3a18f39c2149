/* Address ranges where the latest wins: the table of a JIT's symbol files (perf's map and
 * jitdump files), where code memory is reused and a later entry covers what an earlier one
 * held. Kept as disjoint segments, sorted, each holding the value of the latest range that
 * covers it, so that a lookup is one binary search. */
#ifndef HPROF_UTIL_RANGE_MAP_H
#define HPROF_UTIL_RANGE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* [start, end) holds value. */
struct range_map_seg {
	uint64_t start, end;
	uint32_t value;
};

struct range_map {
	struct range_map_seg *segs;
	size_t nr_segs;
};

/* Adds ranges (start < end each) later than everything in the map, later ones among them
 * winning where they overlap, and rebuilds the segments. Returns 0 or -ENOMEM (the map is
 * unchanged). At most UINT32_MAX - 1 ranges per call. */
int range_map__add(struct range_map *m, const struct range_map_seg *added, size_t nr_added);

/* The value of the segment holding addr. */
bool range_map__find(const struct range_map *m, uint64_t addr, uint32_t *value);

/* The extent of the range holding addr, as far as it is still the latest: the segment
 * holding addr with its neighbours of the same value that touch it. Values must be
 * unique per range added for this to be that range's. */
bool range_map__extent(const struct range_map *m, uint64_t addr, uint64_t *start, uint64_t *end);

/* Frees the segments; the map is empty again. */
void range_map__release(struct range_map *m);

#endif
