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

#endif
