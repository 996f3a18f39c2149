/* What an ELF file's headers say about placing and entering its code: its PT_LOAD segments,
 * GNU build-id, entry point and the initialisation and finalisation functions. Read once
 * with the file and kept for as long as the binary is mapped, after its function symbols
 * are dropped (binary/symbols.h): the mappings, the walks and a profile's outputs need
 * them. */
#ifndef HPROF_BINARY_ELF_FACTS_H
#define HPROF_BINARY_ELF_FACTS_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BUILD_ID_MAX 20

/* How far past a binary's entry point its start-up code may call out: _start calls
 * __libc_start_main (or ld.so's _start calls _dl_start) within its first few
 * instructions, and hand-written entry code often has no CFI or symbol to say where it
 * ends. */
#define ELF_ENTRY_CODE_MAX 256

/* Most function entries elf_facts__is_function_entry knows per file. */
#define ELF_FUNCTION_ENTRIES_MAX 4

struct elf_facts;

/* Reads the facts of elf, an ELF file. Returns 0, -EINVAL (its program headers cannot be
 * read) or -ENOMEM. */
int elf_facts__read(Elf *elf, struct elf_facts **out);
/* Translates file_offset, inside an executable mapping of the file at page offset
 * map_offset, to the ELF virtual address it is loaded at: through the executable PT_LOAD
 * that backs the mapping, whose p_offset need not be page-aligned.
 * Returns 0, or -ENOENT when no PT_LOAD segment backs the mapping. */
int elf_facts__offset_to_vaddr(const struct elf_facts *ef, uint64_t map_offset,
			       uint64_t file_offset, uint64_t *vaddr);
/* The PT_LOAD segment holding vaddr (in the file's bytes): its first virtual address, the
 * end, and its offset in the file. Returns 0 or -ENOENT. */
int elf_facts__segment(const struct elf_facts *ef, uint64_t vaddr, uint64_t *start,
		       uint64_t *end, uint64_t *file_offset);
/* The GNU build-id; its length (0 when the file has none). */
size_t elf_facts__build_id(const struct elf_facts *ef, const uint8_t **id);
/* The ELF header's entry point (a virtual address), 0 when there is none. */
uint64_t elf_facts__entry(const struct elf_facts *ef);
/* vaddr is where the file's initialisation or finalisation function starts: DT_INIT,
 * DT_FINI, the first byte of .init or .fini (crti.o's _init and _fini, without CFI), within
 * an executable PT_LOAD segment. */
bool elf_facts__is_function_entry(const struct elf_facts *ef, uint64_t vaddr);
/* Heap the facts hold (HPROF_DEBUG=memory). */
size_t elf_facts__bytes(const struct elf_facts *ef);
void elf_facts__free(struct elf_facts *ef);

#endif
