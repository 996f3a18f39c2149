/* Slices of binaries: what replaying one capture needs of each binary its samples touched,
 * kept in a file beside the capture so that the replay reads no ELF file at all (a replay
 * corpus, tests/replay/, runs on any x86-64 machine without the binaries it was recorded
 * with). A slice holds the binary's placing (PT_LOAD segments, build-id, entry point and
 * function entries), the function symbols around the addresses samples hold, the compiled
 * rows of the functions those addresses lie in (binary/slice_writer.h says which), and
 * the bytes of code the analysis of code without CFI and the naming of its functions read.
 * A module of a registry given slices (module_registry__use_slices) reads its symbols,
 * rows and code from its slice, and a binary without one has none of them.
 *
 * The file is gzip-compressed: "HPROFSLC", u32 version, u32 count of slices, then each
 * slice's fields in order (slice.c), integers little-endian. Reading treats it as hostile:
 * every count and length is bounded by the bytes left. */
#ifndef HPROF_BINARY_SLICE_H
#define HPROF_BINARY_SLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "binary/code_copies.h"
#include "binary/symbols.h"
#include "cfi/unwind_table.h"

#define SLICE_MAGIC "HPROFSLC"
#define SLICE_VERSION 2
/* The most decompressed bytes a slice file may hold: a corpus case's are a few MiB. */
#define SLICE_FILE_MAX_BYTES (256u << 20)

struct slice_segment {
	uint64_t file_offset, file_size, vaddr;
	bool exec;
};

struct slice_symbol {
	uint64_t start;
	uint32_t size; /* 0: runs to the next symbol, as the binary's did */
	char *name;
};

struct slice_code_start {
	uint64_t vaddr, start;
};

struct module_slice {
	char *path;        /* as the capture's mappings name the binary, or "[vdso]" */
	int32_t load_err;  /* 0, or what reading its ELF gave (-ENOEXEC: not an ELF file) */
	uint8_t build_id[BUILD_ID_MAX];
	uint32_t build_id_len;
	uint64_t entry;
	uint64_t function_entries[ELF_FUNCTION_ENTRIES_MAX];
	uint32_t nr_function_entries;
	struct slice_segment *segments;
	size_t nr_segments;
	struct slice_symbol *symbols; /* ascending by start, one per start */
	size_t nr_symbols;
	bool has_table;    /* the binary had CFI (or Go's tables): fns and switches hold it */
	struct unwind_fn_rows *fns; /* ascending by lo; rows and wide owned */
	size_t nr_fns;
	uint64_t (*switches)[2];    /* stretches of Go code that switches stacks, ascending */
	size_t nr_switches;
	/* where the naming of code neither symbols nor CFI cover found its function to start
	 * (frame_name__code_start), by address: its sweep reads far more code than the
	 * walk does, and its answer is all a name needs */
	struct slice_code_start *code_starts; /* ascending by vaddr */
	size_t nr_code_starts;
	struct code_copies *code;   /* the file's bytes the walk read, by file offset */
};

struct module_slices {
	struct module_slice *slices;
	size_t nr, cap;
};

/* Reads a slice file. Returns 0 or -errno with a one-line message naming it in err. */
int module_slices__read(const char *path, struct module_slices **out, char *err, size_t errlen);
/* Writes s to path (created or replaced). Returns 0 or -errno with a message in err. */
int module_slices__write(const char *path, const struct module_slices *s, char *err,
			 size_t errlen);
/* The slice of the binary named path, or NULL. */
const struct module_slice *module_slices__find(const struct module_slices *s, const char *path);
/* A new empty slice for path in s (NULL when out of memory). */
struct module_slice *module_slices__add(struct module_slices *s, const char *path);
void module_slices__free(struct module_slices *s);

/* The binary's symbols and placing as elf_symbols give them, built from the slice.
 * Returns 0 or -errno. */
int module_slice__symbols(const struct module_slice *sl, struct elf_symbols **out, char *err,
			  size_t errlen);
/* The slice's rows as a table; -ENOENT when the binary had none. */
int module_slice__table(const struct module_slice *sl, struct unwind_table **out);
/* The start recorded for the function holding vaddr in code without symbols or CFI.
 * Returns 0 or -ENOENT. */
int module_slice__code_start(const struct module_slice *sl, uint64_t vaddr, uint64_t *start);
/* Up to len of the binary's bytes at file offset, as far as the slice holds them. Returns
 * the bytes read or -ENOENT where the slice holds no byte at offset. */
ssize_t module_slice__read(const struct module_slice *sl, uint64_t offset, uint8_t *buf,
			   size_t len);

#endif
