/* Where a binary's separate debug file lies, looked for where gdb looks: by its GNU build-id
 * (DEBUG_DIR/.build-id/xx/yyyy.debug), and by the file name and CRC-32 its .gnu_debuglink
 * section gives (next to the binary, in .debug/ next to it, or in DEBUG_DIR/<the binary's
 * directory>/). DEBUG_DIR is HPROF_DEBUG_DIR, else /usr/lib/debug. */
#ifndef HPROF_BINARY_DEBUG_FILES_H
#define HPROF_BINARY_DEBUG_FILES_H

#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct file_view;

/* What .gnu_debuglink says: the debug file's bare name and its CRC-32. */
struct debuglink {
	char name[NAME_MAX + 1];
	uint32_t crc;
};

/* The places a debuglink's file is looked for (debug_files__debuglink_path). */
#define DEBUGLINK_PLACES 3

/* The path of the debug file for build-id id (id_len bytes). Returns 0, -ENOENT (an id
 * shorter than 2 bytes) or -ENAMETOOLONG. */
int debug_files__build_id_path(const uint8_t *id, size_t id_len, char *path, size_t size);
/* The .gnu_debuglink of elf, the file at binary (an absolute path). Returns 0, -ENOENT (no
 * section, or binary is not absolute) or -EINVAL (not a bare file name and its CRC). */
int debug_files__debuglink(Elf *elf, const char *binary, struct debuglink *link);
/* The place-th path (below DEBUGLINK_PLACES) link's file is looked for at. Returns 0, or
 * -ENOENT when that path does not fit or is the binary's own. */
int debug_files__debuglink_path(const struct debuglink *link, const char *binary, size_t place,
				char *path, size_t size);
/* Whether the file in view is the one link names: its CRC-32 is link's (another build's
 * debug file has addresses that would lie). Reads the whole file; its pages then go back. */
bool debug_files__debuglink_matches(const struct debuglink *link, struct file_view *view);

#endif
