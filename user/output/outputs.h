/* The files a recording or a report writes from its profile: folded stacks, the SVG
 * flamegraph and the pprof profile, each whole or not at all; and the top table. */
#ifndef HPROF_OUTPUT_OUTPUTS_H
#define HPROF_OUTPUT_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "binary/modules.h"
#include "output/profile.h"

struct output_opts {
	const char *svg_path;    /* NULL: no flamegraph */
	const char *folded_path; /* NULL: no folded file; "-" is stdout */
	const char *pprof_path;  /* NULL: no pprof profile */
	const char *json_path;   /* NULL: no JSON summary (written by output/summary.c) */
	size_t top;              /* --top N: the table's rows, on stdout (on stderr when the
				  * folded stacks go to stdout); 0: no table */
	const char *title;
	const char *subtitle;
	unsigned frequency;      /* Hz, for pprof's sample period */
	uint64_t duration_ns;    /* for pprof */
};

/* Returns 0 or -errno after printing a one-line error. */
int outputs__write(struct profile *p, struct module_registry *modules,
		   const struct output_opts *opts);

#endif
