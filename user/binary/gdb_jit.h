/* JIT code registered through gdb's JIT interface (the gdb manual, "JIT Compilation
 * Interface"): a program that defines __jit_debug_descriptor keeps in it a linked list of
 * in-memory ELF objects describing the code it generated, for debuggers to read. QEMU's TCG
 * registers one image whose .debug_frame covers its whole code buffer (every translated
 * block runs in its prologue's frame); LLVM's MCJIT and ORC (lli, Julia) register each
 * module's relocatable object, its sections' addresses set where they were loaded and its
 * .eh_frame's relocations left for the reader to apply.
 *
 * hprof reads the list and the objects from the process's memory (process_vm_readv), every
 * read bounded and every object treated as hostile, and compiles each object's CFI into
 * rows as it would a file's, and its symbols for names. One table per process; the list
 * is read again when a lookup misses, at most every GDB_JIT_RECHECK_MS. */
#ifndef HPROF_BINARY_GDB_JIT_H
#define HPROF_BINARY_GDB_JIT_H

#include <stddef.h>
#include <stdint.h>

#include "cfi/unwind_table.h"

/* A registering program defines __jit_debug_descriptor (binary/runtime_symbols.h). */
/* Bounds on what the process gives: entries followed in the list (a longer list, or a
 * cycle, is cut there), one object's bytes, and all objects' bytes held at once. */
#define GDB_JIT_MAX_ENTRIES 65536u
#define GDB_JIT_MAX_OBJECT_BYTES (64u << 20)
#define GDB_JIT_MAX_BYTES (256u << 20)
/* A miss reads the list again at most this often (a JIT registers as it compiles). */
#define GDB_JIT_RECHECK_MS 50

struct gdb_jit;

struct gdb_jit_stats {
	uint64_t registrations; /* processes whose descriptor was found */
	uint64_t list_reads;    /* reads of a descriptor and its list */
	uint64_t bad_lists;     /* reads that found no valid descriptor (version, unreadable) */
	uint64_t cut_short;     /* lists cut at GDB_JIT_MAX_ENTRIES, or at an unreadable entry */
	uint64_t objects;       /* objects read and compiled into rows */
	uint64_t no_cfi;        /* objects without CFI, or whose CFI would not compile */
	uint64_t refused;       /* objects not read: empty, too large, past the bytes bound,
				 * or unreadable */
	uint64_t relocated;     /* relocatable objects (LLVM's) whose .eh_frame hprof relocated */
};

/* The registrations of process pid, whose descriptor is at address descriptor (not yet
 * read). NULL when out of memory. */
struct gdb_jit *gdb_jit__new(uint32_t pid, uint64_t descriptor);
/* Registrations no process backs, that gdb_jit__add_object and __drop_object make: a
 * replay's, of the objects its recording read (gdb_jit__set_hooks). NULL when out of
 * memory. */
struct gdb_jit *gdb_jit__new_fixed(void);
/* Adds to a fixed gj the object (its bytes as read, unrelocated) registered at addr. The
 * bytes are hostile, as a process's are. Returns 0 or -ENOMEM. */
int gdb_jit__add_object(struct gdb_jit *gj, uint64_t addr, const uint8_t *bytes, size_t size);
/* Drops from gj the object registered at addr with size bytes. */
void gdb_jit__drop_object(struct gdb_jit *gj, uint64_t addr, uint64_t size);
/* Called with the bytes of every object read from a live process, as read, and with every
 * object dropped because its process unregistered it: what a raw capture keeps. NULL:
 * none. One pair for the program. */
typedef void (*gdb_jit_object_hook_fn)(void *ctx, uint32_t pid, uint64_t addr,
				       const uint8_t *bytes, size_t size);
typedef void (*gdb_jit_drop_hook_fn)(void *ctx, uint32_t pid, uint64_t addr, uint64_t size);
void gdb_jit__set_hooks(gdb_jit_object_hook_fn on_object, gdb_jit_drop_hook_fn on_drop,
			void *ctx);
/* The rows for code at addr: the object's table (its pcs are process addresses) and the
 * range [*start, *end) its rows cover. Returns 0 or -ENOENT. */
int gdb_jit__find(struct gdb_jit *gj, uint64_t addr, const struct unwind_table **table,
		  uint64_t *start, uint64_t *end);
/* The name of the function at addr, from its object's symbols, or NULL. */
const char *gdb_jit__lookup(struct gdb_jit *gj, uint64_t addr);
/* Adds gj's counts to *acc (registrations counts 1 per table). */
void gdb_jit__stats(const struct gdb_jit *gj, struct gdb_jit_stats *acc);
/* Bytes held: tables and symbols. */
uint64_t gdb_jit__bytes(const struct gdb_jit *gj);
void gdb_jit__free(struct gdb_jit *gj);

#endif
