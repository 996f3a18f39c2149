/* The binaries frames point into: one entry per file (or [vdso]), shared by every
 * process that maps it, with its symbols loaded on first use. */
#ifndef HPROF_MODULES_H
#define HPROF_MODULES_H

#include <stdint.h>

#include "procmaps.h"
#include "symbols.h"

/* Module ids below MODULE_FIRST_FILE are pseudo-modules. */
enum {
	MODULE_KERNEL = 0,   /* frame address is a kernel address */
	MODULE_UNMAPPED = 1, /* no executable mapping held the address; address is absolute */
	MODULE_ANON = 2,     /* anonymous executable memory (JIT code); address is absolute */
	MODULE_FIRST_FILE = 3,
};

struct module {
	uint32_t id;
	char *path;       /* as /proc/PID/maps names it */
	const char *name; /* basename of path */
	struct elf_symbols *syms;
	int load_err;     /* 0, or -errno from loading syms */
	char load_msg[160];
};

struct module_registry;

int module_registry__new(struct module_registry **out);
/* The module for a mapping's path, created (and its ELF read) on first sight.
 * Returns NULL only when out of memory. */
struct module *module_registry__get(struct module_registry *reg, const char *path);
struct module *module_registry__by_id(struct module_registry *reg, uint32_t id);
/* Translates a process address inside mapping m of module mod to the module's ELF
 * virtual address. Returns 0 or -ENOENT (unreadable ELF or no segment holds it). */
int module__addr_to_vaddr(const struct module *mod, const struct mapping *m, uint64_t addr,
			  uint64_t *vaddr);
uint32_t module_registry__count(const struct module_registry *reg);
void module_registry__free(struct module_registry *reg);

#endif
