/* Process and thread churn: PROCS short-lived processes (each a fork that execs this
 * program again, which exits at once) and THREADS short-lived threads, a batch at a time.
 * Usage: nofp_churn PROCS THREADS
 * Prints "done PROCS THREADS" when every one has been started and reaped. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BATCH 50

static volatile unsigned long sink;

static void *brief_thread(void *arg)
{
	for (unsigned long i = 0; i < 10000; i++)
		sink += i ^ (unsigned long)arg;
	return NULL;
}

static int run_processes(const char *self, int n)
{
	for (int done = 0; done < n; done += BATCH) {
		pid_t pids[BATCH];
		int batch = n - done < BATCH ? n - done : BATCH;

		for (int i = 0; i < batch; i++) {
			pids[i] = fork();
			if (pids[i] == 0) {
				execl(self, self, "child", (char *)NULL);
				_exit(127);
			}
			if (pids[i] < 0)
				return -1;
		}
		for (int i = 0; i < batch; i++) {
			int status;

			if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
			    WEXITSTATUS(status) != 0)
				return -1;
		}
	}
	return 0;
}

static int run_threads(int n)
{
	for (int done = 0; done < n; done += BATCH) {
		pthread_t threads[BATCH];
		int batch = n - done < BATCH ? n - done : BATCH;

		for (int i = 0; i < batch; i++) {
			if (pthread_create(&threads[i], NULL, brief_thread, (void *)(long)i))
				return -1;
		}
		for (int i = 0; i < batch; i++)
			pthread_join(threads[i], NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int procs, threads;

	if (argc == 2 && strcmp(argv[1], "child") == 0)
		return 0;
	if (argc != 3) {
		fprintf(stderr, "usage: nofp_churn PROCS THREADS\n");
		return 2;
	}
	procs = atoi(argv[1]);
	threads = atoi(argv[2]);
	if (run_processes("/proc/self/exe", procs) || run_threads(threads)) {
		fprintf(stderr, "nofp_churn: a process or thread failed\n");
		return 1;
	}
	printf("done %d %d\n", procs, threads);
	return 0;
}
