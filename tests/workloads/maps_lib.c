/* Built twice (Makefile), as libmaps_a.so with LIB_NAME=a and libmaps_b.so with LIB_NAME=b:
 * the same code and layout under different names, so that the loader puts the second where
 * the first was once that one is closed (tests/workloads/nofp_dlopen.c). */
#define HOT_NAME(which) lib_##which##_hot
#define HOT(which) HOT_NAME(which)

static volatile unsigned long lib_sink;

__attribute__((noinline)) void HOT(LIB_NAME)(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		lib_sink += i * 3;
}
