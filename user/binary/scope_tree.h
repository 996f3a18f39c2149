/* The code scopes of DWARF DIEs (subprograms and inlined subroutines with address ranges),
 * walked through libdw once into arrays that answer "which scopes hold pc" without
 * reading DIEs again: a unit's top-level functions first, a function's inner tree only
 * when a pc falls in it (most of an LTO unit's functions are never sampled). */
#ifndef HPROF_BINARY_SCOPE_TREE_H
#define HPROF_BINARY_SCOPE_TREE_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most DIEs one walk reads, and how deep it goes. */
#define SCOPE_TREE_MAX_DIES (4u << 20)
#define SCOPE_TREE_MAX_NESTING 64

struct addr_range {
	uint64_t lo, hi; /* [lo, hi) */
	uint32_t owner;  /* a unit's index, or a scope's */
};

/* A subprogram or inlined subroutine with code. Scopes of a tree lie in DIE order; the
 * ones under scope s are s + 1 .. end - 1, so s's siblings are found by jumping to end. */
struct scope {
	Dwarf_Die die;
	uint32_t first_range, nr_ranges;
	uint32_t end;
	bool inlined;
};

struct scope_tree {
	struct scope *scopes;
	size_t nr_scopes, scopes_cap;
	struct addr_range *ranges; /* scopes' ranges */
	size_t nr_ranges, ranges_cap;
};

/* Appends die's address ranges (at most a bounded number) as owner's. Returns 0 or
 * -ENOMEM. */
int addr_ranges__add_die(Dwarf_Die *die, struct addr_range **arr, size_t *nr, size_t *cap,
			 uint32_t owner);

/* The scopes a unit's walk meets outside any function (each with end = itself + 1: its
 * inner scopes wait for scope_tree__index_inner). *scopes_total counts scopes kept over
 * all trees, up to max_scopes. Returns 0, -E2BIG past a bound, -EBADMSG, or -ENOMEM. */
int scope_tree__index_tops(struct scope_tree *t, Dwarf_Die *unit_die, uint64_t *scopes_total,
			   uint64_t max_scopes);
/* top (a tops tree's scope) and every scope inside it, top first. Returns as above. */
int scope_tree__index_inner(struct scope_tree *t, const struct scope *top,
			    uint64_t *scopes_total, uint64_t max_scopes);
/* The scopes holding pc, outermost first, into chain[0..*nr) (at most max): one descent
 * from the first in DIE order. A subprogram nested in another starts the chain anew. */
void scope_tree__at(const struct scope_tree *t, uint64_t pc, uint32_t *chain, uint32_t *nr,
		    uint32_t max);
size_t scope_tree__bytes(const struct scope_tree *t);
/* Frees the arrays (the tree itself is the caller's) and uncounts its scopes. */
void scope_tree__clear(struct scope_tree *t, uint64_t *scopes_total);

#endif
