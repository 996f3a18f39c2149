#include "binary/jit_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The effective uid in /proc/PID/status ("Uid:\treal\teffective\tsaved\tfs"). */
static int read_euid(uint32_t pid, uid_t *uid)
{
	char path[64], buf[4096];
	unsigned real, effective;
	const char *line;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	line = strstr(buf, "\nUid:");
	if (!line || sscanf(line + 5, "%u %u", &real, &effective) != 2)
		return -EINVAL;
	*uid = effective;
	return 0;
}

/* Root's files and the process's own are trusted; anyone could have planted the others
 * in /tmp. */
static int check_owner(struct jit_file_owner *owner, uid_t file_uid)
{
	if (file_uid == 0)
		return 0;
	if (!owner->uid_known && read_euid(owner->pid, &owner->uid) == 0)
		owner->uid_known = true;
	return owner->uid_known && file_uid == owner->uid ? 0 : -EPERM;
}

int jit_file__open(const char *path, struct jit_file_owner *owner, struct stat *st)
{
	int fd, err;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, st) < 0)
		err = -errno;
	else if (!S_ISREG(st->st_mode) || st->st_nlink != 1)
		err = -EPERM; /* a second name: a hard link to a file of root's, planted in /tmp */
	else
		err = check_owner(owner, st->st_uid);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

size_t jit_file__pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}
