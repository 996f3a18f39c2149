/* The registry of binaries (modules.h): a module per path, mapped file or process's code,
 * its unwind table shared by build-id, and each one's lifetime: used, swept, dropped.
 * Entries are made in module_entry.c; code without a file is process_jit.c's. */
#include "binary/modules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include <uthash.h>

#include "binary/code_starts.h"
#include "binary/dwarf_index.h"
#include "binary/slice.h"
#include "binary/modules_internal.h"

int module_registry__new(struct module_registry **out)
{
	*out = calloc(1, sizeof(**out));
	if (*out && (!((*out)->files = mapped_files__new()) ||
		     !((*out)->python_names = python_names__new()) ||
		     !((*out)->inline_names = python_names__new()) ||
		     unwind_row_cache__new(MODULE_ROW_CACHE_BYTES, &(*out)->row_cache) != 0)) {
		mapped_files__free((*out)->files);
		python_names__free((*out)->python_names);
		python_names__free((*out)->inline_names);
		free(*out);
		*out = NULL;
	}
	return *out ? 0 : -ENOMEM;
}

struct module *module_registry__get(struct module_registry *reg, const char *path)
{
	struct module_entry *e;
	const char *slash;

	HASH_FIND_STR(reg->by_path, path, e);
	if (e)
		return &e->mod;
	e = module_entry__add(reg, path);
	if (!e)
		return NULL;
	slash = strrchr(e->mod.path, '/');
	e->mod.name = slash ? slash + 1 : e->mod.path;
	e->mod.by_path = true;
	HASH_ADD_KEYPTR(hh, reg->by_path, e->mod.path, strlen(e->mod.path), e);
	module_entry__load_symbols(&e->mod);
	return &e->mod;
}

static struct mapped_file_id file_id(const struct mapping *m)
{
	return (struct mapped_file_id){ m->dev_major, m->dev_minor, m->inode };
}

int module_registry__pin(struct module_registry *reg, uint32_t pid, const struct mapping *m)
{
	struct mapped_file_id id = file_id(m);

	if (m->path[0] != '/' || m->inode == 0)
		return -ENOENT;
	process_jit__use_mapped_jitdump(reg, pid, m->path);
	return mapped_files__pin(reg->files, pid, m->start, m->end, m->path, &id);
}

/* The kernel appends " (deleted)" to the path of a file removed since it was mapped. */
static size_t path_len_without_deleted(const char *path)
{
	static const char suffix[] = " (deleted)";
	size_t len = strlen(path);

	if (len > sizeof(suffix) - 1 && strcmp(path + len - (sizeof(suffix) - 1), suffix) == 0)
		return len - (sizeof(suffix) - 1);
	return len;
}

struct module *module_registry__get_mapped(struct module_registry *reg, uint32_t pid,
					   const struct mapping *m)
{
	struct mapped_file_id id = file_id(m);
	struct module_entry *e;
	const char *slash;
	size_t len;

	if (m->path[0] != '/' || m->inode == 0)
		return module_registry__get(reg, m->path);
	HASH_FIND(hh, reg->by_file, &id, sizeof(id), e);
	if (e)
		return &e->mod;
	module_registry__pin(reg, pid, m);
	e = module_entry__add(reg, m->path);
	if (!e)
		return NULL;
	len = path_len_without_deleted(e->mod.path);
	e->mod.path[len] = '\0';
	slash = strrchr(e->mod.path, '/');
	e->mod.name = slash ? slash + 1 : e->mod.path;
	e->file = id;
	e->mod.unpinned = !mapped_files__path(reg->files, &id, e->mod.load_path,
					      sizeof(e->mod.load_path));
	HASH_ADD(hh, reg->by_file, file, sizeof(e->file), e);
	module_entry__load_symbols(&e->mod);
	return &e->mod;
}

size_t module_registry__pinned_files(const struct module_registry *reg)
{
	return mapped_files__count(reg->files);
}

struct python_names *module_registry__python_names(const struct module_registry *reg)
{
	return reg->python_names;
}

struct python_names *module_registry__inline_names(const struct module_registry *reg)
{
	return reg->inline_names;
}

int module__runtime_symbol(struct module *mod, enum runtime_symbol which, uint64_t *vaddr)
{
	if (!mod->runtime_symbols_looked) {
		/* a pinned file's, or a replay's by its path; a live process's file not pinned
		 * is not read by path */
		const char *file = NULL;

		if (mod->load_path[0])
			file = mod->load_path;
		else if (mod->by_path && !mod->from_slices)
			file = mod->path;

		mod->runtime_symbols_looked = true;
		if (mod->anon_code || mod->unpinned || !file ||
		    runtime_symbols__in_file(file, mod->runtime_symbols) != 0)
			memset(mod->runtime_symbols, 0, sizeof(mod->runtime_symbols));
	}
	*vaddr = which < RUNTIME_SYMBOL_COUNT ? mod->runtime_symbols[which] : 0;
	return *vaddr ? 0 : -ENOENT;
}

struct module *module_registry__by_id(struct module_registry *reg, uint32_t id)
{
	if (id < MODULE_FIRST_FILE || id - MODULE_FIRST_FILE >= reg->nr)
		return NULL;
	return &reg->by_id[id - MODULE_FIRST_FILE]->mod;
}

int module__addr_to_vaddr(const struct module *mod, const struct mapping *m, uint64_t addr,
			  uint64_t *vaddr)
{
	if (!mod->syms)
		return -ENOENT;
	return elf_symbols__offset_to_vaddr(mod->syms, m->file_offset,
					    addr - m->start + m->file_offset, vaddr);
}

/* The module's unwind table: a file's opened lazily (rows compiled per function into the
 * registry's cache), the vDSO's compiled whole from memory. */
static int compile_table(struct module_registry *reg, struct module *mod)
{
	uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
	size_t size;

	if (mod->from_slices)
		return mod->slice && !mod->anon_code ? module_slice__table(mod->slice, &mod->table)
						     : -ENOENT;
	if (strcmp(mod->path, "[vdso]") == 0) {
		/* Same image as ours (see load_vdso_symbols); its CFI is read from memory. */
		if (!vdso || !mod->syms || !(size = elf_symbols__image_size(mod->syms)))
			return -ENOENT;
		return unwind_table__from_image((const void *)vdso, size, "[vdso]", UNWIND_SRC_ALL,
						&mod->table, mod->table_msg, sizeof(mod->table_msg));
	}
	if (mod->anon_code || mod->unpinned || mod->path[0] != '/')
		return -ENOENT;
	return unwind_table__open(module__load_path(mod), reg->row_cache, &mod->table, mod->table_msg,
				  sizeof(mod->table_msg));
}

const struct unwind_table *module_registry__unwind_table(struct module_registry *reg,
							 struct module *mod)
{
	const uint8_t *id = NULL;
	size_t id_len = 0;
	struct table_entry *t = NULL;

	if (mod->table_tried)
		return mod->table;
	mod->table_tried = true;
	if (mod->syms)
		id_len = elf_symbols__build_id(mod->syms, &id);
	if (id_len) {
		HASH_FIND(hh, reg->tables, id, id_len, t);
		if (t) {
			mod->table = t->table;
			mod->table_shared = true;
			return mod->table;
		}
	}
	mod->table_err = compile_table(reg, mod);
	if (mod->table_err || !id_len)
		return mod->table;
	t = calloc(1, sizeof(*t));
	if (!t)
		return mod->table; /* works unshared */
	memcpy(t->build_id, id, id_len);
	t->build_id_len = id_len;
	t->table = mod->table;
	HASH_ADD(hh, reg->tables, build_id, id_len, t);
	mod->table_shared = true;
	return mod->table;
}

int module__bias(const struct module *mod, const struct mapping *m, int64_t *bias)
{
	uint64_t vaddr;
	int err = module__addr_to_vaddr(mod, m, m->start, &vaddr);

	if (!err)
		*bias = (int64_t)(m->start - vaddr);
	return err;
}

void module_registry__reload_symbols(struct module_registry *reg, struct module *mod)
{
	struct elf_symbols *kept = mod->syms;
	int kept_err = mod->load_err;

	if (mod->anon_code || mod->from_slices || mod->path[0] != '/')
		return;
	mod->syms = NULL;
	module_entry__load_symbols(mod);
	if (mod->syms) {
		elf_symbols__free(kept);
		mod->dropped = false;
		code_starts__free(mod->code_starts);
		mod->code_starts = NULL;
		/* its DWARF too may be in the file its symbols now come from */
		dwarf_index__free(mod->dwarf);
		mod->dwarf = NULL;
		mod->dwarf_tried = false;
	} else {
		mod->syms = kept;
		mod->load_err = kept_err;
	}
	reg->reloads++;
}

void module_registry__set_debuginfod(struct module_registry *reg, bool on)
{
	reg->debuginfod = on;
}

bool module_registry__debuginfod(const struct module_registry *reg)
{
	return reg->debuginfod;
}

void module_registry__use(struct module_registry *reg, struct module *mod)
{
	struct elf_symbols *kept;

	mod->last_used = reg->sweeps;
	if (!mod->dropped)
		return;
	/* the same file as before (pinned, or the same path in a replay): the same symbols */
	kept = mod->syms;
	mod->syms = NULL;
	mod->dropped = false;
	module_entry__load_symbols(mod);
	if (mod->syms)
		elf_symbols__free(kept);
	else
		mod->syms = kept; /* its segments still place its mappings */
	reg->reloads++;
}

/* Binaries read from a file can be read again; the vDSO image and JIT code cannot. */
static bool can_drop(const struct module *mod)
{
	return !mod->dropped && !mod->anon_code && mod->path[0] == '/' &&
	       (elf_symbols__holds_functions(mod->syms) || mod->table || mod->dwarf);
}

static void drop(struct module *mod)
{
	elf_symbols__drop_functions(mod->syms);
	if (mod->table && !mod->table_shared)
		unwind_table__free(mod->table);
	mod->table = NULL;
	mod->table_tried = mod->table_shared = false;
	code_starts__free(mod->code_starts);
	mod->code_starts = NULL;
	dwarf_index__free(mod->dwarf);
	mod->dwarf = NULL;
	mod->dwarf_tried = false;
	mod->dropped = true;
}

/* Frees the shared tables that no module still holds. */
static void drop_unused_tables(struct module_registry *reg)
{
	struct table_entry *t, *tmp;

	for (uint32_t i = 0; i < reg->nr; i++) {
		struct module *mod = &reg->by_id[i]->mod;
		const uint8_t *id;
		size_t id_len;

		if (!mod->table_shared || !(id_len = elf_symbols__build_id(mod->syms, &id)))
			continue;
		HASH_FIND(hh, reg->tables, id, id_len, t);
		if (t)
			t->used_at = reg->sweeps;
	}
	HASH_ITER(hh, reg->tables, t, tmp) {
		if (t->used_at == reg->sweeps)
			continue;
		HASH_DEL(reg->tables, t);
		unwind_table__free(t->table);
		free(t);
	}
}

void module_registry__sweep(struct module_registry *reg)
{
	bool dropped = false;

	reg->sweeps++;
	for (uint32_t i = 0; i < reg->nr; i++) {
		struct module *mod = &reg->by_id[i]->mod;

		if (reg->sweeps - mod->last_used > MODULE_IDLE_SWEEPS && can_drop(mod)) {
			drop(mod);
			dropped = true;
		}
	}
	if (dropped)
		drop_unused_tables(reg);
}

void module_registry__use_slices(struct module_registry *reg, struct module_slices *slices)
{
	module_slices__free(reg->slices);
	reg->slices = slices;
}

uint32_t module_registry__count(const struct module_registry *reg)
{
	return reg->nr;
}

static uint64_t table_bytes(const struct unwind_table *table)
{
	struct unwind_stats stats;

	unwind_table__stats(table, &stats);
	return table ? stats.table_bytes : 0;
}

void module_registry__memory(const struct module_registry *reg, struct module_memory *m)
{
	const struct process_code *pc;
	const struct table_entry *t;

	memset(m, 0, sizeof(*m));
	for (uint32_t i = 0; i < reg->nr; i++) {
		const struct module *mod = &reg->by_id[i]->mod;

		if (mod->anon_code)
			m->anon_code++;
		else
			m->files++;
		m->dropped += mod->dropped;
		m->symbol_bytes += elf_symbols__bytes(mod->syms);
		m->code_start_bytes += code_starts__bytes(mod->code_starts);
		if (!mod->table_shared)
			m->table_bytes += table_bytes(mod->table);
	}
	for (t = reg->tables; t; t = t->hh.next)
		m->table_bytes += table_bytes(t->table);
	m->code_copy_reads = reg->gone_code_copy_reads;
	for (pc = reg->processes; pc; pc = pc->hh.next) {
		m->perf_maps += pc->live && pc->map != NULL;
		m->code_copy_bytes += code_copies__bytes(pc->copies);
		m->code_copy_reads += code_copies__reads(pc->copies);
		m->gdb_jit_bytes += gdb_jit__bytes(pc->gdb_jit);
	}
	m->pinned_files = mapped_files__count(reg->files);
	m->reloads = reg->reloads;
	unwind_row_cache__stats(reg->row_cache, &m->row_cache);
}

void module_registry__free(struct module_registry *reg)
{
	struct process_code *pc, *ptmp;
	struct table_entry *t, *tmp;

	if (!reg)
		return;
	HASH_CLEAR(hh, reg->by_path);
	HASH_CLEAR(hh, reg->by_anon);
	HASH_CLEAR(hh, reg->by_file);
	mapped_files__free(reg->files);
	python_names__free(reg->python_names);
	python_names__free(reg->inline_names);
	HASH_ITER(hh, reg->processes, pc, ptmp) {
		HASH_DEL(reg->processes, pc);
		perf_map__free(pc->map);
		jitdump__free(pc->jitdump);
		code_copies__free(pc->copies);
		gdb_jit__free(pc->gdb_jit);
		free(pc->modules);
		free(pc);
	}
	for (uint32_t i = 0; i < reg->nr; i++) {
		/* Shared tables are freed through the build-id cache below. */
		if (reg->by_id[i]->mod.table && !reg->by_id[i]->mod.table_shared)
			unwind_table__free(reg->by_id[i]->mod.table);
		elf_symbols__free(reg->by_id[i]->mod.syms);
		code_starts__free(reg->by_id[i]->mod.code_starts);
		dwarf_index__free(reg->by_id[i]->mod.dwarf);
		free(reg->by_id[i]->mod.path);
		free(reg->by_id[i]->anon_key);
		free(reg->by_id[i]);
	}
	HASH_ITER(hh, reg->tables, t, tmp) {
		HASH_DEL(reg->tables, t);
		unwind_table__free(t->table);
		free(t);
	}
	free(reg->by_id);
	module_slices__free(reg->slices);
	unwind_row_cache__free(reg->row_cache);
	free(reg);
}
