/* A process's executable mappings as they change: seeded from /proc/PID/maps or built
 * from the kernel's mapping events, kept sorted and non-overlapping. A new mapping
 * replaces whatever it overlaps, as it does in the kernel. */
#ifndef HPROF_ADDRESS_SPACE_H
#define HPROF_ADDRESS_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "proc/procmaps.h"

struct address_space;

struct address_space *address_space__new(void);
/* A copy (a forked child starts with its parent's mappings). NULL when out of memory. */
struct address_space *address_space__clone(const struct address_space *as);
/* Adds [m->start, m->end) named path ("" for anonymous memory), trimming or dropping the
 * mappings it overlaps. m's resolver fields are reset. Returns 0 or -ENOMEM. */
int address_space__add(struct address_space *as, const struct mapping *m, const char *path);
/* Every executable mapping of a parsed maps file. Returns 0 or -ENOMEM. */
int address_space__add_maps(struct address_space *as, const struct process_maps *maps);
/* The mapping holding addr, or NULL. The pointer is valid until the next change. */
struct mapping *address_space__find(const struct address_space *as, uint64_t addr);
size_t address_space__count(const struct address_space *as);
/* The i-th mapping by address (i < address_space__count), valid until the next change. */
struct mapping *address_space__at(const struct address_space *as, size_t i);
void address_space__free(struct address_space *as);

#endif
