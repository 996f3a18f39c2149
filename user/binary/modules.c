#include "binary/modules.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

#include "binary/code_starts.h"
#include "binary/dwarf_index.h"
#include "binary/jit_file.h"
#include "binary/slice.h"
#include "util/grow.h"

/* Rows of binaries' functions compiled as walks need them, across all binaries: a profile
 * touches a few thousand functions, ~100-300 bytes each with bookkeeping. */
#define MODULE_ROW_CACHE_BYTES (4u << 20)

/* A vDSO is two pages or so; anything claiming more than this is not one. */
#define VDSO_MAX_SIZE (1u << 20)

struct module_entry {
	struct module mod;
	char *anon_key;    /* anonymous code: "PID NAME", mod.name pointing at NAME */
	struct mapped_file_id file; /* key in by_file */
	UT_hash_handle hh; /* keyed by mod.path in by_path, by anon_key in by_anon, or by
			    * file in by_file */
};

/* A process's anonymous code: its modules (one per mapping name) and its perf map, shared
 * by them; dropped when the process exits or execs. */
struct process_code {
	uint32_t pid;
	bool live;            /* a live process's, not a replay's: its memory can be read */
	struct perf_map *map; /* a replay's: fixed, of its recording's reads */
	struct jitdump *jitdump; /* a replay's: fixed, of its recording's reads */
	struct code_copies *copies;
	struct gdb_jit *gdb_jit;    /* NULL until found */
	uint64_t gdb_jit_searched_ns;
	bool gdb_jit_searched;
	uint64_t beam_exit;         /* 0 until found */
	uint64_t beam_searched_ns;
	bool beam_searched;
	struct module_entry **modules;
	size_t nr_modules, modules_cap;
	UT_hash_handle hh;
};

/* Tables are shared by build-id: the same library under another path (a container's
 * root, a bind mount) is compiled once. */
struct table_entry {
	uint8_t build_id[BUILD_ID_MAX];
	size_t build_id_len;
	struct unwind_table *table;
	uint32_t used_at; /* the sweep that last saw a module using it */
	UT_hash_handle hh;
};

struct module_registry {
	struct unwind_row_cache *row_cache;
	struct table_entry *tables;
	struct module_entry *by_path;
	struct module_entry *by_anon;
	struct module_entry *by_file;
	struct mapped_files *files;
	struct process_code *processes;
	struct perf_map_stats gone_perf_maps; /* of processes that exited */
	uint64_t gone_code_copy_reads;        /* ... and their code copies' reads */
	struct gdb_jit_stats gone_gdb_jit;    /* ... and their gdb JIT registrations' */
	struct jitdump_stats gone_jitdumps;
	struct module_entry **by_id; /* index id - MODULE_FIRST_FILE */
	struct python_names *python_names;
	struct python_names *inline_names;
	uint32_t nr;
	size_t cap;
	uint32_t sweeps;
	uint64_t reloads;
	struct module_slices *slices; /* NULL: binaries are read from their files */
	module_beam_exit_fn beam_exit_hook;
	void *beam_exit_ctx;
	bool debuginfod; /* debug files may be fetched at the end */
};

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

/* Where the module's ELF is read from: its pinned file, else its path. */
static const char *load_path(const struct module *mod)
{
	return mod->load_path[0] ? mod->load_path : mod->path;
}

/* The vDSO image's size from its own ELF header: its section headers come last. It is
 * the kernel's image, mapped in this process too, so reading it is safe. */
static size_t vdso_image_size(const Elf64_Ehdr *eh)
{
	size_t size = 0;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	if (eh->e_shoff && eh->e_shentsize == sizeof(Elf64_Shdr))
		size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	return size <= VDSO_MAX_SIZE ? size : 0;
}

/* The vDSO is the same image in every process of this kernel: read it from our own
 * address space, where the auxiliary vector says it starts. */
static int load_vdso_symbols(struct module *mod)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	size_t size = eh ? vdso_image_size(eh) : 0;

	if (!size)
		return -ENOENT;
	return elf_symbols__load_image(eh, size, &mod->syms, mod->load_msg, sizeof(mod->load_msg));
}

static void load_symbols(struct module *mod)
{
	if (mod->from_slices)
		mod->load_err = !mod->slice ? -ENOENT
				: mod->slice->load_err ? mod->slice->load_err
				: module_slice__symbols(mod->slice, &mod->syms, mod->load_msg,
							sizeof(mod->load_msg));
	else if (mod->unpinned)
		mod->load_err = -ENOENT;
	else if (strcmp(mod->path, "[vdso]") == 0)
		mod->load_err = load_vdso_symbols(mod);
	else if (mod->path[0] == '/')
		mod->load_err = elf_symbols__load_from(load_path(mod), mod->path, &mod->syms,
						       mod->load_msg, sizeof(mod->load_msg));
	else
		mod->load_err = -ENOENT;
}

/* A new entry with the next id, its path copied. NULL when out of memory. */
static struct module_entry *add_entry(struct module_registry *reg, const char *path)
{
	struct module_entry *e;

	if (grow_array((void **)&reg->by_id, &reg->cap, (size_t)reg->nr + 1, sizeof(*reg->by_id)))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->mod.path = strdup(path))) {
		free(e);
		return NULL;
	}
	e->mod.id = MODULE_FIRST_FILE + reg->nr;
	e->mod.last_used = reg->sweeps;
	if (reg->slices) {
		e->mod.from_slices = true;
		e->mod.slice = module_slices__find(reg->slices, path);
	}
	reg->by_id[reg->nr++] = e;
	return e;
}

struct module *module_registry__get(struct module_registry *reg, const char *path)
{
	struct module_entry *e;
	const char *slash;

	HASH_FIND_STR(reg->by_path, path, e);
	if (e)
		return &e->mod;
	e = add_entry(reg, path);
	if (!e)
		return NULL;
	slash = strrchr(e->mod.path, '/');
	e->mod.name = slash ? slash + 1 : e->mod.path;
	e->mod.by_path = true;
	HASH_ADD_KEYPTR(hh, reg->by_path, e->mod.path, strlen(e->mod.path), e);
	load_symbols(&e->mod);
	return &e->mod;
}

static struct mapped_file_id file_id(const struct mapping *m)
{
	return (struct mapped_file_id){ m->dev_major, m->dev_minor, m->inode };
}

static void use_mapped_jitdump(struct module_registry *reg, uint32_t pid, const char *path);

int module_registry__pin(struct module_registry *reg, uint32_t pid, const struct mapping *m)
{
	struct mapped_file_id id = file_id(m);

	if (m->path[0] != '/' || m->inode == 0)
		return -ENOENT;
	use_mapped_jitdump(reg, pid, m->path);
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
	e = add_entry(reg, m->path);
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
	load_symbols(&e->mod);
	return &e->mod;
}

size_t module_registry__pinned_files(const struct module_registry *reg)
{
	return mapped_files__count(reg->files);
}

/* pid's anonymous code, created on first sight (its perf map too, with_perf_map). NULL
 * when out of memory. */
static struct process_code *process_code(struct module_registry *reg, uint32_t pid,
					 bool with_perf_map)
{
	struct process_code *pc;

	HASH_FIND(hh, reg->processes, &pid, sizeof(pid), pc);
	if (pc)
		return pc;
	pc = calloc(1, sizeof(*pc));
	/* copies, a perf map and a jitdump in replays too, of what their recordings read
	 * (module_registry__add_code, __add_perf_map, __add_jitdump) */
	if (!pc || !(pc->copies = code_copies__new()) ||
	    (with_perf_map ? perf_map__new(pid, &pc->map) != 0 ||
				     jitdump__new(pid, NULL, &pc->jitdump) != 0
			   : perf_map__new_fixed(&pc->map) != 0 ||
				     jitdump__new_fixed(&pc->jitdump) != 0)) {
		if (pc) {
			perf_map__free(pc->map);
			jitdump__free(pc->jitdump);
			code_copies__free(pc->copies);
		}
		free(pc);
		return NULL;
	}
	pc->pid = pid;
	pc->live = with_perf_map;
	HASH_ADD(hh, reg->processes, pid, sizeof(pc->pid), pc);
	return pc;
}

struct module *module_registry__anon_code(struct module_registry *reg, uint32_t pid,
					  const char *mapping_name, bool with_perf_map)
{
	/* Named anonymous mappings keep their name; other code outside files is a JIT's. */
	const char *name = mapping_name[0] == '[' ? mapping_name : "[jit]";
	struct process_code *pc;
	struct module_entry *e;
	char *key, path[64];

	if (asprintf(&key, "%u %s", pid, name) < 0)
		return NULL;
	HASH_FIND_STR(reg->by_anon, key, e);
	if (e) {
		free(key);
		return &e->mod;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
	pc = process_code(reg, pid, with_perf_map);
	if (!pc || grow_array((void **)&pc->modules, &pc->modules_cap, pc->nr_modules + 1,
			      sizeof(*pc->modules)) ||
	    !(e = add_entry(reg, path))) {
		free(key);
		return NULL;
	}
	pc->modules[pc->nr_modules++] = e;
	e->anon_key = key;
	e->mod.name = strchr(key, ' ') + 1;
	e->mod.anon_code = true;
	e->mod.anon_pid = pid;
	e->mod.load_err = -ENOENT;
	/* Without its perf map the module still names frames by mapping. */
	e->mod.perf_map = pc->map;
	e->mod.jitdump = pc->jitdump;
	e->mod.code_copies = pc->copies;
	e->mod.gdb_jit = pc->gdb_jit;
	HASH_ADD_KEYPTR(hh, reg->by_anon, e->anon_key, strlen(e->anon_key), e);
	return &e->mod;
}

int module_registry__add_code(struct module_registry *reg, uint32_t pid, uint64_t addr,
			      const uint8_t *bytes, size_t len)
{
	struct process_code *pc = process_code(reg, pid, false);

	if (!pc)
		return -ENOMEM;
	code_copies__add(pc->copies, addr, bytes, len);
	return 0;
}

int module_registry__add_perf_map(struct module_registry *reg, uint32_t pid, const char *text,
				  size_t len)
{
	struct process_code *pc = process_code(reg, pid, false);
	size_t consumed;

	if (!pc)
		return -ENOMEM;
	return pc->live ? 0 : perf_map__add_text(pc->map, text, len, &consumed);
}

int module_registry__add_jitdump(struct module_registry *reg, uint32_t pid, uint64_t offset,
				 const uint8_t *bytes, size_t len)
{
	struct process_code *pc = process_code(reg, pid, false);
	struct jitdump *fresh;
	size_t consumed;

	if (!pc)
		return -ENOMEM;
	if (pc->live)
		return 0;
	/* a file read from its start: another file, or the same rewritten */
	if (offset == 0 && jitdump__nr_codes(pc->jitdump) > 0) {
		if (jitdump__new_fixed(&fresh) != 0)
			return -ENOMEM;
		jitdump__free(pc->jitdump);
		pc->jitdump = fresh;
		for (size_t i = 0; i < pc->nr_modules; i++)
			pc->modules[i]->mod.jitdump = fresh;
	}
	return jitdump__add_bytes(pc->jitdump, bytes, len, &consumed) == -ENOMEM ? -ENOMEM : 0;
}

/* A replay's process pid's registrations (fixed: binary/gdb_jit.h), made on first use and
 * given to its modules. NULL when out of memory or not a replay's. */
static struct gdb_jit *replay_gdb_jit(struct module_registry *reg, uint32_t pid)
{
	struct process_code *pc = process_code(reg, pid, false);

	if (!pc || pc->live)
		return NULL;
	if (!pc->gdb_jit && (pc->gdb_jit = gdb_jit__new_fixed()) != NULL) {
		for (size_t i = 0; i < pc->nr_modules; i++)
			pc->modules[i]->mod.gdb_jit = pc->gdb_jit;
	}
	return pc->gdb_jit;
}

int module_registry__add_gdb_jit_object(struct module_registry *reg, uint32_t pid,
					uint64_t addr, const uint8_t *bytes, size_t len)
{
	struct gdb_jit *gj = replay_gdb_jit(reg, pid);

	return gj ? gdb_jit__add_object(gj, addr, bytes, len) : 0;
}

void module_registry__drop_gdb_jit_object(struct module_registry *reg, uint32_t pid,
					  uint64_t addr, uint64_t size)
{
	struct gdb_jit *gj = replay_gdb_jit(reg, pid);

	if (gj)
		gdb_jit__drop_object(gj, addr, size);
}

int module_registry__set_beam_exit(struct module_registry *reg, uint32_t pid, uint64_t exit)
{
	struct process_code *pc = process_code(reg, pid, false);

	if (!pc)
		return -ENOMEM;
	if (!pc->live)
		pc->beam_exit = exit;
	return 0;
}

void module_registry__set_beam_exit_hook(struct module_registry *reg, module_beam_exit_fn fn,
					 void *ctx)
{
	reg->beam_exit_hook = fn;
	reg->beam_exit_ctx = ctx;
}

void module_registry__reload_jit(struct module_registry *reg, uint32_t pid)
{
	struct process_code *pc, *tmp;

	HASH_ITER(hh, reg->processes, pc, tmp) {
		if (pid && pc->pid != pid)
			continue;
		if (pc->map)
			perf_map__load(pc->map);
		if (pc->jitdump)
			jitdump__load(pc->jitdump);
	}
}

/* The modules stay (frames counted in them keep their ids and names); the perf map goes,
 * and a later process of the same pid gets modules of its own. */
void module_registry__process_gone(struct module_registry *reg, uint32_t pid)
{
	struct process_code *pc;

	HASH_FIND(hh, reg->processes, &pid, sizeof(pid), pc);
	if (!pc)
		return;
	for (size_t i = 0; i < pc->nr_modules; i++) {
		pc->modules[i]->mod.perf_map = NULL;
		pc->modules[i]->mod.jitdump = NULL;
		pc->modules[i]->mod.code_copies = NULL;
		pc->modules[i]->mod.gdb_jit = NULL;
		HASH_DEL(reg->by_anon, pc->modules[i]);
	}
	if (pc->gdb_jit) {
		gdb_jit__stats(pc->gdb_jit, &reg->gone_gdb_jit);
		gdb_jit__free(pc->gdb_jit);
	}
	reg->gone_code_copy_reads += code_copies__reads(pc->copies);
	code_copies__free(pc->copies);
	if (pc->map) {
		perf_map__stats(pc->map, &reg->gone_perf_maps);
		perf_map__free(pc->map);
	}
	if (pc->jitdump) {
		jitdump__stats(pc->jitdump, &reg->gone_jitdumps);
		jitdump__free(pc->jitdump);
	}
	HASH_DEL(reg->processes, pc);
	free(pc->modules);
	free(pc);
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

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A search for a runtime's state of process pc is due: never made, or the last one is
 * GDB_JIT_SEARCH_MS old. Marks it made now. */
static bool search_due(bool *searched, uint64_t *searched_ns)
{
	uint64_t now = monotonic_ns();

	if (*searched && now - *searched_ns < GDB_JIT_SEARCH_MS * 1000000ull)
		return false;
	*searched = true;
	*searched_ns = now;
	return true;
}

struct gdb_jit *module_registry__gdb_jit(struct module_registry *reg, uint32_t pid,
					 gdb_jit_locate_fn locate, void *ctx)
{
	struct process_code *pc;
	uint64_t descriptor;

	HASH_FIND(hh, reg->processes, &pid, sizeof(pid), pc);
	if (!pc || !pc->live) /* a replay's: what its recording read, if anything */
		return pc ? pc->gdb_jit : NULL;
	if (pc->gdb_jit)
		return pc->gdb_jit;
	if (!search_due(&pc->gdb_jit_searched, &pc->gdb_jit_searched_ns))
		return NULL;
	if (locate(ctx, &descriptor) != 0 || !(pc->gdb_jit = gdb_jit__new(pid, descriptor)))
		return NULL;
	for (size_t i = 0; i < pc->nr_modules; i++)
		pc->modules[i]->mod.gdb_jit = pc->gdb_jit;
	return pc->gdb_jit;
}

uint64_t module_registry__beam_exit(struct module_registry *reg, uint32_t pid,
				   beam_exit_locate_fn locate, void *ctx)
{
	struct process_code *pc;
	uint64_t exit;

	HASH_FIND(hh, reg->processes, &pid, sizeof(pid), pc);
	if (!pc || !pc->live) /* a replay's: as its recording found it, if it did */
		return pc ? pc->beam_exit : 0;
	if (pc->beam_exit || !search_due(&pc->beam_searched, &pc->beam_searched_ns))
		return pc->beam_exit;
	if (locate(ctx, &exit) == 0) {
		pc->beam_exit = exit;
		if (reg->beam_exit_hook)
			reg->beam_exit_hook(reg->beam_exit_ctx, pid, exit);
	}
	return pc->beam_exit;
}

void module_registry__gdb_jit_stats(const struct module_registry *reg, struct gdb_jit_stats *stats)
{
	const struct process_code *pc;

	*stats = reg->gone_gdb_jit;
	for (pc = reg->processes; pc; pc = pc->hh.next)
		if (pc->gdb_jit)
			gdb_jit__stats(pc->gdb_jit, stats);
}

void module_registry__perf_map_stats(const struct module_registry *reg,
				     struct perf_map_stats *stats)
{
	const struct process_code *pc;

	*stats = reg->gone_perf_maps;
	for (pc = reg->processes; pc; pc = pc->hh.next) {
		if (pc->map)
			perf_map__stats(pc->map, stats);
	}
}

void module_registry__jitdump_stats(const struct module_registry *reg,
				    struct jitdump_stats *stats)
{
	const struct process_code *pc;

	*stats = reg->gone_jitdumps;
	for (pc = reg->processes; pc; pc = pc->hh.next) {
		if (pc->jitdump)
			jitdump__stats(pc->jitdump, stats);
	}
}

/* A process maps the jitdump file it writes (perf's marker: V8 writes it to its working
 * directory, CPython to /tmp): read that one. Live processes only, as for perf maps. */
static void use_mapped_jitdump(struct module_registry *reg, uint32_t pid, const char *path)
{
	const char *base = strrchr(path, '/');
	struct jit_file_owner owner = { .pid = pid };
	char want[32], tmp[48];
	struct process_code *pc;
	struct jitdump *jd;

	if (!base || strncmp(base + 1, "jit-", 4) != 0)
		return; /* most mappings: nothing to read /proc/PID/status for */
	/* named after its pid as it knows it (in a container, its namespace's) */
	snprintf(want, sizeof(want), "jit-%u.dump", jit_file__ns_pid(&owner));
	snprintf(tmp, sizeof(tmp), "/tmp/%s", want);
	if (strcmp(base + 1, want) != 0 || strcmp(path, tmp) == 0)
		return;
	pc = process_code(reg, pid, true);
	if (!pc || !pc->jitdump || jitdump__new(pid, path, &jd) != 0)
		return;
	jitdump__free(pc->jitdump);
	pc->jitdump = jd;
	for (size_t i = 0; i < pc->nr_modules; i++)
		pc->modules[i]->mod.jitdump = jd;
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
	return unwind_table__open(load_path(mod), reg->row_cache, &mod->table, mod->table_msg,
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
	load_symbols(mod);
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
	load_symbols(mod);
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
