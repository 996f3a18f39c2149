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

/* CPU time the calling thread has used, in seconds. Workloads that must take a number of
 * samples (a rate per CPU second) run for so much CPU time rather than by the wall clock,
 * so that a busy machine makes them slower, not poorer in samples. */
static inline double workload_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Seconds to run: argv[1], else the default. */
static inline double workload_seconds(int argc, char **argv, double fallback)
{
	return argc > 1 ? atof(argv[1]) : fallback;
}

#endif
