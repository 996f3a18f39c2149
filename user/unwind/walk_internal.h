/* The walk's parts, private to user/unwind/: the stack copy as the walk reads it
 * (stack_copy.c), the rule cache (rule_cache.c, which also holds the rules an analysis of
 * code without CFI gives), the judge of a candidate caller and its trial walks
 * (caller_check.c), and the frame steps, one file each: CFI rows (cfi_step.c), analysis
 * (analysis_step.c), frame record (frame_record.c), scan and stack end (scan.c), tried in
 * the order of the table in walk_loop.c, whose loop runs them.
 * Everything outside the folder uses walk.h. */
#ifndef HPROF_UNWIND_WALK_INTERNAL_H
#define HPROF_UNWIND_WALK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "unwind/walk.h"
#include "unwind/x86_code.h"

/* How the walk from a scan's candidate went. */
enum trial { TRIAL_REACHES_START, TRIAL_STOPS, TRIAL_STALE };

typedef void (*walk_from_fn)(const struct unwind_regs *regs, const struct stack_copy *copy,
			     const struct unwind_space *space, struct unwind_cache *cache,
			     struct unwind_frame *frames, uint32_t max, struct unwind_result *result,
			     bool first_is_return);

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

bool read_elsewhere(const struct copy_view *v, uint64_t addr, uint64_t *value);

static inline bool read_u64(const struct copy_view *v, uint64_t addr, uint64_t *value)
{
	uint64_t off = addr - v->base; /* wraps for addr < base: then off >= limit */

	if (__builtin_expect(off >= v->limit, 0))
		return read_elsewhere(v, addr, value);
	memcpy(value, v->bytes + off, sizeof(*value));
	return true;
}

/* A walk that stopped for want of bytes stopped on a hole when its last read met one. */
static inline enum unwind_end short_or_hole(enum unwind_end end, bool hole)
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
	bool plain;                /* CFI rules that is_plain: the walk's loop steps them inline */
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
	/* The slot of a frame that has no rules (no mapping, no table holds its pc): never
	 * matches a lookup, not plain, so that the walk's loop always has a slot in hand. */
	struct cached_rules none;
	struct unwind_cache_stats stats;
};

/* Folding the high bits onto the low ones spreads call sites a few bytes apart and the
 * same code at different load addresses; space_mix (per walk) separates processes. This
 * is on the walk's critical path, so it is shifts and xors, no multiply. */
static inline uint32_t cache_slot(uint64_t space_mix, uint64_t pc)
{
	return (uint32_t)((pc ^ (pc >> CACHE_SLOTS_LOG2) ^ space_mix) & (CACHE_SLOTS - 1));
}

/* The last few mappings the walk's pcs fell in: a stack crosses only a handful of
 * binaries, so the callback runs a few times per walk at most, not once per frame. */
#define WALK_MAPS 4

struct map_cache {
	struct unwind_map maps[WALK_MAPS];
	uint32_t nr, next;
};

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
#define SAME_SP_FRAMES 4 /* frames at one sp: a fast call's caller and callees (sljit's) */
	/* the last sp an analysis's step found a caller at without moving up, 0 if none, and
	 * the pcs of the frames at it (analysis_step.c: another_at_same_sp) */
	uint64_t same_sp;
	uint64_t same_sp_pcs[SAME_SP_FRAMES];
	uint32_t nr_same_sp;
	/* The walk loop itself (walk_loop.c), for the trial walks a scan or an analysis's
	 * unchecked return address makes: the steps lie below the loop, which lends itself. */
	walk_from_fn walk_from;
};

/* Trial walks a walk may make for return addresses that follow no call. */
#define RA_TRIALS 2

/* The rules at pc in address space id: from the cache, or looked up and remembered. The
 * id is passed by value so the walk's loop keeps it in a register. */
struct cached_rules *fill_slot(struct walker *w, uint64_t pc, struct cached_rules *slot);

static inline struct cached_rules *find_rules(struct walker *w, uint64_t id, uint64_t pc)
{
	struct cached_rules *slot = &w->cache->slots[cache_slot(w->space_mix, pc)];

	if (__builtin_expect(slot->pc == pc && slot->space == id, 1))
		return slot;
	return fill_slot(w, pc, slot);
}

/* Where rsp is at a piece of code's jumps, asked for at most (unwind_jumps_fn): the space
 * keeps 3 (CODE_JUMPS). */
#define SCAN_JUMPS 3

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

/* The address of the instruction a frame is in: its pc, when exact (the first frame's, or
 * one a signal interrupted), else the call before it (pc is a return address). Every
 * lookup of a frame's rules, function or code goes through here. */
static inline uint64_t code_at(uint64_t pc, bool exact)
{
	return exact ? pc : pc - 1;
}

/* The frame a walk finds the caller of, as the frame steps (walk_loop.c) see it. */
struct walk_frame {
	struct frame_regs regs; /* bx_at BX_LOST: rbx is found by replay where needed */
	bool exact;             /* regs.ip is the pc itself, not a return address */
	bool leaf;              /* regs are the sampled registers */
	uint32_t index;         /* from 0, the first frame's */
	/* the rules at code_at(regs.ip, exact): CFI's, an analysis's, or a slot of no rules;
	 * NULL where no mapping or no table holds the pc (w->miss says which) */
	struct cached_rules *rules;
	/* Left by a step for the ones after it. analysed: the analysis gave rules. rejected:
	 * why they could not be stepped (COMPLETE: they were, but their caller did not fit),
	 * the walk's end when no later step finds the caller. no_frame_record: they said where
	 * the return address is, and a frame record would be a guess they contradict. */
	bool analysed, no_frame_record;
	enum unwind_end rejected;
	/* plain rules from the analysis stepped to a caller that did not fit: where the walk
	 * stops if no later step finds one (today's walk stopped there, not at the frame) */
	bool stop_at_rejected;
	struct frame_regs rejected_caller;
	/* STEP_FOUND: the caller, and whether its pc is exact (a signal frame's caller);
	 * STEP_STOP: end, why the walk stops */
	struct frame_regs caller;
	bool caller_exact;
	enum unwind_end end;
};

enum step_result {
	STEP_FOUND,     /* f->caller is the frame's caller */
	STEP_OUTERMOST, /* no frame is above this one: the walk is complete */
	STEP_REJECTED,  /* this way found no caller: the next step tries */
	STEP_STOP,      /* the walk stops at this frame, for f->end */
};

/* One way to find a frame's caller. found states the trust of a caller found so
 * (enum unwind_found, most sure first); the walk tries the steps in that order. */
struct frame_step {
	const char *name;
	uint8_t found;
	enum step_result (*try)(struct walker *w, struct walk_frame *f);
};

/* stack_copy.c */
struct copy_view copy_view(const struct stack_copy *copy, bool *hole);

/* rule_cache.c */
uint64_t space_mix(uint64_t space);
bool is_plain(const struct cached_rules *r);
int find_map(struct map_cache *mc, const struct unwind_space *space, uint64_t pc,
	     const struct unwind_map **out);
struct cached_rules *analysis_rules(struct walker *w, uint64_t id, uint64_t ip, bool exact,
				    struct cached_rules *rules);

/* cfi_step.c */
enum unwind_end compute_cfa(const struct walker *w, const struct cached_rules *rules,
			    const struct frame_regs *regs, bool leaf, uint64_t *cfa);
enum unwind_end recover_bp(const struct cached_rules *rules, const struct frame_regs *regs,
			   uint64_t cfa, const struct copy_view *copy, struct frame_regs *caller);
enum unwind_end return_address(const struct walker *w, const struct cached_rules *rules,
			       const struct frame_regs *regs, uint64_t cfa, bool leaf, uint64_t *ra,
			       bool *in_register);
enum unwind_end step(const struct walker *w, const struct cached_rules *rules,
		     const struct frame_regs *regs, bool leaf, struct frame_regs *caller,
		     bool *ra_undefined, bool *signal);
/* The rules put the return address in a register the sample lacks: the walk read the word
 * at the CFA instead (ra_in_register). */
bool ra_from_top_word(const struct walker *w, const struct cached_rules *rules);
struct cached_rules *first_rules(struct walker *w, uint64_t id, uint64_t ip);
bool returns_to_function_start(struct walker *w, uint64_t ra);
enum step_result cfi_step(struct walker *w, struct walk_frame *f);

/* caller_check.c */
enum code_call follows_call(struct walker *w, uint64_t ra, uint64_t *target);
bool is_stack_end(struct walker *w, uint64_t ra);
bool caller_called_elsewhere(struct walker *w, uint64_t ra, uint64_t caller_ra);
enum trial trial_walk(struct walker *w, uint64_t ra, uint64_t sp, const struct frame_regs *regs,
		      bool sure, bool *agrees, uint32_t *nr_frames);
bool caller_fits(struct walker *w, const struct walk_frame *f, struct cached_rules *rules,
		 const struct frame_regs *caller, enum unwind_found by);
bool may_be_outermost(const struct walker *w, const struct unwind_frame *f);

/* analysis_step.c */
enum step_result analysis_step(struct walker *w, struct walk_frame *f);

/* frame_record.c */
enum step_result frame_record_step(struct walker *w, struct walk_frame *f);

/* scan.c */
enum step_result scan_step(struct walker *w, struct walk_frame *f);
enum step_result stack_end_step(struct walker *w, struct walk_frame *f);

#endif
