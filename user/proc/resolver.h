/* A process's addresses resolved to binaries: the module behind each mapping (found once
 * per mapping, with its load bias), and frames as (module, file address). */
#ifndef HPROF_PROC_RESOLVER_H
#define HPROF_PROC_RESOLVER_H

#include <stdbool.h>
#include <stdint.h>

#include "binary/frame.h"
#include "binary/modules.h"
#include "proc/processes.h"

struct resolver {
	struct module_registry *modules;
	bool replay; /* a capture: files by path, no live process to read perf maps of */
};

/* The module behind m, or NULL when there is none to read (its load bias is then 0). Code
 * in no file (not even the vDSO's image) is the process's anonymous code (JIT code). The
 * module counts as used (its symbols are read again if they had been dropped). */
struct module *resolver__module(const struct resolver *r, struct process *proc,
				struct mapping *m);
/* Resolves a user address (caller: a return address) to a frame; false, with an
 * MODULE_UNMAPPED frame, when no executable mapping holds it. */
bool resolver__frame(const struct resolver *r, struct process *proc, uint64_t addr, bool caller,
		     struct frame *f);
/* The address is in the code at its binary's ELF entry point (pc, or the call before a
 * return address): a process's outermost frame, even where the entry has no CFI. */
bool resolver__is_entry_code(const struct resolver *r, struct process *proc, uint64_t pc,
			     bool caller);
/* pc is the first instruction of a function its binary's ELF file names
 * (elf_symbols__is_function_entry): DT_INIT, DT_FINI, .init, .fini. */
bool resolver__is_function_entry(const struct resolver *r, struct process *proc, uint64_t pc);

/* The return address pc is in one of libc's start-up routines (by symbol), where frame-
 * pointer chains end: main's and a thread's start routine's callers. */
bool resolver__in_start_routine(const struct resolver *r, struct process *proc, uint64_t pc);

#endif
