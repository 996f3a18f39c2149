/* Options of a recording and the outputs shared with other subcommands. */
#ifndef HPROF_RECORD_H
#define HPROF_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "session.h"

struct output_opts {
	const char *svg_path;    /* NULL: no flamegraph */
	const char *folded_path; /* NULL: no folded file; "-" is stdout */
	const char *pprof_path;  /* NULL: no pprof profile */
	const char *json_path;   /* NULL: no JSON summary */
	const char *title;
	const char *subtitle;
	unsigned frequency;      /* Hz, for pprof's sample period */
	uint64_t duration_ns;    /* for pprof */
};

struct record_opts {
	struct output_opts out;
	long time_ms;        /* 0: until Ctrl-C, the command's exit or the pids' exit */
	unsigned frequency;  /* Hz */
	pid_t *pids;
	size_t nr_pids;
	bool no_dwarf;
	unsigned stack_size; /* bytes */
	char **command;      /* NULL or argv of the command to run */
	const char *raw_path; /* --raw: capture file for hprof report */
	unsigned ring_size;   /* --ring-size: bytes of the kernel's sample buffer; 0 = default */
};

/* Writes the folded stacks, the flamegraph and the pprof profile of a session, each whole
 * or not at all.
 * Returns 0 or -errno after printing a one-line error. */
int write_outputs(struct session *s, const struct output_opts *opts);
/* The summary hprof prints at the end of a recording or a report, on stderr.
 * kernel_counters may be NULL (a report has none). */
void print_summary(struct session *s, double duration_s, unsigned frequency, bool no_dwarf,
		   const uint64_t *kernel_counters, uint64_t sideband_lost);

#endif
