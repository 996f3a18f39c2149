/* The walk: from the sampled registers, frame by frame, each caller found by the first
 * way that works for its callee (walk.h). */
#include "unwind/walk_internal.h"

#include <inttypes.h>
#include <stdlib.h>

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
	[UNWIND_END_FP_ONLY] = "frame-pointer chain broken",
	[UNWIND_END_NO_COPY] = "no stack copy",
	[UNWIND_END_DELTA_BASE_MISSING] = "delta base missing",
	[UNWIND_END_CODE_UNREADABLE] = "JIT code gone",
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
	[UNWIND_FOUND_GO_SCHED] = "go sched",
};

const char *unwind_found__name(enum unwind_found found)
{
	return found < UNWIND_FOUND_COUNT ? found_names[found] : "?";
}

/* The ways to find a frame's caller, in the order the walk tries them, most sure first; a
 * step that finds none (rejected) leaves the frame to the next. Only CFI rows, the
 * analysis and the frame record need the frame's own code or registers; a scan reads the
 * stack above it. */
static const struct frame_step frame_steps[] = {
	{ "cfi", UNWIND_FOUND_CFI, cfi_step },
	{ "analysis", UNWIND_FOUND_ANALYSIS, analysis_step },
	{ "frame record", UNWIND_FOUND_FRAME_POINTER, frame_record_step },
	{ "scan", UNWIND_FOUND_SCAN, scan_step },
	{ "stack end", UNWIND_FOUND_SCAN, stack_end_step },
};

#define NR_FRAME_STEPS (sizeof(frame_steps) / sizeof(frame_steps[0]))

/* A hook on the walk: called after each step the walk tries, with what it gave. */
struct walk_trace {
	void (*step)(void *ctx, const struct walk_frame *f, const struct frame_step *step,
		     enum step_result result);
	void *ctx;
};

static inline __attribute__((always_inline)) void
walk_from(const struct unwind_regs *regs, const struct stack_copy *copy,
	  const struct unwind_space *space, struct unwind_cache *cache, struct unwind_frame *frames,
	  uint32_t max, struct unwind_result *result, bool first_is_return,
	  const struct walk_trace *trace);

/* A trial walk (walker.walk_from): never traced. */
static void trial_walk_from(const struct unwind_regs *regs, const struct stack_copy *copy,
			    const struct unwind_space *space, struct unwind_cache *cache,
			    struct unwind_frame *frames, uint32_t max, struct unwind_result *result,
			    bool first_is_return)
{
	walk_from(regs, copy, space, cache, frames, max, result, first_is_return, NULL);
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
	w->same_sp = 0;
	w->walk_from = trial_walk_from;
}

/* The first frame's rules: at the sampled pc, or for a trial walk, at the call before its
 * return address. */
static struct cached_rules *start_rules(struct walker *w, uint64_t id, uint64_t ip)
{
	return w->first_is_return ? find_rules(w, id, code_at(ip, false)) : first_rules(w, id, ip);
}

static inline uint32_t frame_depth(uint64_t first_sp, uint64_t sp)
{
	return sp >= first_sp && sp - first_sp < UNWIND_DEPTH_UNKNOWN ? (uint32_t)(sp - first_sp)
								    : UNWIND_DEPTH_UNKNOWN;
}

/* The frame steps in order, for the frame f, up to the first that does not reject it:
 * COMPLETE with f->caller and *found (the step's trust), or with *outermost; else why the
 * walk stops. Where every step rejects the frame: the reason an analysis's rules could not
 * be stepped, else NO_CFI. Inline: the table is constant, so each step is a direct call. */
static inline enum unwind_end
take_step(struct walker *w, struct walk_frame *f, const struct walk_trace *trace, uint8_t *found,
	  bool *outermost)
{
	*outermost = false;
	for (uint32_t i = 0; i < NR_FRAME_STEPS; i++) {
		const struct frame_step *s = &frame_steps[i];
		enum step_result r = s->try(w, f);

		if (trace)
			trace->step(trace->ctx, f, s, r);
		switch (r) {
		case STEP_FOUND:
			*found = s->found;
			if (s->found >= UNWIND_FOUND_FRAME_POINTER) {
				w->cache->stats.nocfi_frames[s->found]++;
				/* Where the analysis gave no rules, the walk has always kept the
				 * frame's rbp validity, not the caller's (a scan's through a jump
				 * may differ): kept so. */
				if (!f->analysed)
					f->caller.bp_valid = f->regs.bp_valid;
			}
			return UNWIND_END_COMPLETE;
		case STEP_OUTERMOST:
			*outermost = true;
			return UNWIND_END_COMPLETE;
		case STEP_STOP:
			return f->end;
		case STEP_REJECTED:
			break;
		}
	}
	if (f->stop_at_rejected)
		f->regs = f->rejected_caller;
	return f->rejected != UNWIND_END_COMPLETE ? f->rejected : UNWIND_END_NO_CFI;
}

/* Walks from regs, each frame's caller found by the first frame step that finds one. Plain
 * CFI rules, nearly every compiled frame's, are stepped in the loop itself (step_plain) on
 * plain values, but under a trace: the frame's cfi_step does the same. first_is_return:
 * regs.ip is a return address (a trial walk from a scan's candidate). Inlined into each
 * caller, so that the untraced walks' loops test no trace. */
static inline __attribute__((always_inline)) void
walk_from(const struct unwind_regs *regs, const struct stack_copy *copy,
	  const struct unwind_space *space, struct unwind_cache *cache, struct unwind_frame *frames,
	  uint32_t max, struct unwind_result *result, bool first_is_return,
	  const struct walk_trace *trace)
{
	bool hole;
	const struct copy_view view = copy_view(copy, &hole);
	struct walker w;
	/* The registers live in locals, not in result or a struct: stores to frames[] could
	 * alias those and force a reload every frame. */
	uint64_t ip = regs->ip, sp = regs->sp, bp = regs->bp;
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
	if (!rules)
		rules = &cache->none;
	for (;;) {
		frames[n++] = (struct unwind_frame){ .pc = ip, .exact = exact, .found = found,
						     .depth = frame_depth(regs->sp, sp) };
		found_mask |= 1u << found;
		uint64_t lookup;

		if (__builtin_expect(rules->plain && !trace, 1)) {
			/* cfi_step's step for plain rules, inline */
			end = step_plain(rules, &view, &ip, &sp, &bp, &bp_valid);
			if (n == 1 && !first_is_return && end == UNWIND_END_COMPLETE &&
			    rules->cfa == UNWIND_CFA_SP_OFFSET && rules->cfa_offset == 8)
				w.drap_caller_sp = sp;
			if (end != UNWIND_END_COMPLETE)
				break;
			found = UNWIND_FOUND_CFI;
			exact = false;
			/* caller frames: look up ra-1, the call instruction, not the one after it */
			lookup = code_at(ip, false);
		} else {
			struct walk_frame f;
			bool outermost;

			/* field by field: the rest is written by the step that fills it */
			f.regs = (struct frame_regs){ ip, sp, bp, BX_LOST, bp_valid };
			f.exact = exact;
			f.leaf = n == 1 && !first_is_return;
			f.index = n - 1;
			f.rules = rules == &cache->none ? NULL : rules;
			f.analysed = f.no_frame_record = f.stop_at_rejected = false;
			f.rejected = UNWIND_END_COMPLETE;

			end = take_step(&w, &f, trace, &found, &outermost);
			if (end != UNWIND_END_COMPLETE || outermost) {
				ip = f.regs.ip;
				sp = f.regs.sp;
				bp = f.regs.bp;
				bp_valid = f.regs.bp_valid;
				break;
			}
			ip = f.caller.ip;
			sp = f.caller.sp;
			bp = f.caller.bp;
			bp_valid = f.caller.bp_valid;
			exact = f.caller_exact;
			rules = f.rules ? f.rules : &cache->none;
			lookup = code_at(ip, exact);
		}
		if (ip == 0) {
			if (!may_be_outermost(&w, &frames[n - 1]))
				end = UNWIND_END_ZERO_RA;
			break;
		}
		end = UNWIND_END_DEPTH;
		if (n == max)
			break;
		rules = caller_rules(&w, id, rules, lookup);
		if (__builtin_expect(!rules, 0))
			rules = &cache->none;
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
	walk_from(regs, copy, space, cache, frames, max, result, false, NULL);
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

struct trace_out {
	FILE *out;
	const struct cached_rules *entry; /* the cache's psABI entry rules */
	uint32_t frame;                   /* the frame whose line is open, UINT32_MAX: none */
};

/* The rules a step stepped by, where it has any. */
static const struct cached_rules *step_rules(const struct walk_frame *f, const struct frame_step *s)
{
	if (!f->rules)
		return NULL;
	if (s->found == UNWIND_FOUND_CFI && f->rules->found == UNWIND_FOUND_CFI)
		return f->rules;
	if (s->found == UNWIND_FOUND_ANALYSIS && f->rules->found == UNWIND_FOUND_ANALYSIS)
		return f->rules;
	return NULL;
}

/* One step as HPROF_DEBUG=unwind prints it: a line per frame, its steps in the order the
 * walk tried them, then what the last gave. */
static void trace_step(void *ctx, const struct walk_frame *f, const struct frame_step *s,
		       enum step_result r)
{
	struct trace_out *t = ctx;
	const struct cached_rules *rules = step_rules(f, s);

	if (t->frame != f->index) {
		t->frame = f->index;
		fprintf(t->out, "unwind: #%u pc %#" PRIx64 " sp %#" PRIx64 " bp %#" PRIx64 "%s: ",
			f->index, f->regs.ip, f->regs.sp, f->regs.bp,
			f->regs.bp_valid ? "" : " (lost)");
	}
	fprintf(t->out, "[%s] ", s->name);
	if (rules == t->entry)
		fprintf(t->out, "(function entry) ");
	if (rules)
		trace_rules(t->out, rules);
	switch (r) {
	case STEP_FOUND:
		fprintf(t->out, " -> cfa %#" PRIx64 " ra %#" PRIx64 "%s\n", f->caller.sp,
			f->caller.ip, f->caller_exact ? " (signal frame)" : "");
		break;
	case STEP_OUTERMOST:
		fprintf(t->out, " -> return address undefined\n");
		break;
	case STEP_STOP:
		fprintf(t->out, " -> %s\n", unwind_end__name(f->end));
		break;
	case STEP_REJECTED:
		fprintf(t->out, rules ? " -> rejected; " : "none; ");
		break;
	}
}

void unwind__trace(const struct unwind_regs *regs, const struct stack_copy *copy,
		   const struct unwind_space *space, struct unwind_cache *cache, FILE *out)
{
	struct trace_out t = { .out = out, .entry = &cache->entry, .frame = UINT32_MAX };
	const struct walk_trace trace = { .step = trace_step, .ctx = &t };
	const struct unwind_cache_stats stats = cache->stats;
	struct unwind_frame *frames = calloc(UNWIND_MAX_FRAMES, sizeof(*frames));
	struct unwind_result result;

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
	if (!frames) {
		fprintf(out, "unwind: no memory for the trace\n");
		return;
	}
	walk_from(regs, copy, space, cache, frames, UNWIND_MAX_FRAMES, &result, false, &trace);
	fprintf(out, "unwind: stopped: %s\n", unwind_end__name(result.end));
	cache->stats = stats; /* the trace never counts */
	free(frames);
}
