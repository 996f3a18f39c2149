/* No frame pointers: the hot code runs in a SIGALRM handler on an alternate signal stack
 * (sigaltstack, mmap'd apart from the thread's stack): main -> wait_for_signals
 * (interrupted) -> [signal frame] -> on_alarm -> busy_in_handler, the last two on the
 * alternate stack. Usage: nofp_altstack [SECONDS] (default 3). */
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/time.h>

#include "workload.h"

#define ALT_STACK_SIZE (64 * 1024)

static volatile unsigned long sink;
static volatile sig_atomic_t alarms, on_alt_stack;
static char *alt_stack;

__attribute__((noinline)) void busy_in_handler(void)
{
	/* About 9 ms of a 10 ms timer period: nearly all samples are in the handler. */
	double until = workload_now() + 0.009;
	char here;

	on_alt_stack = &here >= alt_stack && &here < alt_stack + ALT_STACK_SIZE;
	while (workload_now() < until) {
		for (int i = 0; i < 20000; i++)
			sink += (unsigned long)i * 7;
	}
}

__attribute__((noinline)) void on_alarm(int sig)
{
	(void)sig;
	busy_in_handler();
	alarms++;
}

__attribute__((noinline)) void wait_for_signals(double seconds)
{
	double start = workload_now();

	while (workload_now() - start < seconds)
		sink++;
}

int main(int argc, char **argv)
{
	struct itimerval timer = { .it_interval = { 0, 10000 }, .it_value = { 0, 10000 } };
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_ONSTACK };
	stack_t ss = { .ss_size = ALT_STACK_SIZE };

	alt_stack = mmap(NULL, ALT_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	if (alt_stack == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	ss.ss_sp = alt_stack;
	if (sigaltstack(&ss, NULL) != 0) {
		perror("sigaltstack");
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	/* ITIMER_REAL counts wall time, so handlers run however busy main is. */
	setitimer(ITIMER_REAL, &timer, NULL);
	wait_for_signals(workload_seconds(argc, argv, 3.0));
	timer = (struct itimerval){ 0 };
	setitimer(ITIMER_REAL, &timer, NULL);
	printf("altstack done %d on the alternate stack %d\n", alarms > 0, on_alt_stack);
	return 0;
}
