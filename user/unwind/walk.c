#include "unwind/walk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/x86_code.h"

static const char *const end_names[UNWIND_END_COUNT] = {
	[UNWIND_END_COMPLETE] = "complete",
	[UNWIND_END_COPY_SHORT] = "copy too short",
	[UNWIND_END_NO_CFI] = "no CFI for pc",
	[UNWIND_END_UNSUPPORTED] = "unsupported rule",
	[UNWIND_END_UNMAPPED] = "pc outside any known mapping",
	[UNWIND_END_BAD_FRAME] = "CFA did not move up",
	[UNWIND_END_DEPTH] = "too deep",
	[UNWIND_END_COPY_HOLE] = "unreadable page in the copy",
	[UNWIND_END_ZERO_RA] = "zero return address",
};

const char *unwind_end__name(enum unwind_end end)
{
	return end < UNWIND_END_COUNT ? end_names[end] : "?";
}

static const char *const found_names[UNWIND_FOUND_COUNT] = {
	[UNWIND_FOUND_CONTEXT] = "context",
	[UNWIND_FOUND_CFI] = "cfi",
	[UNWIND_FOUND_ANALYSIS] = "analysis",
	[UNWIND_FOUND_FRAME_POINTER] = "frame pointer",
	[UNWIND_FOUND_SCAN] = "scan",
	[UNWIND_FOUND_FP_CHAIN] = "fp chain",
	[UNWIND_FOUND_LEARNED] = "learned",
};

const char *unwind_found__name(enum unwind_found found)
{
	return found < UNWIND_FOUND_COUNT ? found_names[found] : "?";
}

/* The 8 bytes at addr lie on a page of the copy marked as a hole. */
static bool in_hole(const struct stack_copy *copy, uint64_t addr)
{
	uint64_t first = copy->base / STACK_COPY_PAGE;
	uint64_t lo = addr / STACK_COPY_PAGE - first, hi = (addr + 7) / STACK_COPY_PAGE - first;

	return (lo < 64 && (copy->holes >> lo & 1)) || (hi < 64 && (copy->holes >> hi & 1));
}

/* One copy alone; a hole only if the copy holds all 8 bytes. */
static enum stack_read read_one(const struct stack_copy *copy, uint64_t addr, uint64_t *value)
{
	/* addr - base wraps for addr < base, so one comparison covers both ends. */
	uint64_t off = addr - copy->base;

	if (off > copy->len || copy->len - off < 8)
		return STACK_READ_OUTSIDE;
	if (copy->holes && in_hole(copy, addr))
		return STACK_READ_HOLE;
	memcpy(value, copy->bytes + off, sizeof(*value));
	return STACK_READ_OK;
}

/* Copies are few (two, for a handler on an alternate stack): a bounded list. */
#define MAX_COPIES 4

enum stack_read stack_copy__read(const struct stack_copy *copy, uint64_t addr, uint64_t *value)
{
	enum stack_read found = STACK_READ_OUTSIDE;

	for (uint32_t i = 0; copy && i < MAX_COPIES; copy = copy->more, i++) {
		enum stack_read r = read_one(copy, addr, value);

		if (r == STACK_READ_OK)
			return r;
		if (r == STACK_READ_HOLE)
			found = r;
	}
	return found;
}

uint64_t stack_copy__len_before_holes(const struct stack_copy *copy)
{
	uint64_t page_end;

	if (!copy->holes)
		return copy->len;
	/* the first hole's page starts where the page before it ends */
	page_end = (copy->base / STACK_COPY_PAGE + (uint64_t)__builtin_ctzll(copy->holes)) *
		   STACK_COPY_PAGE;
	if (page_end <= copy->base)
		return 0;
	return page_end - copy->base < copy->len ? page_end - copy->base : copy->len;
}

/* The copy as the walk reads it: 8 bytes at addr are readable at once iff addr - base <
 * limit (limit = the bytes before the first hole less 7, or 0), one comparison per read;
 * the rest (holes, further copies) go through stack_copy__read. A read that meets a hole
 * marks *hole, so that the walk can say why it stopped. */
struct copy_view {
	const uint8_t *bytes;
	uint64_t base, limit;
	const struct stack_copy *copy;
	bool *hole;
};

static struct copy_view copy_view(const struct stack_copy *copy, bool *hole)
{
	uint64_t len = stack_copy__len_before_holes(copy);

	*hole = false;
	return (struct copy_view){
		.bytes = copy->bytes,
		.base = copy->base,
		.limit = len > 7 ? len - 7 : 0,
		.copy = copy,
		.hole = hole,
	};
}

static __attribute__((noinline)) bool read_elsewhere(const struct copy_view *v, uint64_t addr,
						     uint64_t *value)
{
	enum stack_read r = stack_copy__read(v->copy, addr, value);

	if (r == STACK_READ_HOLE)
		*v->hole = true;
	return r == STACK_READ_OK;
}

static inline bool read_u64(const struct copy_view *v, uint64_t addr, uint64_t *value)
{
	uint64_t off = addr - v->base; /* wraps for addr < base: then off >= limit */

	if (__builtin_expect(off >= v->limit, 0))
		return read_elsewhere(v, addr, value);
	memcpy(value, v->bytes + off, sizeof(*value));
	return true;
}

/* A walk that stopped for want of bytes stopped on a hole when its last read met one. */
static enum unwind_end short_or_hole(enum unwind_end end, bool hole)
{
	return end == UNWIND_END_COPY_SHORT && hole ? UNWIND_END_COPY_HOLE : end;
}

/* The rules for one pc, decoded. cfa UNWIND_CFA_END: no rule covers it. One cache line
 * each. */
struct cached_rules {
	uint64_t space; /* with pc, the key: unwind_space.id, 0 in an empty slot */
	uint64_t pc;    /* the address looked up, in the process */
	int64_t cfa_offset, rbp_offset, ra_offset;
	/* The slot the caller's rules were in the last time this pc was unwound: a guess,
	 * checked against the caller's pc before use, never NULL. */
	struct cached_rules *next;
	uint8_t cfa, rbp, ra, rbx; /* enum unwind_{cfa,rbp,ra,rbx}_kind */
	bool plain;                /* see is_plain */
	/* How the caller of a frame with these rules is found: UNWIND_FOUND_CFI or _ANALYSIS.
	 * In a slot with no rules (cfa UNWIND_CFA_END): 0 until the code was analysed, then
	 * UNWIND_FOUND_FRAME_POINTER (the analysis found nothing: go on to the frame-pointer
	 * step). */
	uint8_t found;
	/* pc + 1 is a return address: it follows a call, or (in code without CFI) a walk from
	 * it reached the stack's start once (an analysis's step checked it) */
	bool ra_checked;
	/* an analysis's rules from a jump out of the function, taken for a tail call
	 * (struct code_rules): their return address must fit that (tail_call_fits) */
	bool via_jump;
	int32_t rbx_offset;        /* within a row's byte's reach (unwind_row_rbx_fits) */
	/* added to the word a CFA rule UNWIND_CFA_EXPR_DEREF_SP or _BP reads: only the
	 * instruction analysis gives one (struct code_rules), rows never */
	int32_t cfa_addend;
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct cached_rules) == 64, "a cache slot is one cache line");

/* Direct-mapped: a collision costs one mapping and table search, and a lookup stays a
 * few ALU operations, a load and two compares. 2048 slots hold the call sites of a
 * profile's hot paths with room to spare, in 128 KiB. */
#define CACHE_SLOTS_LOG2 11
#define CACHE_SLOTS (1u << CACHE_SLOTS_LOG2)

struct unwind_cache {
	struct cached_rules slots[CACHE_SLOTS];
	/* frames of a scan's trial walks (UNWIND_MAX_FRAMES) */
	struct unwind_frame *trial;
	/* the psABI's rules at a function's entry, for a walk that needs them (first_rules):
	 * here rather than in the walk's locals, whose alignment would cost the walk a register */
	struct cached_rules entry;
	struct unwind_cache_stats stats;
};

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

/* Folding the high bits onto the low ones spreads call sites a few bytes apart and the
 * same code at different load addresses; space_mix (per walk) separates processes. This
 * is on the walk's critical path, so it is shifts and xors, no multiply. */
static inline uint32_t cache_slot(uint64_t space_mix, uint64_t pc)
{
	return (uint32_t)((pc ^ (pc >> CACHE_SLOTS_LOG2) ^ space_mix) & (CACHE_SLOTS - 1));
}

static uint64_t space_mix(uint64_t space)
{
	return (space * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_SLOTS_LOG2);
}

/* The rules nearly every compiled frame has: CFA = rsp or rbp + offset, the return
 * address saved relative to the CFA, and rbp and rbx each either untouched or saved in the
 * frame. The walk takes these in a straight line of code; everything else goes through
 * step(). */
static bool is_plain(const struct cached_rules *r)
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

/* The last few mappings the walk's pcs fell in: a stack crosses only a handful of
 * binaries, so the callback runs a few times per walk at most, not once per frame. */
#define WALK_MAPS 4

struct map_cache {
	struct unwind_map maps[WALK_MAPS];
	uint32_t nr, next;
};

static int find_map(struct map_cache *mc, const struct unwind_space *space, uint64_t pc,
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

/* Where a frame's rbx is: the address it was saved at, in the copy, or one of these (no
 * 8-byte read at either address can succeed). rbx is followed by where it is, and read only
 * for a CFA = rbx + N rule. */
#define BX_SAMPLED UINT64_MAX       /* still the sampled register's value */
#define BX_LOST (UINT64_MAX - 1)    /* an undefined or unsupported rule lost it */

/* A frame's registers as step() takes them. */
struct frame_regs {
	uint64_t ip, sp, bp, bx_at;
	bool bp_valid;
};

/* One walk's state besides its registers. */
struct walker {
	const struct unwind_space *space;
	struct unwind_cache *cache;
	uint64_t space_mix;
	enum unwind_end miss; /* why the last lookup found no rules */
	const struct copy_view *view;
	const struct unwind_regs *sampled; /* the first frame's registers */
	/* The walk again, following rbx, as far as a CFA = rbx + N needed it (replay_bx_at):
	 * the registers of the frame after replayed steps, and the pc its rules are found at. */
	uint32_t replayed;
	struct frame_regs replay;
	uint64_t replay_lookup;
	struct map_cache maps;
	/* the first frame's pc is a return address (a scan's trial walk), not the sampled pc */
	bool first_is_return;
	bool may_scan; /* not within a scan's trial walk */
	/* trial walks left for return addresses that follow no call (return_address_checked) */
	uint8_t ra_trials;
	/* The sp of the first frame's caller when the first frame kept no frame (CFA = sp + 8):
	 * it saved nothing on the stack, so r12-r15, callee-saved, still hold their sampled
	 * values there; 0: no such caller. */
	uint64_t drap_caller_sp;
};

/* Trial walks a walk may make for return addresses that follow no call. */
#define RA_TRIALS 2

/* Looks pc up in the table of the mapping holding it, into slot. NULL with w->miss set
 * when no mapping or no table holds pc. */
static struct cached_rules *fill_slot(struct walker *w, uint64_t pc, struct cached_rules *slot)
{
	const struct unwind_map *map;
	int err;

	w->cache->stats.misses++;
	err = find_map(&w->maps, w->space, pc, &map);
	if (err) {
		w->miss = err == -ENOENT ? UNWIND_END_UNMAPPED : UNWIND_END_NO_CFI;
		return NULL;
	}
	decode_rules(map->table, pc - map->bias, slot);
	slot->ra_checked = false;
	slot->space = w->space->id;
	slot->pc = pc;
	return slot;
}

/* The rules at pc in address space id: from the cache, or looked up and remembered. The
 * id is passed by value so the walk's loop keeps it in a register. */
static inline struct cached_rules *find_rules(struct walker *w, uint64_t id, uint64_t pc)
{
	struct cached_rules *slot = &w->cache->slots[cache_slot(w->space_mix, pc)];

	if (__builtin_expect(slot->pc == pc && slot->space == id, 1))
		return slot;
	return fill_slot(w, pc, slot);
}

/* The kernel's signal frame, as __restore_rt's CFI describes it: the CFA and return
 * address come from the saved ucontext. */
static bool is_signal_frame(const struct cached_rules *r)
{
	return r->cfa == UNWIND_CFA_EXPR_DEREF_SP && r->ra == UNWIND_RA_AT_SP;
}

/* rbx's value in a frame whose rbx is at bx_at. COMPLETE means "found". */
static enum unwind_end bx_value(const struct walker *w, uint64_t bx_at, uint64_t *bx)
{
	if (bx_at == BX_SAMPLED) {
		*bx = w->sampled->bx;
		return w->sampled->bx_valid ? UNWIND_END_COMPLETE : UNWIND_END_UNSUPPORTED;
	}
	if (bx_at == BX_LOST)
		return UNWIND_END_UNSUPPORTED;
	return read_u64(w->view, bx_at, bx) ? UNWIND_END_COMPLETE : UNWIND_END_COPY_SHORT;
}

/* The sampled value of a DRAP register, the CFA's base in a rule of kind cfa: known in the
 * first frame, and for r12-r15 (callee-saved) in the caller of a first frame that kept no
 * frame (dav1d's assembly: a frameless kernel called by a function whose CFA is r14 + 32). */
static bool drap_value(const struct walker *w, uint8_t cfa, bool leaf, uint64_t sp,
		       uint64_t *value)
{
	unsigned reg = cfa == UNWIND_CFA_R10_OFFSET
			       ? 0
			       : UNWIND_DWARF_R12 - UNWIND_DWARF_R10 + (unsigned)(cfa - UNWIND_CFA_R12_OFFSET);
	bool kept = cfa != UNWIND_CFA_R10_OFFSET && w->drap_caller_sp && sp == w->drap_caller_sp;

	if ((!leaf && !kept) || !w->sampled->drap_valid || w->first_is_return)
		return false;
	*value = w->sampled->drap[reg];
	return true;
}

/* CFA for the rules at regs->ip. Returns an unwind_end; COMPLETE means "computed". */
static enum unwind_end compute_cfa(const struct walker *w, const struct cached_rules *rules,
				   const struct frame_regs *regs, bool leaf, uint64_t *cfa)
{
	enum unwind_end end;

	switch (rules->cfa) {
	case UNWIND_CFA_R10_OFFSET:
	case UNWIND_CFA_R12_OFFSET:
	case UNWIND_CFA_R13_OFFSET:
	case UNWIND_CFA_R14_OFFSET:
	case UNWIND_CFA_R15_OFFSET:
		if (!drap_value(w, rules->cfa, leaf, regs->sp, cfa))
			return UNWIND_END_UNSUPPORTED;
		*cfa += rules->cfa_offset;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_SP_OFFSET:
		*cfa = regs->sp + rules->cfa_offset;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_BP_OFFSET:
		if (!regs->bp_valid)
			return UNWIND_END_UNSUPPORTED;
		*cfa = regs->bp + rules->cfa_offset;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_BX_OFFSET:
		end = bx_value(w, regs->bx_at, cfa);
		if (end == UNWIND_END_COMPLETE)
			*cfa += rules->cfa_offset;
		return end;
	case UNWIND_CFA_EXPR_PLT:
		/* A lazy PLT entry pushes one more word after its first instruction group. */
		*cfa = regs->sp + 8 + ((regs->ip & 15) >= (uint64_t)rules->cfa_offset ? 8 : 0);
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_EXPR_DEREF_SP:
		if (!read_u64(w->view, regs->sp + rules->cfa_offset, cfa))
			return UNWIND_END_COPY_SHORT;
		*cfa += (uint64_t)(int64_t)rules->cfa_addend;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_EXPR_DEREF_BP:
		if (!regs->bp_valid)
			return UNWIND_END_UNSUPPORTED;
		if (!read_u64(w->view, regs->bp + rules->cfa_offset, cfa))
			return UNWIND_END_COPY_SHORT;
		*cfa += (uint64_t)(int64_t)rules->cfa_addend;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_END:
		return UNWIND_END_NO_CFI;
	default:
		return UNWIND_END_UNSUPPORTED;
	}
}

/* The caller's rbp. A rule that loses it leaves bp_valid false: only a later bp-based CFA
 * needs it, and that then stops the walk as unsupported. */
static enum unwind_end recover_bp(const struct cached_rules *rules, const struct frame_regs *regs,
				  uint64_t cfa, const struct copy_view *copy,
				  struct frame_regs *caller)
{
	uint64_t slot;

	caller->bp = regs->bp;
	caller->bp_valid = regs->bp_valid;
	switch (rules->rbp) {
	case UNWIND_RBP_UNCHANGED:
		return UNWIND_END_COMPLETE;
	case UNWIND_RBP_AT_CFA:
	case UNWIND_RBP_AT_SP:
		slot = (rules->rbp == UNWIND_RBP_AT_CFA ? cfa : regs->sp) + rules->rbp_offset;
		/* In an epilogue, after `pop %rbp`, compilers leave the rule pointing at the
		 * popped slot, now below sp: the register already holds the caller's value. */
		if (slot < regs->sp)
			return UNWIND_END_COMPLETE;
		caller->bp_valid = true;
		return read_u64(copy, slot, &caller->bp) ? UNWIND_END_COMPLETE
							 : UNWIND_END_COPY_SHORT;
	case UNWIND_RBP_AT_BP:
		/* GCC's realigned frames (DRAP) save it where their own rbp points: a DRAP
		 * function's caller that realigns too needs it for its CFA = *(rbp - N) */
		if (!regs->bp_valid)
			return UNWIND_END_COMPLETE;
		slot = regs->bp + rules->rbp_offset;
		/* A function saves rbp in its own frame, below its CFA: a slot at or above it
		 * is a rule left stale past the epilogue's restore (GCC's DRAP epilogue, at its
		 * ret), and rbp already holds the caller's value. */
		if (slot < regs->sp || slot >= cfa)
			return UNWIND_END_COMPLETE;
		caller->bp_valid = true;
		return read_u64(copy, slot, &caller->bp) ? UNWIND_END_COMPLETE
							 : UNWIND_END_COPY_SHORT;
	case UNWIND_RBP_VAL_CFA:
		caller->bp = cfa + rules->rbp_offset;
		caller->bp_valid = true;
		return UNWIND_END_COMPLETE;
	default:
		caller->bp_valid = false;
		return UNWIND_END_COMPLETE;
	}
}

/* Where the caller's rbx is: nothing is read (see BX_SAMPLED). A save below sp was popped
 * already, as for rbp. */
static uint64_t recover_bx(const struct cached_rules *rules, const struct frame_regs *regs,
			   uint64_t cfa)
{
	uint64_t slot = cfa + rules->rbx_offset;

	switch (rules->rbx) {
	case UNWIND_RBX_UNCHANGED:
		return regs->bx_at;
	case UNWIND_RBX_AT_CFA:
		return slot >= regs->sp ? slot : regs->bx_at;
	default:
		return BX_LOST;
	}
}

/* The return address, for the rules at regs->ip with the CFA computed. *in_register says
 * it was in a register: no stack slot held it, so the CFA may equal sp. Only the first
 * frame's registers besides rsp and rbp are known (leaf), and of them only rdi, where
 * glibc's __vfork keeps it. */
static enum unwind_end return_address(const struct walker *w, const struct cached_rules *rules,
				      const struct frame_regs *regs, uint64_t cfa, bool leaf,
				      uint64_t *ra, bool *in_register)
{
	uint64_t ra_addr;

	*in_register = false;
	switch (rules->ra) {
	case UNWIND_RA_AT_CFA:
		ra_addr = cfa + rules->ra_offset;
		break;
	case UNWIND_RA_AT_SP:
		ra_addr = regs->sp + rules->ra_offset;
		break;
	case UNWIND_RA_REGISTER:
		if (!leaf || rules->ra_offset != UNWIND_DWARF_RDI || !w->sampled->di_valid)
			return UNWIND_END_UNSUPPORTED;
		*ra = w->sampled->di;
		*in_register = true;
		return UNWIND_END_COMPLETE;
	default:
		return UNWIND_END_UNSUPPORTED;
	}
	return read_u64(w->view, ra_addr, ra) ? UNWIND_END_COMPLETE : UNWIND_END_COPY_SHORT;
}

/* One step: the caller's registers from the callee's, for any rules. leaf: regs are the
 * sampled registers. ra_undefined reports the outermost frame; signal reports a signal
 * trampoline (its caller resumes at an exact pc). */
static enum unwind_end step(const struct walker *w, const struct cached_rules *rules,
			    const struct frame_regs *regs, bool leaf, struct frame_regs *caller,
			    bool *ra_undefined, bool *signal)
{
	enum unwind_end end;
	bool in_register, ra_in_caller;
	uint64_t cfa;

	*ra_undefined = false;
	*signal = false;
	if (rules->ra == UNWIND_RA_UNDEFINED && rules->cfa != UNWIND_CFA_END) {
		*ra_undefined = true;
		return UNWIND_END_COMPLETE;
	}
	end = compute_cfa(w, rules, regs, leaf, &cfa);
	if (end != UNWIND_END_COMPLETE)
		return end;
	end = return_address(w, rules, regs, cfa, leaf, &caller->ip, &in_register);
	if (end != UNWIND_END_COMPLETE)
		return end;
	end = recover_bp(rules, regs, cfa, w->view, caller);
	if (end != UNWIND_END_COMPLETE)
		return end;
	caller->bx_at = recover_bx(rules, regs, cfa);
	caller->sp = cfa;
	*signal = is_signal_frame(rules);
	/* Outside signal frames the stack only grows down: a caller's frame is above, or where
	 * the callee's is when the return address was never on the stack or is in the caller's
	 * frame (moved there: sljit's fast calls), and then the caller is another pc. */
	ra_in_caller = rules->ra == UNWIND_RA_AT_CFA && rules->ra_offset >= 0;
	if (!*signal && (in_register || ra_in_caller ? cfa < regs->sp : cfa <= regs->sp))
		return UNWIND_END_BAD_FRAME;
	if (ra_in_caller && cfa == regs->sp && caller->ip == regs->ip)
		return UNWIND_END_BAD_FRAME;
	return UNWIND_END_COMPLETE;
}

/* step() for plain rules (is_plain), in a straight line on plain values: the walk spends
 * most of its time here. Gives the same results as step(), but for where rbx is, which it
 * does not follow: that cost every frame more than the rare CFA = rbx + N rule is worth
 * (replay_bx_at finds it for those). */
static inline enum unwind_end step_plain(const struct cached_rules *rules,
					 const struct copy_view *copy, uint64_t *ip,
					 uint64_t *sp, uint64_t *bp, bool *bp_valid)
{
	uint64_t cfa, caller_ip, caller_bp = *bp, slot;
	bool caller_bp_valid = *bp_valid;

	if (rules->cfa == UNWIND_CFA_BP_OFFSET) {
		if (!*bp_valid)
			return UNWIND_END_UNSUPPORTED;
		cfa = *bp + rules->cfa_offset;
	} else {
		cfa = *sp + rules->cfa_offset;
	}
	if (!read_u64(copy, cfa + rules->ra_offset, &caller_ip))
		return UNWIND_END_COPY_SHORT;
	slot = cfa + rules->rbp_offset;
	/* below sp: the epilogue already popped rbp (see recover_bp) */
	if (rules->rbp == UNWIND_RBP_AT_CFA && slot >= *sp) {
		if (!read_u64(copy, slot, &caller_bp))
			return UNWIND_END_COPY_SHORT;
		caller_bp_valid = true;
	}
	if (cfa <= *sp)
		return UNWIND_END_BAD_FRAME;
	*ip = caller_ip;
	*sp = cfa;
	*bp = caller_bp;
	*bp_valid = caller_bp_valid;
	return UNWIND_END_COMPLETE;
}

/* The rules for the caller of the frame whose rules were prev, at pc. Tries prev's
 * successor from earlier walks first: when it is right, as it mostly is, the CPU can go
 * on with it before the caller's pc has been loaded from the copy and hashed, so the
 * walk's critical path shrinks to following slot->next. */
static inline struct cached_rules *caller_rules(struct walker *w, uint64_t id,
						struct cached_rules *prev, uint64_t pc)
{
	struct cached_rules *rules = prev->next;

	if (__builtin_expect(rules->pc == pc && rules->space == id, 1))
		return rules;
	rules = find_rules(w, id, pc);
	if (rules)
		prev->next = rules;
	return rules;
}

/* A sample taken in the rt_sigreturn system call has its ip just past the trampoline's
 * syscall instruction, which is where __restore_rt's FDE ends: no rule covers that pc.
 * The syscall instruction's own rules (at ip - 1) are the signal frame's, and sp has not
 * moved since, so they apply. Only a signal frame is taken from ip - 1: for any other
 * function, what precedes ip says nothing about ip. Returns the rules to use for the
 * first frame, whose own (rules) cover nothing. */
static struct cached_rules *in_sigreturn(struct walker *w, uint64_t id, uint64_t ip,
					 struct cached_rules *rules)
{
	struct cached_rules *before = ip ? find_rules(w, id, ip - 1) : NULL;

	return before && is_signal_frame(before) ? before : rules;
}

/* The first frame is at the very first instruction of a function its binary names (see
 * unwind_is_function_entry_fn): nothing has been pushed yet, whatever CFI there is or not. */
static bool at_function_entry(const struct walker *w, uint64_t ip)
{
	return w->space->is_function_entry && w->space->is_function_entry(w->space->ctx, ip);
}

/* The psABI's rules at a function's entry: CFA = rsp + 8, the return address at rsp,
 * every callee-saved register untouched. */
static struct cached_rules *entry_rules(struct walker *w)
{
	struct cached_rules *r = &w->cache->entry;

	*r = (struct cached_rules){
		.cfa = UNWIND_CFA_SP_OFFSET, .cfa_offset = 8,
		.ra = UNWIND_RA_AT_CFA, .ra_offset = -8,
		.rbp = UNWIND_RBP_UNCHANGED, .rbx = UNWIND_RBX_UNCHANGED,
		.found = UNWIND_FOUND_CFI,
		.next = r, /* space 0 never matches: the caller is looked up */
	};
	r->plain = is_plain(r);
	return r;
}

/* The rules for the first frame, at its exact pc: its own, or where it has none, a signal
 * frame's in rt_sigreturn, or the psABI's at a function's entry. NULL with w->miss set when
 * there are none (as find_rules). Only the first frame's pc can be an entry: the others'
 * are return addresses, which follow a call. */
static struct cached_rules *first_rules(struct walker *w, uint64_t id, uint64_t ip)
{
	struct cached_rules *rules = find_rules(w, id, ip);

	if (rules && rules->cfa != UNWIND_CFA_END)
		return rules;
	if (rules) {
		struct cached_rules *signal = in_sigreturn(w, id, ip, rules);

		if (signal != rules)
			return signal;
	}
	if ((rules || w->miss == UNWIND_END_NO_CFI) && at_function_entry(w, ip))
		return entry_rules(w);
	return rules;
}

/* A return address that is the very start of a function was not pushed by a call (a
 * call's return address follows the call instruction): it was put there to start a
 * stack, as makecontext does with __start_context for the function it starts. That
 * frame is the stack's outermost. */
static bool returns_to_function_start(struct walker *w, uint64_t ra)
{
	const struct unwind_map *map;
	uint64_t start;

	if (find_map(&w->maps, w->space, ra, &map) != 0)
		return false;
	return unwind_table__function_start(map->table, ra - map->bias, &start) == 0 &&
	       start == ra - map->bias;
}

/* Where rbx is in the frame the walk reaches after steps steps, steps at least as many as
 * last time: the walk again from the sampled registers, or from where the last call left
 * it, through step(), which follows rbx. Each frame is replayed once per walk at most. */
static uint64_t replay_bx_at(struct walker *w, uint32_t steps)
{
	const uint64_t id = w->space->id;
	struct frame_regs caller;
	bool ra_undefined, signal;

	if (w->replayed == 0) {
		const struct unwind_regs *s = w->sampled;

		w->replay = (struct frame_regs){ s->ip, s->sp, s->bp, BX_SAMPLED, s->bp_valid };
		w->replay_lookup = s->ip;
	}
	for (; w->replayed < steps; w->replayed++) {
		struct cached_rules *rules = w->replayed == 0 ? first_rules(w, id, w->replay_lookup)
							      : find_rules(w, id, w->replay_lookup);

		/* the walk itself went past here, so neither can fail: a guard */
		if (!rules || step(w, rules, &w->replay, w->replayed == 0, &caller, &ra_undefined,
				   &signal) != UNWIND_END_COMPLETE || ra_undefined)
			return BX_LOST;
		w->replay = caller;
		w->replay_lookup = signal ? caller.ip : caller.ip - 1;
	}
	return w->replay.bx_at;
}

/* step() for a CFA = rbx + N, after steps steps: finds where rbx is first. Out of line, so
 * that its copy of the rules (the replay's lookups may evict them from the cache) does not
 * cost the walk's loop a register for its alignment. */
static __attribute__((noinline)) enum unwind_end
step_bx(struct walker *w, const struct cached_rules *rules, uint32_t steps, struct frame_regs *cur,
	struct frame_regs *caller, bool *ra_undefined, bool *signal)
{
	const struct cached_rules here = *rules;

	cur->bx_at = replay_bx_at(w, steps);
	return step(w, &here, cur, steps == 0, caller, ra_undefined, signal);
}

static void walker_init(struct walker *w, const struct unwind_space *space,
			struct unwind_cache *cache, const struct copy_view *view,
			const struct unwind_regs *regs)
{
	/* Field by field: an initializer would zero the whole map cache on every walk. */
	w->space = space;
	w->cache = cache;
	w->space_mix = space_mix(space->id);
	w->miss = UNWIND_END_NO_CFI;
	w->view = view;
	w->sampled = regs;
	w->replayed = 0;
	w->maps.nr = 0;
	w->maps.next = 0;
	w->first_is_return = false;
	w->ra_trials = RA_TRIALS;
	w->may_scan = !space->no_scan;
}

/* Code without CFI at ip: the rules its instructions give, put in the cache slot of its
 * lookup (replacing an end-of-function slot, rules), or NULL when the analysis found none.
 * A failed analysis is remembered in the slot, so later walks go straight on to the
 * frame-pointer step. */
static struct cached_rules *analysis_rules(struct walker *w, uint64_t id, uint64_t ip, bool exact,
					   struct cached_rules *rules)
{
	uint64_t lookup = exact ? ip : ip - 1;
	struct cached_rules *slot = rules ? rules : &w->cache->slots[cache_slot(w->space_mix, lookup)];
	struct code_rules code;
	const bool ra_checked = rules && rules->pc == lookup && rules->ra_checked;

	/* A return address where a runtime's stacks end (an Erlang process's): no frame is
	 * above, as _start's CFI says of its own. Looked for before a failed analysis's
	 * slot is taken: the runtime may have said where its stacks end since. */
	if (!exact && w->space->is_stack_end && w->space->is_stack_end(w->space->ctx, ip)) {
		*slot = (struct cached_rules){ .space = id, .pc = lookup, .next = slot,
					       .cfa = UNWIND_CFA_SP_OFFSET, .cfa_offset = 8,
					       .ra = UNWIND_RA_UNDEFINED,
					       .found = UNWIND_FOUND_ANALYSIS, .ra_checked = true };
		return slot;
	}
	if (rules && rules->found == UNWIND_FOUND_FRAME_POINTER)
		return NULL;
	if (!w->space->analyze || w->space->analyze(w->space->ctx, ip, &code) != CODE_OK) {
		*slot = (struct cached_rules){ .space = id, .pc = lookup, .next = slot,
					       .cfa = UNWIND_CFA_END,
					       .found = UNWIND_FOUND_FRAME_POINTER,
					       .ra_checked = ra_checked };
		return NULL;
	}
	*slot = (struct cached_rules){
		.space = id, .pc = lookup, .next = slot,
		.cfa = code.cfa, .cfa_offset = code.cfa_offset, .cfa_addend = code.cfa_addend,
		.ra = UNWIND_RA_AT_CFA, .ra_offset = code.ra_offset,
		.rbp = code.rbp, .rbp_offset = code.rbp_offset,
		.rbx = code.rbx, .rbx_offset = code.rbx_offset,
		.found = UNWIND_FOUND_ANALYSIS,
		.ra_checked = ra_checked, /* pc + 1 was checked before the code was analysed */
		.via_jump = code.via_jump,
	};
	/* plain or not, each return address it gives is checked (analysed_return) */
	slot->plain = is_plain(slot);
	return slot;
}

/* ra is in the process's executable memory and follows a call instruction; *target is
 * the call's, for a direct call (0 otherwise). */
static enum code_call follows_call(struct walker *w, uint64_t ra, uint64_t *target)
{
	const struct unwind_map *map;
	int call;

	*target = 0;
	if (find_map(&w->maps, w->space, ra, &map) == -ENOENT)
		return CODE_CALL_NONE;
	call = w->space->call_before(w->space->ctx, ra, target);
	return call == CODE_CALL_DIRECT || call == CODE_CALL_INDIRECT ? call : CODE_CALL_NONE;
}

/* ra, an address in the process's code, is a return address where a stack ends though no
 * call precedes it (unwind_is_stack_end_fn). */
static bool is_stack_end(struct walker *w, uint64_t ra)
{
	const struct unwind_map *map;

	return w->space->is_stack_end && find_map(&w->maps, w->space, ra, &map) != -ENOENT &&
	       w->space->is_stack_end(w->space->ctx, ra);
}

/* The frame record rbp points at, for a frame that keeps one: it lies above the frame's
 * sp, in the copied stack, and its return address follows a call. */
static bool frame_pointer_step(struct walker *w, struct frame_regs *regs)
{
	uint64_t saved_bp, ra, target;

	if (!regs->bp_valid || regs->bp < regs->sp || (regs->bp & 7))
		return false;
	if (!read_u64(w->view, regs->bp, &saved_bp) || !read_u64(w->view, regs->bp + 8, &ra))
		return false;
	if (follows_call(w, ra, &target) == CODE_CALL_NONE)
		return false;
	regs->ip = ra;
	regs->sp = regs->bp + 16;
	regs->bp = saved_bp;
	return true;
}

/* Words a scan reads above a frame's sp, and candidates it walks from at most. */
#define SCAN_WORDS 4096
#define SCAN_TRIALS 8
/* Where rsp is at a piece of code's jumps, asked for at most (unwind_jumps_fn): the space
 * keeps 3 (CODE_JUMPS). */
#define SCAN_JUMPS 3

/* A scan's read: false past the copy. A word in a hole (a page never touched: a large
 * frame's unused buffer, BEAM's register array in process_main's frame) reads as 0, which
 * no candidate is, and the scan goes on above it. */
static bool scan_read(const struct copy_view *v, uint64_t addr, uint64_t *word)
{
	uint64_t off = addr - v->base; /* wraps for addr < base: then off >= limit */
	enum stack_read r;

	if (__builtin_expect(off < v->limit, 1)) {
		memcpy(word, v->bytes + off, sizeof(*word));
		return true;
	}
	r = stack_copy__read(v->copy, addr, word);
	if (r == STACK_READ_HOLE)
		*word = 0;
	return r != STACK_READ_OUTSIDE;
}

/* A scan's last try, where no return address led to the start: the first word above the
 * frame that is where a runtime's stacks end (BEAM's exit). It follows no call, so it
 * comes after every return address that does: one of those, if any led on, is nearer. */
static bool scan_for_stack_end(struct walker *w, struct frame_regs *regs)
{
	for (uint32_t i = 0; i < SCAN_WORDS && w->space->is_stack_end; i++) {
		uint64_t addr = regs->sp + 8 * (uint64_t)i, word;

		if (!scan_read(w->view, addr, &word))
			break;
		if (word && is_stack_end(w, word)) {
			regs->ip = word;
			regs->sp = addr + 8;
			return true;
		}
	}
	return false;
}

/* Without a known start, a direct call's target must be at most this far below the pc. */
#define SCAN_MAX_FUNCTION (64u << 10)

static void walk_from(const struct unwind_regs *regs, const struct stack_copy *copy,
		      const struct unwind_space *space, struct unwind_cache *cache,
		      struct unwind_frame *frames, uint32_t max, struct unwind_result *result,
		      bool first_is_return);

/* How sure a scan's candidate is: a call known to go into the frame's function, one that
 * may (an indirect call; a direct one where the function's start is not known), or a call
 * elsewhere. */
enum scan_call { SCAN_CALL_ELSEWHERE, SCAN_CALL_MAYBE, SCAN_CALL_INTO };

/* What a scan knows of the frame's function, the same for every candidate: where it
 * starts (err 0), or that no map gives the start of its JIT code (-ENODATA), or nothing
 * (-ENOENT); and whether it is JIT code. */
struct scanned_function {
	uint64_t lookup; /* the pc, or the call before a return address */
	uint64_t start;
	int err;
	bool jit;
};

static struct scanned_function scanned_function(struct walker *w, uint64_t lookup)
{
	struct scanned_function f = { .lookup = lookup, .err = -ENOENT };

	if (w->space->function_start)
		f.err = w->space->function_start(w->space->ctx, lookup, &f.start);
	f.jit = f.err == -ENODATA || (f.err == 0 && w->space->is_jit_code &&
				      w->space->is_jit_code(w->space->ctx, lookup));
	return f;
}

/* What a candidate's call says about the frame's function. */
static enum scan_call scan_call(const struct scanned_function *f, enum code_call call,
				uint64_t target)
{
	if (call == CODE_CALL_INDIRECT)
		return SCAN_CALL_MAYBE;
	if (f->err == 0 && target == f->start)
		return SCAN_CALL_INTO;
	/* JIT code, its start known or not: the runtime enters it through trampolines of its own
	 * (BEAM's C++ process_main calls one in beam.smp), and runs pieces of it in frames other
	 * JIT code made (BEAM's fragments in process_main's): a direct call elsewhere may be
	 * this frame's caller's */
	if (f->jit)
		return SCAN_CALL_MAYBE;
	if (f->err == 0)
		return SCAN_CALL_ELSEWHERE;
	return target <= f->lookup && f->lookup - target < SCAN_MAX_FUNCTION ? SCAN_CALL_MAYBE
									      : SCAN_CALL_ELSEWHERE;
}

/* Where rsp is, relative to the frame's sp, where the frame's code jumps on (through a
 * register or memory): traced once per scan, when a candidate first needs it. */
struct frame_jumps {
	bool traced;
	uint32_t nr;
	int32_t offsets[SCAN_JUMPS];
};

/* A call's target that jumped to the frame's code: where rsp was as it jumped, and where
 * the jump is. */
struct jump_here {
	uint64_t sp, pc;
};

/* A direct call to target whose function jumps to code it runs in its own frame, at the
 * depth a candidate found at addr has over the frame's code as it jumps on (its sp plus an
 * offset of frame_jumps): the frame's code is what the function jumped to, and the
 * candidate is as sure as a call into it. GHC's schedule calls StgRun, which reserves
 * 16 KiB and jumps to Haskell code; the Haskell code leaves rsp as it found it where it
 * jumps on, and subtracts 8 around its calls of C. A PLT stub jumps at depth 8: a function
 * reached through one, sampled before it pushes anything. Sets *jump. */
static bool calls_jump_here(struct walker *w, const struct frame_regs *regs,
			    struct frame_jumps *fj, enum code_call call, uint64_t target,
			    uint64_t addr, struct jump_here *jump)
{
	int32_t depths[SCAN_JUMPS];
	uint64_t at[SCAN_JUMPS], unused[SCAN_JUMPS];
	uint32_t nr;

	if (call != CODE_CALL_DIRECT || !w->space->jumps)
		return false;
	if (!fj->traced) {
		/* the sampled pc's code, or a return address's: what runs on from there */
		fj->traced = true;
		fj->nr = w->space->jumps(w->space->ctx, regs->ip, false, fj->offsets, unused,
					 SCAN_JUMPS);
	}
	if (fj->nr == 0)
		return false;
	nr = w->space->jumps(w->space->ctx, target, true, depths, at, SCAN_JUMPS);
	for (uint32_t i = 0; i < nr; i++) {
		for (uint32_t j = 0; j < fj->nr; j++) {
			uint64_t sp = regs->sp + (uint64_t)(int64_t)fj->offsets[j];

			if (addr + 8 - sp == (uint64_t)(int64_t)depths[i]) {
				*jump = (struct jump_here){ .sp = sp, .pc = at[i] };
				return true;
			}
		}
	}
	return false;
}

/* The registers a candidate's frame had where a function jumped to the frame's code: the
 * function's own rules at its jump (CFI, else its analysis), from rsp as it jumped, give
 * back the rbp it saved (GHC's StgRun saves the scheduler's; Haskell code keeps its own
 * stack pointer in rbp, and the RTS's C may need the scheduler's for a CFA = rbp + 16).
 * Only where those rules find the candidate's return address at the candidate's place;
 * else the frame's rbp is taken as it is. Not step(): GHC's CFI for StgRun's body gives
 * the CFA as rsp itself, and the caller's rsp by an expression. */
static struct frame_regs regs_at_jump(struct walker *w, const struct frame_regs *regs,
				      const struct jump_here *jump, uint64_t word, uint64_t addr)
{
	struct frame_regs at = { .ip = jump->pc, .sp = jump->sp, .bp = regs->bp,
				 .bp_valid = regs->bp_valid, .bx_at = BX_LOST }, caller = *regs;
	struct cached_rules *rules = find_rules(w, w->space->id, jump->pc);
	uint64_t cfa, ra;
	bool in_register;

	if (!rules || rules->cfa == UNWIND_CFA_END)
		rules = analysis_rules(w, w->space->id, jump->pc, true, NULL);
	if (!rules || rules->ra != UNWIND_RA_AT_CFA ||
	    compute_cfa(w, rules, &at, false, &cfa) != UNWIND_END_COMPLETE ||
	    cfa + (uint64_t)(int64_t)rules->ra_offset != addr ||
	    return_address(w, rules, &at, cfa, false, &ra, &in_register) != UNWIND_END_COMPLETE ||
	    ra != word || recover_bp(rules, &at, cfa, w->view, &caller) != UNWIND_END_COMPLETE)
		return *regs;
	caller.ip = regs->ip;
	caller.sp = regs->sp;
	caller.bx_at = regs->bx_at;
	return caller;
}

/* Where the function holding pc starts, by its symbol, else by its FDE: 0 or -ENOENT. */
static int known_function_start(struct walker *w, uint64_t pc, uint64_t *start)
{
	const struct unwind_map *map;

	if (w->space->function_start && w->space->function_start(w->space->ctx, pc, start) == 0)
		return 0;
	if (find_map(&w->maps, w->space, pc, &map) != 0 ||
	    unwind_table__function_start(map->table, pc - map->bias, start) != 0)
		return -ENOENT;
	*start += map->bias;
	return 0;
}

/* A stale return address: ra's function was called from the frame below it, which has
 * called another one since. The walk from ra then finds that frame's return address after
 * a direct call to some function's start that is not ra's function (main called the clock
 * and then the JIT code's caller, into the same stack slot). The target must be a symbol's
 * start: a call into a stub (a PLT entry, which an FDE may start at) tells nothing. A
 * function that ra's reached by a tail call, or ra in a function's split-off part
 * (F.cold), is rejected too: only candidates the scan is not sure of are judged so. */
static bool caller_called_elsewhere(struct walker *w, uint64_t ra, uint64_t caller_ra)
{
	uint64_t target, start, target_start;

	if (!w->space->function_start || follows_call(w, caller_ra, &target) != CODE_CALL_DIRECT)
		return false;
	if (known_function_start(w, ra - 1, &start) != 0 || target == start)
		return false;
	return w->space->function_start(w->space->ctx, target, &target_start) == 0 &&
	       target_start == target;
}

/* How the walk from a scan's candidate went. */
enum trial { TRIAL_REACHES_START, TRIAL_STOPS, TRIAL_STALE };

/* The trial walk's n frames agree with the calls before their return addresses: no frame's
 * caller called, directly, another function's start than the frame's own. A stale return
 * address's walk meets its first disagreement where its stale frames join the live ones
 * (main called the clock, then the function being scanned: the clock's frames are stale,
 * and main's return address there follows the later call). A tail call makes a right walk
 * disagree too, so this only ranks candidates that both reach the start. */
static bool trial_agrees(struct walker *w, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		if (caller_called_elsewhere(w, w->cache->trial[i - 1].pc, w->cache->trial[i].pc))
			return false;
	}
	return true;
}

/* Whether the walk from a candidate return address, found at sp - 8, reaches the stack's
 * start (an entry: a return address the CFI leaves undefined, or entry code), and, for a
 * candidate the scan is not sure of, whether its frame's caller called its function. One
 * that reaches the start sets *agrees (trial_agrees) and *nr_frames, when given. */
static enum trial trial_walk(struct walker *w, uint64_t ra, uint64_t sp,
			     const struct frame_regs *regs, bool sure, bool *agrees,
			     uint32_t *nr_frames)
{
	const struct unwind_regs from = { .ip = ra, .sp = sp, .bp = regs->bp,
					  .bp_valid = regs->bp_valid };
	struct unwind_result result;
	const struct unwind_frame *last;

	walk_from(&from, w->view->copy, w->space, w->cache, w->cache->trial, UNWIND_MAX_FRAMES,
		  &result, true);
	if (!sure && result.nr_frames >= 2 &&
	    caller_called_elsewhere(w, ra, w->cache->trial[1].pc))
		return TRIAL_STALE;
	/* A zero return address ends a walk, but is no entry: a stale word that follows an
	 * indirect call, in a frame whose return address slot holds 0 (QEMU's TCG frame keeps
	 * 1 KiB of temporaries), would pass for the stack's start. */
	last = &w->cache->trial[result.nr_frames - 1];
	/* Nor is a return address to a function's start, where a stack some code started by
	 * hand ends (makecontext): a stale candidate's walk meets one in the middle of a
	 * stack (a mono thread's) as easily as a right one meets clone3. */
	if (result.started_stack)
		return TRIAL_STOPS;
	if (!(result.end == UNWIND_END_COMPLETE && result.last.ip != 0) &&
	    !(result.end == UNWIND_END_NO_CFI && w->space->is_entry_code &&
	      w->space->is_entry_code(w->space->ctx, last->pc, !last->exact)))
		return TRIAL_STOPS;
	if (agrees)
		*agrees = trial_agrees(w, result.nr_frames);
	if (nr_frames)
		*nr_frames = result.nr_frames;
	return TRIAL_REACHES_START;
}

/* Return addresses of a scan's first candidate whose walk reached the start but did not
 * agree throughout (trial_agrees), kept while later candidates are tried. */
#define SCAN_HELD_FRAMES 64

struct held_candidate {
	uint64_t ip, sp, bp;
	bool bp_valid;
	uint32_t nr;
	uint64_t chain[SCAN_HELD_FRAMES]; /* its walk's return addresses past its own */
};

static void hold_candidate(struct walker *w, struct held_candidate *held, uint64_t ip,
			   uint64_t sp, const struct frame_regs *from, uint32_t nr_frames)
{
	held->ip = ip;
	held->sp = sp;
	held->bp = from->bp;
	held->bp_valid = from->bp_valid;
	held->nr = 0;
	for (uint32_t i = 1; i < nr_frames && held->nr < SCAN_HELD_FRAMES; i++)
		held->chain[held->nr++] = w->cache->trial[i].pc;
}

/* The later candidate ra is a return address of the held one's own walk: only a shorter
 * tail of the same chain (the return address into start_thread, which every thread's walk
 * ends with), never a better one. */
static bool on_held_chain(const struct held_candidate *held, uint64_t ra)
{
	for (uint32_t i = 0; i < held->nr; i++) {
		if (held->chain[i] == ra)
			return true;
	}
	return false;
}

/* The last resort: the first word above the frame's sp that follows a call known to go
 * into the frame's function (or into one that jumped to it, calls_jump_here), else the
 * first that follows one that may (through a pointer), from which the walk reaches the
 * stack's start. A stale return address after an indirect call (a clock read through the
 * vDSO's pointer, earlier) can lead to the start too: the sure kind goes first, and one of
 * the other kind whose caller has called another function since is passed over
 * (caller_called_elsewhere). Within a kind, a candidate whose walk has a frame called by a
 * direct call elsewhere (trial_agrees: a stale chain joining the live one, or a tail call)
 * gives way to a later one whose walk agrees throughout, unless that one is on its own
 * walk; a sure candidate never gives way to an unsure one. rbp is taken as the frame left
 * it, or, after a call of a function that jumped to the frame's code, as that function
 * saved it (regs_at_jump). */
static bool scan_step(struct walker *w, struct frame_regs *regs, bool exact)
{
	const struct scanned_function f = scanned_function(w, exact ? regs->ip : regs->ip - 1);
	const struct unwind_map *map;
	struct held_candidate held = { 0 };
	struct frame_jumps jumps = { 0 };
	uint32_t trials = 0;

	for (int pass = SCAN_CALL_INTO; pass >= SCAN_CALL_MAYBE; pass--) {
		for (uint32_t i = 0; i < SCAN_WORDS && trials < SCAN_TRIALS; i++) {
			uint64_t addr = regs->sp + 8 * (uint64_t)i, word, target;
			enum code_call call;
			enum scan_call how;
			struct frame_regs from;
			struct jump_here jump;
			enum trial trial;
			uint32_t nr_frames;
			bool agrees, through_jump;

			if (!scan_read(w->view, addr, &word))
				break;
			call = follows_call(w, word, &target);
			how = call == CODE_CALL_NONE ? SCAN_CALL_ELSEWHERE
						     : scan_call(&f, call, target);
			through_jump = how != SCAN_CALL_INTO &&
				       calls_jump_here(w, regs, &jumps, call, target, addr, &jump);
			if (through_jump)
				how = SCAN_CALL_INTO;
			if (how != (enum scan_call)pass) {
				/* rejected ones counted once, on the first pass; a pointer into code
				 * that follows no call counts, data words do not */
				if (pass == SCAN_CALL_INTO && how == SCAN_CALL_ELSEWHERE &&
				    (call != CODE_CALL_NONE ||
				     find_map(&w->maps, w->space, word, &map) != -ENOENT))
					w->cache->stats.scan_rejected_code++;
				continue;
			}
			trials++;
			from = through_jump ? regs_at_jump(w, regs, &jump, word, addr) : *regs;
			trial = trial_walk(w, word, addr + 8, &from, pass == SCAN_CALL_INTO, &agrees,
					   &nr_frames);
			if (trial != TRIAL_REACHES_START) {
				if (trial == TRIAL_STALE)
					w->cache->stats.scan_rejected_stale++;
				else
					w->cache->stats.scan_rejected_walk++;
				continue;
			}
			if (!agrees && !held.ip) {
				/* taken if no later candidate of its kind agrees throughout */
				hold_candidate(w, &held, word, addr + 8, &from, nr_frames);
				continue;
			}
			if (held.ip && (!agrees || on_held_chain(&held, word)))
				continue;
			if (held.ip)
				w->cache->stats.scan_passed_over++;
			w->cache->stats.scan_through_jumps += through_jump;
			regs->bp = from.bp;
			regs->bp_valid = from.bp_valid;
			regs->ip = word;
			regs->sp = addr + 8;
			return true;
		}
		if (held.ip)
			break;
	}
	if (held.ip) {
		regs->ip = held.ip;
		regs->sp = held.sp;
		regs->bp = held.bp;
		regs->bp_valid = held.bp_valid;
		return true;
	}
	return scan_for_stack_end(w, regs);
}

/* A frame whose code has no CFI and no rules by analysis: its caller by its frame record
 * (unless frame_record is false), else by a scan. Sets *found; NO_CFI when neither works. */
static enum unwind_end nocfi_step_by(struct walker *w, struct frame_regs *regs, bool exact,
				     uint8_t *found, bool frame_record)
{
	if (!w->space->call_before)
		return UNWIND_END_NO_CFI;
	if (frame_record && !w->space->scan_only && frame_pointer_step(w, regs))
		*found = UNWIND_FOUND_FRAME_POINTER;
	else if (w->may_scan && scan_step(w, regs, exact))
		*found = UNWIND_FOUND_SCAN;
	else
		return UNWIND_END_NO_CFI;
	w->cache->stats.nocfi_frames[*found]++;
	return UNWIND_END_COMPLETE;
}

static enum unwind_end nocfi_step(struct walker *w, struct frame_regs *regs, bool exact,
				  uint8_t *found)
{
	return nocfi_step_by(w, regs, exact, found, true);
}

/* The return address an analysis gave (caller->ip, the caller's frame at caller->sp)
 * follows a call: known from the caller's cache slot (the walk looks it up next anyway),
 * else checked and remembered there. One into code without CFI that follows no call is
 * taken where a walk from it reaches the stack's start: HotSpot's interpreter calls by
 * pushing its return entry's address and jumping. Compiled code, which has CFI, is
 * returned to after calls only. Only in a sampled stack's walk: trial walks share one
 * buffer. */
static bool return_address_checked(struct walker *w, uint64_t id, struct cached_rules *rules,
				   const struct frame_regs *caller)
{
	struct cached_rules *slot = caller_rules(w, id, rules, caller->ip - 1);
	uint64_t target;

	if (slot && slot->ra_checked)
		return true;
	if (follows_call(w, caller->ip, &target) == CODE_CALL_NONE) {
		/* a failure is not remembered (a copy cut short fails where the next may not),
		 * so a walk tries a few: each may cost a walk of the whole stack */
		if (w->first_is_return || (slot && slot->found == UNWIND_FOUND_CFI) ||
		    w->ra_trials == 0)
			return false;
		w->ra_trials--;
		if (trial_walk(w, caller->ip, caller->sp, caller, true, NULL, NULL) !=
		    TRIAL_REACHES_START)
			return false;
		w->cache->stats.analysis_ra_by_walk++;
		/* the trial walk may have filled the slot with another pc's rules */
		slot = caller_rules(w, id, rules, caller->ip - 1);
	}
	if (slot)
		slot->ra_checked = true;
	return true;
}

/* A frame no larger than this: a default thread stack. */
#define MAX_FRAME_BYTES (8ull << 20)

/* The CFA the rules give lies off the stack being walked: at or below sp, where no
 * caller's frame is (a stack only grows down), or further above it than any one frame
 * reaches. rbp held another stack's address: BEAM's runtime calls return through it to
 * the Erlang process's own stack, in its heap. A CFA just above the copy, or in a hole, is
 * this stack's, deeper than what was copied: a scan there would read only the frame's own
 * stale words. */
static bool cfa_off_stack(const struct cached_rules *rules, const struct frame_regs *regs)
{
	uint64_t cfa;

	if (rules->cfa == UNWIND_CFA_BP_OFFSET && regs->bp_valid)
		cfa = regs->bp + (uint64_t)rules->cfa_offset;
	else if (rules->cfa == UNWIND_CFA_SP_OFFSET)
		cfa = regs->sp + (uint64_t)rules->cfa_offset;
	else
		return false;
	return cfa <= regs->sp || cfa - regs->sp > MAX_FRAME_BYTES;
}

/* Where an analysis's rules gave no caller that follows a call: the frame record or a scan,
 * as for code the analysis found nothing in. Where they could not be stepped because their
 * CFA is off the stack (cfa_off_stack), a scan only: the rules said where the return
 * address is, and a frame record at rbp would be a guess they contradict. Otherwise, and
 * when neither finds the caller, the step's own reason stands (a copy too short stays
 * one). */
static enum unwind_end fallback_step(struct walker *w, const struct cached_rules *rules,
				     struct frame_regs *cur, bool exact, uint8_t *found,
				     enum unwind_end stepped)
{
	enum unwind_end end;

	if (stepped != UNWIND_END_COMPLETE && !cfa_off_stack(rules, cur))
		return stepped;
	end = nocfi_step_by(w, cur, exact, found, stepped == UNWIND_END_COMPLETE);
	return end != UNWIND_END_COMPLETE && stepped != UNWIND_END_COMPLETE ? stepped : end;
}

/* The return address of rules from a tail-call exit (via_jump) is the frame's: it follows
 * a call through a pointer, or a direct call of the frame's function, or of one that jumps
 * on at the depth a tail call leaves (8: a PLT stub, a function that tail-calls this one).
 * Code that another function jumped to and runs in that one's frame (GHC's Haskell code
 * under StgRun) jumps on too; the word at its rsp is the other's scratch, and a return
 * address an earlier call left there follows a call of something else. */
static bool tail_call_fits(struct walker *w, const struct frame_regs *frame, bool exact,
			   uint64_t ra)
{
	uint64_t target, start, at[SCAN_JUMPS];
	int32_t depths[SCAN_JUMPS];
	enum code_call call = follows_call(w, ra, &target);
	uint32_t nr;

	if (call != CODE_CALL_DIRECT)
		return true; /* through a pointer; no call at all is return_address_checked's */
	if (known_function_start(w, exact ? frame->ip : frame->ip - 1, &start) == 0 &&
	    start == target)
		return true;
	nr = w->space->jumps ? w->space->jumps(w->space->ctx, target, true, depths, at, SCAN_JUMPS)
			     : 0;
	for (uint32_t i = 0; i < nr; i++) {
		if (depths[i] == 8)
			return true;
	}
	return false;
}

/* A step by the rules an analysis gave, whose return address must follow a call; else
 * fallback_step. *outermost: the rules say no frame is above (a runtime's stack end). */

static enum unwind_end analysis_step(struct walker *w, uint64_t id, struct cached_rules *rules,
				     struct frame_regs *cur, bool leaf, bool exact, uint8_t *found,
				     bool *outermost)
{
	struct frame_regs caller;
	bool ra_undefined, signal;
	enum unwind_end end;

	/* plain rules never come here: the walk's loop steps them and calls analysed_return */
	end = step(w, rules, cur, leaf, &caller, &ra_undefined, &signal);
	if (leaf && end == UNWIND_END_COMPLETE && rules->cfa == UNWIND_CFA_SP_OFFSET &&
	    rules->cfa_offset == 8)
		w->drap_caller_sp = caller.sp;
	/* where a runtime's stacks end (analysis_rules): the walk ends, complete */
	*outermost = end == UNWIND_END_COMPLETE && ra_undefined;
	if (*outermost)
		return end;
	if (end == UNWIND_END_COMPLETE && !ra_undefined &&
	    (!w->space->call_before || (return_address_checked(w, id, rules, &caller) &&
					(!rules->via_jump || tail_call_fits(w, cur, exact, caller.ip))))) {
		*cur = caller;
		return end;
	}
	w->cache->stats.analysis_rejected++;
	return fallback_step(w, rules, cur, exact, found, end);
}

/* After a plain step by an analysis's rules from callee to *ip (*end: how it went): true
 * when it was stepped and the return address follows a call; else the frame record or a
 * scan from callee, true when one found the caller (into *ip.., *found), false with *end
 * set when none did. Out of line: the walk's loop only tests for it. */
static __attribute__((noinline)) bool
analysed_return(struct walker *w, uint64_t id, struct cached_rules *rules, struct frame_regs callee,
		bool exact, uint64_t *ip, uint64_t *sp, uint64_t *bp, bool *bp_valid, uint8_t *found,
		enum unwind_end *end)
{
	const struct cached_rules *known;
	struct frame_regs caller;

	if (*end == UNWIND_END_COMPLETE) {
		/* the common case first, before the caller's registers are gathered */
		known = caller_rules(w, id, rules, *ip - 1);
		if (!w->space->call_before || (known && known->ra_checked))
			return true;
		caller = (struct frame_regs){ *ip, *sp, *bp, BX_LOST, *bp_valid };
		if (return_address_checked(w, id, rules, &caller))
			return true;
	}
	w->cache->stats.analysis_rejected++;
	*end = fallback_step(w, rules, &callee, exact, found, *end);
	if (*end != UNWIND_END_COMPLETE)
		return false;
	*ip = callee.ip;
	*sp = callee.sp;
	*bp = callee.bp;
	*bp_valid = callee.bp_valid;
	return true;
}

/* The first frame's rules: at the sampled pc, or for a trial walk, at the call before its
 * return address. */
/* A zero return address ends a stack only in a frame that can be its outermost: a
 * binary's entry code, or where a runtime's stack ends (BEAM's exit address). Anywhere
 * else it is a word the walk should not have reached: a frame found at the wrong CFA (a
 * realigned frame's caller started at its frame record, say) reads a zero from the middle
 * of a frame, and a stack cut there would pass for complete. Threads and programs start in
 * frames whose CFI marks the return address undefined (clone3, _start). */
static bool may_be_outermost(const struct walker *w, const struct unwind_frame *f)
{
	const struct unwind_space *space = w->space;

	return space->is_entry_code && space->is_entry_code(space->ctx, f->pc, !f->exact);
}

static struct cached_rules *start_rules(struct walker *w, uint64_t id, uint64_t ip)
{
	return w->first_is_return ? find_rules(w, id, ip - 1) : first_rules(w, id, ip);
}

static inline uint32_t frame_depth(uint64_t first_sp, uint64_t sp)
{
	return sp >= first_sp && sp - first_sp < UNWIND_DEPTH_UNKNOWN ? (uint32_t)(sp - first_sp)
								    : UNWIND_DEPTH_UNKNOWN;
}

static void walk_from(const struct unwind_regs *regs, const struct stack_copy *copy,
		      const struct unwind_space *space, struct unwind_cache *cache,
		      struct unwind_frame *frames, uint32_t max, struct unwind_result *result,
		      bool first_is_return)
{
	bool hole;
	const struct copy_view view = copy_view(copy, &hole);
	struct walker w;
	/* The registers live in locals, not in result or a struct: stores to frames[] could
	 * alias those and force a reload every frame. */
	uint64_t ip = regs->ip, sp = regs->sp, bp = regs->bp;
	/* the last sp a caller was found at without moving up, 0 if none */
	uint64_t same_sp = 0;
	bool bp_valid = regs->bp_valid, exact = !first_is_return;
	enum unwind_end end = UNWIND_END_DEPTH;
	const uint64_t id = space->id;
	struct cached_rules *rules;
	uint32_t n = 0, found_mask = 0;
	uint8_t found = first_is_return ? UNWIND_FOUND_SCAN : UNWIND_FOUND_CONTEXT;

	walker_init(&w, space, cache, &view, regs);
	w.first_is_return = first_is_return;
	w.may_scan &= !first_is_return;
	result->started_stack = false;
	if (max > UNWIND_MAX_FRAMES)
		max = UNWIND_MAX_FRAMES;
	if (max == 0)
		goto out;
	/* the first frame at its exact pc */
	rules = start_rules(&w, id, ip);
	for (;;) {
		uint64_t lookup;

		frames[n++] = (struct unwind_frame){ .pc = ip, .exact = exact, .found = found,
						     .depth = frame_depth(regs->sp, sp) };
		found_mask |= 1u << found;
		if (__builtin_expect(!rules || rules->cfa == UNWIND_CFA_END, 0)) {
			struct frame_regs cur = { ip, sp, bp, BX_LOST, bp_valid };

			end = rules ? UNWIND_END_NO_CFI : w.miss;
			/* a stack some code started by hand: see returns_to_function_start */
			if (end != UNWIND_END_NO_CFI || (!exact && returns_to_function_start(&w, ip)))
				break;
			rules = analysis_rules(&w, id, ip, exact, rules);
			if (!rules) {
				end = nocfi_step(&w, &cur, exact, &found);
				if (end != UNWIND_END_COMPLETE)
					break;
				ip = cur.ip;
				sp = cur.sp;
				bp = cur.bp;
				exact = false;
				end = UNWIND_END_DEPTH;
				if (ip == 0 || n == max)
					break;
				rules = find_rules(&w, id, ip - 1);
				continue;
			}
		}
		found = rules->found;
		if (__builtin_expect(rules->plain, 1)) {
			const struct frame_regs callee = { ip, sp, bp, BX_LOST, bp_valid };

			end = step_plain(rules, &view, &ip, &sp, &bp, &bp_valid);
			if (n == 1 && !first_is_return && end == UNWIND_END_COMPLETE &&
			    rules->cfa == UNWIND_CFA_SP_OFFSET && rules->cfa_offset == 8)
				w.drap_caller_sp = sp;
			/* an analysis's step stands only if it could be stepped and its return
			 * address follows a call */
			if (__builtin_expect(rules->found == UNWIND_FOUND_ANALYSIS, 0) &&
			    !analysed_return(&w, id, rules, callee, exact, &ip, &sp, &bp, &bp_valid,
					     &found, &end))
				break;
			exact = false;
			/* caller frames: look up ra-1, the call instruction, not the one after it */
			lookup = ip - 1;
		} else if (rules->found == UNWIND_FOUND_ANALYSIS) {
			struct frame_regs cur = { ip, sp, bp, BX_LOST, bp_valid };
			bool outermost;

			end = analysis_step(&w, id, rules, &cur, n == 1 && !first_is_return, exact, &found,
					    &outermost);
			if (end != UNWIND_END_COMPLETE || outermost)
				break;
			/* a caller at its callee's sp (a return address moved up into the caller's
			 * frame) once at any sp: two frames there could name each other forever */
			if (cur.sp == sp) {
				if (same_sp == sp) {
					end = UNWIND_END_BAD_FRAME;
					break;
				}
				same_sp = sp;
			}
			ip = cur.ip;
			sp = cur.sp;
			bp = cur.bp;
			bp_valid = cur.bp_valid;
			exact = false;
			lookup = ip - 1;
		} else {
			/* where rbx is matters only to a CFA = rbx + N: step_bx finds it */
			struct frame_regs cur = { ip, sp, bp, BX_LOST, bp_valid }, caller;
			bool ra_undefined, signal;

			if (rules->cfa == UNWIND_CFA_BX_OFFSET)
				end = step_bx(&w, rules, n - 1, &cur, &caller, &ra_undefined, &signal);
			else
				end = step(&w, rules, &cur, n == 1 && !first_is_return, &caller,
					   &ra_undefined, &signal);
			if (end != UNWIND_END_COMPLETE || ra_undefined)
				break;
			ip = caller.ip;
			sp = caller.sp;
			bp = caller.bp;
			bp_valid = caller.bp_valid;
			exact = signal; /* a signal frame's caller resumes at its exact pc */
			lookup = exact ? ip : ip - 1;
		}
		if (end != UNWIND_END_COMPLETE)
			break;
		if (ip == 0) {
			if (!may_be_outermost(&w, &frames[n - 1]))
				end = UNWIND_END_ZERO_RA;
			break;
		}
		end = UNWIND_END_DEPTH;
		if (n == max)
			break;
		rules = caller_rules(&w, id, rules, lookup);
	}
	result->started_stack = false;
	if (end == UNWIND_END_NO_CFI && !exact && returns_to_function_start(&w, ip)) {
		end = UNWIND_END_COMPLETE;
		result->started_stack = true;
	}
out:
	result->nr_frames = n;
	result->found = found_mask;
	result->end = short_or_hole(end, hole);
	result->last = (struct unwind_regs){ .ip = ip, .sp = sp, .bp = bp, .bp_valid = bp_valid };
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

void unwind__walk(const struct unwind_regs *regs, const struct stack_copy *copy,
		  const struct unwind_space *space, struct unwind_cache *cache,
		  struct unwind_frame *frames, uint32_t max, struct unwind_result *result)
{
	walk_from(regs, copy, space, cache, frames, max, result, false);
}

/* One frame's rules as the trace prints them. */
static void trace_rules(FILE *out, const struct cached_rules *r)
{
	fprintf(out, "cfa=%s%+" PRId64, unwind_cfa_kind__name(r->cfa), r->cfa_offset);
	if (r->cfa_addend)
		fprintf(out, "%+" PRId32, r->cfa_addend); /* *(reg + offset) + addend */
	fprintf(out, " rbp=%s%+" PRId64 " ra=%s%+" PRId64 " rbx=%s%+" PRId32,
		unwind_rbp_kind__name(r->rbp),
		r->rbp_offset, unwind_ra_kind__name(r->ra), r->ra_offset,
		unwind_rbx_kind__name(r->rbx), r->rbx_offset);
}

void unwind__trace(const struct unwind_regs *regs, const struct stack_copy *copy,
		   const struct unwind_space *space, struct unwind_cache *cache, FILE *out)
{
	bool hole;
	const struct copy_view view = copy_view(copy, &hole);
	struct walker w;
	struct frame_regs cur = { regs->ip, regs->sp, regs->bp, BX_SAMPLED, regs->bp_valid }, caller;
	enum unwind_end end = UNWIND_END_DEPTH;
	bool exact = true;

	walker_init(&w, space, cache, &view, regs);
	fprintf(out, "unwind: walk ip %#" PRIx64 " sp %#" PRIx64 " bp %#" PRIx64, regs->ip, regs->sp,
		regs->bp);
	if (regs->bx_valid)
		fprintf(out, " bx %#" PRIx64, regs->bx);
	if (regs->di_valid)
		fprintf(out, " di %#" PRIx64, regs->di);
	for (const struct stack_copy *c = copy; c; c = c->more) {
		fprintf(out, "%s [%#" PRIx64 ", %#" PRIx64 ")", c == copy ? ", copy" : " and",
			c->base, c->base + c->len);
		if (c->holes)
			fprintf(out, " (holes %#" PRIx64 ")", c->holes);
	}
	fputc('\n', out);
	for (uint32_t n = 0; n < UNWIND_MAX_FRAMES; n++) {
		/* caller frames: look up ra-1, the call instruction, not the one after it */
		uint64_t lookup = exact ? cur.ip : cur.ip - 1;
		struct cached_rules *rules = n == 0 ? first_rules(&w, space->id, lookup)
						    : find_rules(&w, space->id, lookup);
		bool ra_undefined, signal;

		fprintf(out, "unwind: #%u pc %#" PRIx64 " sp %#" PRIx64 " bp %#" PRIx64 "%s", n,
			cur.ip, cur.sp, cur.bp, cur.bp_valid ? "" : " (lost)");
		if (cur.bx_at == BX_LOST)
			fprintf(out, " bx lost");
		else if (cur.bx_at != BX_SAMPLED)
			fprintf(out, " bx at %#" PRIx64, cur.bx_at);
		fprintf(out, ": ");
		if ((!rules && w.miss == UNWIND_END_NO_CFI) || (rules && rules->cfa == UNWIND_CFA_END)) {
			struct cached_rules *found = analysis_rules(&w, space->id, cur.ip, exact, rules);

			if (!found) {
				uint8_t how = 0;

				fprintf(out, "no CFI, no rules by analysis at %#" PRIx64, cur.ip);
				end = nocfi_step(&w, &cur, exact, &how);
				if (end != UNWIND_END_COMPLETE) {
					fputc('\n', out);
					break;
				}
				fprintf(out, " -> by %s: cfa %#" PRIx64 " ra %#" PRIx64 "\n",
					unwind_found__name(how), cur.sp, cur.ip);
				exact = false;
				continue;
			}
			rules = found;
		}
		if (!rules) {
			end = w.miss;
			fprintf(out, "no rules at %#" PRIx64 "\n", lookup);
			break;
		}
		if (rules == &w.cache->entry)
			fprintf(out, "(function entry) ");
		if (rules->found == UNWIND_FOUND_ANALYSIS)
			fprintf(out, "(analysis) ");
		trace_rules(out, rules);
		end = step(&w, rules, &cur, n == 0, &caller, &ra_undefined, &signal);
		if (end != UNWIND_END_COMPLETE || ra_undefined) {
			fprintf(out, "%s\n", ra_undefined ? " -> return address undefined" : "");
			break;
		}
		fprintf(out, " -> cfa %#" PRIx64 " ra %#" PRIx64 "%s\n", caller.sp, caller.ip,
			signal ? " (signal frame)" : "");
		cur = caller;
		exact = signal;
		if (cur.ip == 0)
			break;
	}
	fprintf(out, "unwind: stopped: %s\n", unwind_end__name(short_or_hole(end, hole)));
}
