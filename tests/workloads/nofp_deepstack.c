/* No frame pointers: a thread whose leaf runs with sp 4 bytes off a word boundary, in turn
 * straight under the thread's start routine and under three frames that hold buffers of
 * 64, 60 and 12 KiB (every page touched): ~136 KiB of live stack, deeper than the largest
 * copy (128 KiB).
 *   worker -> shallow -> odd_sp_spin
 *   worker -> deep_a -> deep_b -> deep_c -> odd_sp_spin
 * odd_sp_spin is assembly whose CFI says it reserved 4 bytes. The thread runs shallow
 * alone for its first CPU second, so that hprof learns where its stack ends before the
 * deep calls start.
 * Usage: nofp_deepstack [SECONDS] (default 3), SECONDS of CPU time. */
#include <pthread.h>
#include <stdio.h>

#include "workload.h"

void odd_sp_spin(unsigned long n);

/* Spins n times with 4 bytes reserved on the stack: the samples there have sp = 4 mod 8. */
__asm__(".text\n"
	".globl odd_sp_spin\n"
	".type odd_sp_spin, @function\n"
	"odd_sp_spin:\n"
	".cfi_startproc\n"
	"	sub $4, %rsp\n"
	".cfi_adjust_cfa_offset 4\n"
	"	mov %rdi, %rcx\n"
	"1:	dec %rcx\n"
	"	jnz 1b\n"
	"	add $4, %rsp\n"
	".cfi_adjust_cfa_offset -4\n"
	"	ret\n"
	".cfi_endproc\n"
	".size odd_sp_spin, .-odd_sp_spin\n");

#define SPINS 400000ul
#define PAGE 4096
/* CPU seconds of the shallow calls alone, first: time enough, however loaded the machine,
 * for hprof to walk a few of the thread's stacks and tell the kernel where it ends. */
#define SHALLOW_SECONDS 1.0

static volatile unsigned long sink;

/* Touches every page of buf (the kernel cannot copy pages never touched) and keeps it. */
static void touch(volatile char *buf, unsigned long size)
{
	for (unsigned long i = 0; i < size; i += PAGE)
		buf[i] = (char)i;
	sink += buf[size - 1];
}

__attribute__((noinline)) void shallow(void)
{
	odd_sp_spin(SPINS);
	sink++;
}

__attribute__((noinline)) void deep_c(void)
{
	volatile char buf[12 << 10];

	touch(buf, sizeof(buf));
	odd_sp_spin(SPINS);
	sink += buf[0];
}

__attribute__((noinline)) void deep_b(void)
{
	volatile char buf[60 << 10];

	touch(buf, sizeof(buf));
	deep_c();
	sink += buf[0];
}

__attribute__((noinline)) void deep_a(void)
{
	volatile char buf[64 << 10];

	touch(buf, sizeof(buf));
	deep_b();
	sink += buf[0];
}

__attribute__((noinline)) void *worker(void *arg)
{
	double seconds = *(double *)arg, start = workload_cpu_now(), now;

	while ((now = workload_cpu_now()) - start < seconds) {
		shallow();
		if (now - start >= SHALLOW_SECONDS)
			deep_a();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0);
	pthread_t thread;

	if (pthread_create(&thread, NULL, worker, &seconds) != 0) {
		fprintf(stderr, "nofp_deepstack: cannot create the thread\n");
		return 1;
	}
	pthread_join(thread, NULL);
	return 0;
}
