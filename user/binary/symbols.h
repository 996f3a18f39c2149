/* Names for addresses: function symbols of ELF files (libelf) and of the kernel
 * (/proc/kallsyms). Tables are built once, sorted, and binary-searched; an ELF file's
 * names are read from its mapping (util/file_view.h), which stays open with the symbols. */
#ifndef HPROF_SYMBOLS_H
#define HPROF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BUILD_ID_MAX 20
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

/* Loads function symbols (from the source enum elf_symbols_source names) and the PT_LOAD
 * segments. Returns 0 or -errno with a one-line reason in err. */
int elf_symbols__load(const char *path, struct elf_symbols **out, char *err, size_t errlen);
/* The same, reading the file at open_path (a pinned descriptor's /proc/self/fd/N) while
 * separate debug files are looked for next to path, the binary's own. */
int elf_symbols__load_from(const char *open_path, const char *path, struct elf_symbols **out,
			   char *err, size_t errlen);
/* The same for an ELF image in memory (the vDSO). The image is copied. */
int elf_symbols__load_image(const void *image, size_t size, struct elf_symbols **out, char *err,
			    size_t errlen);
/* Translates file_offset, inside an executable mapping of the file at page offset
 * map_offset, to the ELF virtual address it is loaded at: through the executable PT_LOAD
 * that backs the mapping, whose p_offset need not be page-aligned.
 * Returns 0, or -ENOENT when no PT_LOAD segment backs the mapping. */
int elf_symbols__offset_to_vaddr(const struct elf_symbols *syms, uint64_t map_offset,
				 uint64_t file_offset, uint64_t *vaddr);
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
/* The GNU build-id; its length (0 when the file has none). */
size_t elf_symbols__build_id(const struct elf_symbols *syms, const uint8_t **id);
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
/* How far past a binary's entry point its start-up code may call out: _start calls
 * __libc_start_main (or ld.so's _start calls _dl_start) within its first few
 * instructions, and hand-written entry code often has no CFI or symbol to say where it
 * ends. */
#define ELF_ENTRY_CODE_MAX 256

/* The ELF header's entry point (a virtual address), 0 when there is none. */
uint64_t elf_symbols__entry(const struct elf_symbols *syms);
/* Most function entries elf_symbols__is_function_entry knows per file. */
#define ELF_FUNCTION_ENTRIES_MAX 4
/* vaddr is where the file's initialisation or finalisation function starts: DT_INIT,
 * DT_FINI, the first byte of .init or .fini (crti.o's _init and _fini, without CFI), within
 * an executable PT_LOAD segment. Kept when the function symbols are dropped. */
bool elf_symbols__is_function_entry(const struct elf_symbols *syms, uint64_t vaddr);
/* The PT_LOAD segment holding vaddr (in the file's bytes): its first virtual address, the
 * end, and its offset in the file. Returns 0 or -ENOENT. */
int elf_symbols__segment(const struct elf_symbols *syms, uint64_t vaddr, uint64_t *start,
			 uint64_t *end, uint64_t *file_offset);
/* Size of the image given to elf_symbols__load_image; 0 for files. */
size_t elf_symbols__image_size(const struct elf_symbols *syms);
void elf_symbols__free(struct elf_symbols *syms);

struct ksyms;

/* Loads /proc/kallsyms (or another file of that format). Returns 0 or -errno. */
int ksyms__load(const char *path, struct ksyms **out);
const char *ksyms__lookup(const struct ksyms *ks, uint64_t addr, uint64_t *offset);
void ksyms__free(struct ksyms *ks);

#endif
