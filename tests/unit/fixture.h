/* What the unit tests built on the pinned fixtures (tests/fixtures/) share: where the
 * fixtures are, the call chain's addresses as the pinned files hold them, a model process
 * with the chain and the vDSO image mapped, a stack laid out by replaying chain.S's
 * prologues, the kernel's frame-pointer walk over it and a sample record built byte by
 * byte. Every expected address here was read from the pinned files with binutils
 * (tests/fixtures/README.md), never from hprof's own code. Header-only: each unit test is
 * one source file. */
#ifndef HPROF_TESTS_FIXTURE_H
#define HPROF_TESTS_FIXTURE_H

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfi/unwind_table.h"
#include "sample.h"
#include "unwind/walk.h"
#include "check.h"

/* ---- where the fixtures are ---- */

/* tests/fixtures/NAME: HPROF_FIXTURES, else found from the test binary
 * (build/tests/NAME -> tests/fixtures), so a test runs from any directory. */
static inline const char *fixture_path(const char *name)
{
	static char paths[8][PATH_MAX];
	static unsigned next;
	char exe[PATH_MAX], *slash;
	const char *dir = getenv("HPROF_FIXTURES");
	char *path = paths[next++ % 8];
	ssize_t n;

	if (dir) {
		if (snprintf(path, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
			goto too_long;
		return path;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "fixture: cannot find the test binary\n");
		exit(1);
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if (snprintf(path, PATH_MAX, "%s/../../tests/fixtures/%s", exe, name) >= PATH_MAX)
		goto too_long;
	return path;
too_long:
	fprintf(stderr, "fixture: the path of %s is too long\n", name);
	exit(1);
}

/* The whole fixture file; exits when it cannot be read (a missing fixture is a failure,
 * never a skip). */
static inline uint8_t *fixture_read(const char *name, size_t *len)
{
	const char *path = fixture_path(name);
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	long size;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || !(data = malloc((size_t)size + 1)) ||
	    fread(data, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "fixture: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	data[size] = '\0';
	*len = (size_t)size;
	return data;
}

static inline struct unwind_table *fixture_table(const char *name)
{
	struct unwind_table *table = NULL;
	char err[256];

	if (unwind_table__from_file(fixture_path(name), UNWIND_SRC_ALL, &table, err,
				    sizeof(err)) != 0) {
		fprintf(stderr, "fixture: %s\n", err);
		exit(1);
	}
	return table;
}

/* ---- tests/fixtures/chain.S as built (nm -n, objdump -d: README.md) ---- */

/* Function addresses, the same in chain_nofp and chain_fp (each function is 64-byte
 * aligned and shorter than 64 bytes). */
enum {
	CHAIN_THREAD_ENTRY = 0x240,
	CHAIN_WORKER = 0x280,
	CHAIN_START_MAIN = 0x2c0,
	CHAIN_MAIN = 0x300,
	CHAIN_A = 0x340,
	CHAIN_B = 0x380,
	CHAIN_C = 0x3c0,
	CHAIN_LEAF = 0x400,
	CHAIN_JIT_CODE = 0x440,
	CHAIN_EXIT_GROUP = 0x480,
	CHAIN_START = 0x4c0, /* _start, the ELF entry point */
	CHAIN_TEXT_SEGMENT = 0x63c, /* the executable PT_LOAD: [0, 0x63c) at file offset 0 */
	/* Return addresses both builds share: their callers keep no frame pointer. */
	RA_START = 0x4c7,           /* _start -> start_main */
	RA_START_MAIN = 0x2cc,      /* start_main -> main */
	RA_START_MAIN_EXIT = 0x2d3, /* start_main -> exit_group, the end of start_main's FDE */
	RA_THREAD_ENTRY = 0x247,    /* thread_entry -> worker */
	RA_JIT_CODE = 0x449,        /* jit_code -> c */
	/* In leaf's loop, after its prologue (CFA = rsp + 0x20). */
	PC_LEAF_LOOP = 0x409,
	/* exit_group's syscall instruction (CFA = rsp + 8). */
	PC_EXIT_GROUP_SYSCALL = 0x485,
};

/* One build of chain.S: whether main, a, b, c and worker keep a frame pointer, the
 * locals each function's prologue makes room for (chain.S's ENTER) and the return
 * addresses of their calls. */
struct chain_build {
	const char *file;
	bool frame_pointer;
	uint64_t locals_main, locals_a, locals_b, locals_c, locals_worker;
	uint64_t ra_main_a, ra_main_jit, ra_a, ra_b, ra_c, ra_worker;
};

/* start_main and leaf keep no frame pointer in either build. */
#define LOCALS_START_MAIN 0x88
#define LOCALS_LEAF 0x18

static const struct chain_build CHAIN_NOFP = {
	.file = "chain_nofp", .frame_pointer = false,
	.locals_main = 0x8, .locals_a = 0x18, .locals_b = 0x28, .locals_c = 0x38,
	.locals_worker = 0x8,
	.ra_main_a = 0x309, .ra_main_jit = 0x30e, .ra_a = 0x349, .ra_b = 0x389, .ra_c = 0x3c9,
	.ra_worker = 0x289,
};

static const struct chain_build CHAIN_FP = {
	.file = "chain_fp", .frame_pointer = true,
	.locals_main = 0x10, .locals_a = 0x10, .locals_b = 0x20, .locals_c = 0x30,
	.locals_worker = 0x10,
	.ra_main_a = 0x30d, .ra_main_jit = 0x312, .ra_a = 0x34d, .ra_b = 0x38d, .ra_c = 0x3cd,
	.ra_worker = 0x28d,
};

/* ---- the model process ---- */

/* Where the model process has the chain and the vDSO image mapped. */
#define CHAIN_BIAS 0x555555554000ull
#define VDSO_BIAS 0x7ffd00101000ull
#define VDSO_SIZE 0x2000ull
/* An executable anonymous mapping without CFI (JIT code with no perf map). */
#define ANON_CODE_START 0x7f0000000000ull
#define ANON_CODE_END 0x7f0000010000ull

struct model_map {
	uint64_t start, end, bias;
	const struct unwind_table *table; /* NULL: no CFI */
	uint64_t entry;                   /* ELF entry point (vaddr); 0: none */
};

struct model_process {
	struct model_map maps[4];
	unsigned nr;
};

static inline void model_add(struct model_process *p, uint64_t start, uint64_t end,
			     uint64_t bias, const struct unwind_table *table, uint64_t entry)
{
	if (p->nr == sizeof(p->maps) / sizeof(p->maps[0]))
		abort();
	p->maps[p->nr++] = (struct model_map){ start, end, bias, table, entry };
}

static inline const struct model_map *model_find(const struct model_process *p, uint64_t pc)
{
	for (unsigned i = 0; i < p->nr; i++) {
		if (pc >= p->maps[i].start && pc < p->maps[i].end)
			return &p->maps[i];
	}
	return NULL;
}

/* unwind_find_map_fn over the model's mappings. */
static inline int model_find_map(void *ctx, uint64_t pc, struct unwind_map *map)
{
	const struct model_map *m = model_find(ctx, pc);

	if (!m)
		return -ENOENT;
	if (!m->table)
		return -ENODATA;
	*map = (struct unwind_map){ .start = m->start, .end = m->end, .bias = m->bias,
				    .table = m->table };
	return 0;
}

/* The chain build at CHAIN_BIAS, the vDSO image (table may be NULL) at VDSO_BIAS, and
 * anonymous code without CFI. */
static inline void model_init(struct model_process *p, const struct unwind_table *chain,
			      const struct unwind_table *vdso)
{
	p->nr = 0;
	model_add(p, CHAIN_BIAS, CHAIN_BIAS + 0x1000, CHAIN_BIAS, chain, CHAIN_START);
	if (vdso)
		model_add(p, VDSO_BIAS, VDSO_BIAS + VDSO_SIZE, VDSO_BIAS, vdso, 0);
	model_add(p, ANON_CODE_START, ANON_CODE_END, 0, NULL, 0);
}

/* The chain's vaddr as a pc of the model process. */
static inline uint64_t at(uint64_t vaddr)
{
	return CHAIN_BIAS + vaddr;
}

/* ---- a stack laid out as chain.S's code lays it out ---- */

#define SIM_STACK_TOP 0x7ffd00030000ull /* the end of the stack mapping */
#define SIM_STACK_SIZE 0x2000ull
/* _start's sp: argc, argv and the rest lie above it, as the kernel leaves them. */
#define SIM_START_SP (SIM_STACK_TOP - 0x40)
/* What every byte the code did not write holds: no mapping holds 0xa5a5...a5, so a walk
 * that reads a wrong slot as a return address ends unmapped, not silently wrong. */
#define SIM_FILL 0xa5

struct sim_stack {
	uint8_t bytes[SIM_STACK_SIZE]; /* [SIM_STACK_TOP - SIM_STACK_SIZE, SIM_STACK_TOP) */
	uint64_t sp, bp;
};

static inline uint64_t sim_base(void)
{
	return SIM_STACK_TOP - SIM_STACK_SIZE;
}

static inline void sim_store(struct sim_stack *s, uint64_t addr, uint64_t value)
{
	if (addr < sim_base() || addr + 8 > SIM_STACK_TOP)
		abort();
	memcpy(s->bytes + (addr - sim_base()), &value, 8);
}

/* false when addr is outside the stack mapping (the kernel's read fails). */
static inline bool sim_load(const struct sim_stack *s, uint64_t addr, uint64_t *value)
{
	if (addr < sim_base() || addr > SIM_STACK_TOP - 8)
		return false;
	memcpy(value, s->bytes + (addr - sim_base()), 8);
	return true;
}

static inline void sim_push(struct sim_stack *s, uint64_t value)
{
	s->sp -= 8;
	sim_store(s, s->sp, value);
}

/* At _start, which clears rbp. */
static inline void sim_start(struct sim_stack *s)
{
	memset(s->bytes, SIM_FILL, sizeof(s->bytes));
	s->sp = SIM_START_SP;
	s->bp = 0;
}

/* A call instruction: pushes the return address (a vaddr of the chain). */
static inline void sim_call(struct sim_stack *s, uint64_t ra_vaddr)
{
	sim_push(s, at(ra_vaddr));
}

/* chain.S's ENTER: push %rbp; mov %rsp, %rbp (frame pointer only); sub $locals, %rsp. */
static inline void sim_enter(struct sim_stack *s, bool frame_pointer, uint64_t locals)
{
	if (frame_pointer) {
		sim_push(s, s->bp);
		s->bp = s->sp;
	}
	s->sp -= locals;
}

/* The stack of the main thread stopped in leaf's loop, called through
 * _start -> start_main -> main -> a -> b -> c -> leaf. *main_record is main's frame
 * record (its saved rbp) in the frame-pointer build, 0 in the other. */
static inline void sim_main_path_to_leaf(struct sim_stack *s, const struct chain_build *b,
					 uint64_t *main_record)
{
	sim_start(s);
	sim_call(s, RA_START);
	sim_enter(s, false, LOCALS_START_MAIN);
	sim_call(s, RA_START_MAIN);
	sim_enter(s, b->frame_pointer, b->locals_main);
	if (main_record)
		*main_record = b->frame_pointer ? s->bp : 0;
	sim_call(s, b->ra_main_a);
	sim_enter(s, b->frame_pointer, b->locals_a);
	sim_call(s, b->ra_a);
	sim_enter(s, b->frame_pointer, b->locals_b);
	sim_call(s, b->ra_b);
	sim_enter(s, b->frame_pointer, b->locals_c);
	sim_call(s, b->ra_c);
	sim_enter(s, false, LOCALS_LEAF);
}

/* ---- the kernel's side of a sample ---- */

/* The frame-pointer chain as kernel/hprof.bpf.c's walk_frame_pointers reads it: ip, then
 * [bp + 8] while bp and the return address are not 0 and bp goes up. Returns the number
 * of pcs; *tail_frame is the last record read (0 when none was). */
static inline uint32_t kernel_fp_chain(const struct sim_stack *s, uint64_t ip, uint64_t bp,
				       uint64_t *ips, uint32_t max, uint64_t *tail_frame)
{
	uint32_t n = 1;

	ips[0] = ip;
	*tail_frame = 0;
	while (bp != 0 && n < max) {
		uint64_t next, ra;

		if (!sim_load(s, bp, &next) || !sim_load(s, bp + 8, &ra) || ra == 0)
			break;
		ips[n++] = ra;
		*tail_frame = bp;
		if (next != 0 && next <= bp)
			break;
		bp = next;
	}
	return n;
}

/* A sample record: the header, the chain, no kernel frames, the stack copied from sp and
 * the window copied from the chain's last record. */
struct sample_spec {
	uint64_t ip, sp, bp;
	uint32_t tid, flags;
	const uint64_t *ips; /* the user chain, ips[0] == ip */
	uint32_t nr_ips;
	uint64_t fp_tail_frame;
	uint32_t stack_len;  /* bytes copied from sp */
	uint32_t tail_len;   /* bytes copied from fp_tail_frame */
};

#define MODEL_PID 4242

/* Builds the record into a buffer the caller frees; *size is its length. */
static inline struct hprof_sample *build_sample(const struct sim_stack *s,
						const struct sample_spec *spec, size_t *size)
{
	size_t len = sizeof(struct hprof_sample) + spec->nr_ips * 8ull + spec->stack_len +
		     spec->tail_len;
	struct hprof_sample *sample = calloc(1, len);
	uint8_t *p;

	if (!sample || spec->sp + spec->stack_len > SIM_STACK_TOP ||
	    (spec->tail_len && spec->fp_tail_frame + spec->tail_len > SIM_STACK_TOP))
		abort();
	sample->timestamp_ns = 1;
	sample->user_ip = spec->ip;
	sample->user_sp = spec->sp;
	sample->user_bp = spec->bp;
	sample->pid = MODEL_PID;
	sample->tid = spec->tid;
	sample->flags = SAMPLE_USER_REGS | spec->flags;
	sample->nr_user = (uint16_t)spec->nr_ips;
	sample->stack_len = spec->stack_len;
	sample->tail_len = (uint16_t)spec->tail_len;
	sample->fp_tail_frame = spec->fp_tail_frame;
	memcpy(sample->comm, "chain", 6);
	p = sample->data;
	memcpy(p, spec->ips, spec->nr_ips * 8ull);
	p += spec->nr_ips * 8ull;
	memcpy(p, s->bytes + (spec->sp - sim_base()), spec->stack_len);
	p += spec->stack_len;
	if (spec->tail_len)
		memcpy(p, s->bytes + (spec->fp_tail_frame - sim_base()), spec->tail_len);
	/* what was written reads back through the one decoder, common/sample.h's */
	if (!hprof_sample__well_formed(sample, len) ||
	    hprof_sample__user_ip(sample, spec->nr_ips - 1) != spec->ips[spec->nr_ips - 1] ||
	    memcmp(hprof_sample__stack(sample), s->bytes + (spec->sp - sim_base()),
		   spec->stack_len) != 0 ||
	    (spec->tail_len && memcmp(hprof_sample__tail(sample),
				      s->bytes + (spec->fp_tail_frame - sim_base()),
				      spec->tail_len) != 0))
		abort();
	*size = len;
	return sample;
}

/* ---- comparing frames ---- */

/* "0x409 0x3c9 ..." as chain vaddrs (pcs of other mappings absolute, prefixed "@"),
 * for messages. */
static inline const char *frames_text(const struct unwind_frame *frames, uint32_t n)
{
	static char buf[1024];
	size_t len = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < n && len < sizeof(buf) - 32; i++) {
		uint64_t pc = frames[i].pc;
		bool in_chain = pc >= CHAIN_BIAS && pc < CHAIN_BIAS + 0x1000;

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s%#llx%s", i ? " " : "",
					in_chain ? "" : "@",
					(unsigned long long)(in_chain ? pc - CHAIN_BIAS : pc),
					frames[i].exact ? "!" : "");
	}
	return buf;
}

/* frames are exactly want (pcs of the model process): the first one exact, the rest
 * return addresses. */
static inline bool frames_are(const struct unwind_frame *frames, uint32_t n,
			      const uint64_t *want, uint32_t nr_want)
{
	if (n != nr_want)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		if (frames[i].pc != want[i] || frames[i].exact != (i == 0))
			return false;
	}
	return true;
}

#endif
