/* A read-only mapping of a binary that hprof reads from for as long as the binary is
 * profiled: unwind rows compiled a function at a time, symbol names read when a frame is
 * first named. Only the pages read count in hprof's memory, and they can be handed back.
 *
 * The file is one hprof does not own: it can be truncated or rewritten in place while
 * mapped. A read of a page past its new end would raise SIGBUS; the view's handler maps a
 * page of zeros there instead and marks the view changed, so hprof never crashes on it.
 * Callers check file_view__changed before trusting bytes they read lazily, and treat a
 * changed view as a binary they can no longer read. */
#ifndef HPROF_UTIL_FILE_VIEW_H
#define HPROF_UTIL_FILE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At most this many views exist at once (their address ranges are what the SIGBUS
 * handler searches); opening another fails with -EMFILE. */
#define FILE_VIEW_MAX 16384

struct file_view;

/* Maps the regular file at path (a pinned descriptor's /proc/self/fd/N, or a path) whole.
 * max_size: larger files are refused with -EFBIG. Returns 0 or -errno with a one-line
 * reason in err. */
int file_view__open(const char *path, uint64_t max_size, struct file_view **out, char *err,
		    size_t errlen);

/* The file's bytes as mapped. */
const uint8_t *file_view__data(const struct file_view *v);
size_t file_view__size(const struct file_view *v);

/* The file is no longer the one mapped: a read faulted past its end, or the path it was
 * opened by now leads to another file (device, inode) or one of another size or mtime.
 * Costs an fstat of the pinned descriptor for a path /proc/self/fd/N (which follows the
 * file even once it is deleted), else a stat of the path: for cold paths (compiling rows,
 * naming a frame). Once changed, a view stays changed. */
bool file_view__changed(struct file_view *v);

/* Hands back the pages of [off, off + len) this process has read (the page cache keeps
 * them; a later read maps them again): after a pass over a whole section. */
void file_view__drop_pages(struct file_view *v, uint64_t off, uint64_t len);

/* Says pages of v were read that need not stay: a function's CFI compiled, a frame's name
 * read, each once. file_view__drop_touched hands them back later, all at once: a madvise
 * per read would cost a TLB shootdown on every CPU the process's threads ran on (hprof
 * serve's HTTP threads), and the kernel maps 64 KiB around each page a read faults in, so
 * without it every block read would stay in hprof's RSS. */
void file_view__touched(struct file_view *v);
/* Hands back the pages of every view read since the last call (at most once a second, from
 * the thread that reads views). */
void file_view__drop_touched(void);

/* Accepts NULL. */
void file_view__close(struct file_view *v);

#endif
