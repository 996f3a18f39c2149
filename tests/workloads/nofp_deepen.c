/* No frame pointers: a recursion that deepens over the run, main -> deepen x DEPTH -> leaf,
 * DEPTH growing from 10 to MAX frames (small frames: MAX 1500 needs ~48 KiB of stack).
 * Usage: nofp_deepen [SECONDS] [MAX] (defaults 3 s, 1500 frames). */
#include <stdio.h>

#include "workload.h"

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink += i ^ (i >> 5);
}

/* The work after the call keeps it from being a tail call. */
__attribute__((noinline)) void deepen(int depth)
{
	if (depth > 1)
		deepen(depth - 1);
	else
		leaf();
	sink += (unsigned)depth;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_now(), t;
	int max = argc > 2 ? atoi(argv[2]) : 1500, depth = 10;

	while ((t = workload_now() - start) < seconds) {
		depth = 10 + (int)((max - 10) * (t / seconds));
		deepen(depth);
	}
	printf("deepen reached %d\n", depth);
	return 0;
}
