/* No frame pointers, linked by LLD, which does not page-align the executable segment in
 * the file: its mapping's page offset lands in the read-only segment before it.
 * main -> a -> b -> c, the hot loop in c. Usage: lld_chain [SECONDS] (default 3). */
#include <stdio.h>

#include "workload.h"

static volatile unsigned long sink;

__attribute__((noinline)) void c(void)
{
	for (unsigned long i = 0; i < 4000000; i++)
		sink += i ^ (i >> 3);
}

/* The work after each call keeps it from being a tail call. */
__attribute__((noinline)) void b(void)
{
	c();
	sink++;
}

__attribute__((noinline)) void a(void)
{
	b();
	sink++;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_now();

	while (workload_now() - start < seconds)
		a();
	printf("lld_chain done\n");
	return 0;
}
