/* The module registry's insides, shared by module_registry.c (binaries, their tables, their
 * lifetime), module_entry.c (entries and their symbols) and process_jit.c (code without a
 * file). Internal to those three. */
#ifndef HPROF_BINARY_MODULES_INTERNAL_H
#define HPROF_BINARY_MODULES_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <uthash.h>

#include "binary/modules.h"

/* Rows of binaries' functions compiled as walks need them, across all binaries: a profile
 * touches a few thousand functions, ~100-300 bytes each with bookkeeping. */
#define MODULE_ROW_CACHE_BYTES (4u << 20)

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

/* A new entry with the next id, its path copied. NULL when out of memory. */
struct module_entry *module_entry__add(struct module_registry *reg, const char *path);
/* Where the module's ELF is read from: its pinned file, else its path. */
const char *module__load_path(const struct module *mod);
/* Reads the module's symbols (mod->syms), or sets mod->load_err. */
void module_entry__load_symbols(struct module *mod);
/* pid mapped the jitdump file at path: its records name the process's JIT code. */
void process_jit__use_mapped_jitdump(struct module_registry *reg, uint32_t pid, const char *path);

#endif
