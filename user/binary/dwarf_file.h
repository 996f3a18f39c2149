/* The first half of opening a binary's DWARF (dwarf_index.h): the file checked and its ELF
 * made ready for libdw, its compressed debug sections inflated (debug_image.h). That is
 * most of a debug file's first use (python3.11-dbg's: ~25 ms of ~27), and it touches no
 * libdw state, so it may run on a thread of its own while libdw reads another binary's
 * DWARF: dwarf_file__start. */
#ifndef HPROF_BINARY_DWARF_FILE_H
#define HPROF_BINARY_DWARF_FILE_H

#include <libelf.h>
#include <stddef.h>

struct dwarf_file {
	int fd;
	Elf *elf;
	void *image; /* elf's bytes when rebuilt in memory (debug_image.h) */
	size_t image_bytes;
	size_t section_bytes; /* what libdw holds of the file's sections, estimated */
};

/* Opens path: 0, or -errno with a one-line reason in msg (f then holds nothing). */
int dwarf_file__open(const char *path, struct dwarf_file *f, char *msg, size_t msg_len);
void dwarf_file__close(struct dwarf_file *f);

/* dwarf_file__open on a thread of its own, until dwarf_file__join. Returns 0, or -errno
 * when no thread started (then open the file as usual). */
struct dwarf_file_job;
int dwarf_file__start(const char *path, struct dwarf_file_job **out);
/* Waits for the job and frees it; returns and fills f as dwarf_file__open would have. */
int dwarf_file__join(struct dwarf_file_job *job, struct dwarf_file *f, char *msg, size_t msg_len);

#endif
