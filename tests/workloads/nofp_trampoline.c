/* No frame pointers in the C part; a trampoline without CFI between two C functions, as
 * CPython's perf trampoline sits between its evaluation loop and each Python function, for
 * tests/t_nocfi.sh. Usage: nofp_trampoline SECONDS [--in-place], SECONDS of CPU time.
 * True call chains:
 *
 *   main -> eval_caller -> [trampoline] -> py_eval_like
 *   main -> setup -> (libc)                  the copy, before the loop
 *   main -> parse_options -> (libc)
 *   main -> workload_seconds, workload_cpu_now (workload.h) -> (libc)
 *
 * The trampoline (nofp_trampoline.S: push %rbp; mov %rsp,%rbp; call *%rdx; pop %rbp; ret)
 * runs from a copy in an anonymous executable mapping, as CPython runs it, so its frame is
 * JIT code ([jit]); with --in-place it runs where it was linked, its frame py_trampoline. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "workload.h"

typedef unsigned long (*eval_fn)(void *frame, unsigned long n);
typedef unsigned long (*trampoline_fn)(void *frame, unsigned long n, eval_fn eval);

unsigned long py_trampoline(void *frame, unsigned long n, eval_fn eval);
extern const unsigned char py_trampoline_end[];

static volatile unsigned long sink;

/* Stands for CPython's _PyEval_EvalFrameDefault: a loop, with CFI. */
__attribute__((noinline)) unsigned long py_eval_like(void *frame, unsigned long n)
{
	unsigned long sum = (unsigned long)frame;

	for (unsigned long i = 0; i < n; i++) {
		sum += i ^ (sum >> 3);
		__asm__ volatile("" : "+r"(sum));
	}
	return sum;
}

__attribute__((noinline)) void eval_caller(trampoline_fn trampoline, unsigned long n)
{
	sink += trampoline((void *)&n, n, py_eval_like);
}

/* The trampoline to call: its copy in a new executable mapping, or itself (in_place). */
__attribute__((noinline)) trampoline_fn setup(int in_place)
{
	size_t size = (size_t)(py_trampoline_end - (const unsigned char *)py_trampoline);
	unsigned char *copy;

	if (in_place)
		return py_trampoline;
	copy = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (copy == MAP_FAILED)
		return NULL;
	memcpy(copy, (const void *)py_trampoline, size);
	if (mprotect(copy, 4096, PROT_READ | PROT_EXEC) < 0)
		return NULL;
	return (trampoline_fn)copy;
}

/* Whether to run the trampoline in place (--in-place). */
__attribute__((noinline)) bool parse_options(int argc, char **argv)
{
	return argc > 2 && strcmp(argv[2], "--in-place") == 0;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start;
	trampoline_fn trampoline = setup(parse_options(argc, argv));
	unsigned seed = 1;

	if (!trampoline) {
		perror("nofp_trampoline: mmap");
		return 1;
	}
	start = workload_cpu_now();
	/* Calls well under a sample period, of varying length (see fp_jit.c). */
	while (workload_cpu_now() - start < seconds) {
		seed = seed * 1103515245u + 12345u;
		eval_caller(trampoline, 50 * 1000 + (seed >> 8) % (50 * 1000));
	}
	return 0;
}
