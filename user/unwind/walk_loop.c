/* The walk: from the sampled registers, frame by frame, each caller found by the first
 * way that works for its callee (walk.h). */
#include "unwind/walk_internal.h"

#include <inttypes.h>

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

static void walk_from(const struct unwind_regs *regs, const struct stack_copy *copy,
		      const struct unwind_space *space, struct unwind_cache *cache,
		      struct unwind_frame *frames, uint32_t max, struct unwind_result *result,
		      bool first_is_return);

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
	w->walk_from = walk_from;
}

/* The first frame's rules: at the sampled pc, or for a trial walk, at the call before its
 * return address. */

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
