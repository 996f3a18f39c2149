/* No frame pointers in the C part; two functions of x86-64 machine code generated into an
 * anonymous executable mapping, without CFI, for tests/t_nocfi.sh.
 * Usage: nofp_jitgen SECONDS [--fp] [--long] [--late | --late-brief]
 * [--memfd | --shared | --image PATH] [--perf-map] [--jitdump],
 * SECONDS of CPU time. True
 * call chains:
 *
 *   main -> run_generated -> jitgen_a -> jitgen_b
 *   main -> run_generated -> jitgen_late_a -> jitgen_late_b      with --late
 *   main -> setup -> (libc)                        code, map files, before the loop
 *   main -> workload_seconds, workload_cpu_now (workload.h) -> (libc)
 *
 * jitgen_a(n) counts n / 4 + 1 down over a local, then calls jitgen_b(n) (call rel32);
 * jitgen_b(n) counts n down over a local. Without --fp neither touches rbp: they push a
 * callee-saved register and take locals with sub, free them with add, pop and ret. With
 * --fp both keep a frame record (push %rbp; mov %rsp,%rbp ... leave; ret).
 *   --long      puts each function's epilogue 32 KiB past its loop, reached by a jmp rel32
 *               over int3 filler (oneDNN's JIT GEMM kernels are 60-110 KiB with one
 *               return at the end): more than an analysis reads at first; jitgen_b's
 *               loop is unrolled 1024 times (emit_unrolled_loop)
 *   --late      also writes a second pair, jitgen_late_a and jitgen_late_b, LATE_OFFSET into
 *               a writable and executable mapping (HotSpot's code cache) once the
 *               SECONDS are up, runs it for LATE_SECONDS of CPU time and exits: code
 *               first run in the process's last moments, whose samples are walked after
 *               it exited, past where the first pair's analyses read
 *   --late-brief the same for LATE_BRIEF_SECONDS: over before any of its samples is walked
 *   --memfd     writes the code through a writable shared mapping of a memfd and runs it
 *               from a second, executable mapping of the same memfd, as BEAM's and .NET's
 *               JITs do: code in a file (/memfd:jitgen), but no ELF one
 *   --shared    writes it into shared anonymous memory, as PHP's opcache JIT does: its
 *               mapping is named "/dev/zero (deleted)"
 *   --image PATH
 *               writes it into a private, writable and executable mapping of the file PATH
 *               (zeros but for the code: no ELF), as SBCL maps its core and compiles
 *               into it
 *   --perf-map  writes /tmp/perf-PID.map naming both functions, and prints "map PATH"
 *   --jitdump   writes /tmp/jit-PID.dump in perf's jitdump format (a JIT_CODE_LOAD record
 *               for each function) and maps its first page executable once, the marker
 *               perf looks for; prints "jitdump PATH"
 * Without either the functions have no name anywhere. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workload.h"

#define CODE_SIZE 4096
/* jitgen_b's offset in the mapping; jitgen_a is at 0. */
#define B_OFFSET 128
/* With --long: the mapping's size, jitgen_b's offset, and how far past the start of a
 * function's loop its epilogue is. */
#define LONG_CODE_SIZE (96 << 10)
#define LONG_B_OFFSET (48 << 10)
#define LONG_TAIL (32 << 10)
/* With --late: the mapping's size, where the late pair goes, and how long it runs. */
#define LATE_CODE_SIZE (64 << 10)
#define LATE_OFFSET (32 << 10)
#define LATE_SECONDS 0.06
#define LATE_BRIEF_SECONDS 0.004

typedef void (*generated_fn)(unsigned long n);

struct options {
	bool fp, long_tail, late, memfd, shared, perf_map, jitdump;
	double late_seconds;
	const char *image;
};

/* Machine code being written into a buffer. */
struct code {
	unsigned char *base;
	size_t len;
};

struct function {
	const char *name;
	uintptr_t start;
	size_t size;
};

static volatile unsigned long sink;

#define PUT(c, ...)                                                     \
	do {                                                            \
		static const unsigned char bytes_[] = { __VA_ARGS__ };  \
		memcpy((c)->base + (c)->len, bytes_, sizeof(bytes_));   \
		(c)->len += sizeof(bytes_);                             \
	} while (0)

/* A jmp rel32 from c's end to tail's start. */
static void emit_jmp(struct code *c, const struct code *tail)
{
	int32_t rel;

	PUT(c, 0xe9);
	rel = (int32_t)(tail->base - (c->base + c->len + 4));
	memcpy(c->base + c->len, &rel, sizeof(rel));
	c->len += sizeof(rel);
}

/* Where a function's epilogue goes: right after its body, or (long) far past its loop,
 * in tail, reached by a jump. */
static struct code *epilogue_at(struct code *c, struct code *tail)
{
	if (!tail)
		return c;
	emit_jmp(c, tail);
	return tail;
}

/* jitgen_b's loop with --long: n / UNROLL rounds of UNROLL stores each, as a GEMM kernel
 * unrolls its loop: samples fall on many pcs, and the process's last ones, walked after
 * it exited, on pcs not analysed before. */
#define UNROLL 1024

static void emit_unrolled_loop(struct code *c)
{
	int32_t rel;
	size_t loop;

	PUT(c, 0x48, 0x89, 0xf8,		/* mov %rdi,%rax */
	       0x48, 0xc1, 0xe8, 0x0a,		/* shr $10,%rax (UNROLL) */
	       0x48, 0x83, 0xc0, 0x01);		/* add $1,%rax */
	loop = c->len;
	for (int i = 0; i < UNROLL; i++)
		PUT(c, 0x48, 0x89, 0x04, 0x24);	/* 1: mov %rax,(%rsp) */
	PUT(c, 0x48, 0xff, 0xc8,		/* dec %rax */
	       0x0f, 0x85);			/* jne 1b (rel32) */
	rel = (int32_t)(loop - (c->len + 4));
	memcpy(c->base + c->len, &rel, sizeof(rel));
	c->len += sizeof(rel);
}

/* jitgen_b(n): counts rax = n down to 0, storing it into a local each round. */
static void emit_b(struct code *c, bool fp, struct code *tail)
{
	if (fp)
		PUT(c, 0x55,			/* push %rbp */
		       0x48, 0x89, 0xe5,	/* mov %rsp,%rbp */
		       0x48, 0x83, 0xec, 0x10);	/* sub $0x10,%rsp */
	else
		PUT(c, 0x41, 0x54,		/* push %r12 */
		       0x48, 0x83, 0xec, 0x10);	/* sub $0x10,%rsp */
	if (tail) {
		emit_unrolled_loop(c);
	} else {
		PUT(c, 0x48, 0x89, 0xf8,	/* mov %rdi,%rax */
		       0x48, 0x89, 0x04, 0x24,	/* 1: mov %rax,(%rsp) */
		       0x48, 0xff, 0xc8,	/* dec %rax */
		       0x75, 0xf7);		/* jne 1b */
	}
	c = epilogue_at(c, tail);
	if (fp)
		PUT(c, 0xc9,			/* leave */
		       0xc3);			/* ret */
	else
		PUT(c, 0x48, 0x83, 0xc4, 0x10,	/* add $0x10,%rsp */
		       0x41, 0x5c,		/* pop %r12 */
		       0xc3);			/* ret */
}

/* jitgen_a(n): counts n / 4 + 1 down, storing it into a local each round, then calls
 * jitgen_b(n) at b. */
static void emit_a(struct code *c, bool fp, const unsigned char *b, struct code *tail)
{
	int32_t rel;

	if (fp)
		PUT(c, 0x55,			/* push %rbp */
		       0x48, 0x89, 0xe5,	/* mov %rsp,%rbp */
		       0x53,			/* push %rbx */
		       0x48, 0x83, 0xec, 0x18);	/* sub $0x18,%rsp */
	else
		PUT(c, 0x53,			/* push %rbx */
		       0x48, 0x83, 0xec, 0x20);	/* sub $0x20,%rsp */
	PUT(c, 0x48, 0x89, 0xfb,		/* mov %rdi,%rbx */
	       0x48, 0x89, 0xf8,		/* mov %rdi,%rax */
	       0x48, 0xc1, 0xe8, 0x02,		/* shr $2,%rax */
	       0x48, 0x83, 0xc0, 0x01,		/* add $1,%rax */
	       0x48, 0x89, 0x44, 0x24, 0x08,	/* 1: mov %rax,0x8(%rsp) */
	       0x48, 0xff, 0xc8,		/* dec %rax */
	       0x75, 0xf6,			/* jne 1b */
	       0x48, 0x89, 0xdf,		/* mov %rbx,%rdi */
	       0xe8);				/* call b (rel32 from the next instruction) */
	rel = (int32_t)(b - (c->base + c->len + 4));
	memcpy(c->base + c->len, &rel, sizeof(rel));
	c->len += sizeof(rel);
	c = epilogue_at(c, tail);
	if (fp)
		PUT(c, 0x48, 0x8b, 0x5d, 0xf8,	/* mov -0x8(%rbp),%rbx */
		       0xc9,			/* leave */
		       0xc3);			/* ret */
	else
		PUT(c, 0x48, 0x83, 0xc4, 0x20,	/* add $0x20,%rsp */
		       0x5b,			/* pop %rbx */
		       0xc3);			/* ret */
}

/* The mapping the code is written into, and where it runs (*run): the same anonymous
 * mapping (shared with --shared), made executable once written, or with --memfd two
 * mappings of one memfd. */
static unsigned char *code_mapping(const struct options *o, size_t size, unsigned char **run)
{
	unsigned char *base;
	int fd;

	*run = NULL;
	if (o->image) {
		fd = open(o->image, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
			return NULL;
		base = mmap(NULL, size, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE, fd, 0);
		close(fd);
		*run = base;
		return base == MAP_FAILED ? NULL : base;
	}
	if (o->late) {
		base = mmap(NULL, size, PROT_READ | PROT_WRITE | PROT_EXEC,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		*run = base;
		return base == MAP_FAILED ? NULL : base;
	}
	if (!o->memfd) {
		base = mmap(NULL, size, PROT_READ | PROT_WRITE,
			    (o->shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
		*run = base;
		return base == MAP_FAILED ? NULL : base;
	}
	fd = memfd_create("jitgen", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		return NULL;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	*run = mmap(NULL, size, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	close(fd);
	return base == MAP_FAILED || *run == MAP_FAILED ? NULL : base;
}

/* The most functions named: both pairs with --late. */
#define MAX_FUNCTIONS 4

/* Writes the pair of functions at a (b at b_offset past it) into code the caller made
 * writable; the pair's sizes to *a_len, *b_len. */
static void emit_pair(unsigned char *a_at, size_t b_offset, bool fp, bool long_tail, size_t *a_len,
		      size_t *b_len)
{
	struct code a = { a_at, 0 }, b = { a_at + b_offset, 0 };
	struct code a_tail = { a_at + LONG_TAIL, 0 }, b_tail = { b.base + LONG_TAIL, 0 };

	/* the call from a to b is relative: the same bytes in either mapping */
	emit_b(&b, fp, long_tail ? &b_tail : NULL);
	emit_a(&a, fp, b.base, long_tail ? &a_tail : NULL);
	/* a long function spans its epilogue */
	*a_len = long_tail ? LONG_TAIL + a_tail.len : a.len;
	*b_len = long_tail ? LONG_TAIL + b_tail.len : b.len;
}

/* Writes both functions into new executable code; fills fns[0] (a), fns[1] (b) with the
 * addresses they run at, and with --late fns[2], fns[3] with where the late pair will
 * (late_pair). Returns how many it filled, or -1. */
static int generate(const struct options *o, struct function fns[MAX_FUNCTIONS])
{
	size_t size = o->long_tail ? LONG_CODE_SIZE : o->late ? LATE_CODE_SIZE : CODE_SIZE;
	unsigned char *run, *base = code_mapping(o, size, &run);
	size_t b_offset = o->long_tail ? LONG_B_OFFSET : B_OFFSET, a_len, b_len;

	if (!base)
		return -1;
	memset(base, 0xcc, size); /* int3 between the functions */
	emit_pair(base, b_offset, o->fp, o->long_tail, &a_len, &b_len);
	if (!o->memfd && !o->image && !o->late && mprotect(base, size, PROT_READ | PROT_EXEC) < 0)
		return -1;
	fns[0] = (struct function){ "jitgen_a", (uintptr_t)run, a_len };
	fns[1] = (struct function){ "jitgen_b", (uintptr_t)run + b_offset, b_len };
	if (!o->late)
		return 2;
	/* the late pair's code is the first's, at another place */
	fns[2] = (struct function){ "jitgen_late_a", (uintptr_t)run + LATE_OFFSET, a_len };
	fns[3] = (struct function){ "jitgen_late_b", (uintptr_t)run + LATE_OFFSET + b_offset, b_len };
	return 4;
}

static int write_perf_map(const struct function *fns, int nr)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	printf("map %s\n", path);
	fflush(stdout);
	f = fopen(path, "w");
	if (!f)
		return -1;
	for (int i = 0; i < nr; i++)
		fprintf(f, "%lx %zx %s\n", (unsigned long)fns[i].start, fns[i].size, fns[i].name);
	return fclose(f);
}

/* perf's jitdump format (tools/perf/util/jitdump.h): a header, then records. */
struct jitdump_header {
	uint32_t magic, version, total_size, elf_mach, pad1, pid;
	uint64_t timestamp, flags;
};

struct jitdump_code_load {
	uint32_t id, total_size;
	uint64_t timestamp;
	uint32_t pid, tid;
	uint64_t vma, code_addr, code_size, code_index;
	/* then the name, NUL-terminated, then the code */
};

#define JITDUMP_MAGIC 0x4A695444 /* "JiTD" */
#define JITDUMP_CODE_LOAD 0
#define EM_X86_64_ 62

/* perf's default clock for jitdump timestamps. */
static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int write_code_load(FILE *f, const struct function *fn, uint64_t index)
{
	size_t name_len = strlen(fn->name) + 1;
	struct jitdump_code_load rec = {
		.id = JITDUMP_CODE_LOAD,
		.total_size = (uint32_t)(sizeof(rec) + name_len + fn->size),
		.timestamp = monotonic_ns(),
		.pid = (uint32_t)getpid(),
		.tid = (uint32_t)gettid(),
		.vma = fn->start,
		.code_addr = fn->start,
		.code_size = fn->size,
		.code_index = index,
	};

	return fwrite(&rec, sizeof(rec), 1, f) == 1 && fwrite(fn->name, name_len, 1, f) == 1 &&
	       fwrite((const void *)fn->start, fn->size, 1, f) == 1 ? 0 : -1;
}

/* The dump's first page mapped executable is perf's marker: it finds the file through
 * that mapping. The mapping stays for the process's life, as perf's JIT agents keep it. */
static int write_jitdump(const struct function *fns, int nr)
{
	struct jitdump_header hdr = {
		.magic = JITDUMP_MAGIC,
		.version = 1,
		.total_size = sizeof(hdr),
		.elf_mach = EM_X86_64_,
		.pid = (uint32_t)getpid(),
		.timestamp = monotonic_ns(),
	};
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/jit-%d.dump", (int)getpid());
	printf("jitdump %s\n", path);
	fflush(stdout);
	f = fopen(path, "w+");
	if (!f || fwrite(&hdr, sizeof(hdr), 1, f) != 1 || fflush(f) != 0)
		return -1;
	if (mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC, MAP_PRIVATE,
		 fileno(f), 0) == MAP_FAILED)
		return -1;
	for (int i = 0; i < nr; i++)
		if (write_code_load(f, &fns[i], (uint64_t)i) < 0)
			return -1;
	return fclose(f);
}

/* Everything before the loop: the code, then the files naming it. */
__attribute__((noinline)) generated_fn setup(const struct options *o)
{
	struct function fns[MAX_FUNCTIONS];
	int nr = generate(o, fns);

	if (nr < 0) {
		perror("nofp_jitgen: code");
		return NULL;
	}
	if ((o->perf_map && write_perf_map(fns, nr) < 0) ||
	    (o->jitdump && write_jitdump(fns, nr) < 0)) {
		perror("nofp_jitgen: map file");
		return NULL;
	}
	return (generated_fn)fns[0].start;
}

__attribute__((noinline)) void run_generated(generated_fn fn, unsigned long n)
{
	fn(n);
	sink++;
}

/* --late: writes the late pair LATE_OFFSET past the first (its mapping is writable) and
 * runs it for o->late_seconds; the process exits right after. */
__attribute__((noinline)) void run_late_pair(const struct options *o, generated_fn first,
					     unsigned *seed)
{
	generated_fn late = (generated_fn)((uintptr_t)first + LATE_OFFSET);
	size_t a_len, b_len;
	double start;

	emit_pair((unsigned char *)late, B_OFFSET, o->fp, false, &a_len, &b_len);
	__builtin___clear_cache((char *)late, (char *)late + B_OFFSET + b_len);
	start = workload_cpu_now();
	while (workload_cpu_now() - start < o->late_seconds) {
		*seed = *seed * 1103515245u + 12345u;
		run_generated(late, 100 * 1000 + (*seed >> 8) % (100 * 1000));
	}
}

static int parse_options(int argc, char **argv, struct options *o)
{
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--fp") == 0)
			o->fp = true;
		else if (strcmp(argv[i], "--long") == 0)
			o->long_tail = true;
		else if (strcmp(argv[i], "--late") == 0 || strcmp(argv[i], "--late-brief") == 0) {
			o->late = true;
			o->late_seconds = argv[i][6] ? LATE_BRIEF_SECONDS : LATE_SECONDS;
		}
		else if (strcmp(argv[i], "--memfd") == 0)
			o->memfd = true;
		else if (strcmp(argv[i], "--shared") == 0)
			o->shared = true;
		else if (strcmp(argv[i], "--perf-map") == 0)
			o->perf_map = true;
		else if (strcmp(argv[i], "--jitdump") == 0)
			o->jitdump = true;
		else if (strcmp(argv[i], "--image") == 0 && i + 1 < argc)
			o->image = argv[++i];
		else
			return -1;
	}
	/* the late pair goes into the plain code's anonymous mapping, named by a perf map:
	 * a jitdump would copy its bytes before they are written */
	if (o->late && (o->long_tail || o->memfd || o->shared || o->image || o->jitdump))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start;
	struct options o = { 0 };
	generated_fn fn;
	unsigned seed = 1;

	if (parse_options(argc, argv, &o) < 0) {
		fprintf(stderr, "usage: nofp_jitgen SECONDS [--fp] [--long] [--late | --late-brief] [--memfd | --shared | --image PATH] [--perf-map] [--jitdump]\n");
		return 2;
	}
	fn = setup(&o);
	if (!fn)
		return 1;
	start = workload_cpu_now();
	/* Calls well under a sample period, of varying length (see fp_jit.c). */
	while (workload_cpu_now() - start < seconds) {
		seed = seed * 1103515245u + 12345u;
		run_generated(fn, 100 * 1000 + (seed >> 8) % (100 * 1000));
	}
	if (o.late)
		run_late_pair(&o, fn, &seed);
	return 0;
}
