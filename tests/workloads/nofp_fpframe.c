/* No frame pointers, except in with_vla: its variable-length array makes GCC keep rbp as
 * its frame pointer, as any function using alloca, a VLA or an over-aligned local does.
 * The hot loop is in with_vla, reached two ways that are alike on the stack: the callers'
 * frames have the same size, so with_vla's frame record lies at the same address under
 * both.
 *   same:  main -> outer_a|outer_b -> mid -> with_vla  (the same return address, into mid)
 *   other: main -> caller_a|caller_b -> with_vla       (return addresses into each caller)
 * Usage: nofp_fpframe [SECONDS] [same|other] (defaults 3 s, same). */
#include <stdio.h>
#include <string.h>

#include "workload.h"

#define VLA_BYTES 1024

static volatile unsigned long sink;

__attribute__((noinline)) void with_vla(int n)
{
	volatile char buf[n];

	for (unsigned long i = 0; i < 2000000; i++)
		buf[i % n] += (char)i;
	sink += buf[0];
}

/* The work after each call keeps it from being a tail call; the arrays give every caller
 * the same real frame. */
__attribute__((noinline)) void mid(int n)
{
	volatile char pad[32];

	pad[0] = 1;
	with_vla(n);
	sink += pad[0];
}

#define DEFINE_CALLER(name, callee)                                   \
	__attribute__((noinline)) void name(int n)                    \
	{                                                             \
		volatile char pad[32];                                \
		pad[0] = 1;                                           \
		callee(n);                                            \
		sink += pad[0];                                       \
	}

DEFINE_CALLER(outer_a, mid)
DEFINE_CALLER(outer_b, mid)
DEFINE_CALLER(caller_a, with_vla)
DEFINE_CALLER(caller_b, with_vla)

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_now();
	int other = argc > 2 && strcmp(argv[2], "other") == 0;

	while (workload_now() - start < seconds) {
		if (other) {
			caller_a(VLA_BYTES);
			caller_b(VLA_BYTES);
		} else {
			outer_a(VLA_BYTES);
			outer_b(VLA_BYTES);
		}
	}
	printf("fpframe done (%s)\n", other ? "other" : "same");
	return 0;
}
