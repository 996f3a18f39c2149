/* What a session counted of the samples it handled: how each user stack was obtained,
 * why incomplete ones stopped, and what was lost. The summary prints them. */
#ifndef HPROF_OUTPUT_SAMPLE_STATS_H
#define HPROF_OUTPUT_SAMPLE_STATS_H

#include <stdint.h>

#include "unwind/hybrid.h"
#include "unwind/x86_code.h"

/* Code without CFI: what the analysis of its instructions did, and the frames found by
 * the methods after it. */
struct nocfi_stats {
	uint64_t analyses;                 /* code regions analysed (once per binary and pc) */
	uint64_t failed[CODE_FAIL_COUNT];  /* ... that found no rules, by why */
	uint64_t unreadable;               /* analyses without the code's bytes */
	uint64_t widened;                  /* analyses that read the code again, further on
					    * (a path ran past what was read) */
	uint64_t analysis_rejected;        /* steps by an analysis whose return address
					    * followed no call (the frame record or a scan
					    * was tried instead) */
	uint64_t analysis_ra_by_walk;      /* ... taken all the same: a walk from the return
					    * address reached the stack's start */
	uint64_t ra_moved;                 /* steps by an analysis with the return address
					    * moved into the caller's frame (sljit) */
	uint64_t ra_register;              /* ... in a register the sample holds */
	uint64_t ra_top_word;              /* ... in one it lacks: the caller's top word
					    * taken (the word at the CFA) */
	uint64_t frame_pointer_frames;     /* frames found by a frame record */
	uint64_t scan_frames;              /* frames found by scanning */
	uint64_t scan_rejected_code;       /* scan candidates with no call before them, or a
					    * direct call into another function */
	uint64_t scan_rejected_walk;       /* scan candidates from which no walk reached the start */
	uint64_t scan_rejected_stale;      /* scan candidates whose caller had called another
					    * function since (stale return addresses) */
	uint64_t scan_passed_over;         /* scans that passed over a candidate reaching the
					    * start for a later one whose every caller called
					    * its frame's function */
	uint64_t scan_through_jumps;       /* scan candidates after a call of a function that
					    * jumped to the frame's code, at its depth */
};

struct sample_stats {
	uint64_t samples;           /* samples received from the kernel */
	uint64_t methods[METHOD_COUNT];       /* user stacks per method */
	uint64_t truncated[UNWIND_END_COUNT];  /* truncated user stacks per reason */
	uint64_t bytes;             /* bytes of sample records received */
	uint64_t malformed;         /* lost: record shorter than its header says */
	struct hybrid_stats unwind; /* FP chains complete, and finished from their end */
	struct nocfi_stats nocfi;
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
