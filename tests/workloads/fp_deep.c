/* Frame pointers, but a hot leaf that keeps none: main -> deep x DEPTH -> copy_block ->
 * memcpy (libc). The kernel's FP chain skips copy_block (memcpy leaves rbp alone), so
 * hprof replays DWARF from the copied stack; with a short copy it must continue on the
 * FP chain where the copy runs out. Usage: fp_deep [SECONDS] [DEPTH] (3 s, 200 frames). */
#include <stdio.h>
#include <string.h>

#include "workload.h"

static char from[1 << 16], to[1 << 16];
static volatile unsigned long sink;

/* Long enough per call that the descent and ascent of the recursion, where samples
 * legitimately see fewer frames, are a negligible share of the run. */
__attribute__((noinline)) void copy_block(void)
{
	for (int i = 0; i < 2000; i++) {
		memcpy(to, from, sizeof(to));
		__asm__ volatile("" : : "r"(to) : "memory");
	}
}

__attribute__((noinline)) void deep(int depth)
{
	if (depth > 1)
		deep(depth - 1);
	else
		copy_block();
	sink++;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_now();
	int depth = argc > 2 ? atoi(argv[2]) : 200;

	while (workload_now() - start < seconds)
		deep(depth);
	printf("deep %d done\n", depth);
	return 0;
}
