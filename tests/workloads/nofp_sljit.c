/* sljit's fast calls (nofp_sljit.S), for tests/t_sljit.sh. Usage: nofp_sljit SECONDS, SECONDS
 * of CPU time. True call chains:
 *
 *   main -> run_matcher -> sljit_matcher -> fast_top_piece
 *   main -> run_matcher -> sljit_matcher -> fast_slot_piece
 *   main -> run_matcher -> sljit_matcher -> fast_reg_leaf
 *   main -> run_matcher -> sljit_matcher -> fast_nest_outer -> fast_reg_nested
 *   main -> workload_seconds, workload_cpu_now (workload.h) -> (libc) */
#include <stdio.h>

#include "workload.h"

unsigned long sljit_matcher(unsigned long rounds);

static volatile unsigned long sink;

/* The matcher over and over, for seconds of CPU time. */
__attribute__((noinline)) void run_matcher(double seconds)
{
	double end = workload_cpu_now() + seconds;

	do
		sink += sljit_matcher(20000);
	while (workload_cpu_now() < end);
}

int main(int argc, char **argv)
{
	run_matcher(workload_seconds(argc, argv, 2.0));
	printf("%lu\n", sink);
	return 0;
}
