/* No frame pointers; code without CFI that a trampoline jumps to and runs in its own frame
 * (nofp_jumpframe.S), as GHC's StgRun runs Haskell code. For tests/t_nocfi.sh. Usage:
 * nofp_jumpframe SECONDS, SECONDS of CPU time. True call chains (jump_enter's frame is the
 * jumped code's: a tail jump, which no frame shows, as no frame shows a tail call):
 *
 *   main -> (pointer) run_jump -> jump_enter -> (jump) jumped_spin
 *   main -> (pointer) run_jump -> jump_enter -> (jump) jumped_spin -> (jump) jumped_more
 *        -> jumped_c_work
 *   main -> (pointer) run_jump -> plant_decoys
 *   main -> workload_seconds, workload_cpu_now (workload.h) -> (libc)
 *
 * Before each round, plant_decoys fills the stack below run_jump, where jump_enter's frame
 * will be: every other round with copies of the return addresses a scan could take,
 * jump_enter's own (after the call in run_jump, but at other depths than the one it jumps
 * at) and run_jump's (after main's call through a pointer, whose walk reaches the start);
 * the others with zeros, so that the first return address above jumped_spin's frame that
 * follows a call through a pointer is main's, and leads to the start. */
#include <stdint.h>

#include "workload.h"

void jump_enter(void (*code)(void), unsigned long n);
void jumped_spin(void);
void jumped_more(void);
unsigned long jumped_c_work(unsigned long n);

extern uintptr_t jump_enter_ra;
static volatile unsigned long sink;

/* Called by jumped_more: a loop of its own, so that samples land below the jumped code. */
__attribute__((noinline)) unsigned long jumped_c_work(unsigned long n)
{
	unsigned long sum = 0;

	for (unsigned long i = 0; i < n; i++) {
		sum += i ^ n;
		__asm__ volatile("" : "+r"(sum));
	}
	sink += sum;
	return sum;
}

/* 12 KiB of words alternating a and b, then returns: the words stay below. */
__attribute__((noinline)) void plant_decoys(uintptr_t a, uintptr_t b)
{
	volatile uintptr_t words[1536];

	for (unsigned i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		words[i] = i & 1 ? a : b;
}

/* alloca's size, which the compiler cannot know: run_jump's frame is found from rbp. Always
 * the same, so that jump_enter's frame is at the same place in every round, as StgRun's
 * is under GHC's scheduler: the word at its bottom never holds a return address an
 * earlier round left (the jumped code's analysis takes its jump on for a tail call, and
 * the return address at rsp for the frame's). */
static volatile unsigned scratch_size = 32;

/* alloca: run_jump's frame is found from rbp (CFA = rbp + 16), as GHC's scheduler's is in
 * pandoc, and the jumped code uses rbp for its own: the walk must take run_jump's rbp from
 * where jump_enter saved it. */
__attribute__((noinline)) void run_jump(unsigned long n, int decoys)
{
	volatile char *scratch = __builtin_alloca(scratch_size);

	scratch[0] = 0;
	plant_decoys(decoys ? jump_enter_ra : 0, decoys ? (uintptr_t)__builtin_return_address(0) : 0);
	jump_enter(jumped_spin, n);
}

/* volatile: the compiler cannot turn the call through it into a direct call. */
static void (*volatile run_jump_ptr)(unsigned long n, int decoys) = run_jump;

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_cpu_now();

	for (unsigned long round = 1; workload_cpu_now() - start < seconds; round++) {
		/* the round's multiplicative hash: calls of varying length, well under a sample
		 * period, so that samples do not lock onto the sampling's phase */
		unsigned long r = (round * 2654435761u) & 0xffffffu;

		run_jump_ptr(100000 + r % 100000, round & 1);
	}
	return 0;
}
