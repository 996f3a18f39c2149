/* No frame pointers: a coroutine (makecontext/swapcontext) runs most of the hot code,
 * __start_context -> coro_entry -> coro_work -> coro_spin, switching back to the thread's
 * own stack after every slice, where main does a quarter as much work of its own
 * (main -> run_* -> drive -> main_spin). The coroutine's outermost frame is coro_entry,
 * the function makecontext started: its return address is glibc's __start_context.
 * The coroutine's stack is mmap'd, far from the thread's stack, or with "onstack" an array
 * in run_onstack's frame: then the coroutine runs below the thread's outermost frame,
 * within a copy's ceiling of it.
 * Usage: nofp_coro [SECONDS] [mmap|onstack] (defaults 3 s, mmap). */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "workload.h"

#define CORO_STACK_SIZE (256 * 1024)
#define CORO_ONSTACK_SIZE (32 * 1024)

static volatile unsigned long sink;
static ucontext_t main_ctx, coro_ctx;
static volatile int done;

__attribute__((noinline)) void coro_spin(void)
{
	for (unsigned long i = 0; i < 2000000; i++)
		sink += i ^ (i >> 2);
}

__attribute__((noinline)) void coro_work(void)
{
	coro_spin();
	sink++;
}

/* Runs until main says stop, yielding to main after each slice of work. */
__attribute__((noinline)) void coro_entry(void)
{
	while (!done) {
		coro_work();
		swapcontext(&coro_ctx, &main_ctx);
	}
}

__attribute__((noinline)) void main_spin(void)
{
	for (unsigned long i = 0; i < 500000; i++)
		sink += i ^ (i >> 2);
}

/* Main's own work between the coroutine's slices. */
__attribute__((noinline)) void drive(void *stack, size_t size, double seconds)
{
	double start = workload_now();

	getcontext(&coro_ctx);
	coro_ctx.uc_stack.ss_sp = stack;
	coro_ctx.uc_stack.ss_size = size;
	coro_ctx.uc_link = &main_ctx;
	makecontext(&coro_ctx, coro_entry, 0);
	while (workload_now() - start < seconds) {
		main_spin();
		swapcontext(&main_ctx, &coro_ctx);
	}
	done = 1;
	swapcontext(&main_ctx, &coro_ctx);
}

__attribute__((noinline)) int run_mmap(double seconds)
{
	void *stack = mmap(NULL, CORO_STACK_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (stack == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	drive(stack, CORO_STACK_SIZE, seconds);
	return 0;
}

__attribute__((noinline)) int run_onstack(double seconds)
{
	_Alignas(16) char stack[CORO_ONSTACK_SIZE];

	/* Every page of the array present: the sampler reads stacks without faulting pages
	 * in, and this test is about where the copy ends, not about holes in it. */
	memset(stack, 0, sizeof(stack));
	drive(stack, sizeof(stack), seconds);
	sink += (unsigned char)stack[0];
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0);
	int onstack = argc > 2 && strcmp(argv[2], "onstack") == 0;
	int err = onstack ? run_onstack(seconds) : run_mmap(seconds);

	printf("coro done (%s)\n", onstack ? "onstack" : "mmap");
	return err;
}
