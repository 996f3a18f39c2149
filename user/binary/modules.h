/* The binaries frames point into: one entry per file (or [vdso]), shared by every
 * process that maps it, with its symbols loaded on first use; and per process, the
 * anonymous code (JIT code) outside any file, named from perf's map file. A binary no
 * process has run for a while has its symbols and unwind table dropped (the profile named
 * its frames when it counted them) and read again from its pinned file if it runs again:
 * the registry holds the binaries in use, not every binary the run met. */
#ifndef HPROF_MODULES_H
#define HPROF_MODULES_H

#include <stdbool.h>
#include <stdint.h>

#include "binary/jitdump.h"
#include "binary/mapped_files.h"
#include "binary/code_copies.h"
#include "binary/gdb_jit.h"
#include "binary/runtime_symbols.h"
#include "binary/perfmap.h"
#include "binary/python_names.h"
#include "binary/mapping.h"
#include "cfi/unwind_table.h"
#include "binary/symbols.h"

/* Module ids below MODULE_FIRST_FILE are pseudo-modules. */
enum {
	MODULE_KERNEL = 0,   /* frame address is a kernel address */
	MODULE_UNMAPPED = 1, /* no executable mapping held the address; address is absolute */
	MODULE_ANON = 2,     /* anonymous code of no known process (out of memory); absolute */
	MODULE_PYTHON = 3,   /* a Python frame: the address is its id in python_names */
	MODULE_INLINE = 4,   /* a call inlined into a binary's frame: its id in inline_names */
	MODULE_FIRST_FILE = 5,
};

struct code_starts;
struct dwarf_index;
struct module_slice;
struct module_slices;

struct module {
	uint32_t id;
	char *path;       /* as /proc/PID/maps names it; for anonymous code, the perf map's */
	char load_path[32]; /* "/proc/self/fd/N" of the pinned file; "" to read path */
	bool by_path;     /* made by module_registry__get (a replay's): its file read by path */
	bool unpinned;    /* a live process's file that could not be pinned: never read by path,
			   * which may now name another file, or one outside the process's root */
	const char *name; /* basename of path; for anonymous code, "[jit]" or "[anon:NAME]" */
	/* Anonymous code of one process: frame addresses are absolute, there are no ELF
	 * symbols or CFI, and names come from perf_map (in replays, a map of the text the
	 * recording read: perf_map__new_fixed; NULL once the process is gone). */
	bool anon_code;
	uint32_t anon_pid; /* anonymous code: its process */
	struct perf_map *perf_map;
	/* The process's jitdump file (/tmp/jit-PID.dump, or the jit-PID.dump it maps): names
	 * and unwinding info of its JIT code (in replays, of the bytes the recording read:
	 * jitdump__new_fixed); NULL once the process is gone. */
	struct jitdump *jitdump;
	/* Copies of its code read from the process (binary/code_copies.h), for samples walked
	 * after it exited (in replays, the recording's reads: module_registry__add_code); NULL
	 * once the process is gone. */
	struct code_copies *code_copies;
	/* Its process's code registered through gdb's JIT interface (binary/gdb_jit.h): rows
	 * and names; NULL until found (in replays, until the recording's first object), and
	 * once the process is gone. */
	struct gdb_jit *gdb_jit;
	/* A file's: where it defines each runtime's variable (binary/runtime_symbols.h: gdb's
	 * JIT descriptor, BEAM's exit), ELF virtual addresses, once looked for
	 * (runtime_symbols_looked): 0 where it defines none. */
	uint64_t runtime_symbols[RUNTIME_SYMBOL_COUNT];
	bool runtime_symbols_looked;
	struct elf_symbols *syms;
	int load_err;     /* 0, or -errno from loading syms */
	char load_msg[160];
	struct unwind_table *table; /* compiled CFI; NULL until asked for, or when there is none */
	bool table_tried;
	bool table_shared; /* owned by the registry's build-id cache */
	int table_err;
	char table_msg[160];
	/* where its functions without CFI or symbols start, swept as frames there are named
	 * (binary/code_starts.h); NULL until then */
	struct code_starts *code_starts;
	/* A registry given slices (module_registry__use_slices) reads no file: a binary's
	 * symbols, rows and code come from its slice, NULL where it has none */
	bool from_slices;
	const struct module_slice *slice;
	/* A frame was named without a symbol while debuginfod may serve its debug file: named
	 * again once fetching is over (binary/fetch_debug.h) */
	bool wants_debug_file;
	/* debuginfod was asked for its file (hprof serve's fetch_background), and answered
	 * (fetch_debug__settle_build_id): its frames are named for good */
	bool debug_file_asked, debug_file_done;
	uint32_t last_used; /* the registry's sweep count when a process last used it */
	bool dropped;       /* symbols (but segments, build-id and entry) and table dropped */
	/* Its inline chains and lines (binary/inline_frames.h), opened on first use, dropped
	 * with its symbols; NULL when it has no DWARF (dwarf_tried). */
	struct dwarf_index *dwarf;
	bool dwarf_tried;
};

/* A binary unused for this many sweeps has its symbols and table dropped. */
#define MODULE_IDLE_SWEEPS 6

struct module_registry;

int module_registry__new(struct module_registry **out);
/* The module for a mapping's path, created (and its ELF read) on first sight.
 * Returns NULL only when out of memory. */
struct module *module_registry__get(struct module_registry *reg, const char *path);
/* Opens the file behind mapping m of pid while pid lives (see mapped_files__pin), so that
 * the module made of it later reads that very file. Returns 0 or -errno. */
int module_registry__pin(struct module_registry *reg, uint32_t pid, const struct mapping *m);
/* The module for mapping m of pid: one per file (device and inode), read from the file
 * pinned for it (pinned now if it was not), named as pid names it. Mappings without an
 * inode go by path. Returns NULL only when out of memory. */
struct module *module_registry__get_mapped(struct module_registry *reg, uint32_t pid,
					   const struct mapping *m);
size_t module_registry__pinned_files(const struct module_registry *reg);
/* The module for process pid's code in mappings named mapping_name that are not files
 * ("" or "[anon:NAME]"), created on first sight. with_perf_map: name its frames from
 * /tmp/perf-PID.map. Returns NULL only when out of memory. */
struct module *module_registry__anon_code(struct module_registry *reg, uint32_t pid,
					  const char *mapping_name, bool with_perf_map);
/* pid has code outside files (module_registry__anon_code made a module for it), as a
 * JIT's: its memory is read while it lives, and what was not read by its exit is lost. */
bool module_registry__has_anon_code(const struct module_registry *reg, uint32_t pid);
/* A replay's copy of JIT code its recording read from process pid at addr: the process's
 * anonymous code reads it from there (binary/code_copies.h), as a live process's does
 * once it exited. Returns 0 or -ENOMEM. */
int module_registry__add_code(struct module_registry *reg, uint32_t pid, uint64_t addr,
			      const uint8_t *bytes, size_t len);
/* A replay's text of process pid's perf map, as its recording read it: names of its JIT
 * code from then on. Returns 0 or -ENOMEM. */
int module_registry__add_perf_map(struct module_registry *reg, uint32_t pid, const char *text,
				  size_t len);
/* A replay's bytes of process pid's jitdump file at offset, as its recording read them
 * (0: the file from its start, anew). Returns 0 or -ENOMEM. */
int module_registry__add_jitdump(struct module_registry *reg, uint32_t pid, uint64_t offset,
				 const uint8_t *bytes, size_t len);
/* A replay's BEAM exit address of process pid, as its recording found it
 * (module_registry__beam_exit). Returns 0 or -ENOMEM. */
int module_registry__set_beam_exit(struct module_registry *reg, uint32_t pid, uint64_t exit);
/* A replay's object registered through gdb's JIT interface by process pid at addr, as its
 * recording read it (gdb_jit__set_hooks), and one its process unregistered. */
int module_registry__add_gdb_jit_object(struct module_registry *reg, uint32_t pid,
					uint64_t addr, const uint8_t *bytes, size_t len);
void module_registry__drop_gdb_jit_object(struct module_registry *reg, uint32_t pid,
					  uint64_t addr, uint64_t size);
/* Called when a live process's BEAM exit address is found: what a raw capture keeps. */
typedef void (*module_beam_exit_fn)(void *ctx, uint32_t pid, uint64_t exit);
void module_registry__set_beam_exit_hook(struct module_registry *reg, module_beam_exit_fn fn,
					 void *ctx);
/* Modules made from now on (make this the first call) read their binaries from slices,
 * never from files (binary/slice.h): a replay of a corpus case. The registry owns slices. */
void module_registry__use_slices(struct module_registry *reg, struct module_slices *slices);
/* A process uses mod (resolves an address in it): reads its symbols again if they were
 * dropped. Call before using mod->syms or its unwind table for a live process. */
void module_registry__use(struct module_registry *reg, struct module *mod);
/* Reads mod's symbols again from its file (pinned, or its path in a replay), as a debug
 * file found since may now give them. Keeps the old ones when that fails. */
void module_registry__reload_symbols(struct module_registry *reg, struct module *mod);
/* Whether debug files may still be fetched (debuginfod) at the end: frames of binaries
 * without symbols are then named provisionally (binary/naming.h). Off by default. */
void module_registry__set_debuginfod(struct module_registry *reg, bool on);
bool module_registry__debuginfod(const struct module_registry *reg);
/* Drops the symbols and tables of binaries no process used since MODULE_IDLE_SWEEPS sweeps
 * ago; the caller sweeps at a steady pace. */
void module_registry__sweep(struct module_registry *reg);
/* pid exited or exec'd: its anonymous code's perf map is dropped (its frames were named
 * when counted, or for good just before: profile__settle_names) and the pid's next process
 * gets modules of its own. */
void module_registry__process_gone(struct module_registry *reg, uint32_t pid);
/* Reads pid's perf map and jitdump again (every live process's with pid 0), whatever their
 * recheck interval: before names are settled at its exit or the run's end. */
void module_registry__reload_jit(struct module_registry *reg, uint32_t pid);
/* The perf map files' counts, summed over processes. */
void module_registry__perf_map_stats(const struct module_registry *reg,
				     struct perf_map_stats *stats);
/* Where file module mod defines a runtime's variable (ELF virtual address), looked for in
 * its pinned file once. Returns 0 or -ENOENT. */
int module__runtime_symbol(struct module *mod, enum runtime_symbol which, uint64_t *vaddr);
/* Finds a process's gdb JIT descriptor: its process address. Returns 0 or -ENOENT. */
typedef int (*gdb_jit_locate_fn)(void *ctx, uint64_t *descriptor);
/* Process pid's registrations through gdb's JIT interface: those found, else, when the
 * last search is GDB_JIT_SEARCH_MS old (a program may load a JIT's library later), what
 * locate finds now. NULL when none is known; in replays, the objects the recording read
 * (module_registry__add_gdb_jit_object), if any. */
struct gdb_jit *module_registry__gdb_jit(struct module_registry *reg, uint32_t pid,
					 gdb_jit_locate_fn locate, void *ctx);
#define GDB_JIT_SEARCH_MS 1000
/* Finds the address every Erlang process of a BEAM process returns to at its stack's end:
 * the value of the process's beam_normal_exit. Returns 0 or -ENOENT. */
typedef int (*beam_exit_locate_fn)(void *ctx, uint64_t *exit);
/* Process pid's BEAM exit address (0: none known), found as module_registry__gdb_jit finds
 * its descriptor: a search at most every GDB_JIT_SEARCH_MS until found (the emulator sets
 * the variable once it has generated its code); in replays, the one the recording found
 * (module_registry__set_beam_exit). */
uint64_t module_registry__beam_exit(struct module_registry *reg, uint32_t pid,
				   beam_exit_locate_fn locate, void *ctx);
void module_registry__gdb_jit_stats(const struct module_registry *reg, struct gdb_jit_stats *stats);

/* The jitdump files' counts, summed over processes. */
void module_registry__jitdump_stats(const struct module_registry *reg,
				    struct jitdump_stats *stats);
struct module *module_registry__by_id(struct module_registry *reg, uint32_t id);
/* The names of Python frames (MODULE_PYTHON), kept for the registry's life. */
struct python_names *module_registry__python_names(const struct module_registry *reg);
/* The locations of inline frames (MODULE_INLINE), kept for the registry's life: module is
 * the binary's name, function the inlined function's, file and line where it is. */
struct python_names *module_registry__inline_names(const struct module_registry *reg);
/* Translates a process address inside mapping m of module mod to the module's ELF
 * virtual address. Returns 0 or -ENOENT (unreadable ELF or no segment holds it). */
int module__addr_to_vaddr(const struct module *mod, const struct mapping *m, uint64_t addr,
			  uint64_t *vaddr);
/* The module's unwind table, compiled on first use and shared with every module of the
 * same build-id. NULL when it has no usable CFI (table_err says why). */
const struct unwind_table *module_registry__unwind_table(struct module_registry *reg,
							 struct module *mod);
/* The load bias (process address - ELF vaddr) of mapping m of mod. Returns 0 or -ENOENT. */
int module__bias(const struct module *mod, const struct mapping *m, int64_t *bias);
uint32_t module_registry__count(const struct module_registry *reg);

/* What the registry holds (HPROF_DEBUG=memory). */
struct module_memory {
	uint64_t files;        /* modules of files (and the vDSO) */
	uint64_t anon_code;    /* modules of processes' anonymous code */
	uint64_t perf_maps;
	uint64_t code_copy_bytes; /* JIT code copied from live processes (binary/code_copies.h) */
	uint64_t code_copy_reads; /* reads of JIT code those copies answered, the process gone */
	uint64_t gdb_jit_bytes;   /* rows and names of code registered through gdb's JIT interface */
	uint64_t pinned_files;
	uint64_t symbol_bytes;
	uint64_t table_bytes;  /* unwind tables: FDE indexes of files, whole tables of the
				* vDSO; shared tables once */
	struct unwind_row_cache_stats row_cache; /* rows compiled a function at a time */
	uint64_t code_start_bytes; /* function starts of code without CFI or symbols */
	uint64_t dropped;      /* binaries whose symbols and table are dropped now */
	uint64_t reloads;      /* symbols read again since the run began */
};
void module_registry__memory(const struct module_registry *reg, struct module_memory *m);
void module_registry__free(struct module_registry *reg);

#endif
