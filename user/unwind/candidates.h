/* The candidate user stacks of one sample that hybrid.c picks from (candidates.c builds
 * each with its verdict), and what they are built from: the sample, its process (struct
 * hybrid_space), and the tools that outlive a sample. */
#ifndef HPROF_UNWIND_CANDIDATES_H
#define HPROF_UNWIND_CANDIDATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"
#include "unwind/threads.h"
#include "unwind/walk.h"

/* How a user stack was obtained. */
enum stack_method {
	METHOD_FP = 0,      /* the kernel's frame-pointer chain, complete */
	METHOD_DWARF,       /* DWARF walk over the copied stack, complete */
	METHOD_DWARF_FP,    /* DWARF walk until the copy ran out, then the FP chain */
	METHOD_ANALYSIS,    /* complete, through code without CFI: by analysis of its
			     * instructions or its frame record (a walk, perhaps with the FP chain) */
	METHOD_SCAN,        /* complete, with a frame found by scanning the stack */
	METHOD_TRUNCATED,   /* incomplete: why in struct user_stack's reason */
	METHOD_COUNT,
};

/* The DWARF walk from the FP chain's outermost frame goes through a few frames of libc's
 * start-up code; more than this is not a start-up path. */
#define HYBRID_TAIL_MAX_FRAMES 64
/* Most frames a candidate stack holds, with room to spare: a walk, a stitched chain
 * and the walk from the chain's end. */
#define HYBRID_MAX_FRAMES \
	(HPROF_MAX_FP_DEPTH + UNWIND_MAX_FRAMES + HPROF_MAX_FP_DEPTH + HYBRID_TAIL_MAX_FRAMES)

/* The sampled process, as the walk sees it (find_map: -ENOENT when no executable mapping
 * holds pc; walk.symbols.is_entry_code tells the chain's start too), and what only the FP
 * chain needs (ctx is walk.ctx). */
struct hybrid_space {
	struct unwind_space walk;
	/* pc is in one of the process's executable mappings. */
	bool (*is_mapped)(void *ctx, uint64_t pc);
	/* The return address pc is in libc's start-up routines, by symbol (frame pointers
	 * only: there is no copy to walk from a chain's end). */
	bool (*in_start_routine)(void *ctx, uint64_t pc);
	/* The name of the Go function holding pc (its .gopclntab's), NULL where none does. */
	const char *(*go_function)(void *ctx, uint64_t pc);
	uint32_t pid; /* for traces */
};

/* What building candidates needs that outlives a sample: whether to walk at all, the
 * walk's rule cache, what walks learned of each thread, and scratch for one sample's walks:
 * walked holds the walk and what is joined to it (HYBRID_MAX_FRAMES), tail_walked the walk
 * from a chain's end (HYBRID_TAIL_MAX_FRAMES). The stack picked is copied out of them. */
struct candidate_tools {
	bool dwarf;
	struct unwind_cache *cache;
	struct thread_table *threads;
	struct unwind_frame *walked, *tail_walked;
	/* HPROF_DEBUG=unwind[:N]: walks still to print step by step on stderr. */
	uint64_t walks_to_trace;
};

/* 0, or -ENOMEM (release t then). */
int candidate_tools__init(struct candidate_tools *t, bool dwarf);
void candidate_tools__release(struct candidate_tools *t);
/* The DWARF walk, traced on stderr while t->walks_to_trace lasts. */
void candidates__walk(struct candidate_tools *t, const struct hybrid_space *space,
		      const struct unwind_regs *regs, const struct stack_copy *copy,
		      struct unwind_frame *frames, uint32_t max, struct unwind_result *result);

/* What a candidate teaches about its thread; kept only from the candidate picked. */
struct lesson {
	/* where the thread's stack ends: the outermost frame's sp of a walk that reached the
	 * thread's entry; 0: nothing learned */
	uint64_t base;
	/* the frames beyond a right FP chain's end (libc's start-up code); NULL: none */
	const struct unwind_frame *tail;
	uint32_t nr_tail;
	/* a complete walk of the whole stack copied from sp, whose outermost frames a deep stack
	 * teaches (deep_stacks__to_learn, outermost sp = base); NULL: none */
	const struct unwind_frame *whole;
	uint32_t nr_whole;
};

/* How a candidate went on beyond its FP chain's outermost frame record. */
enum chain_finish {
	FINISH_NONE = 0,
	FINISH_WALKED,  /* a DWARF walk from the chain's end (hybrid_stats.fp_tails) */
	FINISH_LEARNED, /* the frames learned for the thread (hybrid_stats.fp_tails_learned) */
};

/* chain_at of a candidate without FP chain frames */
#define NO_CHAIN UINT32_MAX

/* One candidate user stack. A builder returns its verdict: true when the stack reaches
 * where the thread's stack starts (or, with frames from the FP chain, where a runtime's
 * stack ends on it). */
struct candidate {
	const struct unwind_frame *frames;
	uint32_t n;
	enum stack_method method; /* METHOD_FP, METHOD_DWARF or METHOD_DWARF_FP */
	/* frames[chain_at...] are chain_len frames of the sample's FP chain, from its index
	 * chain_from on: where a runtime's stack end may cut the stack picked. */
	uint32_t chain_at, chain_from, chain_len;
	enum chain_finish finish;
	bool crossed_gap; /* a deep stack's walk crossed its copy's gap (hybrid_stats) */
	struct lesson lesson;
};

/* One sample as the candidates are built from it: the sample, its process, and its copied
 * memory (the stack copied from sp, followed by the stack a signal interrupted when sp was
 * on an alternate stack, and the window copied from the FP chain's outermost frame record
 * when the copy did not reach it); the FP chain and what is known of it; and the walk
 * over the copy, once a candidate built it. */
struct job {
	struct candidate_tools *tools;
	const struct hybrid_space *space;
	const struct hprof_sample *sample;
	struct unwind_regs regs; /* the sample's, as the walk starts from them */
	struct stack_copy stack; /* more: interrupted, when there is one */
	struct stack_copy interrupted;
	struct stack_copy tail;
	struct unwind_frame *chain; /* nr_chain frames, in the caller's out */
	uint32_t nr_chain;
	bool chain_mapped;   /* every frame of the chain is in an executable mapping */
	bool chain_complete; /* it reaches where the stack starts (candidates__start) */
	bool leaf_fp;        /* the leaf keeps rbp as its frame pointer (always, without DWARF) */
	int8_t records_fp;   /* each frame record is its frame's by the rows: -1 not checked */
	bool has_walk;
	uint32_t nr_walked; /* the walk's frames, in tools->walked */
	struct unwind_result walk;
};

/* Builds the job's FP chain into out and judges it. */
void candidates__start(struct job *j, struct unwind_frame *out);

/* The candidates, each built into c with its verdict (candidates.c says when each is
 * complete). The walk builds j's walk, which the two after it extend. */
bool candidate__chain(struct job *j, struct candidate *c);
bool candidate__walk(struct job *j, struct candidate *c);
bool candidate__walk_learned_tail(struct job *j, struct candidate *c);
bool candidate__walk_then_chain(struct job *j, struct candidate *c);
bool candidate__chain_then_walk(struct job *j, struct candidate *c);
bool candidate__chain_lacking_leaf_caller(struct job *j, struct candidate *c);
/* The chain as it is, or the walk as far as it went: the stack when no candidate is
 * complete. */
void candidate__chain_as_is(struct job *j, struct candidate *c);
void candidate__walk_as_is(struct job *j, struct candidate *c);

/* The index within c's chain frames of the first return address where a runtime's stack
 * ends (the space's is_stack_end), when the frames beyond it are not that stack's; NO_CHAIN
 * when there is none, or no check (no DWARF: the check reads the binaries' tables, which an
 * FP-only run never opens). */
uint32_t candidate__stack_end(const struct job *j, const struct candidate *c);

#endif
