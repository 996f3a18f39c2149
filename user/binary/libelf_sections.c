#include "binary/libelf_sections.h"

#include <string.h>

Elf_Scn *libelf_sections__of_type(Elf *elf, Elf64_Word type, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
			return scn;
	}
	return NULL;
}

Elf_Scn *libelf_sections__named(Elf *elf, const char *name, Elf_Data **data)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!n || strcmp(n, name) != 0)
			continue;
		*data = elf_getdata(scn, NULL);
		return *data && (*data)->d_buf ? scn : NULL;
	}
	return NULL;
}
