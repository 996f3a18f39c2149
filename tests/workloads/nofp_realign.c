/* No frame pointers; C callers (with CFI) of an assembly function without CFI whose frame
 * is BEAM's process_main's (nofp_realign.S): 16.5 KiB, realigned, never touched, the
 * caller's rsp kept in a register. For tests/t_nocfi.sh. Usage: nofp_realign SECONDS, SECONDS
 * of CPU time. True call chains:
 *
 *   main -> call_direct_realign  -> asm_realign_big -> c_callee
 *   main -> call_via_ptr_realign -> asm_realign_big -> c_callee
 *   main -> workload_seconds, workload_cpu_now (workload.h) -> (libc) */
#include "workload.h"

unsigned long asm_realign_big(unsigned long n);
unsigned long c_callee(unsigned long n);

/* volatile: the compiler cannot turn the call through it into a direct call. */
static unsigned long (*volatile realign_ptr)(unsigned long n) = asm_realign_big;
static volatile unsigned long sink;

/* Called by asm_realign_big: a loop of its own, so that samples land below the assembly. */
__attribute__((noinline)) unsigned long c_callee(unsigned long n)
{
	unsigned long sum = 0;

	for (unsigned long i = 0; i < n; i++) {
		sum += i ^ n;
		__asm__ volatile("" : "+r"(sum));
	}
	return sum;
}

__attribute__((noinline)) void call_direct_realign(unsigned long n)
{
	sink += asm_realign_big(n);
}

__attribute__((noinline)) void call_via_ptr_realign(unsigned long n)
{
	sink += realign_ptr(n);
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_cpu_now();

	for (unsigned long round = 1; workload_cpu_now() - start < seconds; round++) {
		/* the round's multiplicative hash: calls of varying length, well under a sample
		 * period, so that samples do not lock onto the sampling's phase */
		unsigned long r = (round * 2654435761u) & 0xffffffu;

		call_direct_realign(100000 + r % 100000);
		call_via_ptr_realign(100000 + (r >> 5) % 100000);
	}
	return 0;
}
