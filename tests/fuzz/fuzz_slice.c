/* Slice files (binary/slice.h), which a replay corpus case keeps beside its capture: read
 * through a memfd (gzip's reader takes them uncompressed too), then each slice's symbols
 * built as an ELF image and loaded, its rows made a table, and both looked up, with its
 * code bytes and recorded function starts, at the input's last 8 bytes and around every
 * function and symbol it names. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "binary/slice.h"

static void look_up(const struct module_slice *sl, const struct elf_symbols *syms,
		    const struct unwind_table *table, uint64_t addr)
{
	struct unwind_rules rules;
	uint64_t start, size, lo, hi;
	uint8_t buf[64];

	if (syms) {
		elf_symbols__lookup(syms, addr, &start);
		elf_symbols__function(syms, addr, &start, &size);
		elf_symbols__is_function_entry(syms, addr);
		elf_symbols__offset_to_vaddr(syms, addr & ~0xfffull, addr, &start);
	}
	if (table) {
		unwind_table__rules_at(table, addr, &rules);
		unwind_table__function_start(table, addr, &start);
		unwind_table__gap(table, addr, &lo, &hi);
		unwind_table__switches_stack(table, addr);
	}
	module_slice__read(sl, addr, buf, sizeof(buf));
	module_slice__code_start(sl, addr, &start);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct module_slices *slices;
	char path[64], err[256];
	uint64_t probe = 0;
	int fd;

	if (size >= 8)
		memcpy(&probe, data + size - 8, 8);
	fd = memfd_create("slice", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (module_slices__read(path, &slices, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < slices->nr; i++) {
			const struct module_slice *sl = &slices->slices[i];
			struct elf_symbols *syms = NULL;
			struct unwind_table *table = NULL;

			if (module_slice__symbols(sl, &syms, err, sizeof(err)) != 0)
				syms = NULL;
			if (module_slice__table(sl, &table) != 0)
				table = NULL;
			look_up(sl, syms, table, probe);
			for (size_t j = 0; j < sl->nr_fns && j < 64; j++) {
				look_up(sl, syms, table, sl->fns[j].lo);
				look_up(sl, syms, table, sl->fns[j].end);
			}
			for (size_t j = 0; j < sl->nr_symbols && j < 64; j++)
				look_up(sl, syms, table, sl->symbols[j].start + 1);
			unwind_table__free(table);
			elf_symbols__free(syms);
		}
		module_slices__free(slices);
	}
	close(fd);
	return 0;
}
