/* oneDNN's JIT sgemm (Debian's libdnnl), for tests/t_realprog.sh and bench/b_realprog.sh:
 * dnnl_sgemm on 384x384 floats, over and over for SECONDS of wall time, on the OpenMP
 * threads OMP_NUM_THREADS gives. oneDNN generates its GEMM kernels (60-110 KiB each, no
 * CFI) into anonymous executable memory at run time. Prints the rounds and one element.
 * Usage: gemm [SECONDS] */
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 384

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0, start;
	float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N),
	      *c = malloc(sizeof(float) * N * N);
	long rounds = 0;

	if (!a || !b || !c)
		return 1;
	for (int i = 0; i < N * N; i++) {
		a[i] = (float)(i % 13) * 0.25f;
		b[i] = (float)(i % 7) * 0.5f;
		c[i] = 0;
	}
	start = now();
	do {
		if (dnnl_sgemm('N', 'N', N, N, N, 1.0f, a, N, b, N, 0.0f, c, N) != dnnl_success) {
			fprintf(stderr, "gemm: dnnl_sgemm failed\n");
			return 1;
		}
		rounds++;
	} while (now() - start < seconds);
	printf("%ld %g\n", rounds, (double)c[N + 1]);
	return 0;
}
