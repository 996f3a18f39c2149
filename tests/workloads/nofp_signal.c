/* No frame pointers: the hot code runs in a SIGALRM handler, so the stack passes through
 * the kernel's signal frame (__restore_rt): main -> wait_for_signals (interrupted) ->
 * [signal frame] -> on_alarm -> busy_in_handler.
 * Usage: nofp_signal [SECONDS] (default 3). */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

#include "workload.h"

static volatile unsigned long sink;
static volatile sig_atomic_t alarms;

__attribute__((noinline)) void busy_in_handler(void)
{
	/* About 9 ms of a 10 ms timer period: nearly all samples are in the handler. */
	double until = workload_now() + 0.009;

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
	struct sigaction sa = { .sa_handler = on_alarm };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	/* ITIMER_REAL counts wall time, so handlers run however busy main is. */
	setitimer(ITIMER_REAL, &timer, NULL);
	wait_for_signals(workload_seconds(argc, argv, 3.0));
	timer = (struct itimerval){ 0 };
	setitimer(ITIMER_REAL, &timer, NULL);
	printf("signal done %d\n", alarms > 0);
	return 0;
}
