/* A program for LLVM's JIT (lli, tests/t_realprog.sh and bench/b_realprog.sh), compiled to
 * bitcode without frame pointers: lli compiles it at run time, registers the object with
 * gdb's JIT interface, and runs main -> middle -> leaf_work for SECONDS of CPU time.
 * Usage: lli work.bc [SECONDS] */
#include <stdlib.h>
#include <time.h>

static volatile long sink;

__attribute__((noinline)) long leaf_work(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += (i * i) % 7 ^ sink;
	return s;
}

__attribute__((noinline)) long middle(long n)
{
	return leaf_work(n) + leaf_work(n / 2);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);

	while (clock() < end)
		sink += middle(200000);
	return 0;
}
