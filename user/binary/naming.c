#include "binary/naming.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary/code.h"
#include "binary/code_starts.h"
#include "binary/perfmap.h"
#include "binary/slice.h"
#include "binary/symbols.h"
#include "cfi/unwind_table.h"

/* From libstdc++ (the C++ ABI's demangler, the one perf and gdb agree with). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static char *symbol_name(const char *sym)
{
	int status = -1;
	char *demangled = NULL;

	if (sym[0] == '_' && sym[1] == 'Z')
		demangled = __cxa_demangle(sym, NULL, NULL, &status);
	if (demangled && status == 0)
		return demangled;
	free(demangled);
	return strdup(sym);
}

static ssize_t read_module_code(void *mod, uint64_t vaddr, uint8_t *buf, size_t len)
{
	return code__read_vaddr(mod, vaddr, buf, len);
}

/* The start its code shows for the function holding vaddr, in a file's code that neither
 * symbols nor CFI cover. */
static int code_start(struct module *mod, const struct unwind_table *table, uint64_t vaddr,
		      uint64_t *start)
{
	struct code_source src = { .table = table, .read = read_module_code, .arg = mod };
	uint64_t file_offset;

	if (mod->from_slices)
		return mod->slice ? module_slice__code_start(mod->slice, vaddr, start) : -ENOENT;
	if (mod->anon_code || !mod->syms ||
	    elf_symbols__segment(mod->syms, vaddr, &src.seg_start, &src.seg_end, &file_offset) != 0)
		return -ENOENT;
	return code_starts__find(&mod->code_starts, &src, vaddr, start);
}

int frame_name__code_start(struct module_registry *modules, struct module *mod, uint64_t vaddr,
			   uint64_t *start)
{
	return code_start(mod, module_registry__unwind_table(modules, mod), vaddr, start);
}

/* A frame no symbol names: after the function that holds it by CFI, so all its
 * return addresses make one frame ("MODULE+0xSTART", the start as addr2line -e takes it),
 * or "_start" at the entry point; with no CFI either, after the function start its code
 * shows (binary/code_starts.h), and "MODULE+0xADDR" where none shows. */
static char *unnamed_frame_name(struct module_registry *modules, struct module *mod,
				uint64_t pc, uint64_t addr)
{
	const struct unwind_table *table = NULL;
	uint64_t entry = 0;
	uint64_t start = addr;
	bool has_start;
	char *name = NULL;

	if (mod) {
		table = module_registry__unwind_table(modules, mod);
		entry = elf_symbols__entry(mod->syms);
	}
	/* as for symbols: a return address right after a gap names the function it points at */
	has_start = unwind_table__function_start(table, pc, &start) == 0 ||
		    (pc != addr && unwind_table__function_start(table, addr, &start) == 0);
	/* entry code without CFI (ld.so's _start) is named as resolver__is_entry_code (user/proc/)
	 * recognises it */
	if (entry && ((has_start && start == entry) ||
		      (!has_start && pc >= entry && pc - entry < ELF_ENTRY_CODE_MAX)))
		return strdup("_start");
	/* code with neither symbols nor CFI (stripped hand-written assembly): after the
	 * function its code says holds it */
	if (!has_start && mod)
		has_start = code_start(mod, table, pc, &start) == 0;
	return asprintf(&name, "%s+0x%" PRIx64, mod ? mod->name : "?", start) < 0 ? NULL : name;
}

/* JIT code: its process's perf map entry, else its jitdump's code load, else its symbol
 * in what it registered through gdb's JIT interface, else its mapping's name, never an address: provisional while the process lives to name it later. */
static char *anon_code_name(const struct module *mod, uint64_t pc, bool *provisional)
{
	const char *name = perf_map__lookup(mod->perf_map, pc);

	if (!name && mod->jitdump)
		name = jitdump__lookup(mod->jitdump, pc);
	if (!name && mod->gdb_jit)
		name = gdb_jit__lookup(mod->gdb_jit, pc);
	*provisional = !name && (mod->perf_map || mod->jitdump);
	return strdup(name ? name : mod->name);
}

/* Whether a debug file fetched at the end (debuginfod) may still name mod's frames that no
 * symbol names now: a binary with a build-id whose own and local debug files gave no full
 * symbol table. Marks mod as wanting one. */
static bool may_fetch_debug_file(struct module_registry *modules, struct module *mod)
{
	enum elf_symbols_source source;
	const uint8_t *id;

	/* a dropped binary's source is not known until it is read again */
	if (!module_registry__debuginfod(modules) || mod->path[0] != '/' || !mod->syms ||
	    mod->dropped || mod->debug_file_done || elf_symbols__build_id(mod->syms, &id) == 0)
		return false;
	source = elf_symbols__source(mod->syms);
	if (source == ELF_SYMBOLS_SYMTAB || source == ELF_SYMBOLS_BUILD_ID ||
	    source == ELF_SYMBOLS_DEBUGLINK)
		return false;
	mod->wants_debug_file = true;
	return true;
}

/* An inlined call, marked as perf and inferno mark one: "func_[i]". */
static char *inline_frame_name(const struct python_names *names, uint64_t id)
{
	const struct python_location *loc = python_names__get(names, id);
	char *name = NULL;

	return asprintf(&name, "%s_[i]", loc ? loc->function : "[inline]") < 0 ? NULL : name;
}

char *frame_name__format(struct module_registry *modules, const struct ksyms *ksyms,
			 const struct frame *f)
{
	bool provisional;

	return frame_name__format_provisional(modules, ksyms, f, &provisional);
}

char *frame_name__format_provisional(struct module_registry *modules, const struct ksyms *ksyms,
				     const struct frame *f, bool *provisional)
{
	/* caller frames: look up ra-1, the call instruction, not the one after it */
	uint64_t pc = (f->flags & FRAME_CALLER) ? f->addr - 1 : f->addr;
	struct module *mod;
	const char *sym = NULL;
	uint64_t off;
	char *name = NULL;

	*provisional = false;
	switch (f->module) {
	case MODULE_KERNEL:
		sym = ksyms__lookup(ksyms, pc, &off);
		if ((sym ? asprintf(&name, "%s_[k]", sym)
			 : asprintf(&name, "[kernel]+0x%" PRIx64 "_[k]", pc)) < 0)
			name = NULL;
		return name;
	case MODULE_UNMAPPED:
		return asprintf(&name, "[unmapped]+0x%" PRIx64, f->addr) < 0 ? NULL : name;
	case MODULE_ANON:
		return strdup("[jit]");
	case MODULE_PYTHON:
		name = python_names__format(module_registry__python_names(modules), f->addr);
		return name ? name : strdup("[python]");
	case MODULE_INLINE:
		return inline_frame_name(module_registry__inline_names(modules), f->addr);
	}
	mod = module_registry__by_id(modules, f->module);
	if (mod && mod->anon_code)
		return anon_code_name(mod, pc, provisional);
	if (mod)
		sym = elf_symbols__lookup(mod->syms, pc, &off);
	/* A return address right after a gap (the kernel's signal return path lands on
	 * __restore_rt, whose CFI starts one byte early) names the function it points at. */
	if (mod && !sym && pc != f->addr)
		sym = elf_symbols__lookup(mod->syms, f->addr, &off);
	if (sym)
		return symbol_name(sym);
	*provisional = mod && may_fetch_debug_file(modules, mod);
	return unnamed_frame_name(modules, mod, pc, f->addr);
}
