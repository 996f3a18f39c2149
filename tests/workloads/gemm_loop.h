/* The driver the GEMM workloads share (onednn/gemm.c, mkl/gemm.c): fills two 384x384 float
 * matrices, multiplies them over and over for a number of seconds of wall time, then prints
 * the rounds and one element of the product. */
#ifndef HPROF_GEMM_LOOP_H
#define HPROF_GEMM_LOOP_H

#include <stdio.h>
#include <stdlib.h>

#include "workload.h"

#define GEMM_N 384

/* One product c = a * b of GEMM_N x GEMM_N row-major floats; 0 on success. */
typedef int (*gemm_fn)(const float *a, const float *b, float *c);

/* Runs gemm for argv[1] seconds (default 2); main's exit status. */
static inline int gemm_loop(int argc, char **argv, const char *name, gemm_fn gemm)
{
	double seconds = workload_seconds(argc, argv, 2.0), start;
	float *a = malloc(sizeof(float) * GEMM_N * GEMM_N), *b = malloc(sizeof(float) * GEMM_N * GEMM_N),
	      *c = malloc(sizeof(float) * GEMM_N * GEMM_N);
	long rounds = 0;

	if (!a || !b || !c)
		return 1;
	for (int i = 0; i < GEMM_N * GEMM_N; i++) {
		a[i] = (float)(i % 13) * 0.25f;
		b[i] = (float)(i % 7) * 0.5f;
		c[i] = 0;
	}
	start = workload_now();
	do {
		if (gemm(a, b, c) != 0) {
			fprintf(stderr, "%s: the product failed\n", name);
			return 1;
		}
		rounds++;
	} while (workload_now() - start < seconds);
	printf("%ld %g\n", rounds, (double)c[GEMM_N + 1]);
	return 0;
}

#endif
