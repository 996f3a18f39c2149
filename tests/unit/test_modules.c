/* Unit tests for dropping idle binaries (module_registry__sweep, module_registry__use) on
 * this test's own executable: its symbols and unwind table go after MODULE_IDLE_SWEEPS
 * sweeps without use, what mappings and outputs still need (segments, build-id, entry)
 * stays, and a use reads them again. No BPF, no root. Prints one "ok - NAME" /
 * "not ok - NAME" line per check. */
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary/modules.h"
#include "binary/symbols.h"
#include "check.h"

__attribute__((noinline)) void modules_test_marker(void)
{
	__asm__ volatile("");
}

/* The executable's load bias: the first object dl_iterate_phdr reports. */
static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

static const char *symbol_at(const struct module *mod, uint64_t vaddr)
{
	uint64_t offset;
	const char *name = elf_symbols__lookup(mod->syms, vaddr, &offset);

	return name ? name : "";
}

int main(void)
{
	char self[PATH_MAX];
	uintptr_t bias = 0;
	uint64_t marker, start, end, offset, entry;
	struct module_registry *reg;
	struct module_memory mem;
	struct module *mod;
	const uint8_t *id;
	size_t id_len;

	if (!realpath("/proc/self/exe", self) || module_registry__new(&reg) != 0)
		return 1;
	dl_iterate_phdr(first_object, &bias);
	marker = (uintptr_t)modules_test_marker - bias;
	mod = module_registry__get(reg, self);
	if (!mod)
		return 1;
	check(strcmp(symbol_at(mod, marker), "modules_test_marker") == 0,
	      "loaded: the executable's symbols name its functions");
	check(module_registry__unwind_table(reg, mod) != NULL, "loaded: its unwind table compiles");
	id_len = elf_symbols__build_id(mod->syms, &id);
	entry = elf_symbols__entry(mod->syms);

	for (int i = 0; i < MODULE_IDLE_SWEEPS; i++)
		module_registry__sweep(reg);
	module_registry__memory(reg, &mem);
	check(mem.dropped == 0 && elf_symbols__count(mod->syms) > 0,
	      "idle for MODULE_IDLE_SWEEPS sweeps: still held");
	module_registry__sweep(reg);
	module_registry__memory(reg, &mem);
	check(mem.dropped == 1 && mod->dropped, "idle for one sweep more: dropped");
	check(mem.table_bytes == 0 && mod->table == NULL, "dropped: no unwind table held");
	check(elf_symbols__count(mod->syms) == 0 && symbol_at(mod, marker)[0] == '\0',
	      "dropped: no function symbols held");
	check(elf_symbols__segment(mod->syms, marker, &start, &end, &offset) == 0 &&
		      elf_symbols__entry(mod->syms) == entry &&
		      elf_symbols__build_id(mod->syms, &id) == id_len,
	      "dropped: segments, entry point and build-id stay");

	module_registry__use(reg, mod);
	module_registry__memory(reg, &mem);
	check(!mod->dropped && mem.dropped == 0 && mem.reloads == 1,
	      "used again: read again, once");
	check(strcmp(symbol_at(mod, marker), "modules_test_marker") == 0,
	      "used again: the same symbols");
	check(module_registry__unwind_table(reg, mod) != NULL, "used again: the table compiles again");
	module_registry__sweep(reg);
	module_registry__memory(reg, &mem);
	check(mem.dropped == 0, "used again: the idle count starts over");

	module_registry__free(reg);
	return failures ? 1 : 0;
}
