/* Intel MKL's sgemm (Debian's non-free libmkl), for tests/t_realprog.sh and
 * bench/b_realprog.sh: 384x384 floats, over and over for SECONDS of CPU time, on the
 * OpenMP threads OMP_NUM_THREADS gives. MKL's GEMM kernels are hand-written and ship
 * without CFI; they save registers by mov and use rbp as a counter, so their callers, which
 * keep a frame pointer, are found only through the rbp the kernels saved. Prints the rounds
 * and one element.
 *
 * MKL runs its AVX2 and AVX-512 kernels only on CPUs it takes for Intel's, and its generic
 * ones (which have CFI) elsewhere. The workload answers MKL's own check for that, as users
 * of MKL on other CPUs do, so that the kernels profiled are the same on every machine: the
 * fastest the CPU supports. Linked with -rdynamic, so that MKL's call finds this definition.
 * Usage: gemm [SECONDS [SIZE...]] */
#include "../gemm_loop.h"

/* BLAS's Fortran interface (MKL's gf_lp64 layer: 32-bit integers, arguments by address). */
void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
	    const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
	    const float *beta, float *c, const int *ldc);

/* MKL's test for an Intel CPU (libmkl_core), answered yes. */
int mkl_serv_intel_cpu_true(void)
{
	return 1;
}

/* Column-major BLAS on row-major matrices: the same work, a transposed product. */
static int mkl_sgemm(int n, const float *a, const float *b, float *c)
{
	const float one = 1.0f, zero = 0.0f;

	sgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);
	return 0;
}

int main(int argc, char **argv)
{
	return gemm_loop(argc, argv, "gemm", mkl_sgemm);
}
