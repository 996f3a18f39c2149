/* Files a profiled process writes for profilers to read (perf's /tmp/perf-PID.map and its
 * jitdump files). Anyone can create a file in /tmp, so one is used only if it is a regular
 * file with no other name, owned by root or by the process's effective uid, opened without
 * following a symlink or blocking on a FIFO. */
#ifndef HPROF_BINARY_JIT_FILE_H
#define HPROF_BINARY_JIT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Whose files are trusted: the process's effective uid, read once while it lives. */
struct jit_file_owner {
	uint32_t pid;
	bool uid_known;
	uid_t uid;
};

/* Opens path under those rules and fills *st. Returns an fd, or -errno: -EPERM when the file
 * is refused (a symlink, not a regular file, a second name, a stranger's), -ENOENT when
 * there is none. */
int jit_file__open(const char *path, struct jit_file_owner *owner, struct stat *st);

/* Reads up to len bytes at offset off, retrying short reads; fewer at the end of the file or
 * on an error. Returns how many were read. */
size_t jit_file__pread(int fd, void *buf, size_t len, uint64_t off);

#endif
