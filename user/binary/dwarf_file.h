/* The first half of opening a binary's DWARF (dwarf_index.h): the file checked and its ELF
 * made ready for libdw, its compressed debug sections inflated (debug_image.h). That is
 * most of a debug file's first use (python3.11-dbg's: ~25 ms of ~27); libdw's half
 * (dwarf_index__open_file) reads what it made ready. */
#ifndef HPROF_BINARY_DWARF_FILE_H
#define HPROF_BINARY_DWARF_FILE_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>

struct dwarf_file {
	int fd;
	Elf *elf;
	void *image; /* elf's bytes when rebuilt in memory (debug_image.h) */
	size_t image_bytes;
	size_t section_bytes; /* what libdw holds of the file's sections, estimated */
};

/* Opens path: 0, or -errno with a one-line reason in msg (f then holds nothing). image: a
 * file with compressed sections may be rebuilt in memory; not where libdw must know the
 * file's directory (a split unit's .dwo named relative to it). */
int dwarf_file__open(const char *path, bool image, struct dwarf_file *f, char *msg,
		     size_t msg_len);
void dwarf_file__close(struct dwarf_file *f);

#endif
