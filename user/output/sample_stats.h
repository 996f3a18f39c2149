/* What a session counted of the samples it handled: how each user stack was obtained,
 * why incomplete ones stopped, and what was lost. The summary prints them. */
#ifndef HPROF_OUTPUT_SAMPLE_STATS_H
#define HPROF_OUTPUT_SAMPLE_STATS_H

#include <stdint.h>

#include "unwind/hybrid.h"

struct sample_stats {
	uint64_t samples;           /* samples received from the kernel */
	uint64_t methods[METHOD_COUNT];       /* user stacks per method */
	uint64_t truncated[TRUNCATED_COUNT];  /* truncated user stacks per reason */
	uint64_t bytes;             /* bytes of sample records received */
	uint64_t malformed;         /* lost: record shorter than its header says */
	struct hybrid_stats unwind; /* FP chains complete, and finished from their end */
	uint64_t tail_windows;      /* samples carrying the stack at the FP chain's end */
	uint64_t kernel_only;       /* samples with no user stack (kernel threads) */
	uint64_t no_maps;           /* samples of processes whose mappings could not be read */
	uint64_t frames_unmapped;   /* user frames in no executable mapping */
	uint64_t processes;         /* distinct processes seen */
};

/* What a recording's delta copies came to (user/record/stack_delta.h). */
struct stack_delta_stats {
	uint64_t full;            /* whole copies received that start or refresh deltas */
	uint64_t deltas;          /* deltas rebuilt */
	uint64_t base_missing;    /* deltas against a copy not held: their stack lost */
	uint64_t malformed;       /* delta records that do not add up: handed on as malformed */
	uint64_t verified;        /* rebuilt copies compared with the whole copy sent along */
	uint64_t verify_mismatch; /* ... that differed from it */
	uint64_t evicted;         /* images dropped to stay within the caps */
	uint64_t dropped;         /* images dropped by stack_delta__set_drop_every */
};

#endif
