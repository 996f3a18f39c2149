#include "unwind/code_cache.h"

#include <stdlib.h>
#include <string.h>

enum entry_kind { ENTRY_EMPTY = 0, ENTRY_RULES, ENTRY_CALL, ENTRY_JUMP_DEPTHS, ENTRY_JUMP_OFFSETS };

struct entry {
	uint64_t addr;
	uint32_t module;
	uint8_t kind;  /* enum entry_kind */
	uint8_t value; /* enum code_fail, enum code_call, or the number of jumps */
	union {
		struct code_rules rules;
		struct {
			int32_t jumps[CODE_JUMPS];
			int32_t jump_at[CODE_JUMPS]; /* relative to addr */
		};
	};
	int64_t target_delta;
};

struct code_cache {
	struct entry *slots;
	uint32_t used;
	struct code_cache_stats stats;
};

/* Probes before a lookup gives up, and the fill at which the table starts again. */
#define PROBES 8
#define MAX_USED (CODE_CACHE_SLOTS / 4 * 3)

struct code_cache *code_cache__new(void)
{
	return calloc(1, sizeof(struct code_cache));
}

void code_cache__free(struct code_cache *cc)
{
	if (cc)
		free(cc->slots);
	free(cc);
}

static uint32_t hash(uint32_t module, uint64_t addr, uint8_t kind)
{
	uint64_t h = (addr ^ (uint64_t)module << 40 ^ (uint64_t)kind << 60) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 40);
}

static const struct entry *find(const struct code_cache *cc, uint32_t module, uint64_t addr,
				uint8_t kind)
{
	uint32_t h = hash(module, addr, kind);

	if (!cc->slots)
		return NULL;
	for (uint32_t i = 0; i < PROBES; i++) {
		const struct entry *e = &cc->slots[(h + i) % CODE_CACHE_SLOTS];

		if (e->kind == ENTRY_EMPTY)
			return NULL;
		if (e->kind == kind && e->module == module && e->addr == addr)
			return e;
	}
	return NULL;
}

/* A free slot for the key; a full table starts again. NULL when out of memory. */
static struct entry *slot_for(struct code_cache *cc, uint32_t module, uint64_t addr, uint8_t kind)
{
	uint32_t h = hash(module, addr, kind);

	if (!cc->slots && !(cc->slots = calloc(CODE_CACHE_SLOTS, sizeof(*cc->slots))))
		return NULL;
	if (cc->used >= MAX_USED) {
		memset(cc->slots, 0, CODE_CACHE_SLOTS * sizeof(*cc->slots));
		cc->used = 0;
		cc->stats.resets++;
	}
	for (uint32_t i = 0; i < PROBES; i++) {
		struct entry *e = &cc->slots[(h + i) % CODE_CACHE_SLOTS];

		if (e->kind == ENTRY_EMPTY) {
			cc->used++;
			return e;
		}
		if (e->kind == kind && e->module == module && e->addr == addr)
			return e;
	}
	/* overwrite the first: the probe chains of other keys stay whole */
	return &cc->slots[h % CODE_CACHE_SLOTS];
}

bool code_cache__rules(const struct code_cache *cc, uint32_t module, uint64_t addr,
		       enum code_fail *fail, struct code_rules *rules)
{
	const struct entry *e = find(cc, module, addr, ENTRY_RULES);

	if (!e)
		return false;
	*fail = e->value;
	*rules = e->rules;
	return true;
}

void code_cache__put_rules(struct code_cache *cc, uint32_t module, uint64_t addr,
			   enum code_fail fail, const struct code_rules *rules)
{
	struct entry *e = slot_for(cc, module, addr, ENTRY_RULES);

	if (e)
		*e = (struct entry){ .addr = addr, .module = module, .kind = ENTRY_RULES,
			     .value = (uint8_t)fail, .rules = *rules };
}

bool code_cache__call(const struct code_cache *cc, uint32_t module, uint64_t addr,
		      enum code_call *call, int64_t *target_delta)
{
	const struct entry *e = find(cc, module, addr, ENTRY_CALL);

	if (!e)
		return false;
	*call = e->value;
	*target_delta = e->target_delta;
	return true;
}

void code_cache__put_call(struct code_cache *cc, uint32_t module, uint64_t addr,
			  enum code_call call, int64_t target_delta)
{
	struct entry *e = slot_for(cc, module, addr, ENTRY_CALL);

	if (e)
		*e = (struct entry){ .addr = addr, .module = module, .kind = ENTRY_CALL,
			     .value = (uint8_t)call, .target_delta = target_delta };
}

static uint8_t jumps_kind(bool from_start)
{
	return from_start ? ENTRY_JUMP_DEPTHS : ENTRY_JUMP_OFFSETS;
}

bool code_cache__jumps(const struct code_cache *cc, uint32_t module, uint64_t addr,
		       bool from_start, int32_t *values, int32_t *at, uint32_t *nr)
{
	const struct entry *e = find(cc, module, addr, jumps_kind(from_start));

	if (!e)
		return false;
	*nr = e->value;
	memcpy(values, e->jumps, e->value * sizeof(*values));
	memcpy(at, e->jump_at, e->value * sizeof(*at));
	return true;
}

void code_cache__put_jumps(struct code_cache *cc, uint32_t module, uint64_t addr,
			   bool from_start, const int32_t *values, const int32_t *at, uint32_t nr)
{
	struct entry *e = slot_for(cc, module, addr, jumps_kind(from_start));

	if (!e)
		return;
	*e = (struct entry){ .addr = addr, .module = module, .kind = jumps_kind(from_start) };
	e->value = (uint8_t)(nr < CODE_JUMPS ? nr : CODE_JUMPS);
	memcpy(e->jumps, values, e->value * sizeof(*values));
	memcpy(e->jump_at, at, e->value * sizeof(*at));
}

struct code_cache_stats *code_cache__stats(struct code_cache *cc)
{
	return &cc->stats;
}

uint64_t code_cache__bytes(const struct code_cache *cc)
{
	return sizeof(*cc) + (cc->slots ? CODE_CACHE_SLOTS * sizeof(*cc->slots) : 0);
}
