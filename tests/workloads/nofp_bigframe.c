/* No frame pointers: main -> with_buffer -> leaf, with_buffer holding a 16 KiB buffer of
 * which it uses only the lowest bytes, so the stack pages above them were never touched
 * (not present: the sampler cannot read them without a page fault).
 * Usage: nofp_bigframe [SECONDS] (default 3). */
#include <stdio.h>

#include "workload.h"

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(void)
{
	for (unsigned long i = 0; i < 2000000; i++)
		sink += i ^ (i >> 3);
}

__attribute__((noinline)) void with_buffer(double seconds)
{
	volatile char buf[16384];
	double start = workload_now();

	buf[0] = 1;
	while (workload_now() - start < seconds)
		leaf();
	sink += buf[0];
}

int main(int argc, char **argv)
{
	with_buffer(workload_seconds(argc, argv, 3.0));
	printf("bigframe done\n");
	return 0;
}
