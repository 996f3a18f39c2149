/* No frame pointers: the process signals itself in a loop with an empty handler, so a good
 * share of its samples land in the kernel's rt_sigreturn, entered from libc's __restore_rt.
 * There the user ip lies just past the trampoline's syscall instruction, where its CFI
 * ends: main -> storm -> raise (libc) -> [signal frame] -> __restore_rt -> kernel.
 * Usage: nofp_sigstorm [SECONDS] (default 3). */
#include <signal.h>
#include <stdio.h>

#include "workload.h"

static volatile sig_atomic_t delivered;

static void on_signal(int sig)
{
	(void)sig;
	delivered++;
}

__attribute__((noinline)) void storm(double seconds)
{
	double start = workload_now();

	while (workload_now() - start < seconds) {
		for (int i = 0; i < 1000; i++)
			raise(SIGUSR1);
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	storm(workload_seconds(argc, argv, 3.0));
	printf("sigstorm done %d\n", delivered > 0);
	return 0;
}
