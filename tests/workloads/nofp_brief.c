/* No frame pointers, short-lived: a CPU-bound burst from the first instructions of main,
 * for tests that start hundreds of processes (tests/t_mappings.sh).
 * main -> brief_burst -> brief_spin. Usage: nofp_brief [SECONDS] (default 0.01). */
#include "workload.h"

static volatile unsigned long brief_sink;

__attribute__((noinline)) void brief_spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		brief_sink += i ^ (i >> 3);
}

__attribute__((noinline)) void brief_burst(double seconds)
{
	double start = workload_now();

	/* Some 20 us between clock reads. */
	do
		brief_spin(20000);
	while (workload_now() - start < seconds);
}

int main(int argc, char **argv)
{
	brief_burst(workload_seconds(argc, argv, 0.01));
	return 0;
}
