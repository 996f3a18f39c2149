/* Where a binary's separate debug file lies, looked for where gdb looks: by its GNU build-id
 * (DEBUG_DIR/.build-id/xx/yyyy.debug), and by the file name and CRC-32 its .gnu_debuglink
 * section gives (next to the binary, in .debug/ next to it, or in DEBUG_DIR/<the binary's
 * directory>/). DEBUG_DIR is HPROF_DEBUG_DIR, else /usr/lib/debug. The directories given
 * by --debug-dir (debug_files__add_dir) are searched first, in both ways; a file fetched
 * for a build-id (debuginfod, debug_files__add_fetched) last. And where a debug file's
 * dwz supplementary file lies (.gnu_debugaltlink), for a DWARF reader. */
#ifndef HPROF_BINARY_DEBUG_FILES_H
#define HPROF_BINARY_DEBUG_FILES_H

#include <libelf.h>

#include "binary/elf_facts.h"
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

/* The places a debuglink's file is looked for besides the --debug-dir directories. */
#define DEBUGLINK_SYSTEM_PLACES 3
/* The most --debug-dir directories. */
#define DEBUG_DIRS_MAX 8

/* Adds a directory of debug files (--debug-dir), searched before the system's in the order
 * given: DIR/.build-id/xx/yyyy.debug, and DIR/NAME for a .gnu_debuglink NAME. The settings
 * are the process's. Returns 0, -E2BIG (more than DEBUG_DIRS_MAX) or -errno (no such
 * directory). */
int debug_files__add_dir(const char *dir);
/* A debug file fetched for build-id id (debuginfod's cache): the last place that build-id
 * is looked for. Returns 0, -EINVAL or -ENOMEM. */
int debug_files__add_fetched(const uint8_t *id, size_t id_len, const char *path);
/* Forgets the directories and fetched files (tests). */
void debug_files__reset(void);

/* How many places a build-id's debug file is looked for (debug_files__build_id_path). */
size_t debug_files__build_id_places(void);
/* The place-th path (below debug_files__build_id_places) of the debug file for build-id
 * id (id_len bytes): each --debug-dir, DEBUG_DIR, then the file fetched for it. Returns 0,
 * -ENOENT (an id shorter than 2 bytes, no file fetched) or -ENAMETOOLONG. */
int debug_files__build_id_path(const uint8_t *id, size_t id_len, size_t place, char *path,
			       size_t size);
/* How many places a debuglink's file is looked for (debug_files__debuglink_path). */
size_t debug_files__debuglink_places(void);
/* The .gnu_debuglink of elf, the file at binary (an absolute path). Returns 0, -ENOENT (no
 * section, or binary is not absolute) or -EINVAL (not a bare file name and its CRC). */
int debug_files__debuglink(Elf *elf, const char *binary, struct debuglink *link);
/* The place-th path (below debug_files__debuglink_places) link's file is looked for at. Returns 0, or
 * -ENOENT when that path does not fit or is the binary's own. */
int debug_files__debuglink_path(const struct debuglink *link, const char *binary, size_t place,
				char *path, size_t size);
/* Whether the file in view is the one link names: its CRC-32 is link's (another build's
 * debug file has addresses that would lie). Reads the whole file; its pages then go back. */
bool debug_files__debuglink_matches(const struct debuglink *link, struct file_view *view);

/* Whether the file at path (a regular file) is an ELF file of build-id id: 0, -ENOEXEC (not
 * ELF, or unreadable headers), -EBADMSG (another build-id) or -errno (cannot be opened). */
int debug_files__check_build_id(const char *path, const uint8_t *id, size_t id_len);
/* The dwz supplementary file of debug_elf, the debug file at debug_file, as its
 * .gnu_debugaltlink names it: at its path (relative to debug_file's directory when
 * relative; moved under HPROF_DEBUG_DIR when it names /usr/lib/debug/...), else by the
 * build-id it names, wherever debug_files__build_id_path looks. Only a file with that
 * build-id is taken, never debug_file itself. Returns 0 with its path, -ENOENT (no
 * section, or no such file) or -EINVAL (a malformed section). */
int debug_files__altlink(Elf *debug_elf, const char *debug_file, char *path, size_t size);
/* The same, opening debug_file (a regular file only). Returns 0 or -errno. */
int debug_files__altlink_of(const char *debug_file, char *path, size_t size);
/* The build-id debug_file's .gnu_debugaltlink names (a regular file only): what to fetch
 * when the supplementary file is nowhere here. Returns 0, or -errno as
 * debug_files__altlink. */
int debug_files__altlink_build_id(const char *debug_file, uint8_t id[BUILD_ID_MAX],
				  size_t *id_len);
/* The separate debug file of elf, the file at binary with build-id id (id_len 0: none):
 * the first of the build-id places that holds an ELF file of that build-id, else the first
 * debuglink place whose file has the CRC-32 it names. Returns 0 with its path, or -ENOENT. */
int debug_files__find(Elf *elf, const char *binary, const uint8_t *id, size_t id_len, char *path,
		      size_t size);
/* For a DWARF reader: the file that holds the DWARF of the binary at path binary (itself
 * when it has .debug_info, else its separate debug file, debug_files__find) in debug_file,
 * and that file's dwz supplementary file in path. Returns 0, or -errno
 * (-ENOENT: no supplementary file, or none found). */
int debug_files__altlink_of_binary(const char *binary, char *debug_file, size_t debug_size,
				   char *path, size_t size);

#endif
