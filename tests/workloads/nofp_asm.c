/* No frame pointers; C callers (with CFI) of assembly functions without CFI
 * (nofp_asm.S), for tests/t_nocfi.sh. Usage: nofp_asm SECONDS, SECONDS of CPU time. True
 * call chains:
 *
 *   main -> call_direct_leaf      -> asm_leaf
 *   main -> call_via_ptr_leaf     -> asm_leaf
 *   main -> call_direct_pushes    -> asm_pushes -> c_callee
 *   main -> call_via_ptr_pushes   -> asm_pushes -> c_callee
 *   main -> call_direct_multiret  -> asm_multiret
 *   main -> call_via_ptr_multiret -> asm_multiret
 *   main -> call_direct_savedsp   -> asm_savedsp -> c_callee
 *   main -> call_via_ptr_savedsp  -> asm_savedsp -> c_callee
 *   main -> call_direct_pushjmp   -> asm_pushjmp -> asm_jumped (a jump: no call before
 *                                                   the return address into asm_pushjmp)
 *   main -> call_via_ptr_pushjmp  -> asm_pushjmp -> asm_jumped
 *   main -> call_direct_movsaves  -> asm_movsaves (its callers keep a frame pointer)
 *   main -> call_via_ptr_movsaves -> asm_movsaves
 *   main -> workload_seconds, workload_cpu_now (workload.h) -> (libc)
 *
 * Each assembly function is called directly and through a function pointer, so that its
 * return address lies after both kinds of call instruction. */
#include <stdio.h>

#include "workload.h"

unsigned long asm_leaf(unsigned long n);
unsigned long asm_pushes(unsigned long n);
unsigned long asm_multiret(unsigned long n);
unsigned long asm_savedsp(unsigned long n);
unsigned long asm_pushjmp(unsigned long n);
unsigned long asm_movsaves(unsigned long n);
unsigned long c_callee(unsigned long n);

typedef unsigned long (*asm_fn)(unsigned long n);

/* volatile: the compiler cannot turn the calls through them into direct calls. */
static asm_fn volatile leaf_ptr = asm_leaf;
static asm_fn volatile pushes_ptr = asm_pushes;
static asm_fn volatile multiret_ptr = asm_multiret;
static asm_fn volatile savedsp_ptr = asm_savedsp;
static asm_fn volatile pushjmp_ptr = asm_pushjmp;
static asm_fn volatile movsaves_ptr = asm_movsaves;

static volatile unsigned long sink;

/* Called by asm_pushes: a loop of its own, so that samples land below the assembly. */
__attribute__((noinline)) unsigned long c_callee(unsigned long n)
{
	unsigned long sum = 0;

	for (unsigned long i = 0; i < 150; i++) {
		sum += i ^ n;
		__asm__ volatile("" : "+r"(sum));
	}
	return sum;
}

/* call_direct_NAME(n) calls asm_NAME(n); call_via_ptr_NAME(n) calls it through NAME_ptr. */
#define CALLERS(name)                                                       \
	__attribute__((noinline)) void call_direct_##name(unsigned long n)  \
	{                                                                   \
		sink += asm_##name(n);                                      \
	}                                                                   \
	__attribute__((noinline)) void call_via_ptr_##name(unsigned long n) \
	{                                                                   \
		sink += name##_ptr(n);                                      \
	}

CALLERS(leaf)
CALLERS(pushes)
CALLERS(multiret)
CALLERS(savedsp)
CALLERS(pushjmp)

/* The callers of asm_movsaves: a variable-length array makes gcc keep a frame pointer even
 * without -fno-omit-frame-pointer, so their CFI says CFA = rbp + 16 where they call, and the
 * walk goes on past them only with the rbp asm_movsaves saved by mov. */
#define VLA_CALLERS(name)                                                        \
	__attribute__((noinline)) void call_direct_##name(unsigned long n)       \
	{                                                                        \
		volatile char scratch[1 + n % 64];                               \
		scratch[0] = 0;                                                  \
		sink += asm_##name(n) + (unsigned long)scratch[0];               \
	}                                                                        \
	__attribute__((noinline)) void call_via_ptr_##name(unsigned long n)      \
	{                                                                        \
		volatile char scratch[1 + n % 64];                               \
		scratch[0] = 0;                                                  \
		sink += name##_ptr(n) + (unsigned long)scratch[0];               \
	}

VLA_CALLERS(movsaves)

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_cpu_now();
	unsigned seed = 1;

	/* Every caller once a round, each call well under a sample period and of varying
	 * length, so that samples do not lock onto the sampling's phase. */
	while (workload_cpu_now() - start < seconds) {
		unsigned long r;

		seed = seed * 1103515245u + 12345u;
		r = seed >> 8;
		call_direct_leaf(150000 + r % 150000);
		call_via_ptr_leaf(150000 + (r >> 3) % 150000);
		call_direct_pushes(800 + r % 800);
		call_via_ptr_pushes(800 + (r >> 5) % 800);
		/* n & 3 picks asm_multiret's exit: all four are taken */
		call_direct_multiret(150000 + r % 150000);
		call_via_ptr_multiret(150000 + (r >> 7) % 150000);
		call_direct_multiret(0);
		call_direct_savedsp(800 + (r >> 9) % 800);
		call_via_ptr_savedsp(800 + (r >> 11) % 800);
		call_direct_pushjmp(150000 + (r >> 13) % 150000);
		call_via_ptr_pushjmp(150000 + (r >> 15) % 150000);
		call_direct_movsaves(150000 + (r >> 17) % 150000);
		call_via_ptr_movsaves(150000 + (r >> 19) % 150000);
	}
	return 0;
}
