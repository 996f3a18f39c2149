/* Frame-pointer workload: main -> a -> b -> c, with the hot loop in c.
 * Usage: fp_chain [SECONDS] (default 3). Built with -fno-omit-frame-pointer. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double elapsed_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

__attribute__((noinline)) void c(unsigned long rounds)
{
	for (unsigned long i = 0; i < rounds; i++)
		sink += i * i;
}

__attribute__((noinline)) void b(unsigned long rounds)
{
	c(rounds);
	sink++;
}

__attribute__((noinline)) void a(unsigned long rounds)
{
	b(rounds);
	sink++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	/* Check the clock rarely, so nearly every sample lands in c. */
	while (elapsed_since(&start) < seconds)
		a(20 * 1000 * 1000);
	printf("done %lu\n", sink & 1);
	return 0;
}
