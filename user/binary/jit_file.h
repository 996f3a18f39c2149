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

/* Whose files are trusted: the process's effective uid, read once while it lives; and
 * the process's pid as it knows itself (in its own pid namespace: a container's), which
 * names its files. */
struct jit_file_owner {
	uint32_t pid;
	bool status_known;
	uid_t uid;
	uint32_t ns_pid;
};

/* The pid the process's files are named after: its pid in the innermost pid namespace
 * it lives in (NSpid in /proc/PID/status), or pid itself when that cannot be read. */
uint32_t jit_file__ns_pid(struct jit_file_owner *owner);

/* Opens path, as the process names it (inside its root: a container's /tmp is not the
 * host's), under those rules and fills *st. Once the process's root is gone (it exited),
 * a process of hprof's own pid namespace has its path opened in hprof's root. Returns an
 * fd, or -errno: -EPERM when the file is refused (a symlink, not a regular file, a second
 * name, a stranger's), -ENOENT when there is none. */
int jit_file__open(const char *path, struct jit_file_owner *owner, struct stat *st);

/* Reads up to len bytes at offset off, retrying short reads; fewer at the end of the file or
 * on an error. Returns how many were read. */
size_t jit_file__pread(int fd, void *buf, size_t len, uint64_t off);

#endif
