/* The walk's callbacks about a process's mappings and symbols (process_space.h). */
#include "unwind/process_space.h"

#include <errno.h>

#include "binary/modules.h"
#include "proc/processes.h"
#include "proc/resolver.h"
#include "unwind/process_code.h"
#include "util/process_memory.h"

/* JIT code with unwinding info in its jitdump: the code load's range and rows. */
static int jit_unwind_map(struct module *mod, uint64_t pc, struct unwind_map *map)
{
	const struct unwind_table *table;
	struct jitdump_code code;

	if (!mod->jitdump || jitdump__find(mod->jitdump, pc, &code) != 0 ||
	    jitdump__unwind_table(mod->jitdump, pc, &table, NULL, 0) != 0)
		return -ENODATA;
	*map = (struct unwind_map){ .start = code.start, .end = code.start + code.size,
				    .bias = 0, .table = table };
	return 0;
}

/* Where the process defines a runtime's variable: as the dynamic linker resolves the
 * symbol, the program's own if it defines one (its code is mapped lowest), else the
 * library loaded first that does (the loader maps libraries downwards: the highest). */
static int locate_runtime_symbol(struct process_view *c, enum runtime_symbol which, uint64_t *addr)
{
	size_t n = address_space__count(c->proc->as);
	bool first_file = true, found = false;

	for (size_t i = 0; i < n; i++) {
		struct mapping *m = address_space__at(c->proc->as, i);
		struct module *mod = resolver__module(c->resolver, c->proc, m);
		uint64_t vaddr;

		if (!mod || mod->anon_code)
			continue;
		if (!m->bias_err && module__runtime_symbol(mod, which, &vaddr) == 0) {
			*addr = vaddr + (uint64_t)m->bias;
			found = true;
			if (first_file)
				return 0;
		}
		first_file = false;
	}
	return found ? 0 : -ENOENT;
}

static int locate_gdb_jit(void *ctx, uint64_t *descriptor)
{
	return locate_runtime_symbol(ctx, RUNTIME_GDB_JIT_DESCRIPTOR, descriptor);
}

/* BEAM's exit address: the pointer beam_normal_exit holds, once the emulator set it. */
static int locate_beam_exit(void *ctx, uint64_t *exit)
{
	struct process_view *c = ctx;
	uint64_t var;

	if (locate_runtime_symbol(c, RUNTIME_BEAM_NORMAL_EXIT, &var) != 0 ||
	    !process_memory__read(c->proc->pid, var, exit, sizeof(*exit)) || *exit == 0)
		return -ENOENT;
	return 0;
}

/* JIT code registered through gdb's JIT interface: the object's rows. */
static int gdb_jit_unwind_map(struct process_view *c, uint64_t pc, struct unwind_map *map)
{
	struct gdb_jit *gj = module_registry__gdb_jit(c->modules, c->proc->pid, locate_gdb_jit, c);
	const struct unwind_table *table;
	uint64_t start, end;

	struct mapping *m = process__find_mapping(c->proc, pc);

	if (!gj || !m || gdb_jit__find(gj, pc, &table, &start, &end) != 0)
		return -ENODATA;
	/* the object's rows, no further than the mapping: an object's claim on other code
	 * (another library's, in a range its rows span) is not taken */
	*map = (struct unwind_map){ .start = start > m->start ? start : m->start,
				    .end = end < m->end ? end : m->end, .bias = 0, .table = table };
	return 0;
}

int process_space__find_map(void *ctx, uint64_t pc, struct unwind_map *map)
{
	struct process_view *c = ctx;
	struct mapping *m = process__find_mapping(c->proc, pc);
	struct module *mod;

	if (!m)
		return -ENOENT;
	mod = resolver__module(c->resolver, c->proc, m);
	if (!mod || m->bias_err)
		return -ENODATA;
	if (mod->anon_code)
		return jit_unwind_map(mod, pc, map) == 0 ? 0 : gdb_jit_unwind_map(c, pc, map);
	map->table = module_registry__unwind_table(c->modules, mod);
	if (!map->table)
		return -ENODATA;
	map->start = m->start;
	map->end = m->end;
	map->bias = (uint64_t)m->bias;
	return 0;
}

/* Finds the mapping's module too, so that modules are numbered in the order the chain
 * meets them (pprof's mapping ids), whatever the walk looks up later. */
bool process_space__is_mapped(void *ctx, uint64_t pc)
{
	struct process_view *c = ctx;
	struct mapping *m = process__find_mapping(c->proc, pc);

	if (m)
		resolver__module(c->resolver, c->proc, m);
	return m != NULL;
}

/* ra returns into a Go function that moved rsp to the stack the frame below runs on
 * (unwind_table__switches_stack): systemstack's or mcall's call of a function on the
 * thread's g0 stack. */
static bool returns_into_stack_switch(struct process_view *c, uint64_t ra)
{
	struct unwind_map map;

	return process_space__find_map(c, ra, &map) == 0 &&
	       unwind_table__switches_stack(map.table, ra - 1 - map.bias);
}

/* Where a runtime's stacks end: the address an Erlang process's first frame returns to
 * (BEAM runs each Erlang process on a stack of its own, which ends there), and a return
 * into Go code that switched stacks. Go's TOPFRAME functions are rows (return address
 * undefined, cfi/lazy_table.c); these two stay code. BEAM's exit is a value the emulator
 * stores at run time, in the process, which no table built from a file holds. A SPWRITE
 * function gets no rows on purpose (its FDE says nothing of the stack it moved to, so an
 * exact pc in it goes to the analysis), yet a return into it ends the stack: a row would
 * say the same of both, and the chain's cut (hybrid) asks of return addresses only. Its
 * flag is read from the table (unwind_table__switches_stack), not from code. */
bool process_space__is_stack_end(void *ctx, uint64_t ra)
{
	struct process_view *c = ctx;

	/* 0: no BEAM exit known, and no stack ends at address 0 */
	return ra != 0 &&
	       (ra == module_registry__beam_exit(c->modules, c->proc->pid, locate_beam_exit, c) ||
		returns_into_stack_switch(c, ra));
}

const char *process_space__go_function(void *ctx, uint64_t pc)
{
	struct process_view *c = ctx;
	struct unwind_map map;

	if (process_space__find_map(c, pc, &map) != 0)
		return NULL;
	return unwind_table__go_function(map.table, pc - map.bias);
}

/* Where a stack starts: the ELF entry's code, or a runtime's stack end. Entry code stays
 * code rather than rows with the return address undefined: the walk asks only once every
 * frame step found nothing there (a row would be found first, before the analysis and the
 * scan, and stop walks that go on today), and where it ends (ELF_ENTRY_CODE_MAX, or the
 * first symbol or FDE past the entry) needs the symbols, which a binary's table is built
 * without. */
bool process_space__is_entry_code(void *ctx, uint64_t pc, bool caller)
{
	struct process_view *c = ctx;

	return resolver__is_entry_code(c->resolver, c->proc, pc, caller) ||
	       (caller && process_space__is_stack_end(ctx, pc));
}

bool process_space__is_function_entry(void *ctx, uint64_t pc)
{
	struct process_view *c = ctx;

	return resolver__is_function_entry(c->resolver, c->proc, pc);
}

bool process_space__in_start_routine(void *ctx, uint64_t pc)
{
	struct process_view *c = ctx;

	return resolver__in_start_routine(c->resolver, c->proc, pc);
}
