/* No frame pointers: main -> recurse x DEPTH -> leaf, the hot loop in leaf.
 * Usage: nofp_recurse [SECONDS] [DEPTH] (defaults 3 s, 300 frames). */
#include <stdio.h>

#include "workload.h"

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(void)
{
	for (unsigned long i = 0; i < 4000000; i++)
		sink += i ^ (i >> 3);
}

/* The extra work after the call keeps it from being a tail call; the array keeps a real
 * frame (and CFA offset) in every level. */
__attribute__((noinline)) void recurse(int depth)
{
	volatile char pad[24];

	pad[0] = (char)depth;
	if (depth > 1)
		recurse(depth - 1);
	else
		leaf();
	sink += pad[0];
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_now();
	int depth = argc > 2 ? atoi(argv[2]) : 300;

	while (workload_now() - start < seconds)
		recurse(depth);
	printf("recurse %d done\n", depth);
	return 0;
}
