/* bench_analyze ELF...: the instruction analysis of code without CFI (user/unwind/x86_code.c)
 * checked against the CFI of code that has it, and timed.
 *
 * For every function symbol of each file whose code has CFI, at every return address in
 * it (the instruction after a call, as the walk meets a caller frame), the analysis runs
 * as it would if the code had none: forward from the pc alone, and from the function's
 * start. Its rules are compared with the CFI's at the call: the same CFA (register and
 * offset), and where the CFI says rbp was saved, the same slot. Each analysis is timed
 * on its own, as a new code region costs the walk.
 *
 * Prints per file: return addresses, agreement with the CFI by mode, analyses that found
 * nothing, and the mean, 99th percentile and largest time per analysis; and the same times
 * for a trace of each function for the depths at which it jumps on (what a scan asks of a
 * direct call's target, x86_code__jump_depths), with how many have such a jump. Lines starting
 * "bench:" are for bench/b_nocfi.sh. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include "cfi/unwind_table.h"
#include "unwind/x86_code.h"

/* Return addresses per file at most: enough for percentiles, bounded for huge binaries. */
#define MAX_SITES 200000
/* The code around a pc the analysis is given, as the session reads it. */
#define BEFORE (64u << 10)
#define BACK 4096u
#define AFTER (16u << 10)

struct text {
	const uint8_t *bytes; /* the executable segment's file bytes */
	uint64_t vaddr, size;
};

struct tally {
	uint64_t sites, agree[2], differ[2], failed[2];
	double *us;
	uint64_t timed;
	/* x86_code__jump_depths from each function's start, over what a session reads */
	double *jump_us;
	uint64_t jumps_timed, with_jumps;
};

/* What a session's trace for jumps reads from a function's start (session.c). */
#define JUMP_TRACE_BYTES 4096u

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int find_text(Elf *elf, const uint8_t *file, size_t file_size, struct text *t)
{
	size_t n;

	if (elf_getphdrnum(elf, &n) != 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (ph.p_offset > file_size || ph.p_filesz > file_size - ph.p_offset)
			return -EINVAL;
		*t = (struct text){ file + ph.p_offset, ph.p_vaddr, ph.p_filesz };
		return 0;
	}
	return -ENOENT;
}

/* The analysis's rules agree with the CFI's: the same CFA, and rbp found where the CFI
 * says it was saved (or left alone where it was not). */
static bool agrees(const struct code_rules *a, const struct unwind_rules *c)
{
	if (a->cfa != c->cfa || a->cfa_offset != c->cfa_offset || a->ra_offset != -8)
		return false;
	/* tracing from the start, rbp not yet written since its save still holds the value */
	if (c->rbp == UNWIND_RBP_AT_CFA)
		return (a->rbp == UNWIND_RBP_AT_CFA && a->rbp_offset == c->rbp_offset) ||
		       (a->from_start && a->rbp == UNWIND_RBP_UNCHANGED);
	return a->rbp != UNWIND_RBP_AT_CFA;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One return address: both modes, compared with the CFI at the call. */
static void check_site(const struct text *t, const struct unwind_table *table, uint64_t ra,
		       uint64_t start, uint64_t size, struct tally *tl)
{
	const struct unwind_row *row = unwind_table__find(table, ra - 1);
	struct unwind_rules cfi;

	if (!row || tl->sites >= MAX_SITES)
		return;
	unwind_table__decode(table, row, &cfi);
	if (cfi.cfa != UNWIND_CFA_SP_OFFSET && cfi.cfa != UNWIND_CFA_BP_OFFSET)
		return;
	tl->sites++;
	for (int mode = 0; mode < 2; mode++) {
		uint64_t from = mode ? start : (ra - t->vaddr > BACK ? ra - BACK : t->vaddr);
		uint64_t end = ra + AFTER < t->vaddr + t->size ? ra + AFTER : t->vaddr + t->size;
		struct code_window w = { t->bytes + (from - t->vaddr), from, end - from };
		struct code_rules rules;
		uint64_t t0 = now_ns();
		enum code_fail fail = x86_code__analyze(&w, ra, mode ? start : 0, mode ? start + size : 0,
							&rules);

		tl->us[tl->timed++] = (double)(now_ns() - t0) / 1000.0;
		/* a register's value at a return address is no one's: the walk takes none */
		if (fail != CODE_OK || rules.ra_in_register)
			tl->failed[mode]++;
		else if (agrees(&rules, &cfi))
			tl->agree[mode]++;
		else {
			tl->differ[mode]++;
			if (getenv("BENCH_ANALYZE_SHOW"))
				fprintf(stderr, "differ %s ra %#lx start %#lx: analysis cfa %u%+d rbp %u%+d, cfi cfa %u%+ld rbp %u%+ld\n",
					mode ? "from-start" : "forward", (unsigned long)ra, (unsigned long)start,
					rules.cfa, rules.cfa_offset, rules.rbp, rules.rbp_offset, cfi.cfa,
					(long)cfi.cfa_offset, cfi.rbp, (long)cfi.rbp_offset);
		}
	}
}

/* The depths at which the function at start jumps on, timed. */
static void time_jumps(const struct text *t, uint64_t start, struct tally *tl)
{
	uint64_t len = t->vaddr + t->size - start;
	struct code_window w = { t->bytes + (start - t->vaddr), start,
				 len < JUMP_TRACE_BYTES ? len : JUMP_TRACE_BYTES };
	int32_t depths[6];
	uint64_t t0;

	if (tl->jumps_timed >= MAX_SITES)
		return;
	t0 = now_ns();
	tl->with_jumps += x86_code__jump_depths(&w, start, 0, depths, NULL, 6) > 0;
	tl->jump_us[tl->jumps_timed++] = (double)(now_ns() - t0) / 1000.0;
}

/* Every return address in the function [start, start + size). */
static void check_function(const struct text *t, const struct unwind_table *table,
			   uint64_t start, uint64_t size, struct tally *tl)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction insn;
	uint64_t pc = start;

	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	if (start < t->vaddr || start - t->vaddr >= t->size || size > t->size - (start - t->vaddr) ||
	    start - t->vaddr > BEFORE + t->size)
		return;
	time_jumps(t, start, tl);
	while (pc < start + size) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, t->bytes + (pc - t->vaddr),
								start + size - pc, &insn)))
			return;
		pc += insn.length;
		if (insn.mnemonic == ZYDIS_MNEMONIC_CALL && pc - start <= BEFORE)
			check_site(t, table, pc, start, size, tl);
	}
}

static void check_symbols(Elf *elf, const struct text *t, const struct unwind_table *table,
			  struct tally *tl)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !(data = elf_getdata(scn, NULL)) || sh.sh_entsize == 0)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			if (gelf_getsym(data, (int)i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
			    sym.st_size > 0 && sym.st_shndx != SHN_UNDEF)
				check_function(t, table, sym.st_value, sym.st_size, tl);
		}
		if (sh.sh_type == SHT_SYMTAB)
			return; /* .dynsym repeats what .symtab has */
	}
}

static void report(const char *path, struct tally *tl)
{
	double sum = 0;

	qsort(tl->us, tl->timed, sizeof(*tl->us), cmp_double);
	for (uint64_t i = 0; i < tl->timed; i++)
		sum += tl->us[i];
	for (int mode = 0; mode < 2; mode++)
		printf("bench: %s %s sites %lu agree %lu differ %lu failed %lu agree_pct %.2f\n", path,
		       mode ? "from-start" : "forward", (unsigned long)tl->sites,
		       (unsigned long)tl->agree[mode], (unsigned long)tl->differ[mode],
		       (unsigned long)tl->failed[mode],
		       tl->sites ? 100.0 * (double)tl->agree[mode] / (double)tl->sites : 0.0);
	if (tl->timed)
		printf("bench: %s time analyses %lu mean_us %.2f p99_us %.2f max_us %.2f\n", path,
		       (unsigned long)tl->timed, sum / (double)tl->timed,
		       tl->us[tl->timed * 99 / 100], tl->us[tl->timed - 1]);
	sum = 0;
	qsort(tl->jump_us, tl->jumps_timed, sizeof(*tl->jump_us), cmp_double);
	for (uint64_t i = 0; i < tl->jumps_timed; i++)
		sum += tl->jump_us[i];
	if (tl->jumps_timed)
		printf("bench: %s time jump_traces %lu with_jumps %lu mean_us %.2f p99_us %.2f max_us %.2f\n",
		       path, (unsigned long)tl->jumps_timed, (unsigned long)tl->with_jumps,
		       sum / (double)tl->jumps_timed, tl->jump_us[tl->jumps_timed * 99 / 100],
		       tl->jump_us[tl->jumps_timed - 1]);
}

static int bench_file(const char *path)
{
	struct unwind_table *table = NULL;
	struct tally tl = { 0 };
	struct text t;
	struct stat st;
	char err[256];
	uint8_t *file;
	Elf *elf;
	int fd, ret = 1;

	if (unwind_table__from_file(path, UNWIND_SRC_ALL, &table, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_analyze: %s\n", err);
		return 1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(path);
		return 1;
	}
	file = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	elf = file == MAP_FAILED ? NULL : elf_memory((char *)file, (size_t)st.st_size);
	tl.us = calloc(2 * MAX_SITES, sizeof(*tl.us));
	tl.jump_us = calloc(MAX_SITES, sizeof(*tl.jump_us));
	if (elf && tl.us && tl.jump_us && find_text(elf, file, (size_t)st.st_size, &t) == 0) {
		check_symbols(elf, &t, table, &tl);
		report(path, &tl);
		ret = 0;
	} else {
		fprintf(stderr, "bench_analyze: %s: no executable segment\n", path);
	}
	free(tl.us);
	free(tl.jump_us);
	if (elf)
		elf_end(elf);
	if (file != MAP_FAILED)
		munmap(file, (size_t)st.st_size);
	close(fd);
	unwind_table__free(table);
	return ret;
}

int main(int argc, char **argv)
{
	int ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_analyze ELF...\n");
		return 2;
	}
	elf_version(EV_CURRENT);
	for (int i = 1; i < argc; i++)
		ret |= bench_file(argv[i]);
	return ret;
}
