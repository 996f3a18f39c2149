#include "binary/jit_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* From /proc/PID/status: the effective uid ("Uid:\treal\teffective\tsaved\tfs") and the
 * pid in the innermost pid namespace (the last of "NSpid:\tPID\t...", absent before
 * Linux 4.1: then pid). */
static int read_status(uint32_t pid, uid_t *uid, uint32_t *ns_pid)
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
	*ns_pid = pid;
	line = strstr(buf, "\nNSpid:");
	if (line) {
		const char *end = strchr(line + 1, '\n');
		const char *last = end ? end : line + strlen(line);
		unsigned long v;
		char *stop;

		while (last > line && (last[-1] == ' ' || last[-1] == '\t'))
			last--;
		while (last > line && last[-1] >= '0' && last[-1] <= '9')
			last--;
		v = strtoul(last, &stop, 10);
		if (stop != last && v > 0 && v <= UINT32_MAX)
			*ns_pid = (uint32_t)v;
	}
	return 0;
}

static void load_status(struct jit_file_owner *owner)
{
	if (!owner->status_known &&
	    read_status(owner->pid, &owner->uid, &owner->ns_pid) == 0)
		owner->status_known = true;
}

uint32_t jit_file__ns_pid(struct jit_file_owner *owner)
{
	load_status(owner);
	return owner->status_known ? owner->ns_pid : owner->pid;
}

/* Root's files and the process's own are trusted; anyone could have planted the others
 * in /tmp. */
static int check_owner(struct jit_file_owner *owner, uid_t file_uid)
{
	if (file_uid == 0)
		return 0;
	load_status(owner);
	return owner->status_known && file_uid == owner->uid ? 0 : -EPERM;
}

#define OPEN_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

/* path opened inside the process's root, every symlink on the way resolved there too
 * (openat2's RESOLVE_IN_ROOT: an absolute symlink in a container's tree cannot lead to the
 * host's files). Returns an fd or -errno; -ESRCH when the root cannot be opened. */
static int open_in_root(uint32_t pid, const char *path)
{
	struct open_how how = { .flags = OPEN_FLAGS,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char root_path[64];
	int root, fd;

	snprintf(root_path, sizeof(root_path), "/proc/%u/root", pid);
	root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -ESRCH;
	fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	if (fd < 0)
		fd = -errno;
	close(root);
	return fd;
}

int jit_file__open(const char *path, struct jit_file_owner *owner, struct stat *st)
{
	int fd, err;

	fd = open_in_root(owner->pid, path);
	/* gone: only a process that named its files as hprof would has them in hprof's root */
	if (fd == -ESRCH && jit_file__ns_pid(owner) == owner->pid) {
		fd = open(path, OPEN_FLAGS);
		if (fd < 0)
			fd = -errno;
	}
	if (fd < 0)
		return fd == -ELOOP || fd == -EXDEV ? -EPERM : fd;
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
