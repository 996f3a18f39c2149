#include "util/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct atomic_file {
	FILE *stream;
	char *path;
	bool special;  /* writing straight to a device or pipe */
	char *tmp_path; /* set only where O_TMPFILE is not supported: a named temporary file */
};

/* Under sudo, files belong to the user who ran it, not to root. Returns false when hprof
 * runs as itself. */
static bool invoking_user(uid_t *uid, gid_t *gid)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	char *end;
	unsigned long v;

	if (geteuid() != 0 || !u || !g)
		return false;
	errno = 0;
	v = strtoul(u, &end, 10);
	if (errno || end == u || *end || v >= UINT_MAX)
		return false;
	*uid = (uid_t)v;
	v = strtoul(g, &end, 10);
	if (errno || end == g || *end || v >= UINT_MAX)
		return false;
	*gid = (gid_t)v;
	return true;
}

static mode_t current_umask(void)
{
	mode_t mask = umask(022);

	umask(mask);
	return mask;
}

/* /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N are hprof's own descriptors:
 * written through a copy of the descriptor, so that `>> log` appends. -1 for other paths. */
static int own_descriptor(const char *path)
{
	static const char *const prefixes[] = { "/dev/fd/", "/proc/self/fd/" };
	char *end;
	long n;

	if (strcmp(path, "/dev/stdout") == 0)
		return 1;
	if (strcmp(path, "/dev/stderr") == 0)
		return 2;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t len = strlen(prefixes[i]);

		if (strncmp(path, prefixes[i], len) != 0 || !path[len])
			continue;
		n = strtol(path + len, &end, 10);
		return *end || n < 0 || n > INT_MAX ? -1 : (int)n;
	}
	return -1;
}

/* Opens a device or FIFO for writing without creating anything. */
static int open_device(const char *path, int *fd)
{
	struct stat st;

	*fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	if (fstat(*fd, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
		close(*fd);
		*fd = -1;
		return -EAGAIN; /* changed under us */
	}
	return 0;
}

/* Where an output goes. A device or FIFO (/dev/null, a named pipe) or one of hprof's own
 * descriptors is written directly: *fd. Anything else is replaced whole: *target is the
 * path to replace, path itself or, behind a symlink that root or the invoking user owns,
 * the regular file it names. Another user's symlink (in a shared directory it could point
 * at a disk or at root's files) is never followed: it is replaced, or refused (-EPERM)
 * when it names a device. */
static int resolve_output(const char *path, int *fd, char **target)
{
	struct stat lst, st;
	uid_t uid = geteuid();
	gid_t gid;
	int own = own_descriptor(path);

	*fd = -1;
	*target = NULL;
	if (own >= 0) {
		*fd = fcntl(own, F_DUPFD_CLOEXEC, 0);
		return *fd < 0 ? -errno : 0;
	}
	if (lstat(path, &lst) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(lst.st_mode))
		return -EISDIR;
	if (!S_ISLNK(lst.st_mode))
		return S_ISREG(lst.st_mode) ? 0 : open_device(path, fd);
	invoking_user(&uid, &gid);
	if (stat(path, &st) != 0)
		return 0; /* a dangling link: replaced */
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (lst.st_uid != 0 && lst.st_uid != uid)
		return S_ISREG(st.st_mode) ? 0 : -EPERM;
	if (!S_ISREG(st.st_mode))
		return open_device(path, fd);
	*target = realpath(path, NULL);
	return *target ? 0 : -errno;
}

/* An unnamed file in path's directory: a crash (even SIGKILL) leaves nothing behind. */
static int open_unnamed(const char *path, mode_t mode)
{
	char *copy = strdup(path);
	int fd;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	free(copy);
	return fd < 0 ? -errno : fd;
}

/* Where the file system has no O_TMPFILE: a new name (O_EXCL) beside path. */
static int open_named(struct atomic_file *f, mode_t mode)
{
	int fd;

	if (asprintf(&f->tmp_path, "%s.tmp.XXXXXX", f->path) < 0) {
		f->tmp_path = NULL;
		return -ENOMEM;
	}
	fd = mkstemp(f->tmp_path);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0) {
		close(fd);
		unlink(f->tmp_path);
		return -errno;
	}
	return fd;
}

static int open_temporary(struct atomic_file *f, mode_t mode)
{
	uid_t uid;
	gid_t gid;
	int fd = open_unnamed(f->path, mode & ~current_umask());

	if (fd == -EOPNOTSUPP || fd == -EISDIR || fd == -EINVAL)
		fd = open_named(f, mode & ~current_umask());
	if (fd >= 0 && invoking_user(&uid, &gid) && fchown(fd, uid, gid) < 0) {
		int err = -errno;

		close(fd);
		if (f->tmp_path)
			unlink(f->tmp_path);
		return err;
	}
	return fd;
}

int atomic_file__open(const char *path, mode_t mode, struct atomic_file **out)
{
	struct atomic_file *f;
	int fd, err;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = resolve_output(path, &fd, &f->path);
	if (!err && !f->path && !(f->path = strdup(path)))
		err = -ENOMEM;
	if (err) {
		if (fd >= 0)
			close(fd);
		goto cleanup;
	}
	f->special = fd >= 0;
	if (!f->special)
		fd = open_temporary(f, mode);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	f->stream = fdopen(fd, "w");
	if (!f->stream) {
		err = -errno;
		close(fd);
		if (f->tmp_path)
			unlink(f->tmp_path);
		goto cleanup;
	}
	*out = f;
	return 0;
cleanup:
	if (f) {
		free(f->tmp_path);
		free(f->path);
	}
	free(f);
	return err;
}

FILE *atomic_file__stream(struct atomic_file *f)
{
	return f->stream;
}

/* Gives the unnamed file a fresh name beside path (linkat never replaces a file), then
 * renames it over path, which replaces a planted symlink or hard link, never its target. */
static int link_in_place(struct atomic_file *f)
{
	char fd_path[64], *tmp = NULL;
	int err = 0;

	snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fileno(f->stream));
	for (int tries = 0; tries < 100; tries++) {
		free(tmp);
		if (asprintf(&tmp, "%s.tmp.%d.%lx", f->path, (int)getpid(),
			     (unsigned long)random()) < 0)
			return -ENOMEM;
		err = linkat(AT_FDCWD, fd_path, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) ? -errno : 0;
		if (err != -EEXIST)
			break;
	}
	if (!err && rename(tmp, f->path) < 0) {
		err = -errno;
		unlink(tmp);
	}
	free(tmp);
	return err;
}

int atomic_file__commit(struct atomic_file *f)
{
	int err = 0;

	errno = 0;
	if (fflush(f->stream) != 0 || ferror(f->stream) ||
	    (!f->special && fsync(fileno(f->stream)) < 0))
		err = errno ? -errno : -EIO;
	if (!err && !f->special)
		err = f->tmp_path ? (rename(f->tmp_path, f->path) < 0 ? -errno : 0)
				  : link_in_place(f);
	if (fclose(f->stream) != 0 && !err)
		err = -errno;
	f->stream = NULL;
	if (err && f->tmp_path)
		unlink(f->tmp_path);
	free(f->tmp_path);
	free(f->path);
	free(f);
	return err;
}

void atomic_file__abort(struct atomic_file *f)
{
	if (!f)
		return;
	if (f->stream)
		fclose(f->stream);
	if (f->tmp_path)
		unlink(f->tmp_path);
	free(f->tmp_path);
	free(f->path);
	free(f);
}

int atomic_file__check_writable(const char *path)
{
	struct atomic_file *f;
	int err;

	err = atomic_file__open(path, 0644, &f);
	if (err)
		return err;
	atomic_file__abort(f);
	return 0;
}

int atomic_file__write(const char *path, mode_t mode, int (*write)(FILE *out, void *ctx),
		       void *ctx)
{
	struct atomic_file *f;
	int err = atomic_file__open(path, mode, &f);

	if (err)
		return err;
	err = write(atomic_file__stream(f), ctx);
	if (err) {
		atomic_file__abort(f);
		return err;
	}
	return atomic_file__commit(f);
}
