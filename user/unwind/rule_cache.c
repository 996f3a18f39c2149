/* The rules for a pc, from its mapping's CFI table or, in code without CFI, from an
 * analysis of its instructions, decoded into slots of a direct-mapped cache kept across
 * walks. */
#include "unwind/walk_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/x86_code.h"

struct unwind_cache *unwind_cache__new(void)
{
	struct unwind_cache *cache = aligned_alloc(64, sizeof(*cache));

	if (!cache)
		return NULL;
	memset(cache, 0, sizeof(*cache));
	cache->trial = calloc(UNWIND_MAX_FRAMES, sizeof(*cache->trial));
	if (!cache->trial) {
		free(cache);
		return NULL;
	}
	for (uint32_t i = 0; i < CACHE_SLOTS; i++)
		cache->slots[i].next = &cache->slots[i];
	cache->none = (struct cached_rules){ .cfa = UNWIND_CFA_END, .next = &cache->none };
	return cache;
}

void unwind_cache__free(struct unwind_cache *cache)
{
	if (cache)
		free(cache->trial);
	free(cache);
}

void unwind_cache__stats(const struct unwind_cache *cache, struct unwind_cache_stats *stats)
{
	*stats = cache ? cache->stats : (struct unwind_cache_stats){ 0 };
}

uint64_t space_mix(uint64_t space)
{
	return (space * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_SLOTS_LOG2);
}

/* The rules nearly every compiled frame has: CFA = rsp or rbp + offset, the return
 * address saved relative to the CFA, and rbp and rbx each either untouched or saved in the
 * frame. The walk takes these in a straight line of code; everything else goes through
 * step(). */
bool is_plain(const struct cached_rules *r)
{
	return (r->cfa == UNWIND_CFA_SP_OFFSET || r->cfa == UNWIND_CFA_BP_OFFSET) &&
	       r->ra == UNWIND_RA_AT_CFA && r->ra_offset < 0 && !r->via_jump &&
	       (r->rbp == UNWIND_RBP_UNCHANGED || r->rbp == UNWIND_RBP_AT_CFA) &&
	       (r->rbx == UNWIND_RBX_UNCHANGED || r->rbx == UNWIND_RBX_AT_CFA);
}

static void decode_rules(const struct unwind_table *table, uint64_t table_pc,
			 struct cached_rules *out)
{
	const struct unwind_row *row = unwind_table__find(table, table_pc);
	struct unwind_rules rules;

	out->found = 0;
	if (!row) {
		out->cfa = UNWIND_CFA_END;
		out->plain = false;
		return;
	}
	unwind_table__decode(table, row, &rules);
	out->cfa = rules.cfa;
	out->rbp = rules.rbp;
	out->ra = rules.ra;
	out->cfa_offset = rules.cfa_offset;
	out->rbp_offset = rules.rbp_offset;
	out->ra_offset = rules.ra_offset;
	out->rbx = rules.rbx;
	out->rbx_offset = (int32_t)rules.rbx_offset;
	out->cfa_addend = 0;
	out->plain = is_plain(out);
	out->found = out->cfa == UNWIND_CFA_END ? 0 : UNWIND_FOUND_CFI;
}

int find_map(struct map_cache *mc, const struct unwind_space *space, uint64_t pc,
		    const struct unwind_map **out)
{
	struct unwind_map *slot;
	int err;

	for (uint32_t i = 0; i < mc->nr; i++) {
		if (pc - mc->maps[i].start < mc->maps[i].end - mc->maps[i].start) {
			*out = &mc->maps[i];
			return 0;
		}
	}
	slot = &mc->maps[mc->next];
	err = space->find_map(space->ctx, pc, slot);
	if (err)
		return err;
	mc->next = (mc->next + 1) % WALK_MAPS;
	if (mc->nr < WALK_MAPS)
		mc->nr++;
	*out = slot;
	return 0;
}

/* Looks pc up in the table of the mapping holding it, into slot. NULL with w->miss set
 * when no mapping or no table holds pc. */
/* Looks pc up in the table of the mapping holding it, into slot. NULL with *miss set when
 * no mapping or no table holds pc. */
static struct cached_rules *fill(struct map_cache *maps, const struct unwind_space *space,
				 uint64_t pc, struct cached_rules *slot, enum unwind_end *miss)
{
	const struct unwind_map *map;
	int err = find_map(maps, space, pc, &map);

	if (err) {
		*miss = err == -ENOENT ? UNWIND_END_UNMAPPED : UNWIND_END_NO_CFI;
		return NULL;
	}
	decode_rules(map->table, pc - map->bias, slot);
	slot->ra_checked = false;
	slot->space = space->id;
	slot->pc = pc;
	return slot;
}

struct cached_rules *fill_slot(struct walker *w, uint64_t pc, struct cached_rules *slot)
{
	w->cache->stats.misses++;
	return fill(&w->maps, w->space, pc, slot, &w->miss);
}

/* Code without CFI at ip: the rules its instructions give, put in the cache slot of its
 * lookup (replacing an end-of-function slot, rules), or NULL when the analysis found none.
 * A failed analysis is remembered in the slot, so later walks go straight on to the
 * frame-pointer step. */
struct cached_rules *analysis_rules(struct walker *w, uint64_t id, uint64_t ip, bool exact,
					   struct cached_rules *rules)
{
	uint64_t lookup = code_at(ip, exact);
	struct cached_rules *slot = rules ? rules : &w->cache->slots[cache_slot(w->space_mix, lookup)];
	struct code_rules code;
	const bool ra_checked = rules && rules->pc == lookup && rules->ra_checked;

	/* A return address where a runtime's stacks end (an Erlang process's): no frame is
	 * above, as _start's CFI says of its own. Looked for before a failed analysis's
	 * slot is taken: the runtime may have said where its stacks end since. */
	if (!exact && w->space->symbols.is_stack_end &&
	    w->space->symbols.is_stack_end(w->space->ctx, ip)) {
		*slot = (struct cached_rules){ .space = id, .pc = lookup, .next = slot,
					       .cfa = UNWIND_CFA_SP_OFFSET, .cfa_offset = 8,
					       .ra = UNWIND_RA_UNDEFINED,
					       .found = UNWIND_FOUND_ANALYSIS, .ra_checked = true };
		return slot;
	}
	if (rules && rules->found == UNWIND_FOUND_FRAME_POINTER)
		return NULL;
	/* a return address in a register (its value at ip) is known at the sampled pc only */
	if (!w->space->code.analyze ||
	    w->space->code.analyze(w->space->ctx, ip, &code) != CODE_OK ||
	    (code.ra_in_register && !exact)) {
		*slot = (struct cached_rules){ .space = id, .pc = lookup, .next = slot,
					       .cfa = UNWIND_CFA_END,
					       .found = UNWIND_FOUND_FRAME_POINTER,
					       .ra_checked = ra_checked };
		return NULL;
	}
	*slot = (struct cached_rules){
		.space = id, .pc = lookup, .next = slot,
		.cfa = code.cfa, .cfa_offset = code.cfa_offset, .cfa_addend = code.cfa_addend,
		.ra = code.ra_in_register ? UNWIND_RA_REGISTER : UNWIND_RA_AT_CFA,
		.ra_offset = code.ra_in_register ? code.ra_register : code.ra_offset,
		.rbp = code.rbp, .rbp_offset = code.rbp_offset,
		.rbx = code.rbx, .rbx_offset = code.rbx_offset,
		.found = UNWIND_FOUND_ANALYSIS,
		.ra_checked = ra_checked, /* pc + 1 was checked before the code was analysed */
		.via_jump = code.via_jump,
	};
	/* never plain: each return address it gives is checked (analysis_step) */
	slot->plain = false;
	return slot;
}

bool unwind__rules_at(const struct unwind_space *space, uint64_t pc, struct unwind_rules *rules)
{
	const struct unwind_row *row;
	struct unwind_map map;

	if (space->find_map(space->ctx, pc, &map) != 0)
		return false;
	row = unwind_table__find(map.table, pc - map.bias);
	if (!row)
		return false;
	unwind_table__decode(map.table, row, rules);
	return true;
}

enum unwind_cfa_kind unwind__cfa_kind_at(const struct unwind_space *space,
					 struct unwind_cache *cache, uint64_t pc)
{
	struct cached_rules *slot = &cache->slots[cache_slot(space_mix(space->id), pc)];
	struct map_cache maps = { .nr = 0 };
	enum unwind_end miss;

	if (slot->pc != pc || slot->space != space->id)
		slot = fill(&maps, space, pc, slot, &miss);
	/* a slot of rules by analysis, or of none, is a pc without a row */
	return slot && slot->found == UNWIND_FOUND_CFI ? (enum unwind_cfa_kind)slot->cfa
						       : UNWIND_CFA_END;
}
