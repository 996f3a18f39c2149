#include "util/file_view.h"
#include "util/text.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the SIGBUS handler knows of a view: plain words it can read at any moment. A slot
 * is free while end is 0. */
struct view_slot {
	volatile uintptr_t start, end;
	volatile sig_atomic_t faulted;
	struct file_view *view; /* for file_view__drop_touched */
};

static struct view_slot slots[FILE_VIEW_MAX];
static volatile size_t slots_used; /* slots at or past this index were never used */
static struct sigaction previous_sigbus;
static bool handler_installed;
static uintptr_t page_size;

struct file_view {
	const uint8_t *data;
	size_t size;
	size_t slot;
	char *path;   /* where the file is statted to see whether it changed, */
	int pinned_fd; /* or, when path is /proc/self/fd/N, N, fstat'd: the same file, no walk */
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	bool changed;
	bool touched; /* pages read since file_view__drop_touched */
};

/* A fault in a view's range is a read past the end of a file truncated since it was
 * mapped: a page of zeros goes there and the read goes on. Any other SIGBUS is someone
 * else's: the handler hprof replaced, or the default action. */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t addr = (uintptr_t)si->si_addr;

	for (size_t i = 0; i < slots_used; i++) {
		void *page;

		if (addr < slots[i].start || addr >= slots[i].end)
			continue;
		page = (void *)(addr & ~(page_size - 1));
		if (mmap(page, page_size, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
		    MAP_FAILED)
			break;
		slots[i].faulted = 1;
		return;
	}
	if ((previous_sigbus.sa_flags & SA_SIGINFO) && previous_sigbus.sa_sigaction) {
		previous_sigbus.sa_sigaction(sig, si, uc);
		return;
	}
	if (previous_sigbus.sa_handler != SIG_DFL && previous_sigbus.sa_handler != SIG_IGN) {
		previous_sigbus.sa_handler(sig);
		return;
	}
	/* the faulting read runs again on return, and the default action ends hprof */
	signal(SIGBUS, SIG_DFL);
}

static int install_handler(void)
{
	struct sigaction sa;

	if (handler_installed)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &previous_sigbus) < 0)
		return -errno;
	page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
	handler_installed = true;
	return 0;
}

/* N of a path "/proc/self/fd/N", else -1. A stat of that path follows whatever file
 * descriptor N is now, as fstat(N) does, but walks /proc first: a hundred times the cost. */
static int pinned_fd_of(const char *path)
{
	const char *prefix = "/proc/self/fd/";
	long long n;

	if (strncmp(path, prefix, strlen(prefix)) != 0 ||
	    !text__parse_number(path + strlen(prefix), 0, INT32_MAX, &n))
		return -1;
	return (int)n;
}

/* A free slot's index, or FILE_VIEW_MAX. */
static size_t free_slot(void)
{
	for (size_t i = 0; i < slots_used; i++) {
		if (slots[i].end == 0)
			return i;
	}
	return slots_used < FILE_VIEW_MAX ? slots_used : FILE_VIEW_MAX;
}

int file_view__open(const char *path, uint64_t max_size, struct file_view **out, char *err,
		    size_t errlen)
{
	struct file_view *v = NULL;
	void *map = MAP_FAILED;
	struct stat st;
	int fd = -1, ret;
	size_t slot;

	*out = NULL;
	ret = install_handler();
	if (ret) {
		text__set_err(err, errlen, "%s: SIGBUS handler: %s", path, strerror(-ret));
		return ret;
	}
	slot = free_slot();
	if (slot == FILE_VIEW_MAX) {
		text__set_err(err, errlen, "%s: more than %d binaries mapped at once", path, FILE_VIEW_MAX);
		return -EMFILE;
	}
	/* O_NONBLOCK: a FIFO named by a profiled process must not block hprof */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		ret = -errno;
		text__set_err(err, errlen, "%s: %s", path, strerror(-ret));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		ret = -EINVAL;
		text__set_err(err, errlen, "%s: not a regular, non-empty file", path);
		goto cleanup;
	}
	if ((uint64_t)st.st_size > max_size) {
		ret = -EFBIG;
		text__set_err(err, errlen, "%s: larger than %llu bytes", path, (unsigned long long)max_size);
		goto cleanup;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	v = calloc(1, sizeof(*v));
	if (map == MAP_FAILED || !v || !(v->path = strdup(path))) {
		ret = map == MAP_FAILED ? -errno : -ENOMEM;
		text__set_err(err, errlen, "%s: %s", path, strerror(-ret));
		goto cleanup;
	}
	v->data = map;
	v->pinned_fd = pinned_fd_of(path);
	v->size = (size_t)st.st_size;
	v->slot = slot;
	v->dev = st.st_dev;
	v->ino = st.st_ino;
	v->mtime = st.st_mtim;
	slots[slot].faulted = 0;
	slots[slot].view = v;
	slots[slot].start = (uintptr_t)map;
	slots[slot].end = (uintptr_t)map + v->size;
	if (slot == slots_used)
		slots_used = slot + 1;
	*out = v;
	v = NULL;
	map = MAP_FAILED;
	ret = 0;
cleanup:
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	if (v)
		free(v->path);
	free(v);
	if (fd >= 0)
		close(fd);
	return ret;
}

const uint8_t *file_view__data(const struct file_view *v)
{
	return v->data;
}

size_t file_view__size(const struct file_view *v)
{
	return v->size;
}

bool file_view__changed(struct file_view *v)
{
	struct stat st;

	if (v->changed)
		return true;
	/* Only what a rewrite changes: a deletion or a new hard link (a rebuild's) changes the
	 * ctime of a file whose bytes are the same. */
	if (slots[v->slot].faulted ||
	    (v->pinned_fd >= 0 ? fstat(v->pinned_fd, &st) : stat(v->path, &st)) < 0 ||
	    st.st_dev != v->dev ||
	    st.st_ino != v->ino || (uint64_t)st.st_size != v->size ||
	    st.st_mtim.tv_sec != v->mtime.tv_sec || st.st_mtim.tv_nsec != v->mtime.tv_nsec)
		v->changed = true;
	return v->changed;
}

void file_view__drop_pages(struct file_view *v, uint64_t off, uint64_t len)
{
	uint64_t first, last;

	if (!page_size || off >= v->size)
		return;
	if (len > v->size - off)
		len = v->size - off;
	first = off & ~(uint64_t)(page_size - 1);
	last = off + len;
	/* MADV_DONTNEED on a private file mapping with no written pages drops them from this
	 * process only; the next read maps the page cache's copy again */
	madvise((void *)(v->data + first), (size_t)(last - first), MADV_DONTNEED);
}

void file_view__touched(struct file_view *v)
{
	v->touched = true;
}

void file_view__drop_touched(void)
{
	for (size_t i = 0; i < slots_used; i++) {
		struct file_view *v = slots[i].end ? slots[i].view : NULL;

		if (v && v->touched) {
			file_view__drop_pages(v, 0, v->size);
			v->touched = false;
		}
	}
}

void file_view__close(struct file_view *v)
{
	if (!v)
		return;
	slots[v->slot].end = 0;
	slots[v->slot].start = 0;
	slots[v->slot].view = NULL;
	munmap((void *)v->data, v->size);
	free(v->path);
	free(v);
}
