#include "binary/dwarf_file.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binary/debug_image.h"

/* Sections libdw would read (and inflate whole, when compressed) that no chain or line
 * needs: variables' locations, macros, CFI, name indexes. */
static bool unneeded_section(const char *name)
{
	static const char *const names[] = { ".debug_loc", ".debug_loclists", ".debug_macro",
					     ".debug_macinfo", ".debug_frame", ".debug_pubnames",
					     ".debug_pubtypes", ".debug_names",
					     ".debug_gnu_pubnames", ".debug_gnu_pubtypes" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(name, names[i]) == 0)
			return true;
	}
	return false;
}

/* Inflates a compressed section now, as libdw would at dwarf_begin_elf, and gives back the
 * pages of its compressed bytes at once: nothing reads them again, and they are most of a
 * debug file's size (11 MB of python3.11-dbg's); one section's at a time are resident,
 * not all of them beside what they inflate to. The mapping is private and never written
 * there, so a page read again would come from the file as it was. Only whole pages inside
 * the section: a neighbour's bytes stay. A section that does not inflate is left to libdw. */
static void inflate_section(struct dwarf_file *f, Elf *elf, Elf_Scn *scn,
			    const GElf_Shdr *shdr)
{
	size_t file_size, page = (size_t)sysconf(_SC_PAGESIZE);
	char *map = elf_rawfile(elf, &file_size);
	GElf_Shdr inflated;
	uint64_t from, to;

	if (shdr->sh_type == SHT_NOBITS)
		return;
	/* resident once read, inflated or mapped */
	if (!(shdr->sh_flags & SHF_COMPRESSED) || elf_compress(scn, 0, 0) != 1) {
		f->section_bytes += shdr->sh_size;
		return;
	}
	if (gelf_getshdr(scn, &inflated))
		f->section_bytes += inflated.sh_size;
	if (!map || page == 0 || ((uintptr_t)map & (page - 1)) || shdr->sh_offset > file_size ||
	    shdr->sh_size > file_size - shdr->sh_offset)
		return;
	from = (shdr->sh_offset + page - 1) & ~(uint64_t)(page - 1);
	to = (shdr->sh_offset + shdr->sh_size) & ~(uint64_t)(page - 1);
	if (to > from)
		madvise(map + from, to - from, MADV_DONTNEED);
}

/* The file's ELF, its unneeded sections unnamed (in this process's private copy of the
 * mapping) so that libdw leaves them: Debian's debug files compress every section, and
 * libdw inflates each it knows when it opens the file. */
static Elf *open_elf(struct dwarf_file *f, int fd, bool image)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *elf = image ? debug_image__open(fd, unneeded_section, &f->image, &f->image_bytes)
			 : NULL;

	if (elf) {
		f->section_bytes += f->image_bytes;
		return elf;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP_PRIVATE, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return elf;
	/* bounded by the section count libelf read */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		if (!(name = elf_strptr(elf, shstrndx, shdr.sh_name)))
			continue;
		if (!unneeded_section(name)) {
			if (strncmp(name, ".debug_", 7) == 0 || strncmp(name, ".zdebug_", 8) == 0)
				inflate_section(f, elf, scn, &shdr);
			continue;
		}
		shdr.sh_name = 0;
		gelf_update_shdr(scn, &shdr);
	}
	return elf;
}

int dwarf_file__open(const char *path, bool image, struct dwarf_file *f, char *msg,
		     size_t msg_len)
{
	struct stat st;
	int err;

	*f = (struct dwarf_file){ .fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) };
	if (f->fd < 0) {
		err = -errno;
		snprintf(msg, msg_len, "%s: %s", path, strerror(errno));
		return err;
	}
	/* a FIFO or device planted under a debug file's name must not hang the profiler */
	if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(msg, msg_len, "%s: not a regular file", path);
		dwarf_file__close(f);
		return -EINVAL;
	}
	elf_version(EV_CURRENT);
	f->elf = open_elf(f, f->fd, image);
	return 0;
}

void dwarf_file__close(struct dwarf_file *f)
{
	elf_end(f->elf);
	debug_image__free(f->image, f->image_bytes);
	if (f->fd >= 0)
		close(f->fd);
	*f = (struct dwarf_file){ .fd = -1 };
}
