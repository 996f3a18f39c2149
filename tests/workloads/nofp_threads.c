/* No frame pointers: four threads, each with its own chain:
 * start_thread -> thread_main -> worker_N -> stage_N -> spin.
 * Usage: nofp_threads [SECONDS] (default 3). */
#include <pthread.h>
#include <stdio.h>

#include "workload.h"

static volatile unsigned long sink;
static double seconds;

__attribute__((noinline)) void spin(unsigned long rounds)
{
	for (unsigned long i = 0; i < rounds; i++)
		sink += i;
}

#define DEFINE_WORKER(n)                                              \
	__attribute__((noinline)) void stage_##n(void)                \
	{                                                             \
		spin(3000000 + (n));                                  \
		sink++;                                               \
	}                                                             \
	__attribute__((noinline)) void worker_##n(void)               \
	{                                                             \
		double start = workload_now();                        \
		while (workload_now() - start < seconds)              \
			stage_##n();                                  \
		sink++;                                               \
	}

DEFINE_WORKER(0)
DEFINE_WORKER(1)
DEFINE_WORKER(2)
DEFINE_WORKER(3)

static void (*const workers[4])(void) = { worker_0, worker_1, worker_2, worker_3 };

__attribute__((noinline)) void *thread_main(void *arg)
{
	workers[(long)arg]();
	sink++;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[4];

	seconds = workload_seconds(argc, argv, 3.0);
	for (long i = 0; i < 4; i++)
		pthread_create(&threads[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	printf("threads done\n");
	return 0;
}
