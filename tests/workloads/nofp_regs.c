/* No frame pointers; frames whose unwinding needs registers besides rsp and rbp, or no CFI
 * at all, for tests/t_regs.sh. Usage: nofp_regs SECONDS MODE, MODE one of
 *   bx     main -> bx_loop -> bx_frame -> saves_bx -> bx_spin. bx_frame (assembly) is shaped
 *          like glibc's lazy-binding trampoline _dl_runtime_resolve_*: push %rbx; mov %rsp,
 *          %rbx, then rsp realigned, so that its CFA is rbx + 16 and nothing else. saves_bx
 *          saves rbx and puts another value in it, so that a walk from bx_spin finds
 *          bx_frame's rbx in saves_bx's save only.
 *   rdi    main -> rdi_loop -> rdi_spin. rdi_spin (assembly) pops its return address into
 *          rdi, as glibc's __vfork does (DW_CFA_register rip, rdi), and spins, in system
 *          calls (getppid) and in user code.
 *   entry  main -> entry_loop -> entry_probe. entry_probe is the program's DT_INIT (the
 *          Makefile links it with -Wl,-init=entry_probe) and has no CFI at its first
 *          instruction, alone on its page; entry_loop drops the page (MADV_DONTNEED) before
 *          each call, so that the call faults on entry_probe's first instruction and samples
 *          land in the kernel with the user pc there, as they do at a library's _init while
 *          ld.so runs it the first time. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "workload.h"

/* bx_frame(n): calls saves_bx(n) with rsp realigned to 64 bytes. */
__asm__(".pushsection .text\n"
	".globl bx_frame\n"
	".type bx_frame, @function\n"
	"bx_frame:\n"
	".cfi_startproc\n"
	"	push %rbx\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbx, -16\n"
	"	mov %rsp, %rbx\n"
	".cfi_def_cfa_register %rbx\n"
	"	and $-64, %rsp\n"
	"	sub $64, %rsp\n"
	"	call saves_bx\n"
	"	mov %rbx, %rsp\n"
	".cfi_def_cfa_register %rsp\n"
	"	pop %rbx\n"
	".cfi_def_cfa_offset 8\n"
	".cfi_restore %rbx\n"
	"	ret\n"
	".cfi_endproc\n"
	".size bx_frame, . - bx_frame\n"
	".popsection\n");

/* rdi_spin(n): n rounds of a getppid system call and a short loop, its return address in
 * rdi all along. */
__asm__(".pushsection .text\n"
	".globl rdi_spin\n"
	".type rdi_spin, @function\n"
	"rdi_spin:\n"
	".cfi_startproc\n"
	"	mov %rdi, %rsi\n"
	"	pop %rdi\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_register %rip, %rdi\n"
	"1:	mov $110, %eax\n" /* getppid: the kernel keeps rdi and rsi */
	"	syscall\n"
	"	mov $300, %ecx\n"
	"2:	dec %ecx\n"
	"	jnz 2b\n"
	"	dec %rsi\n"
	"	jnz 1b\n"
	"	push %rdi\n"
	".cfi_adjust_cfa_offset 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size rdi_spin, . - rdi_spin\n"
	".popsection\n");

/* entry_probe(): alone on its page; its first instruction has no CFI, the rest (a ret) has,
 * so that only a sample at the entry needs the psABI's rule. */
__asm__(".pushsection .text.entry_probe, \"ax\", @progbits\n"
	".balign 4096\n"
	".globl entry_probe\n"
	".type entry_probe, @function\n"
	"entry_probe:\n"
	"	nop\n"
	".cfi_startproc\n"
	"	ret\n"
	".cfi_endproc\n"
	".size entry_probe, . - entry_probe\n"
	".balign 4096\n"
	".popsection\n");

unsigned long bx_frame(unsigned long n);
void rdi_spin(unsigned long n);
void entry_probe(void);

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long bx_spin(unsigned long i)
{
	unsigned long x = i;

	for (int k = 0; k < 300; k++)
		x = x * 3 + (x >> 7);
	sink = x;
	return x;
}

__attribute__((noinline)) unsigned long saves_bx(unsigned long n)
{
	unsigned long acc = 0;

	for (unsigned long i = 0; i < n; i++) {
		/* rbx is no longer bx_frame's: its value is in this frame's save only */
		__asm__ volatile("mov %0, %%rbx" : : "r"(i * 0x10001 + 0x5a5a) : "rbx");
		acc += bx_spin(i);
	}
	return acc;
}

__attribute__((noinline)) void bx_loop(double seconds)
{
	double end = workload_now() + seconds;

	do
		sink += bx_frame(2000);
	while (workload_now() < end);
}

__attribute__((noinline)) void rdi_loop(double seconds)
{
	double end = workload_now() + seconds;

	do
		rdi_spin(200);
	while (workload_now() < end);
}

__attribute__((noinline)) void entry_loop(double seconds)
{
	void *page = (void *)((uintptr_t)entry_probe & ~(uintptr_t)4095);
	double end = workload_now() + seconds;

	do {
		for (int i = 0; i < 200; i++) {
			madvise(page, 4096, MADV_DONTNEED);
			entry_probe();
		}
	} while (workload_now() < end);
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3);
	const char *mode = argc > 2 ? argv[2] : "";

	if (strcmp(mode, "bx") == 0)
		bx_loop(seconds);
	else if (strcmp(mode, "rdi") == 0)
		rdi_loop(seconds);
	else if (strcmp(mode, "entry") == 0)
		entry_loop(seconds);
	else {
		fprintf(stderr, "usage: nofp_regs SECONDS bx|rdi|entry\n");
		return 2;
	}
	return 0;
}
