#include "proc/resolver.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "binary/symbols.h"
#include "cfi/unwind_table.h"

/* Shared memory that JITs run code from, as /proc/PID/maps names it: a memfd
 * ("/memfd:NAME (deleted)": BEAM, .NET), shared anonymous memory ("/dev/zero (deleted)":
 * PHP's opcache JIT), huge pages ("/anon_hugepage (deleted)") and System V segments. */
static bool is_shared_memory(const char *path)
{
	static const char *const prefixes[] = {
		"/memfd:", "/dev/zero (deleted)", "/anon_hugepage (deleted)", "/SYSV",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (strncmp(path, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	}
	return false;
}

/* An executable mapping of a file that is no ELF file (not one that could not be read). */
static bool is_foreign_image(const struct mapping *m)
{
	const struct module *mod = m->module;

	return mod && mod->load_err == -ENOEXEC && strrchr(m->path, '/');
}

struct module *resolver__module(const struct resolver *r, struct process *proc,
				struct mapping *m)
{
	if (m->module) {
		module_registry__use(r->modules, m->module);
		return m->module;
	}
	if (m->path[0] != '/' && strcmp(m->path, "[vdso]") != 0) {
		m->module = module_registry__anon_code(r->modules, proc->pid, m->path, !r->replay);
		m->bias = 0;
	} else {
		m->module = r->replay ? module_registry__get(r->modules, m->path)
				      : module_registry__get_mapped(r->modules, proc->pid, m);
		if (m->module) {
			module_registry__use(r->modules, m->module);
			m->bias_err = module__bias(m->module, m, &m->bias);
		}
		/* A JIT that keeps its code in shared memory (BEAM's and .NET's map a memfd
		 * twice, writable and executable; PHP's opcache shares it between processes)
		 * runs code from a "file" that is no ELF: JIT code, as if anonymous. So does a
		 * runtime that maps an image of its own format as code (SBCL's core, where its
		 * compiler also puts the code it makes): its code is read from the process,
		 * not the file, and its frames are named after the file, "[sbcl.core]". */
		if ((!m->module || m->bias_err) &&
		    (is_shared_memory(m->path) || is_foreign_image(m))) {
			char name[PATH_MAX + 2];
			struct module *jit;

			snprintf(name, sizeof(name), "[%s]", strrchr(m->path, '/') + 1);
			jit = module_registry__anon_code(r->modules, proc->pid,
							 is_shared_memory(m->path) ? m->path : name,
							 !r->replay);

			if (jit) { /* else, out of memory: the file as it is */
				m->module = jit;
				m->bias = 0;
				m->bias_err = 0;
			}
		}
	}
	return m->module;
}

bool resolver__frame(const struct resolver *r, struct process *proc, uint64_t addr, bool caller,
		     struct frame *f)
{
	struct mapping *m = process__find_mapping(proc, addr);
	struct module *mod;

	f->flags = caller ? FRAME_CALLER : 0;
	f->addr = addr;
	if (!m) {
		f->module = MODULE_UNMAPPED;
		return false;
	}
	mod = resolver__module(r, proc, m);
	if (!mod) {
		f->module = MODULE_ANON;
		return true;
	}
	f->module = mod->id;
	/* Read the perf map while the process lives: its uid vouches for the file, and a
	 * JIT appends to it as it compiles. */
	if (mod->perf_map)
		perf_map__lookup(mod->perf_map, addr);
	/* Without a readable ELF, name the frame by its offset in the file. */
	f->addr = m->bias_err ? addr - m->start + m->file_offset : addr - (uint64_t)m->bias;
	return true;
}

/* A hand-written _start, such as the dynamic loader's, has no CFI to say that its return
 * address is undefined; the ELF header says where it is. */
/* The function holding vaddr starts past the entry point, by its symbol or its FDE: it is
 * no start-up code, however near the entry (a program's first functions follow _start and
 * crtstuff's within its first 256 bytes). */
static bool starts_past_entry(const struct resolver *r, struct module *mod, uint64_t vaddr,
			      uint64_t entry)
{
	uint64_t start, size;

	if (elf_symbols__function(mod->syms, vaddr, &start, &size) == 0 && start > entry)
		return true;
	return unwind_table__function_start(module_registry__unwind_table(r->modules, mod), vaddr,
					    &start) == 0 &&
	       start > entry;
}

bool resolver__is_entry_code(const struct resolver *r, struct process *proc, uint64_t pc,
			     bool caller)
{
	struct mapping *m = process__find_mapping(proc, pc);
	struct module *mod = m ? resolver__module(r, proc, m) : NULL;
	uint64_t entry, vaddr;

	if (!mod || m->bias_err || !(entry = elf_symbols__entry(mod->syms)))
		return false;
	vaddr = pc - (uint64_t)m->bias - (caller ? 1 : 0);
	return vaddr >= entry && vaddr - entry < ELF_ENTRY_CODE_MAX &&
	       !starts_past_entry(r, mod, vaddr, entry);
}

bool resolver__is_function_entry(const struct resolver *r, struct process *proc, uint64_t pc)
{
	struct mapping *m = process__find_mapping(proc, pc);
	struct module *mod = m ? resolver__module(r, proc, m) : NULL;

	return mod && !m->bias_err && elf_symbols__is_function_entry(mod->syms, pc - (uint64_t)m->bias);
}

/* Distributions build libc's start-up code without frame pointers. */
static bool is_start_routine(const char *name)
{
	static const char *const names[] = {
		"__libc_start_call_main", "__libc_start_main", "start_thread",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(name, names[i]) == 0)
			return true;
	}
	return false;
}

bool resolver__in_start_routine(const struct resolver *r, struct process *proc, uint64_t pc)
{
	struct mapping *m = process__find_mapping(proc, pc);
	struct module *mod = m ? resolver__module(r, proc, m) : NULL;
	const char *name;
	uint64_t offset;

	if (!mod || !mod->syms || m->bias_err)
		return false;
	name = elf_symbols__lookup(mod->syms, pc - (uint64_t)m->bias - 1, &offset);
	return name && is_start_routine(name);
}
