/* No frame pointers: main -> descend x N -> spin_shallow or spin_deep, each descend frame
 * holding a 3 KiB buffer (every page touched).
 *   N = SHALLOW (24 frames, ~75 KiB): within the copy's ceiling, copied whole;
 *   N = DEEP (52 frames, ~165 KiB): deeper than the ceiling (128 KiB), copied in two parts,
 *   from sp and below the base, with ~37 KiB between them that hold a dozen return
 *   addresses, one for each descend frame there.
 * The shallow calls run alone for the first CPU half second, so that hprof learns where the
 * stack ends, then the two alternate. A right stack of spin_deep holds exactly DEEP descend
 * frames, and of spin_shallow exactly SHALLOW.
 * Usage: nofp_gap [SECONDS] (default 3), SECONDS of CPU time. */
#include <stdio.h>

#include "workload.h"

#define SHALLOW 24
#define DEEP 52
#define SPINS 2000000ul
#define PAGE 4096
#define SHALLOW_SECONDS 0.5

static volatile unsigned long sink;

__attribute__((noinline)) void spin_shallow(void)
{
	for (unsigned long i = 0; i < SPINS; i++)
		sink += i ^ (i >> 3);
}

__attribute__((noinline)) void spin_deep(void)
{
	for (unsigned long i = 0; i < SPINS; i++)
		sink += i ^ (i >> 5);
}

/* The work after the call keeps it from being a tail call. */
__attribute__((noinline)) void descend(int left, int deep)
{
	volatile char buf[3 << 10];

	for (unsigned long i = 0; i < sizeof(buf); i += PAGE / 2)
		buf[i] = (char)i;
	if (left > 1)
		descend(left - 1, deep);
	else if (deep)
		spin_deep();
	else
		spin_shallow();
	sink += buf[0];
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_cpu_now(), now;

	while ((now = workload_cpu_now()) - start < seconds) {
		descend(SHALLOW, 0);
		if (now - start >= SHALLOW_SECONDS)
			descend(DEEP, 1);
	}
	printf("gap done\n");
	return 0;
}
