#include "binary/scope_tree.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>

#include "util/grow.h"

/* Most address ranges read from one DIE's DW_AT_ranges. */
#define MAX_RANGES_PER_DIE 4096

static int add_range(struct addr_range **arr, size_t *nr, size_t *cap, uint64_t lo, uint64_t hi,
		     uint32_t owner)
{
	if (lo >= hi)
		return 0;
	if (grow_array((void **)arr, cap, *nr + 1, sizeof(**arr)))
		return -ENOMEM;
	(*arr)[(*nr)++] = (struct addr_range){ lo, hi, owner };
	return 0;
}

int addr_ranges__add_die(Dwarf_Die *die, struct addr_range **arr, size_t *nr, size_t *cap,
			 uint32_t owner)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int err = 0;

	for (int i = 0; i < MAX_RANGES_PER_DIE && !err; i++) {
		off = dwarf_ranges(die, off, &base, &lo, &hi);
		if (off <= 0)
			break;
		err = add_range(arr, nr, cap, lo, hi, owner);
	}
	return err;
}

static bool is_code_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* Whether the walk descends into a DIE of this tag: the tags libdw's scope walk
 * (dwarf_getscopes, which eu-addr2line -i uses) descends into, and no other, so that both
 * see the same scopes; the rest (types, variables, parameters: most of an LTO unit's DIEs)
 * are skipped whole by dwarf_siblingof. */
static bool may_hold_scopes(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit:
	case DW_TAG_module:
	case DW_TAG_lexical_block:
	case DW_TAG_with_stmt:
	case DW_TAG_catch_block:
	case DW_TAG_try_block:
	case DW_TAG_entry_point:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_subprogram:
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
		return true;
	default:
		return false;
	}
}

/* Adds die as a scope if it has code. Returns 1 when added, 0 when not, or -errno. */
static int add_scope(struct scope_tree *t, Dwarf_Die *die, int tag, uint64_t *scopes_total,
		     uint64_t max_scopes)
{
	size_t first = t->nr_ranges;
	struct scope *s;
	int err;

	if (*scopes_total >= max_scopes)
		return -E2BIG;
	err = addr_ranges__add_die(die, &t->ranges, &t->nr_ranges, &t->ranges_cap,
				   (uint32_t)t->nr_scopes);
	if (err || t->nr_ranges == first)
		return err;
	if (grow_array((void **)&t->scopes, &t->scopes_cap, t->nr_scopes + 1, sizeof(*s)))
		return -ENOMEM;
	s = &t->scopes[t->nr_scopes++];
	*s = (struct scope){ .die = *die, .first_range = (uint32_t)first,
			     .nr_ranges = (uint32_t)(t->nr_ranges - first),
			     .inlined = tag == DW_TAG_inlined_subroutine };
	(*scopes_total)++;
	return 1;
}

/* The scopes under parent, walked depth first without recursion: stack[d] is the DIE at
 * depth d, open[d] the scope it opened (or -1), closed when the walk leaves it. With
 * tops_only, a scope's children are left for later (a DIE with code but no ranges, which
 * is no scope, is still descended, as libdw's walk does). */
static int walk_children(struct scope_tree *t, Dwarf_Die *parent, bool tops_only,
			 uint64_t *scopes_total, uint64_t max_scopes)
{
	Dwarf_Die stack[SCOPE_TREE_MAX_NESTING];
	long open[SCOPE_TREE_MAX_NESTING];
	int depth = 0, err = 0;
	uint32_t walked = 0;

	if (dwarf_child(parent, &stack[0]) != 0)
		return 0;
	open[0] = -1;
	while (depth >= 0) {
		Dwarf_Die *die = &stack[depth];
		int tag = dwarf_tag(die), ret = 0;

		if (++walked > SCOPE_TREE_MAX_DIES)
			return -E2BIG;
		open[depth] = -1;
		if (is_code_scope(tag)) {
			ret = add_scope(t, die, tag, scopes_total, max_scopes);
			if (ret < 0)
				return ret;
			if (ret)
				open[depth] = (long)t->nr_scopes - 1;
		}
		if (depth + 1 < SCOPE_TREE_MAX_NESTING && may_hold_scopes(tag) &&
		    !(tops_only && ret) && dwarf_haschildren(die) > 0 &&
		    dwarf_child(die, &stack[depth + 1]) == 0) {
			depth++;
			continue;
		}
		/* leave this DIE, and every parent whose last child it was */
		for (;;) {
			if (open[depth] >= 0)
				t->scopes[open[depth]].end = (uint32_t)t->nr_scopes;
			ret = dwarf_siblingof(&stack[depth], &stack[depth]);
			if (ret == 0)
				break;
			if (ret < 0)
				err = -EBADMSG;
			if (--depth < 0)
				break;
		}
		if (err)
			return err;
	}
	return 0;
}

int scope_tree__index_tops(struct scope_tree *t, Dwarf_Die *unit_die, uint64_t *scopes_total,
			   uint64_t max_scopes)
{
	return walk_children(t, unit_die, true, scopes_total, max_scopes);
}

int scope_tree__index_inner(struct scope_tree *t, const struct scope *top,
			    uint64_t *scopes_total, uint64_t max_scopes)
{
	Dwarf_Die die = top->die;
	int err = add_scope(t, &die, top->inlined ? DW_TAG_inlined_subroutine : DW_TAG_subprogram,
			    scopes_total, max_scopes);

	if (err <= 0)
		return err < 0 ? err : -EBADMSG;
	err = walk_children(t, &die, false, scopes_total, max_scopes);
	t->scopes[0].end = (uint32_t)t->nr_scopes;
	return err;
}

static bool scope_holds(const struct scope_tree *t, const struct scope *s, uint64_t pc)
{
	for (uint32_t i = 0; i < s->nr_ranges; i++) {
		const struct addr_range *r = &t->ranges[s->first_range + i];

		if (pc >= r->lo && pc < r->hi)
			return true;
	}
	return false;
}

/* Each level's siblings are visited by their subtree ends (which only grow, so the walk
 * ends). */
void scope_tree__at(const struct scope_tree *t, uint64_t pc, uint32_t *chain, uint32_t *nr,
		    uint32_t max)
{
	size_t at = 0, end = t->nr_scopes;

	*nr = 0;
	while (at < end) {
		const struct scope *s = &t->scopes[at];

		if (!scope_holds(t, s, pc)) {
			at = s->end > at ? s->end : at + 1;
			continue;
		}
		if (!s->inlined)
			*nr = 0;
		if (*nr < max)
			chain[(*nr)++] = (uint32_t)at;
		end = s->end > at && s->end < end ? s->end : end;
		at++;
	}
}

size_t scope_tree__bytes(const struct scope_tree *t)
{
	return t->scopes_cap * sizeof(*t->scopes) + t->ranges_cap * sizeof(*t->ranges);
}

void scope_tree__clear(struct scope_tree *t, uint64_t *scopes_total)
{
	*scopes_total -= t->nr_scopes;
	free(t->scopes);
	free(t->ranges);
	*t = (struct scope_tree){ 0 };
}
