/* The driver the GEMM workloads share (onednn/gemm.c, mkl/gemm.c): fills two float
 * matrices, multiplies them over and over for a number of seconds of the calling thread's CPU
 * time (a busy machine makes the run longer, not poorer in samples), then prints
 * the rounds and one element of the product. The matrices are GEMM_N x GEMM_N, or each size
 * the command line names in turn (a library picks its kernels, and how it blocks them, by
 * size). */
#ifndef HPROF_GEMM_LOOP_H
#define HPROF_GEMM_LOOP_H

#include <stdio.h>
#include <stdlib.h>

#include "workload.h"

#define GEMM_N 384
#define GEMM_MAX_N 1024
#define GEMM_MAX_SIZES 16

/* One product c = a * b of n x n row-major floats; 0 on success. */
typedef int (*gemm_fn)(int n, const float *a, const float *b, float *c);

/* Runs gemm for argv[1] seconds of CPU time (default 2) on the sizes argv[2]... (default GEMM_N), one
 * product of each in turn; main's exit status. */
static inline int gemm_loop(int argc, char **argv, const char *name, gemm_fn gemm)
{
	double seconds = workload_seconds(argc, argv, 2.0), start;
	int sizes[GEMM_MAX_SIZES] = { GEMM_N }, nr_sizes = 1;
	size_t bytes = sizeof(float) * GEMM_MAX_N * GEMM_MAX_N;
	float *a, *b, *c;
	long rounds = 0;

	if (argc > 2)
		nr_sizes = 0;
	for (int i = 2; i < argc && nr_sizes < GEMM_MAX_SIZES; i++) {
		sizes[nr_sizes] = atoi(argv[i]);
		if (sizes[nr_sizes] < 1 || sizes[nr_sizes] > GEMM_MAX_N) {
			fprintf(stderr, "%s: a size is 1 to %d: %s\n", name, GEMM_MAX_N, argv[i]);
			return 2;
		}
		nr_sizes++;
	}
	a = malloc(bytes);
	b = malloc(bytes);
	c = calloc(1, bytes);
	if (!a || !b || !c)
		return 1;
	for (int i = 0; i < GEMM_MAX_N * GEMM_MAX_N; i++) {
		a[i] = (float)(i % 13) * 0.25f;
		b[i] = (float)(i % 7) * 0.5f;
	}
	start = workload_cpu_now();
	do {
		if (gemm(sizes[rounds % nr_sizes], a, b, c) != 0) {
			fprintf(stderr, "%s: the product failed\n", name);
			return 1;
		}
		rounds++;
	} while (workload_cpu_now() - start < seconds);
	printf("%ld %g\n", rounds, (double)c[1]);
	return 0;
}

#endif
