#include "binary/mapped_files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <uthash.h>

struct pinned {
	struct mapped_file_id id; /* key */
	int fd;
	UT_hash_handle hh;
};

struct mapped_files {
	struct pinned *by_id;
	size_t nr;
};

struct mapped_files *mapped_files__new(void)
{
	return calloc(1, sizeof(struct mapped_files));
}

void mapped_files__free(struct mapped_files *mf)
{
	struct pinned *p, *tmp;

	if (!mf)
		return;
	HASH_ITER(hh, mf->by_id, p, tmp) {
		HASH_DEL(mf->by_id, p);
		close(p->fd);
		free(p);
	}
	free(mf);
}

size_t mapped_files__count(const struct mapped_files *mf)
{
	return mf ? mf->nr : 0;
}

static struct pinned *find(const struct mapped_files *mf, const struct mapped_file_id *id)
{
	struct pinned *p;
	struct mapped_file_id key = { id->dev_major, id->dev_minor, id->inode };

	HASH_FIND(hh, mf->by_id, &key, sizeof(key), p);
	return p;
}

/* The descriptor is the mapped file itself: a regular file with the mapping's device and
 * inode (a FIFO or a device would block or mislead the ELF reader). */
static bool is_the_file(int fd, const struct mapped_file_id *id)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == id->inode &&
	       major(st.st_dev) == id->dev_major && minor(st.st_dev) == id->dev_minor;
}

/* path resolved inside pid's root, as the process sees it. */
static int open_in_root(uint32_t pid, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char root[64];
	int dir, fd;

	snprintf(root, sizeof(root), "/proc/%" PRIu32 "/root", pid);
	dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	fd = (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
	close(dir);
	return fd;
}

static int open_mapped(uint32_t pid, uint64_t start, uint64_t end, const char *path,
		       const struct mapped_file_id *id)
{
	char link[96];
	int fd;

	snprintf(link, sizeof(link), "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, pid, start,
		 end);
	fd = open(link, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd >= 0 && is_the_file(fd, id))
		return fd;
	if (fd >= 0)
		close(fd);
	if (path[0] != '/')
		return -1;
	fd = open_in_root(pid, path);
	if (fd >= 0 && is_the_file(fd, id))
		return fd;
	if (fd >= 0)
		close(fd);
	/* The process is gone (its root with it): the path as hprof sees it, kept only if it
	 * is the very file that was mapped, so it reads nothing the process could not. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd >= 0 && is_the_file(fd, id))
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

int mapped_files__pin(struct mapped_files *mf, uint32_t pid, uint64_t start, uint64_t end,
		      const char *path, const struct mapped_file_id *id)
{
	struct pinned *p;
	int fd;

	if (id->inode == 0)
		return -ENOENT;
	if (find(mf, id))
		return 0;
	if (mf->nr >= MAPPED_FILES_MAX)
		return -EMFILE;
	fd = open_mapped(pid, start, end, path, id);
	if (fd < 0)
		return -ENOENT;
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	p->id = (struct mapped_file_id){ id->dev_major, id->dev_minor, id->inode };
	p->fd = fd;
	HASH_ADD(hh, mf->by_id, id, sizeof(p->id), p);
	mf->nr++;
	return 0;
}

const char *mapped_files__path(const struct mapped_files *mf, const struct mapped_file_id *id,
			       char *buf, size_t len)
{
	struct pinned *p = mf ? find(mf, id) : NULL;

	if (!p)
		return NULL;
	snprintf(buf, len, "/proc/self/fd/%d", p->fd);
	return buf;
}
