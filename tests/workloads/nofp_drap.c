/* No frame pointers; a function that realigns its stack through a DRAP (gcc's Dynamic
 * Realigned Argument Pointer), for tests/t_nocfi.sh. Usage: nofp_drap SECONDS, SECONDS of
 * CPU time. True call chains:
 *
 *   main -> drap_loop -> drap_realigned -> drap_leaf
 *   main -> workload_seconds, workload_cpu_now (workload.h) -> (libc)
 *
 * drap_realigned has a local aligned to 32 bytes, more than the psABI's 16, and a
 * variable-length array besides: gcc then keeps the incoming rsp in r10 (lea 0x8(%rsp),
 * %r10; and $-32,%rsp), pushes the return address again and a frame record on the realigned
 * stack, and saves r10 under it. Its CFI says CFA = r10 in the prologue and the epilogue
 * and CFA = *(rbp - 8) in between (DW_CFA_def_cfa_expression): a walk needs the sampled
 * r10 in the first, and the word under the frame record in the second.
 * drap_loop calls it in a tight loop and drap_leaf does little, so that its prologue and
 * epilogue take a good share of the samples too. drap_loop realigns its stack the same
 * way: its CFA = *(rbp - 8) needs its rbp, which drap_realigned saved where its own rbp
 * points (DW_CFA_expression DW_OP_breg6 0). */
#include "workload.h"

static volatile unsigned long sink;

__attribute__((noinline)) double drap_leaf(double *v, double *w, long n)
{
	for (long i = 0; i < n; i++)
		v[i & 3] += (double)i;
	return v[0] + w[0];
}

__attribute__((noinline)) double drap_realigned(long n, long k)
{
	double aligned[4] __attribute__((aligned(32))) = { 1, 2, 3, 4 };
	double vla[k];

	vla[0] = (double)n;
	return drap_leaf(aligned, vla, n);
}

__attribute__((noinline)) void drap_loop(long rounds, long k)
{
	double sum[4] __attribute__((aligned(32))) = { 0 };
	double vla[k];

	vla[0] = 0;
	for (long i = 0; i < rounds; i++)
		sum[i & 3] += drap_realigned(1, 1 + (i & 3)) + vla[0];
	sink += (unsigned long)sum[0];
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_cpu_now();

	while (workload_cpu_now() - start < seconds)
		drap_loop(20000, 1 + (argc & 1));
	return 0;
}
