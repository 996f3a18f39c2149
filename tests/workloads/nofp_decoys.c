/* No frame pointers; a leaf without CFI with decoys planted in its frame (nofp_decoys.S),
 * for tests/t_nocfi.sh: a stack scan or a frame-record step that takes a decoy for the
 * return address gives a stack through decoy_unused or decoy_stale, which never run.
 * Usage: nofp_decoys SECONDS, SECONDS of CPU time. True call chains:
 *
 *   main -> decoy_caller -> asm_decoy_leaf
 *   main -> workload_seconds, workload_cpu_now (workload.h) -> (libc)  */
#include "workload.h"

unsigned long asm_decoy_leaf(unsigned long n);

__attribute__((noinline)) void decoy_caller(unsigned long n)
{
	asm_decoy_leaf(n);
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_cpu_now();
	unsigned seed = 1;

	/* Calls well under a sample period, of varying length (see fp_jit.c). */
	while (workload_cpu_now() - start < seconds) {
		seed = seed * 1103515245u + 12345u;
		decoy_caller(100 * 1000 + (seed >> 8) % (100 * 1000));
	}
	return 0;
}
