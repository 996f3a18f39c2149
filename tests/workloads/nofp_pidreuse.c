/* No frame pointers: one pid, two programs. Runs PROGRAM (exec'd in a child) for SECONDS,
 * reaps it, then forks a child that takes the same pid (clone3 with set_tid, which needs
 * root) and spins in this program's own code: main -> reuse_child -> reuse_spin. Prints
 * "pid reused: PID" when the second child got the first one's pid, else why not.
 * Usage: nofp_pidreuse SECONDS PROGRAM [ARGS...] */
#define _GNU_SOURCE /* clone3's struct */
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

static volatile unsigned long reuse_sink;

__attribute__((noinline)) void reuse_spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		reuse_sink += i ^ 5;
}

__attribute__((noinline)) void reuse_child(double seconds)
{
	double start = workload_now();

	while (workload_now() - start < seconds)
		reuse_spin(20000);
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 0.1);
	struct clone_args args = { .exit_signal = SIGCHLD, .set_tid_size = 1 };
	pid_t first, second;

	if (argc < 3) {
		fprintf(stderr, "usage: nofp_pidreuse SECONDS PROGRAM [ARGS...]\n");
		return 2;
	}
	first = fork();
	if (first == 0) {
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	if (first < 0 || waitpid(first, NULL, 0) != first)
		return 1;
	args.set_tid = (uintptr_t)&first;
	second = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (second == 0) {
		reuse_child(seconds);
		_exit(0);
	}
	if (second < 0) {
		printf("pid not reused: clone3: %s\n", strerror(errno));
		return 1;
	}
	waitpid(second, NULL, 0);
	if (second == first)
		printf("pid reused: %d\n", (int)second);
	else
		printf("pid not reused: %d, then %d\n", (int)first, (int)second);
	return 0;
}
