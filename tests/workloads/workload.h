/* Shared by the bundled workloads: run for a number of seconds, checking the clock rarely
 * so that nearly every sample lands in the hot code. */
#ifndef HPROF_WORKLOAD_H
#define HPROF_WORKLOAD_H

#include <stdlib.h>
#include <time.h>

static inline double workload_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Seconds to run: argv[1], else the default. */
static inline double workload_seconds(int argc, char **argv, double fallback)
{
	return argc > 1 ? atof(argv[1]) : fallback;
}

#endif
