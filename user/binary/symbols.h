/* Names for addresses in an ELF file (libelf): its function symbols, from the file itself
 * or a separate debug file (binary/debug_files.h), held as a symbol index
 * (binary/symbol_index.h) whose names are read from the file's mapping (util/file_view.h),
 * which stays open with them; and the facts of its headers (binary/elf_facts.h), which
 * outlive them. The kernel's symbols are binary/ksyms.h's. */
#ifndef HPROF_SYMBOLS_H
#define HPROF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "binary/elf_facts.h"

/* Larger files are not read: the largest debug files (libLLVM's) are about 1 GiB. */
#define ELF_SYMBOLS_FILE_MAX_BYTES (4ull << 30)

struct elf_symbols;

/* Where a file's function symbols came from: the first of these that has any. Separate
 * debug files are looked for under HPROF_DEBUG_DIR (default /usr/lib/debug). */
enum elf_symbols_source {
	ELF_SYMBOLS_NONE = 0,
	ELF_SYMBOLS_SYMTAB,    /* the file's own .symtab */
	ELF_SYMBOLS_BUILD_ID,  /* DEBUG_DIR/.build-id/xx/yyyy.debug */
	ELF_SYMBOLS_DEBUGLINK, /* .gnu_debuglink's file, its CRC-32 checked: next to the file,
				* in .debug/ next to it, or in DEBUG_DIR/<the file's directory>/ */
	ELF_SYMBOLS_DEBUGDATA, /* MiniDebugInfo (.gnu_debugdata) merged with .dynsym */
	ELF_SYMBOLS_GOPCLNTAB, /* Go's function table (cfi/go_pclntab.h) merged with .dynsym */
	ELF_SYMBOLS_DYNSYM,
};

/* Loads function symbols (from the source enum elf_symbols_source names) and the file's
 * facts. Returns 0 or -errno with a one-line reason in err. */
int elf_symbols__load(const char *path, struct elf_symbols **out, char *err, size_t errlen);
/* The same, reading the file at open_path (a pinned descriptor's /proc/self/fd/N) while
 * separate debug files are looked for next to path, the binary's own. */
int elf_symbols__load_from(const char *open_path, const char *path, struct elf_symbols **out,
			   char *err, size_t errlen);
/* The same for an ELF image in memory (the vDSO). The image is copied. */
int elf_symbols__load_image(const void *image, size_t size, struct elf_symbols **out, char *err,
			    size_t errlen);
/* The function holding vaddr and vaddr's offset into it, or NULL. Names are read from the
 * file the symbols came from: NULL too once that file changed (truncated, rewritten), but
 * for the few names looked up before the change. The name stays valid until the next
 * lookup in syms, or until they are dropped or freed. */
const char *elf_symbols__lookup(const struct elf_symbols *syms, uint64_t vaddr, uint64_t *offset);
/* The function holding vaddr: its start, and its size (0 when the symbol gives none), even
 * after the file changed. Returns 0, or -ENOENT. */
int elf_symbols__function(const struct elf_symbols *syms, uint64_t vaddr, uint64_t *start,
			  uint64_t *size);
/* Where the function symbols came from. */
enum elf_symbols_source elf_symbols__source(const struct elf_symbols *syms);
const char *elf_symbols_source__name(enum elf_symbols_source source);
size_t elf_symbols__count(const struct elf_symbols *syms);
/* Whether syms hold function symbols or may: a file's index is built on its first lookup
 * (elf_symbols__lookup, __function, __count, __source), not when it is loaded. Never
 * builds it. */
bool elf_symbols__holds_functions(const struct elf_symbols *syms);
/* Frees the function symbols and closes the files their names were read from, keeping
 * what the binary's mappings and a profile's outputs still need: segments, build-id, entry
 * point. Lookups then find nothing. */
void elf_symbols__drop_functions(struct elf_symbols *syms);
/* Heap the symbols hold (HPROF_DEBUG=memory): not the file pages names are read from. */
size_t elf_symbols__bytes(const struct elf_symbols *syms);
/* Size of the image given to elf_symbols__load_image; 0 for files. */
size_t elf_symbols__image_size(const struct elf_symbols *syms);
void elf_symbols__free(struct elf_symbols *syms);

/* The file's facts, kept when the function symbols are dropped: as elf_facts__offset_to_vaddr,
 * __build_id, __entry, __is_function_entry and __segment (binary/elf_facts.h). */
int elf_symbols__offset_to_vaddr(const struct elf_symbols *syms, uint64_t map_offset,
				 uint64_t file_offset, uint64_t *vaddr);
size_t elf_symbols__build_id(const struct elf_symbols *syms, const uint8_t **id);
uint64_t elf_symbols__entry(const struct elf_symbols *syms);
bool elf_symbols__is_function_entry(const struct elf_symbols *syms, uint64_t vaddr);
int elf_symbols__segment(const struct elf_symbols *syms, uint64_t vaddr, uint64_t *start,
			 uint64_t *end, uint64_t *file_offset);

#endif
