/* Output files that appear whole or not at all: written to a temporary file in the
 * same directory, renamed over the target on commit, removed on abort. */
#ifndef HPROF_ATOMIC_FILE_H
#define HPROF_ATOMIC_FILE_H

#include <stdio.h>
#include <sys/types.h>

struct atomic_file;

/* Opens a temporary file beside path with the given mode (e.g. 0644, 0600 for captures).
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
