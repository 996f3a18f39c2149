/* An ELF file's sections found through libelf, by type or by name (cfi/elf_sections.h
 * finds the call-frame sections in raw bytes). */
#ifndef HPROF_BINARY_LIBELF_SECTIONS_H
#define HPROF_BINARY_LIBELF_SECTIONS_H

#include <gelf.h>

/* The first section of the given type, its header in *shdr, or NULL. */
Elf_Scn *libelf_sections__of_type(Elf *elf, Elf64_Word type, GElf_Shdr *shdr);
/* The section named name with its bytes in *data, or NULL (also for NOBITS: a stripped
 * copy's sections have no bytes). */
Elf_Scn *libelf_sections__named(Elf *elf, const char *name, Elf_Data **data);

#endif
