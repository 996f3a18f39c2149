/* Unit tests for gdb's JIT interface reader (user/binary/gdb_jit.h), on this very process:
 * its own executable registered as an object (rows and names found at its addresses), and
 * hostile lists: a wrong version, a cycle, an object too large, one whose bytes cannot be
 * read, bytes that are no ELF. Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binary/gdb_jit.h"
#include "binary/runtime_symbols.h"
#include "check.h"

struct jit_code_entry {
	struct jit_code_entry *next_entry, *prev_entry;
	const char *symfile_addr;
	uint64_t symfile_size;
};

struct jit_descriptor {
	uint32_t version;
	uint32_t action_flag;
	struct jit_code_entry *relevant_entry, *first_entry;
};

/* This test's executable, read whole. */
static uint8_t *read_self(size_t *size)
{
	FILE *f = fopen("/proc/self/exe", "rb");
	uint8_t *buf = NULL;
	long len;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    !(buf = malloc((size_t)len)) || fread(buf, 1, (size_t)len, f) != (size_t)len)
		abort();
	fclose(f);
	*size = (size_t)len;
	return buf;
}

static struct gdb_jit_stats stats_of(const struct gdb_jit *gj)
{
	struct gdb_jit_stats st = { 0 };

	gdb_jit__stats(gj, &st);
	return st;
}

static struct gdb_jit *reader(struct jit_descriptor *d)
{
	struct gdb_jit *gj = gdb_jit__new((uint32_t)getpid(), (uint64_t)(uintptr_t)d);

	if (!gj)
		abort();
	return gj;
}

static void test_own_executable(void)
{
	size_t size, nr = 0;
	uint8_t *image = read_self(&size);
	struct unwind_table *own = NULL;
	struct jit_code_entry entry = { .symfile_addr = (const char *)image, .symfile_size = size };
	struct jit_descriptor d = { 1, 1, &entry, &entry };
	const struct unwind_table *table;
	const struct unwind_row *rows;
	uint64_t start, end, pc;
	struct gdb_jit *gj = reader(&d);
	const char *name;
	uint64_t entry_vaddr;
	char err[160];

	if (unwind_table__from_image(image, size, "self", UNWIND_SRC_ALL, &own, err, sizeof(err)) != 0)
		abort();
	memcpy(&entry_vaddr, image + offsetof(Elf64_Ehdr, e_entry), sizeof(entry_vaddr));
	rows = unwind_table__rows(own, &nr);
	pc = rows[0].pc;
	check(gdb_jit__find(gj, pc, &table, &start, &end) == 0 && start <= pc && pc < end &&
		      unwind_table__find(table, pc) != NULL,
	      "own executable: its first FDE's rows are found at its address");
	name = gdb_jit__lookup(gj, entry_vaddr);
	check(name && strcmp(name, "_start") == 0, "own executable: its entry is named _start (%s)",
	      name ? name : "none");
	check(stats_of(gj).objects == 1 && stats_of(gj).list_reads == 1,
	      "own executable: one object read with one read of the list");
	check(gdb_jit__find(gj, pc, &table, &start, &end) == 0 && stats_of(gj).list_reads == 1,
	      "own executable: a hit does not read the list again");
	check(gdb_jit__bytes(gj) > 0, "own executable: its rows and names are counted in bytes held");
	gdb_jit__free(gj);
	unwind_table__free(own);
	free(image);
}

static void test_hostile(void)
{
	static uint8_t junk[4096];
	struct jit_code_entry cycle = { .symfile_addr = (const char *)junk, .symfile_size = sizeof(junk) };
	struct jit_code_entry huge = { .symfile_addr = (const char *)junk,
				       .symfile_size = GDB_JIT_MAX_OBJECT_BYTES + 1ull };
	struct jit_code_entry unreadable = { .symfile_addr = (const char *)(uintptr_t)0x1000,
					     .symfile_size = 4096 };
	struct jit_descriptor wrong = { 2, 1, &cycle, &cycle }, d = { 1, 1, &cycle, &cycle };
	const struct unwind_table *table;
	uint64_t start, end;
	struct gdb_jit *gj;
	int found;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	gj = reader(&wrong);
	check(gdb_jit__find(gj, 0x1234, &table, &start, &end) == -ENOENT && stats_of(gj).bad_lists == 1,
	      "hostile: a descriptor of another version is not read");
	gdb_jit__free(gj);

	cycle.next_entry = &cycle;
	gj = reader(&d);
	found = gdb_jit__find(gj, 0x1234, &table, &start, &end);
	check(found == -ENOENT && stats_of(gj).cut_short == 1 && stats_of(gj).refused == 1,
	      "hostile: a list that loops is cut, its one object (no ELF) refused once (%llu)",
	      (unsigned long long)stats_of(gj).refused);
	gdb_jit__free(gj);

	cycle.next_entry = &huge;
	huge.next_entry = &unreadable;
	gj = reader(&d);
	found = gdb_jit__find(gj, 0x1234, &table, &start, &end);
	check(found == -ENOENT && stats_of(gj).refused == 3 && stats_of(gj).cut_short == 0,
	      "hostile: an object too large, one that cannot be read and one that is no ELF are refused (%llu)",
	      (unsigned long long)stats_of(gj).refused);
	check(gdb_jit__lookup(gj, 0x1234) == NULL, "hostile: no names from bytes that are no ELF");
	gdb_jit__free(gj);

	gj = reader((struct jit_descriptor *)(uintptr_t)0x1000);
	check(gdb_jit__find(gj, 0x1234, &table, &start, &end) == -ENOENT && stats_of(gj).bad_lists == 1,
	      "hostile: a descriptor that cannot be read");
	gdb_jit__free(gj);
}

/* What BEAM defines: this test's own, so that its binary's .symtab holds one. */
void *beam_normal_exit;

static void test_runtime_symbols_in_file(void)
{
	uint64_t vaddrs[RUNTIME_SYMBOL_COUNT];
	uintptr_t bias;

	check(runtime_symbols__in_file("/proc/self/exe", vaddrs) == 0 &&
		      vaddrs[RUNTIME_GDB_JIT_DESCRIPTOR] == 0,
	      "runtime symbols: no gdb JIT descriptor in a program that defines none");
	bias = (uintptr_t)&beam_normal_exit - (uintptr_t)vaddrs[RUNTIME_BEAM_NORMAL_EXIT];
	check(vaddrs[RUNTIME_BEAM_NORMAL_EXIT] != 0 && (bias & 0xfff) == 0,
	      "runtime symbols: the program's own beam_normal_exit, at its address less a "
	      "page-aligned load bias (%#llx)", (unsigned long long)vaddrs[RUNTIME_BEAM_NORMAL_EXIT]);
	check(runtime_symbols__in_file("/nonexistent/hprof", vaddrs) == -ENOENT,
	      "runtime symbols: a missing file");
	check(runtime_symbols__in_file("/proc/self/status", vaddrs) == -EINVAL,
	      "runtime symbols: a file that is no ELF");
}

int main(void)
{
	test_own_executable();
	test_hostile();
	test_runtime_symbols_in_file();
	return failures ? 1 : 0;
}
