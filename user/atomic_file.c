#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct atomic_file {
	FILE *stream;
	char *path;
	char *tmp_path; /* NULL when writing straight to a device or pipe */
};

/* /dev/null, /dev/stdout or a FIFO: nothing to replace, write to it directly. */
static bool is_special_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

static int open_special(const char *path, struct atomic_file *f)
{
	f->stream = fopen(path, "we");
	return f->stream ? 0 : -errno;
}

int atomic_file__open(const char *path, mode_t mode, struct atomic_file **out)
{
	struct atomic_file *f;
	int fd, err;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->path = strdup(path);
	if (f->path && is_special_file(path)) {
		err = open_special(path, f);
		if (err)
			goto cleanup;
		*out = f;
		return 0;
	}
	if (!f->path || asprintf(&f->tmp_path, "%s.tmp.XXXXXX", path) < 0) {
		f->tmp_path = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	fd = mkstemp(f->tmp_path);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (fchmod(fd, mode) < 0 || !(f->stream = fdopen(fd, "w"))) {
		err = -errno;
		close(fd);
		unlink(f->tmp_path);
		goto cleanup;
	}
	*out = f;
	return 0;
cleanup:
	free(f->tmp_path);
	free(f->path);
	free(f);
	return err;
}

FILE *atomic_file__stream(struct atomic_file *f)
{
	return f->stream;
}

int atomic_file__commit(struct atomic_file *f)
{
	int err = 0;

	if (fflush(f->stream) != 0 || ferror(f->stream) ||
	    (f->tmp_path && fsync(fileno(f->stream)) < 0))
		err = errno ? -errno : -EIO;
	if (fclose(f->stream) != 0 && !err)
		err = -errno;
	f->stream = NULL;
	if (!err && f->tmp_path && rename(f->tmp_path, f->path) < 0)
		err = -errno;
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
	struct stat st;
	int err;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
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
