/* Unit tests of hprof's parsers on pinned inputs (tests/fixtures/): ELF symbols of the
 * chain, of its stripped copy and of a vDSO image (user/binary/symbols.h); their CFI
 * against readelf's reading of the same files (user/ehframe.h); a maps text
 * (user/proc/procmaps.h); kallsyms text as a capture carries it (user/binary/ksyms.h).
 * Every expected value was read from the pinned files with binutils (nm -nS, readelf -n,
 * readelf --debug-dump=frames-interp; README.md). No BPF, no root, nothing of the host's. Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

#include "binary/ksyms.h"
#include "binary/symbols.h"
#include "proc/procmaps.h"

#define N(array) (sizeof(array) / sizeof((array)[0]))

/* ---- ELF symbols ---- */

struct symbol_want {
	uint64_t addr, size;
	const char *name;
};

/* nm -nS chain_nofp */
static const struct symbol_want CHAIN_NOFP_SYMBOLS[] = {
	{ 0x240, 0x08, "thread_entry" }, { 0x280, 0x0e, "worker" }, { 0x2c0, 0x13, "start_main" },
	{ 0x300, 0x15, "main" },         { 0x340, 0x0e, "a" },      { 0x380, 0x0e, "b" },
	{ 0x3c0, 0x0e, "c" },            { 0x400, 0x12, "leaf" },   { 0x440, 0x0b, "jit_code" },
	{ 0x480, 0x08, "exit_group" },   { 0x4c0, 0x08, "_start" },
};

/* readelf -n: NT_GNU_BUILD_ID */
static const char CHAIN_NOFP_BUILD_ID[] = "bd15706b3afea070fa45668c5a5694a1afd39a72";
static const char VDSO_BUILD_ID[] = "7ec0637632fcbf54e43b3693f40247725f30a24d";

static bool build_id_is(const struct elf_symbols *syms, const char *hex)
{
	const uint8_t *id;
	size_t len = elf_symbols__build_id(syms, &id);
	char text[2 * BUILD_ID_MAX + 1] = "";

	for (size_t i = 0; i < len && i < BUILD_ID_MAX; i++)
		snprintf(text + 2 * i, 3, "%02x", id[i]);
	return strcmp(text, hex) == 0;
}

static bool names(const struct elf_symbols *syms, uint64_t addr, const char *want,
		  uint64_t want_offset)
{
	uint64_t offset = ~0ull;
	const char *name = elf_symbols__lookup(syms, addr, &offset);

	if (!want)
		return name == NULL;
	return name && strcmp(name, want) == 0 && offset == want_offset;
}

static struct elf_symbols *load(const char *file)
{
	struct elf_symbols *syms = NULL;
	char err[256];

	if (elf_symbols__load(fixture_path(file), &syms, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	return syms;
}

static void test_chain_symbols(void)
{
	const size_t nr = N(CHAIN_NOFP_SYMBOLS);
	struct elf_symbols *syms = load("chain_nofp"), *stripped = load("chain_nofp_stripped");
	uint64_t start = 1, end = 0, offset = 1, vaddr = 0;
	bool all = true, sized = true;

	for (size_t i = 0; i < nr; i++) {
		const struct symbol_want *w = &CHAIN_NOFP_SYMBOLS[i];

		all &= names(syms, w->addr, w->name, 0) &&
		       names(syms, w->addr + w->size - 1, w->name, w->size - 1);
		sized &= names(syms, w->addr + w->size, NULL, 0);
	}
	check(elf_symbols__source(syms) == ELF_SYMBOLS_SYMTAB && elf_symbols__count(syms) == nr,
	      "chain_nofp: 11 function symbols from .symtab");
	check(all, "chain_nofp: each function's first and last byte name it, at offset 0 and size-1");
	check(sized && names(syms, 0x100, NULL, 0),
	      "chain_nofp: the byte after a function (padding) and before the first name nothing");
	check(elf_symbols__entry(syms) == CHAIN_START && build_id_is(syms, CHAIN_NOFP_BUILD_ID),
	      "chain_nofp: entry 0x4c0, build-id %s", CHAIN_NOFP_BUILD_ID);
	check(elf_symbols__segment(syms, PC_LEAF_LOOP, &start, &end, &offset) == 0 && start == 0 &&
		      end == CHAIN_TEXT_SEGMENT && offset == 0 &&
		      elf_symbols__segment(syms, CHAIN_TEXT_SEGMENT, &start, &end, &offset) != 0,
	      "chain_nofp: the executable PT_LOAD is [0, 0x63c) at file offset 0");
	check(elf_symbols__offset_to_vaddr(syms, 0, PC_LEAF_LOOP, &vaddr) == 0 &&
		      vaddr == PC_LEAF_LOOP,
	      "chain_nofp: file offset 0x409 in the mapping at offset 0 is vaddr 0x409");

	check(elf_symbols__source(stripped) == ELF_SYMBOLS_NONE &&
		      elf_symbols__count(stripped) == 0 && names(stripped, PC_LEAF_LOOP, NULL, 0),
	      "chain_nofp_stripped: no symbols (its .dynsym has none), nothing named");
	check(elf_symbols__entry(stripped) == CHAIN_START &&
		      build_id_is(stripped, CHAIN_NOFP_BUILD_ID),
	      "chain_nofp_stripped: the same entry and build-id as the unstripped file");
	elf_symbols__free(syms);
	elf_symbols__free(stripped);
}

/* readelf --dyn-syms vdso.so: of each alias pair the GLOBAL __vdso_ name ranks over the
 * WEAK one (symbols.c's rule for aliases). */
static const struct symbol_want VDSO_SYMBOLS[] = {
	{ 0x810, 683, "__vdso_gettimeofday" }, { 0xac0, 40, "__vdso_time" },
	{ 0xaf0, 902, "__vdso_clock_gettime" }, { 0xe80, 127, "__vdso_clock_getres" },
	{ 0xf00, 44, "__vdso_getcpu" },         { 0xf40, 913, "__vdso_getrandom" },
};

static void test_vdso_symbols(const uint8_t *image, size_t len)
{
	const size_t nr = N(VDSO_SYMBOLS);
	struct elf_symbols *syms = NULL;
	bool all = true;
	char err[256];

	if (elf_symbols__load_image(image, len, &syms, err, sizeof(err)) != 0) {
		check(false, "vdso.so: loads as an image (%s)", err);
		return;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct symbol_want *w = &VDSO_SYMBOLS[i];

		all &= names(syms, w->addr, w->name, 0) &&
		       names(syms, w->addr + w->size - 1, w->name, w->size - 1) &&
		       names(syms, w->addr + w->size, NULL, 0);
	}
	check(elf_symbols__source(syms) == ELF_SYMBOLS_DYNSYM && elf_symbols__count(syms) == nr,
	      "vdso.so: 6 functions (12 names, aliases in pairs) from .dynsym");
	check(all, "vdso.so: each function named by its __vdso_ name over its whole size");
	check(names(syms, 0x780, NULL, 0) && elf_symbols__entry(syms) == 0 &&
		      elf_symbols__image_size(syms) == len && build_id_is(syms, VDSO_BUILD_ID),
	      "vdso.so: the unnamed function at 0x780 has no name; no entry; build-id %s",
	      VDSO_BUILD_ID);
	elf_symbols__free(syms);
}

/* ---- CFI against readelf ---- */

/* One row of readelf --debug-dump=frames-interp: the CFA as rsp or rbp plus an offset,
 * rbp unchanged or saved at CFA + rbp_offset, and the return address at CFA - 8 or
 * undefined. */
struct row_want {
	uint64_t pc;
	enum unwind_cfa_kind cfa;
	int64_t cfa_offset;
	enum unwind_rbp_kind rbp;
	int64_t rbp_offset;
	enum unwind_ra_kind ra;
};

#define SP UNWIND_CFA_SP_OFFSET
#define BP UNWIND_CFA_BP_OFFSET
#define SAME UNWIND_RBP_UNCHANGED
#define SAVED UNWIND_RBP_AT_CFA
#define RA UNWIND_RA_AT_CFA
#define NO_RA UNWIND_RA_UNDEFINED

static const struct row_want CHAIN_NOFP_ROWS[] = {
	{ 0x240, SP, 8, SAME, 0, NO_RA },
	{ 0x280, SP, 8, SAME, 0, RA }, { 0x284, SP, 16, SAME, 0, RA }, { 0x28d, SP, 8, SAME, 0, RA },
	{ 0x2c0, SP, 8, SAME, 0, RA }, { 0x2c7, SP, 144, SAME, 0, RA },
	{ 0x300, SP, 8, SAME, 0, RA }, { 0x304, SP, 16, SAME, 0, RA }, { 0x314, SP, 8, SAME, 0, RA },
	{ 0x340, SP, 8, SAME, 0, RA }, { 0x344, SP, 32, SAME, 0, RA }, { 0x34d, SP, 8, SAME, 0, RA },
	{ 0x380, SP, 8, SAME, 0, RA }, { 0x384, SP, 48, SAME, 0, RA }, { 0x38d, SP, 8, SAME, 0, RA },
	{ 0x3c0, SP, 8, SAME, 0, RA }, { 0x3c4, SP, 64, SAME, 0, RA }, { 0x3cd, SP, 8, SAME, 0, RA },
	{ 0x400, SP, 8, SAME, 0, RA }, { 0x404, SP, 32, SAME, 0, RA }, { 0x411, SP, 8, SAME, 0, RA },
	{ 0x480, SP, 8, SAME, 0, RA },
	{ 0x4c0, SP, 8, SAME, 0, NO_RA },
};

static const struct row_want CHAIN_FP_ROWS[] = {
	{ 0x240, SP, 8, SAME, 0, NO_RA },
	{ 0x280, SP, 8, SAME, 0, RA }, { 0x281, SP, 16, SAVED, -16, RA },
	{ 0x284, BP, 16, SAVED, -16, RA }, { 0x28e, SP, 8, SAME, 0, RA },
	{ 0x2c0, SP, 8, SAME, 0, RA }, { 0x2c7, SP, 144, SAME, 0, RA },
	{ 0x300, SP, 8, SAME, 0, RA }, { 0x301, SP, 16, SAVED, -16, RA },
	{ 0x304, BP, 16, SAVED, -16, RA }, { 0x315, SP, 8, SAME, 0, RA },
	{ 0x340, SP, 8, SAME, 0, RA }, { 0x341, SP, 16, SAVED, -16, RA },
	{ 0x344, BP, 16, SAVED, -16, RA }, { 0x34e, SP, 8, SAME, 0, RA },
	{ 0x380, SP, 8, SAME, 0, RA }, { 0x381, SP, 16, SAVED, -16, RA },
	{ 0x384, BP, 16, SAVED, -16, RA }, { 0x38e, SP, 8, SAME, 0, RA },
	{ 0x3c0, SP, 8, SAME, 0, RA }, { 0x3c1, SP, 16, SAVED, -16, RA },
	{ 0x3c4, BP, 16, SAVED, -16, RA }, { 0x3ce, SP, 8, SAME, 0, RA },
	{ 0x400, SP, 8, SAME, 0, RA }, { 0x404, SP, 32, SAME, 0, RA }, { 0x411, SP, 8, SAME, 0, RA },
	{ 0x480, SP, 8, SAME, 0, RA },
	{ 0x4c0, SP, 8, SAME, 0, NO_RA },
};

/* The FDE ranges readelf shows: a pc at each end is covered, the byte after is not. */
struct fde_want {
	uint64_t start, end;
};

/* __vdso_clock_gettime's first rows and its first epilogue; the FDE at 0x780 keeps the
 * CIE's rules. */
static const struct row_want VDSO_ROWS[] = {
	{ 0x780, SP, 8, SAME, 0, RA },
	{ 0xaf0, SP, 8, SAME, 0, RA }, { 0xaf1, SP, 16, SAVED, -16, RA },
	{ 0xaf4, BP, 16, SAVED, -16, RA }, { 0xaff, BP, 16, SAVED, -16, RA },
	{ 0xbbc, SP, 8, SAME, 0, RA }, { 0xbd1, BP, 16, SAVED, -16, RA },
};

static const struct fde_want CHAIN_NOFP_FDES[] = {
	{ 0x240, 0x248 }, { 0x280, 0x28e }, { 0x2c0, 0x2d3 }, { 0x300, 0x315 }, { 0x340, 0x34e },
	{ 0x380, 0x38e }, { 0x3c0, 0x3ce }, { 0x400, 0x412 }, { 0x480, 0x488 }, { 0x4c0, 0x4c8 },
};

static const struct fde_want CHAIN_FP_FDES[] = {
	{ 0x240, 0x248 }, { 0x280, 0x28f }, { 0x2c0, 0x2d3 }, { 0x300, 0x316 }, { 0x340, 0x34f },
	{ 0x380, 0x38f }, { 0x3c0, 0x3cf }, { 0x400, 0x412 }, { 0x480, 0x488 }, { 0x4c0, 0x4c8 },
};

static const struct fde_want VDSO_FDES[] = {
	{ 0x780, 0x809 }, { 0x810, 0xabb }, { 0xac0, 0xae8 }, { 0xaf0, 0xe76 },
	{ 0xe80, 0xeff }, { 0xf00, 0xf2c }, { 0xf40, 0x12d1 },
};

static bool row_is(const struct unwind_table *table, uint64_t pc, const struct row_want *w,
		   const char *what)
{
	const struct unwind_row *row = unwind_table__find(table, pc);
	struct unwind_rules r;

	if (!row) {
		printf("# %s: no row at %#llx\n", what, (unsigned long long)pc);
		return false;
	}
	unwind_table__decode(table, row, &r);
	if (r.cfa == w->cfa && r.cfa_offset == w->cfa_offset && r.rbp == w->rbp &&
	    (w->rbp != SAVED || r.rbp_offset == w->rbp_offset) && r.ra == w->ra &&
	    (w->ra != RA || r.ra_offset == -8))
		return true;
	printf("# %s: at %#llx cfa %s%+lld rbp %s%+lld ra %s%+lld\n", what, (unsigned long long)pc,
	       unwind_cfa_kind__name(r.cfa), (long long)r.cfa_offset, unwind_rbp_kind__name(r.rbp),
	       (long long)r.rbp_offset, unwind_ra_kind__name(r.ra), (long long)r.ra_offset);
	return false;
}

/* Each row's rules at its pc and, when rows lists every row readelf shows, at the last pc
 * they hold: before the next row, or the end of the FDE. */
static bool rows_match(const struct unwind_table *table, const struct row_want *rows, size_t nr,
		       bool every_row, const struct fde_want *fdes, size_t nr_fdes, const char *what)
{
	bool ok = true;

	for (size_t i = 0; i < nr; i++) {
		uint64_t last = i + 1 < nr ? rows[i + 1].pc - 1 : UINT64_MAX;

		for (size_t f = 0; f < nr_fdes; f++) {
			if (rows[i].pc >= fdes[f].start && rows[i].pc < fdes[f].end &&
			    last >= fdes[f].end)
				last = fdes[f].end - 1;
		}
		ok &= row_is(table, rows[i].pc, &rows[i], what);
		if (every_row)
			ok &= row_is(table, last, &rows[i], what);
	}
	return ok;
}

static bool fdes_match(const struct unwind_table *table, const struct fde_want *fdes, size_t nr)
{
	struct unwind_stats stats;
	bool ok = true;

	unwind_table__stats(table, &stats);
	for (size_t i = 0; i < nr; i++) {
		uint64_t start = 0, start_end = 0;

		ok &= unwind_table__function_start(table, fdes[i].start, &start) == 0 &&
		      start == fdes[i].start &&
		      unwind_table__function_start(table, fdes[i].end - 1, &start_end) == 0 &&
		      start_end == fdes[i].start && unwind_table__find(table, fdes[i].end) == NULL &&
		      unwind_table__find(table, fdes[i].start - 1) == NULL;
	}
	return ok && stats.fdes == nr;
}

static void test_chain_cfi(void)
{
	struct unwind_table *nofp = fixture_table("chain_nofp"), *fp = fixture_table("chain_fp");
	struct unwind_table *stripped = fixture_table("chain_nofp_stripped");
	const struct unwind_row *a, *b;
	size_t na, nb;
	uint64_t start;

	check(rows_match(nofp, CHAIN_NOFP_ROWS, N(CHAIN_NOFP_ROWS), true, CHAIN_NOFP_FDES,
			 N(CHAIN_NOFP_FDES), "chain_nofp"),
	      "chain_nofp: every row as readelf reads it, at its first and last pc");
	check(rows_match(fp, CHAIN_FP_ROWS, N(CHAIN_FP_ROWS), true, CHAIN_FP_FDES,
			 N(CHAIN_FP_FDES), "chain_fp"),
	      "chain_fp: every row as readelf reads it (rbp saved, CFA on rbp)");
	check(fdes_match(nofp, CHAIN_NOFP_FDES, N(CHAIN_NOFP_FDES)) &&
		      fdes_match(fp, CHAIN_FP_FDES, N(CHAIN_FP_FDES)),
	      "chain_nofp, chain_fp: 10 FDEs, each function's start from any pc in it, nothing "
	      "outside");
	check(unwind_table__find(nofp, RA_JIT_CODE) == NULL &&
		      unwind_table__function_start(nofp, RA_JIT_CODE, &start) == -ENOENT,
	      "chain_nofp: jit_code has no FDE");
	a = unwind_table__rows(nofp, &na);
	b = unwind_table__rows(stripped, &nb);
	check(na == nb && na > 0 && memcmp(a, b, na * sizeof(*a)) == 0,
	      "chain_nofp_stripped: strip keeps .eh_frame, the same %zu rows", na);
	unwind_table__free(nofp);
	unwind_table__free(fp);
	unwind_table__free(stripped);
}

static void test_vdso_cfi(const uint8_t *image, size_t len)
{
	struct unwind_table *from_image = NULL, *from_file = fixture_table("vdso.so");
	const struct unwind_row *a, *b;
	char err[256];
	size_t na, nb;

	if (unwind_table__from_image(image, len, "vdso.so", UNWIND_SRC_ALL | UNWIND_SRC_VIA_HDR,
				     &from_image, err, sizeof(err)) != 0) {
		check(false, "vdso.so: CFI from the image (%s)", err);
		unwind_table__free(from_file);
		return;
	}
	check(rows_match(from_image, VDSO_ROWS, N(VDSO_ROWS), false, VDSO_FDES, N(VDSO_FDES),
			 "vdso.so"),
	      "vdso.so: __vdso_clock_gettime's rows as readelf reads them");
	check(fdes_match(from_image, VDSO_FDES, N(VDSO_FDES)),
	      "vdso.so: 7 FDEs (one without a symbol), found through .eh_frame_hdr");
	a = unwind_table__rows(from_image, &na);
	b = unwind_table__rows(from_file, &nb);
	check(na == nb && memcmp(a, b, na * sizeof(*a)) == 0,
	      "vdso.so: the image through .eh_frame_hdr and the file by section give the same rows");
	unwind_table__free(from_image);
	unwind_table__free(from_file);
}

/* ---- /proc/PID/maps ---- */

struct mapping_want {
	uint64_t start, end, offset;
	uint32_t major, minor;
	uint64_t inode;
	const char *path;
};

/* tests/fixtures/maps.txt's executable lines (x in the permissions), in order. */
static const struct mapping_want MAPS_EXEC[] = {
	{ 0x555555554000, 0x555555555000, 0, 0xfd, 1, 1048602, "/opt/hprof fixtures/chain_nofp" },
	{ 0x7f0000000000, 0x7f0000010000, 0, 0, 0, 0, "[anon:jit]" },
	{ 0x7f1234528000, 0x7f123469d000, 0x28000, 0xfd, 1, 2622,
	  "/usr/lib/x86_64-linux-gnu/libc.so.6" },
	{ 0x7f1234710000, 0x7f1234711000, 0, 0, 5, 77, "/memfd:jit (deleted)" },
	{ 0x7f1234712000, 0x7f1234713000, 0x3000, 0x103, 2, 4294967301,
	  "/tmp/replaced lib.so (deleted)" },
	{ 0x7f1234714000, 0x7f1234715000, 0, 0, 0, 0, "" },
	{ 0x7ffd00101000, 0x7ffd00103000, 0, 0, 0, 0, "[vdso]" },
	{ 0xffffffffff600000, 0xffffffffff601000, 0, 0, 0, 0, "[vsyscall]" },
};

static bool mapping_is(const struct mapping *m, const struct mapping_want *w)
{
	return m && m->start == w->start && m->end == w->end && m->file_offset == w->offset &&
	       m->dev_major == w->major && m->dev_minor == w->minor && m->inode == w->inode &&
	       strcmp(m->path, w->path) == 0;
}

static bool parse_fails(const char *text)
{
	struct process_maps *maps = (struct process_maps *)1;
	int err = process_maps__parse(text, strlen(text), &maps);

	return err == -EINVAL && maps == NULL;
}

static void test_maps(void)
{
	const size_t nr = N(MAPS_EXEC);
	struct process_maps *maps = NULL;
	size_t len;
	char *text = (char *)fixture_read("maps.txt", &len);
	bool all = true;

	if (process_maps__parse(text, len, &maps) != 0) {
		check(false, "maps.txt parses");
		free(text);
		return;
	}
	for (size_t i = 0; i < nr; i++)
		all &= mapping_is(process_maps__get(maps, i), &MAPS_EXEC[i]);
	check(process_maps__count(maps) == nr && all,
	      "maps.txt: the 8 executable mappings, every field (spaces, (deleted), a 32-bit "
	      "inode overflow, an anonymous one with a trailing space)");
	check(mapping_is(process_maps__find(maps, 0x555555554fff), &MAPS_EXEC[0]) &&
		      process_maps__find(maps, 0x555555555000) == NULL &&
		      mapping_is(process_maps__find(maps, 0x7f1234528000), &MAPS_EXEC[2]) &&
		      process_maps__find(maps, 0x7f1234500000) == NULL &&
		      process_maps__find(maps, SIM_STACK_TOP - 8) == NULL,
	      "maps.txt: find is start-inclusive, end-exclusive, executable mappings only");
	process_maps__free(maps);
	free(text);
	check(parse_fails("555555554000-555555555000 r-xp 00000000 fd:01\n") &&
		      parse_fails("555555555000-555555554000 r-xp 00000000 fd:01 1 /x\n") &&
		      parse_fails("555555554000-555555554000 r-xp 00000000 fd:01 1 /x\n") &&
		      parse_fails("not a maps line\n"),
	      "maps: a line without an inode, a reversed or empty range, a line of text: -EINVAL");
}

/* kallsyms text as a capture carries it: functions named as the file names them, other
 * types, bad and over-long lines skipped, a missing last newline taken. */
static void test_ksyms_text(void)
{
	static const char text[] = "ffffffff81000000 T alpha\n"
				   "ffffffff81000100 d some_data\n"
				   "not a line at all\n"
				   "ffffffff81000200 t beta [some_module]\n"
				   "0000000000000000 T zero\n"
				   "ffffffff81000300 W gamma";
	char *long_line = malloc(2048);
	struct ksyms *ks = NULL;
	uint64_t off = 0;
	const char *name;

	check(ksyms__load_text(text, sizeof(text) - 1, &ks) == 0, "ksyms text: loaded");
	name = ksyms__lookup(ks, 0xffffffff81000150, &off);
	check(name && strcmp(name, "alpha") == 0 && off == 0x150,
	      "ksyms text: data symbols skipped (%s+%#" PRIx64 ")", name ? name : "-", off);
	name = ksyms__lookup(ks, 0xffffffff81000210, &off);
	check(name && strcmp(name, "beta") == 0, "ksyms text: a module's function");
	name = ksyms__lookup(ks, 0xffffffff81000301, &off);
	check(name && strcmp(name, "gamma") == 0, "ksyms text: the last line without its newline");
	ksyms__free(ks);
	check(ksyms__load_text("junk\n", 5, &ks) == -ENOENT && !ks, "ksyms text: no function: -ENOENT");
	if (long_line) {
		memset(long_line, 'x', 2047);
		memcpy(long_line, "ffffffff81000000 T ", 19);
		check(ksyms__load_text(long_line, 2047, &ks) == -ENOENT,
		      "ksyms text: a line longer than kallsyms writes is skipped");
		free(long_line);
	}
}

int main(void)
{
	size_t len;
	uint8_t *vdso = fixture_read("vdso.so", &len);

	/* names come from the fixtures alone, never from the host's debug files */
	setenv("HPROF_DEBUG_DIR", fixture_path("no-debug-dir"), 1);
	test_chain_symbols();
	test_vdso_symbols(vdso, len);
	test_chain_cfi();
	test_vdso_cfi(vdso, len);
	test_maps();
	test_ksyms_text();
	free(vdso);
	return failures ? 1 : 0;
}
