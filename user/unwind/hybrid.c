/* The user stack of a sample: candidate stacks, each built with its verdict, tried in one
 * order of preference, the first complete one picked (candidates.c builds them). */
#include "unwind/hybrid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/deep_stacks.h"

struct hybrid {
	struct candidate_tools tools;
	hybrid_thread_fn thread_hook;
	void *thread_ctx;
	struct hybrid_stats stats;
};

_Static_assert(HYBRID_MAX_FRAMES >=
			       UNWIND_MAX_FRAMES + HPROF_MAX_FP_DEPTH + HYBRID_TAIL_MAX_FRAMES &&
		       HYBRID_TAIL_MAX_FRAMES >= HPROF_MAX_LEARNED_TAIL,
	       "tools.walked holds a walk, the chain joined to it and a tail");

static const char *const method_names[METHOD_COUNT] = {
	[METHOD_FP] = "fp",
	[METHOD_DWARF] = "dwarf",
	[METHOD_DWARF_FP] = "dwarf+fp",
	[METHOD_ANALYSIS] = "analysis",
	[METHOD_SCAN] = "scan",
	[METHOD_TRUNCATED] = "truncated",
};

const char *hybrid__method_name(enum stack_method m)
{
	return m < METHOD_COUNT ? method_names[m] : "?";
}

/* The root frame of an incomplete stack, from the one name of its reason. */
const char *hybrid__truncated_root(enum unwind_end reason)
{
	static char roots[UNWIND_END_COUNT][64];

	if (reason >= UNWIND_END_COUNT || reason == UNWIND_END_COMPLETE)
		return "[truncated]";
	if (!roots[reason][0])
		snprintf(roots[reason], sizeof(roots[reason]), "[truncated: %s]",
			 unwind_end__name(reason));
	return roots[reason];
}

int hybrid__new(bool dwarf, struct hybrid **out)
{
	struct hybrid *h = calloc(1, sizeof(*h));

	*out = NULL;
	if (!h)
		return -ENOMEM;
	if (candidate_tools__init(&h->tools, dwarf) != 0) {
		hybrid__free(h);
		return -ENOMEM;
	}
	*out = h;
	return 0;
}

void hybrid__set_thread_hook(struct hybrid *h, hybrid_thread_fn fn, void *ctx)
{
	h->thread_hook = fn;
	h->thread_ctx = ctx;
}

void hybrid__walk(struct hybrid *h, const struct hybrid_space *space,
		  const struct unwind_regs *regs, const struct stack_copy *copy,
		  struct unwind_frame *frames, uint32_t max, struct unwind_result *result)
{
	candidates__walk(&h->tools, space, regs, copy, frames, max, result);
}

/* The preference order: the candidates in the order they are tried; the first complete one
 * is the stack. Later candidates are not built once one is complete (the chain alone decides
 * most samples), and those needing a copy are not built without one. */
static const struct preference {
	const char *name;
	bool needs_copy;
	bool (*build)(struct job *j, struct candidate *c);
} preference[] = {
	/* right as it is: through frame records its rows agree with, to the start */
	{ "fp chain", false, candidate__chain },
	{ "walk", true, candidate__walk },
	{ "walk, then the learned tail", true, candidate__walk_learned_tail },
	{ "walk, then the fp chain", true, candidate__walk_then_chain },
	{ "fp chain, then a walk from its end", true, candidate__chain_then_walk },
	/* a complete-looking chain beats a walk that ran out of copy */
	{ "fp chain lacking the leaf's caller", true, candidate__chain_lacking_leaf_caller },
};

#define NR_PREFERENCES (sizeof(preference) / sizeof(preference[0]))

/* The first complete candidate, cut where a runtime's stack ends on its chain frames; with
 * none, the chain as it is where there is no copy to walk (reason: why not), else the walk
 * as far as it went. */
static struct candidate pick(struct job *j, enum unwind_end *reason)
{
	const struct hprof_sample *sample = j->sample;
	bool copy = j->tools->dwarf && sample->stack_len > 0;
	struct candidate c;
	uint32_t end;

	for (uint32_t i = 0; i < NR_PREFERENCES; i++) {
		if (preference[i].needs_copy && !copy)
			continue;
		c = (struct candidate){ .chain_at = NO_CHAIN };
		if (!preference[i].build(j, &c))
			continue;
		end = candidate__stack_end(j, &c);
		if (end != NO_CHAIN)
			c.n = c.chain_at + end + 1;
		*reason = UNWIND_END_COMPLETE;
		return c;
	}
	c = (struct candidate){ .chain_at = NO_CHAIN };
	if (copy) {
		candidate__walk_as_is(j, &c);
		*reason = j->walk.end;
		return c;
	}
	candidate__chain_as_is(j, &c);
	*reason = !j->tools->dwarf ? UNWIND_END_FP_ONLY
		: (sample->flags & SAMPLE_DELTA_BASE_MISSING) ? UNWIND_END_DELTA_BASE_MISSING
							       : UNWIND_END_NO_COPY;
	return c;
}

/* A whole deep stack's frames, by sp, for its thread's later copies with a gap. */
static void learn_deep_stack(struct thread_info *ti, const struct hprof_sample *sample,
			     const struct lesson *lesson)
{
	struct thread_deep_frame deep[THREAD_DEEP_WALK];
	uint32_t nr;

	if (!lesson->whole)
		return;
	nr = deep_stacks__to_learn(lesson->whole, lesson->nr_whole, sample->user_sp, lesson->base,
				   deep);
	if (nr && (ti->deep || (ti->deep = calloc(1, sizeof(*ti->deep)))))
		thread_deep_frames__merge(ti->deep, deep, nr);
}

/* Keeps what the sample taught about its thread, and tells the kernel whenever that
 * changed or the kernel did not use it (its entry went when the thread exited, or the LRU
 * map dropped it; tids come back):
 * where its stack ends, and where its FP chains end when they are right. A copy that the
 * learned facts made too short unlearns them. */
static void learn_thread(struct hybrid *h, const struct hprof_sample *sample,
			 enum stack_method method, enum unwind_end reason,
			 const struct lesson *lesson)
{
	bool used = sample->flags & (SAMPLE_COPY_LEARNED | SAMPLE_COPY_FP | SAMPLE_COPY_BASE_WINDOW),
	     tell = false;
	struct thread_info *ti;

	/* Learned on replays too: their samples that copied only the leaf need it. */
	ti = thread_table__get(h->tools.threads, sample->tid, method != METHOD_TRUNCATED);
	if (!ti)
		return;
	/* A truncated stack of a sample that copied only the leaf says nothing against the
	 * chain's end (the kernel checked it): it is the leaf that could not be walked. */
	if (method == METHOD_TRUNCATED) {
		if ((sample->flags & SAMPLE_COPY_LEARNED) && reason == UNWIND_END_COPY_SHORT &&
		    !(sample->flags & SAMPLE_COPY_BASE_WINDOW) && ti->base) {
			ti->base = 0;
			tell = true;
		}
	} else {
		if (lesson->base && lesson->base != ti->base) {
			ti->base = lesson->base;
			tell = true;
		}
		if (lesson->tail && !(sample->flags & SAMPLE_COPY_FP) &&
		    ti->fp_tail != sample->fp_tail_frame) {
			ti->fp_tail = sample->fp_tail_frame;
			ti->tail_ip = hprof_sample__user_ip(sample, sample->nr_user - 1);
			ti->nr_tail = lesson->nr_tail;
			memcpy(ti->tail, lesson->tail, lesson->nr_tail * sizeof(*lesson->tail));
			tell = true;
		}
		tell |= !used && (ti->base || ti->fp_tail);
		learn_deep_stack(ti, sample, lesson);
	}
	if (tell && h->thread_hook)
		h->thread_hook(h->thread_ctx, sample->tid, ti->base, ti->fp_tail, ti->tail_ip);
}

/* A complete stack's method, given how its frames were found: one found in code without
 * CFI makes it an analysis, one found by scanning a scan, whatever else it took. */
static enum stack_method nocfi_method(const struct unwind_frame *frames, uint32_t n,
				      enum stack_method method)
{
	uint32_t found = 0;

	for (uint32_t i = 0; i < n; i++)
		found |= 1u << frames[i].found;
	if (found & (1u << UNWIND_FOUND_SCAN))
		return METHOD_SCAN;
	if (found & (1u << UNWIND_FOUND_ANALYSIS | 1u << UNWIND_FOUND_FRAME_POINTER))
		return METHOD_ANALYSIS;
	return method;
}

/* A Go thread's g0 stack with the goroutine it ran for under it (unwind/go_switch.h). */
static void join_goroutine(struct hybrid *h, const struct job *j, struct user_stack *stack,
			   struct unwind_frame *out)
{
	enum go_switch_outcome o;

	if (!(j->sample->flags & SAMPLE_GO_SWITCH) || !h->tools.dwarf)
		return;
	o = go_switch__join(&h->tools, j->space, j->sample, &j->stack,
			    stack->method != METHOD_TRUNCATED, out, &stack->nr_frames,
			    HYBRID_MAX_FRAMES);
	if (o < GO_SWITCH_COUNT)
		h->stats.go_switches[o]++;
}

struct user_stack hybrid__user_stack(struct hybrid *h, const struct hybrid_space *space,
				     const struct hprof_sample *sample, struct unwind_frame *out)
{
	struct job j = {
		.tools = &h->tools,
		.space = space,
		.sample = sample,
		.tail = { .bytes = hprof_sample__tail(sample), .base = sample->fp_tail_frame,
			  .len = sample->tail_len },
	};
	struct user_stack stack;
	struct candidate c;

	hybrid__sample_copy(sample, &j.stack, &j.interrupted);
	if (h->tools.dwarf && sample->stack_len > 0)
		j.regs = hybrid__sample_regs(sample);
	candidates__start(&j, out);
	h->stats.fp_complete += j.chain_complete;
	c = pick(&j, &stack.reason);
	if (c.frames != out)
		memcpy(out, c.frames, c.n * sizeof(*out));
	stack.nr_frames = c.n;
	stack.method = c.method;
	if (stack.method != METHOD_TRUNCATED) {
		stack.method = nocfi_method(out, c.n, c.method);
		h->stats.fp_tails += c.finish == FINISH_WALKED;
		h->stats.fp_tails_learned += c.finish == FINISH_LEARNED;
		h->stats.gaps_crossed += c.crossed_gap;
	}
	go_switch__g0_base(sample, &c.lesson.base);
	learn_thread(h, sample, stack.method, stack.reason, &c.lesson);
	join_goroutine(h, &j, &stack, out);
	return stack;
}

struct unwind_regs hybrid__sample_regs(const struct hprof_sample *sample)
{
	return (struct unwind_regs){
		.ip = sample->user_ip, .sp = sample->user_sp, .bp = sample->user_bp,
		.bx = sample->user_bx, .di = sample->user_di,
		.bp_valid = true, .bx_valid = true, .di_valid = true,
		.drap_valid = true,
		.drap = { sample->user_r10, 0, sample->user_r12, sample->user_r13, sample->user_r14,
			  sample->user_r15 },
		.r8_valid = !(sample->flags & SAMPLE_NO_R8), .r8 = sample->user_r8,
	};
}

void hybrid__sample_copy(const struct hprof_sample *sample, struct stack_copy *stack,
			 struct stack_copy *interrupted)
{
	*interrupted = (struct stack_copy){
		.bytes = hprof_sample__interrupted(sample), .base = sample->interrupted_sp,
		.len = sample->interrupted_len, .holes = sample->interrupted_holes,
	};
	*stack = (struct stack_copy){
		.bytes = hprof_sample__stack(sample), .base = sample->user_sp,
		.len = sample->stack_len, .holes = sample->stack_holes,
		.more = sample->interrupted_len ? interrupted : NULL,
	};
}

const struct hybrid_stats *hybrid__stats(const struct hybrid *h)
{
	return &h->stats;
}

void hybrid__cache_stats(const struct hybrid *h, struct unwind_cache_stats *stats)
{
	unwind_cache__stats(h->tools.cache, stats);
}

/* The kernel is told too: its entry for the tid, should the thread have had one, would be
 * claimed by the next thread given the tid if the thread never came back to claim it. */
void hybrid__forget_thread(struct hybrid *h, uint32_t tid)
{
	if (!thread_table__get(h->tools.threads, tid, 0))
		return;
	thread_table__remove(h->tools.threads, tid);
	if (h->thread_hook)
		h->thread_hook(h->thread_ctx, tid, 0, 0, 0);
}

size_t hybrid__thread_count(const struct hybrid *h)
{
	return thread_table__count(h->tools.threads);
}

void hybrid__free(struct hybrid *h)
{
	if (!h)
		return;
	candidate_tools__release(&h->tools);
	free(h);
}
