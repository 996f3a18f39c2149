/* No frame pointers; a leaf without CFI with decoys planted in its frame (nofp_decoys.S),
 * for tests/t_nocfi.sh: a stack scan or a frame-record step that takes a decoy for the
 * return address gives a stack through decoy_unused, decoy_stale or decoy_zero, which
 * never run.
 * Usage: nofp_decoys SECONDS [--via-pointer], SECONDS of CPU time. With --via-pointer
 * decoy_caller calls the leaf through a pointer, as decoy_zero's call is: a scan then
 * meets decoy (d) before the true return address among the candidates of that kind. True
 * call chains:
 *
 *   main -> decoy_caller -> asm_decoy_leaf
 *   main -> parse_options -> (libc)
 *   main -> workload_seconds, workload_cpu_now (workload.h) -> (libc)  */
#include <string.h>

#include "workload.h"

unsigned long asm_decoy_leaf(unsigned long n);

/* Never called: the address after its indirect call is decoy (d). Its CFI says its return
 * address is 16 bytes above the call's: where asm_decoy_leaf plants a zero. (Top-level
 * asm: the CFI must say exactly that, whatever the compiler would make of a C function.) */
__asm__(".text\n"
	".globl decoy_zero\n"
	".type decoy_zero, @function\n"
	"decoy_zero:\n"
	".cfi_startproc\n"
	"	sub $8, %rsp\n"
	".cfi_adjust_cfa_offset 8\n"
	"	call *%rdi\n"
	".globl decoy_zero_ret\n"
	"decoy_zero_ret:\n"
	"	add $8, %rsp\n"
	".cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size decoy_zero, . - decoy_zero\n");

static unsigned long (*volatile leaf_pointer)(unsigned long) = asm_decoy_leaf;

__attribute__((noinline)) void decoy_caller(unsigned long n, int via_pointer)
{
	if (via_pointer)
		leaf_pointer(n);
	else
		asm_decoy_leaf(n);
}

__attribute__((noinline)) int parse_options(int argc, char **argv)
{
	return argc > 2 && strcmp(argv[2], "--via-pointer") == 0;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_cpu_now();
	int via_pointer = parse_options(argc, argv);
	unsigned seed = 1;

	/* Calls well under a sample period, of varying length (see fp_jit.c). */
	while (workload_cpu_now() - start < seconds) {
		seed = seed * 1103515245u + 12345u;
		decoy_caller(100 * 1000 + (seed >> 8) % (100 * 1000), via_pointer);
	}
	return 0;
}
