/* The user stack of one sample, picked from candidate stacks: the kernel's frame-pointer
 * chain, the DWARF walk over the copied stack, and the two joined (the walk continued on
 * the chain, the chain finished by a walk from its end), each built with its verdict and
 * taken in one order of preference (hybrid.c's preference table; docs/unwinding.md).
 * Whether a chain or a walk reached the outermost frame is read from the binaries' rows
 * (return address undefined) and ELF entry points; only frame-pointer-only mode, which has
 * no copy to walk, tells a chain ending in libc's start-up code by its symbol. What the
 * picked stack teaches about its thread (where its stack ends, where its right chains end)
 * is kept and handed to a hook, for the kernel. */
#ifndef HPROF_UNWIND_HYBRID_H
#define HPROF_UNWIND_HYBRID_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sample.h"
#include "unwind/candidates.h"
#include "unwind/go_switch.h"
#include "unwind/walk.h"

struct hybrid_stats {
	uint64_t fp_complete;      /* user stacks whose FP chain reached the outermost frame */
	uint64_t fp_tails;         /* FP chains finished by a DWARF walk from their end */
	uint64_t fp_tails_learned; /* FP chains finished with the frames learned for the thread */
	uint64_t gaps_crossed;     /* deep stacks' walks that crossed their copy's gap */
	/* samples of Go threads on g0 the kernel read the goroutine of, by what became of them */
	uint64_t go_switches[GO_SWITCH_COUNT];
};

/* Called with what walks have taught about a thread: where its stack ends (0: not known)
 * and the frame record its right FP chains end at (0: none), with the return address read
 * there. */
typedef void (*hybrid_thread_fn)(void *ctx, uint32_t tid, uint64_t base, uint64_t fp_tail,
				 uint64_t fp_tail_ip);

struct hybrid;

/* dwarf: replay the DWARF walk where the FP chain is short (needs stack copies). */
int hybrid__new(bool dwarf, struct hybrid **out);
void hybrid__set_thread_hook(struct hybrid *h, hybrid_thread_fn fn, void *ctx);
/* A sample's user stack: how it was obtained, and why it is incomplete
 * (UNWIND_END_COMPLETE unless method is METHOD_TRUNCATED). */
struct user_stack {
	uint32_t nr_frames;
	enum stack_method method;
	enum unwind_end reason;
};

/* The user stack of a well-formed sample with user frames: at most HYBRID_MAX_FRAMES
 * frames, innermost first, into out. Learns from it for the sample's thread. */
struct user_stack hybrid__user_stack(struct hybrid *h, const struct hybrid_space *space,
				     const struct hprof_sample *sample, struct unwind_frame *out);
/* The DWARF walk alone (HPROF_DEBUG=unwind traces it too). */
void hybrid__walk(struct hybrid *h, const struct hybrid_space *space,
		  const struct unwind_regs *regs, const struct stack_copy *copy,
		  struct unwind_frame *frames, uint32_t max, struct unwind_result *result);
/* The sampled user registers, as the walk starts from them. */
struct unwind_regs hybrid__sample_regs(const struct hprof_sample *sample);
/* The stack a sample copied, as the walk reads it: from sp, then (stack->more) the stack a
 * signal interrupted, when sp was on an alternate stack. stack points at interrupted:
 * keep both where they are. */
void hybrid__sample_copy(const struct hprof_sample *sample, struct stack_copy *stack,
			 struct stack_copy *interrupted);
const char *hybrid__method_name(enum stack_method m);
/* "[truncated: copy too short]" and the like. */
const char *hybrid__truncated_root(enum unwind_end reason);
const struct hybrid_stats *hybrid__stats(const struct hybrid *h);
void hybrid__cache_stats(const struct hybrid *h, struct unwind_cache_stats *stats);
/* Forgets what walks taught about thread tid: it exited, and its tid may come back. */
void hybrid__forget_thread(struct hybrid *h, uint32_t tid);
/* Threads whose stacks walks have taught something about, held now. */
size_t hybrid__thread_count(const struct hybrid *h);
void hybrid__free(struct hybrid *h);

#endif
