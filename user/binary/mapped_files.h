/* The files behind processes' mappings, opened while their process lives and kept open
 * for the run, so that a binary is read from the very file that was mapped: after its
 * process has exited, after it was deleted or replaced on disk (a CI rebuild), and when
 * its path means something else in hprof's mount namespace (a container). One descriptor
 * per file (device and inode). */
#ifndef HPROF_MAPPED_FILES_H
#define HPROF_MAPPED_FILES_H

#include <stddef.h>
#include <stdint.h>

/* At most this many files are kept open; later ones are read through their path. */
#define MAPPED_FILES_MAX 4096

struct mapped_file_id {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
};

struct mapped_files;

struct mapped_files *mapped_files__new(void);
/* Opens the file mapped at [start, end) in pid, named path there, unless it is open
 * already: through /proc/PID/map_files, else path inside the process's root (never
 * leaving it through ".." or symlinks), else (the process is gone) path in hprof's own
 * root. Only a regular file whose device and inode are id's is kept, so a FIFO or device
 * is never read, nor a file the process did not map. Returns 0, or -errno when it could
 * not be opened (nothing is kept). */
int mapped_files__pin(struct mapped_files *mf, uint32_t pid, uint64_t start, uint64_t end,
		      const char *path, const struct mapped_file_id *id);
/* A path that opens the pinned file ("/proc/self/fd/N"), or NULL when it is not pinned. */
const char *mapped_files__path(const struct mapped_files *mf, const struct mapped_file_id *id,
			       char *buf, size_t len);
size_t mapped_files__count(const struct mapped_files *mf);
void mapped_files__free(struct mapped_files *mf);

#endif
