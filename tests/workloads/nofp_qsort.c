/* No frame pointers: a hot comparator called from libc's qsort, so libc frames sit
 * between the program's: main -> sort_many -> qsort (libc) -> compare_slowly.
 * Usage: nofp_qsort [SECONDS] (default 3). */
#include <stdio.h>
#include <stdlib.h>

#include "workload.h"

#define N 4096

static volatile unsigned long sink;
static unsigned values[N];

__attribute__((noinline)) int compare_slowly(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	/* Make the comparator, not qsort's own code, the hot spot. */
	for (int i = 0; i < 200; i++)
		sink += (x ^ (unsigned)i) & y;
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) void sort_many(unsigned seed)
{
	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		values[i] = seed;
	}
	qsort(values, N, sizeof(values[0]), compare_slowly);
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_now();
	unsigned seed = 1;

	while (workload_now() - start < seconds)
		sort_many(seed++);
	printf("qsort done %u\n", values[0] & 1);
	return 0;
}
