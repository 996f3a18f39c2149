/* oneDNN's JIT sgemm (Debian's libdnnl), for tests/t_realprog.sh and bench/b_realprog.sh:
 * dnnl_sgemm on 384x384 floats (or the sizes named), over and over for SECONDS of CPU time,
 * on the OpenMP threads OMP_NUM_THREADS gives. oneDNN generates its GEMM kernels (60-110 KiB each, no
 * CFI) into anonymous executable memory at run time. Prints the rounds and one element.
 * Usage: gemm [SECONDS [SIZE...]] */
#include <dnnl.h>

#include "../gemm_loop.h"

static int onednn_sgemm(int n, const float *a, const float *b, float *c)
{
	return dnnl_sgemm('N', 'N', n, n, n, 1.0f, a, n, b, n, 0.0f, c, n) == dnnl_success ? 0 : -1;
}

int main(int argc, char **argv)
{
	return gemm_loop(argc, argv, "gemm", onednn_sgemm);
}
