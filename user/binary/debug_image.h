#ifndef HPROF_BINARY_DEBUG_IMAGE_H
#define HPROF_BINARY_DEBUG_IMAGE_H

#include <elfutils/libdw.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>

/* A debug file's ELF rebuilt in memory with its zlib-compressed sections inflated by
 * libdeflate (2-3x zlib's speed; inflating was half of a debug file's first use): only
 * the sections libdw reads keep bytes, those unneeded(name) says no chain needs lose their
 * names too, so libdw leaves them. Returns the Elf over *image (debug_image__free after
 * elf_end), or
 * NULL when the file compresses no section (or is no 64-bit little-endian ELF, or memory
 * runs out): open it as it is. *image_bytes: the image's size. */
Elf *debug_image__open(int fd, bool (*unneeded)(const char *name), void **image,
		       size_t *image_bytes);
void debug_image__free(void *image, size_t image_bytes);

/* The dwz supplementary file of a Dwarf read from an image, when its link is relative:
 * open until debug_image__close_alt, after dwarf_end of the Dwarf that uses it. */
struct debug_alt {
	int fd;
	Elf *elf;
	Dwarf *dwarf;
};
void debug_image__find_alt(Dwarf *dwarf, int fd, struct debug_alt *alt);
void debug_image__close_alt(struct debug_alt *alt);

#endif
