/* Callees run on a workspace on the heap, off the thread's stack (nofp_switch.S moves rsp
 * there and back), for tests/t_nocfi.sh. Usage: nofp_switch SECONDS, SECONDS of CPU
 * time. True call chains, the leaf's frame on the heap, its callers' on the thread's stack:
 *
 *   main           -> run_phases -> phase_reg   -> switch_reg   -> on_workspace
 *   main           -> run_phases -> phase_area  -> switch_area  -> on_workspace
 *   main           -> run_phases -> phase_frame -> switch_frame -> on_workspace
 *   (a thread) thread_main -> run_phases -> (the same)
 *   main, run_phases -> workload_seconds, workload_cpu_now (workload.h) -> (libc)
 *
 * The main thread and one more thread run the phases, each on a workspace of its own: the
 * main thread's stack is the process's, the other's a mapping glibc made. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "workload.h"

typedef unsigned long (*workspace_fn)(unsigned long n);

unsigned long switch_reg(unsigned long n, void *top, workspace_fn fn);
unsigned long switch_area(unsigned long n, void *top, workspace_fn fn);
unsigned long switch_frame(unsigned long n, void *top, workspace_fn fn);

#define WORKSPACE_BYTES (64 * 1024)

static volatile unsigned long sink;

/* Runs on the workspace: a loop long enough that samples land in it. */
__attribute__((noinline)) unsigned long on_workspace(unsigned long n)
{
	unsigned long sum = 0;

	for (unsigned long i = 0; i < 20000; i++) {
		sum += i ^ n;
		__asm__ volatile("" : "+r"(sum));
	}
	return sum;
}

__attribute__((noinline)) void phase_reg(unsigned long n, char *top)
{
	sink += switch_reg(n, top, on_workspace);
}

__attribute__((noinline)) void phase_area(unsigned long n, char *top)
{
	sink += switch_area(n, top, on_workspace);
}

__attribute__((noinline)) void phase_frame(unsigned long n, char *top)
{
	sink += switch_frame(n, top, on_workspace);
}

/* The phases, in turn, for seconds of this thread's CPU time. */
__attribute__((noinline)) void *run_phases(void *arg)
{
	double seconds = *(double *)arg, end;
	char *workspace = malloc(WORKSPACE_BYTES), *top;
	unsigned long n = 0;

	if (!workspace)
		exit(1);
	/* 16-byte aligned, as rsp is before a call */
	top = (char *)(((unsigned long)workspace + WORKSPACE_BYTES) & ~15ul);
	end = workload_cpu_now() + seconds;
	while (workload_cpu_now() < end) {
		phase_reg(n, top);
		phase_area(n, top);
		phase_frame(n, top);
		n++;
	}
	free(workspace);
	return NULL;
}

__attribute__((noinline)) void *thread_main(void *arg)
{
	return run_phases(arg);
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 2.0) / 2;
	pthread_t thread;

	if (pthread_create(&thread, NULL, thread_main, &seconds))
		return 1;
	run_phases(&seconds);
	pthread_join(thread, NULL);
	printf("%lu\n", sink);
	return 0;
}
