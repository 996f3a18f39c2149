/* Output files that appear whole or not at all: written to an unnamed file (O_TMPFILE) in
 * the target's directory, so that a crash leaves nothing behind, and on commit linked
 * under a new name and renamed over the target. A symlink or hard link planted at the
 * target is replaced, never written through. Under sudo the file belongs to the invoking
 * user (SUDO_UID, SUDO_GID); its mode is the one asked for less the umask. */
#ifndef HPROF_ATOMIC_FILE_H
#define HPROF_ATOMIC_FILE_H

#include <stdio.h>
#include <sys/types.h>

struct atomic_file;

/* Opens a temporary file beside path with the given mode (e.g. 0644, 0600 for captures).
 * A device or FIFO at path (/dev/null, /dev/stdout) is written directly, through a symlink
 * only when root or the invoking user owns it (-EPERM otherwise).
 * Returns 0 or -errno; *out is NULL on error. */
int atomic_file__open(const char *path, mode_t mode, struct atomic_file **out);
FILE *atomic_file__stream(struct atomic_file *f);
/* Flushes, fsyncs and renames over the target; frees f. Returns 0 or -errno (then aborts). */
int atomic_file__commit(struct atomic_file *f);
/* Removes the temporary file; frees f. Accepts NULL. */
void atomic_file__abort(struct atomic_file *f);
/* Writes path whole or not at all: write fills the stream; the file is committed when it
 * returns 0, else aborted. Returns 0 or -errno (write's own error when it fails). */
int atomic_file__write(const char *path, mode_t mode, int (*write)(FILE *out, void *ctx),
		       void *ctx);
/* Checks up front that path's directory takes a new file, so a long profile does not end
 * in a failed write. Returns 0 or -errno. */
int atomic_file__check_writable(const char *path);

#endif
