/* No frame pointers; JIT code run on a stack of its own, as BEAM runs each Erlang process:
 * for tests/t_nocfi.sh. Usage: nofp_greenstack SECONDS, SECONDS of CPU time.
 *
 * run_green switches rsp to a separate stack (an anonymous mapping) whose first word is the
 * address of exit_stub, JIT code that switches back, and jumps into green_outer there:
 *
 *   green stack:  exit_stub <- green_outer -> green_inner      (all JIT code, no CFI)
 *   its own:      main -> run_green -> (the switch)
 *
 * Nothing on the green stack leads to main: its walk ends where its first frame returns,
 * at exit_stub. The program says so as BEAM does: its global beam_normal_exit holds that
 * address (hprof reads it from the process, binary/runtime_symbols.h). A stack through
 * green_inner is [jit];[jit];[jit]: exit_stub, green_outer, green_inner. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "workload.h"

#define GREEN_STACK_SIZE (64 << 10)
#define OUTER 0
#define INNER 64
#define EXIT 128

/* Where every green stack ends, as BEAM's variable of this name says of its processes. */
void *beam_normal_exit;

/* The C stack's rsp while the green stack runs (exit_stub reloads it). */
uint64_t c_rsp;

static volatile unsigned long sink;

#define PUT(c, ...)                                                     \
	do {                                                            \
		const uint8_t bytes_[] = { __VA_ARGS__ };               \
		memcpy((c)->at + (c)->len, bytes_, sizeof(bytes_));     \
		(c)->len += sizeof(bytes_);                             \
	} while (0)

struct code {
	uint8_t *at;
	size_t len;
};

/* green_outer(n): n / 8 + 1 calls of green_inner(8192), a callee-saved register pushed. */
static void emit_outer(uint8_t *base)
{
	struct code c = { base + OUTER, 0 };
	int32_t rel;

	PUT(&c, 0x53,				/* push %rbx */
		0x48, 0x89, 0xfb,		/* mov %rdi,%rbx */
		0x48, 0xc1, 0xeb, 0x03,		/* shr $3,%rbx */
		0x48, 0xff, 0xc3);		/* inc %rbx */
	/* loop: mov $8192,%edi; call green_inner; dec %rbx; jnz loop */
	PUT(&c, 0xbf, 0x00, 0x20, 0x00, 0x00, 0xe8);
	rel = (int32_t)(INNER - (OUTER + (int32_t)c.len + 4));
	memcpy(c.at + c.len, &rel, 4);
	c.len += 4;
	PUT(&c, 0x48, 0xff, 0xcb,		/* dec %rbx */
		0x75, 0xf1,			/* jnz loop (-15) */
		0x5b,				/* pop %rbx */
		0xc3);				/* ret: to exit_stub */
}

/* green_inner(n): counts n down in registers. */
static void emit_inner(uint8_t *base)
{
	struct code c = { base + INNER, 0 };

	PUT(&c, 0x48, 0x89, 0xf8,		/* mov %rdi,%rax */
		0x48, 0xff, 0xc8,		/* 1: dec %rax */
		0x75, 0xfb,			/* jnz 1b */
		0xc3);				/* ret */
}

/* exit_stub: back on the C stack, and to run_green: movabs $&c_rsp,%rax; mov (%rax),%rsp;
 * ret. */
static void emit_exit(uint8_t *base)
{
	struct code c = { base + EXIT, 0 };
	uint64_t where = (uint64_t)(uintptr_t)&c_rsp;

	PUT(&c, 0x48, 0xb8);
	memcpy(c.at + c.len, &where, 8);
	c.len += 8;
	PUT(&c, 0x48, 0x8b, 0x20,		/* mov (%rax),%rsp */
		0xc3);				/* ret */
}

/* Runs green_outer(n) on the green stack whose top is top. */
__attribute__((noinline)) void run_green(uint64_t top, void *outer, unsigned long n)
{
	/* past the red zone first: the compiler may keep this leaf's locals there */
	__asm__ volatile("sub $128, %%rsp\n\t"
			 "lea 1f(%%rip), %%rax\n\t"
			 "push %%rax\n\t"
			 "mov %%rsp, c_rsp(%%rip)\n\t"
			 "mov %[top], %%rsp\n\t"
			 "push %[exit]\n\t"
			 "jmp *%[fn]\n\t"
			 "1:\n\t"
			 "add $128, %%rsp\n\t"
			 : "+D"(n)
			 : [top] "r"(top), [exit] "r"(beam_normal_exit), [fn] "r"(outer)
			 : "rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "memory", "cc");
	sink++;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start;
	uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *stack = mmap(NULL, GREEN_STACK_SIZE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned seed = 1;

	if (code == MAP_FAILED || stack == MAP_FAILED) {
		perror("nofp_greenstack: mmap");
		return 1;
	}
	memset(code, 0xcc, 4096);
	emit_outer(code);
	emit_inner(code);
	emit_exit(code);
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) < 0) {
		perror("nofp_greenstack: mprotect");
		return 1;
	}
	beam_normal_exit = code + EXIT;
	start = workload_cpu_now();
	while (workload_cpu_now() - start < seconds) {
		seed = seed * 1103515245u + 12345u;
		/* 16-byte aligned before the push, as at a call */
		run_green((uint64_t)(uintptr_t)(stack + GREEN_STACK_SIZE), code + OUTER,
			  64 + (seed >> 8) % 64);
	}
	return 0;
}
