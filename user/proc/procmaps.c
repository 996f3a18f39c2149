#include "proc/procmaps.h"
#include "util/grow.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct process_maps {
	struct mapping *items; /* sorted by start, non-overlapping */
	size_t nr;
	char *strings; /* the paths, owned */
};

/* Reads a whole file that does not report its size (procfs). Returns 0 or -errno. */
static int read_proc_file(const char *path, char **text, size_t *len)
{
	FILE *f = fopen(path, "re");
	size_t cap = 16384, n = 0;
	char *buf;
	int err = 0;

	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	buf = malloc(cap + 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (;;) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n < cap) {
			if (ferror(f))
				err = -EIO;
			break;
		}
		char *bigger = realloc(buf, cap * 2 + 1);
		if (!bigger) {
			err = -ENOMEM;
			goto cleanup;
		}
		buf = bigger;
		cap *= 2;
	}
	if (err)
		goto cleanup;
	buf[n] = '\0';
	*text = buf;
	*len = n;
	buf = NULL;
cleanup:
	free(buf);
	fclose(f);
	return err;
}

int process_maps__read_text(pid_t pid, char **text, size_t *len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	return read_proc_file(path, text, len);
}

int process_maps__read(pid_t pid, struct process_maps **out)
{
	char *text = NULL;
	size_t len = 0;
	int err;

	*out = NULL;
	err = process_maps__read_text(pid, &text, &len);
	if (err)
		return err;
	err = process_maps__parse(text, len, out);
	free(text);
	return err;
}

/* One line: "start-end perms offset major:minor inode   path". Returns 1 when the line
 * is an executable mapping, 0 when it is not, -EINVAL when it is malformed. */
static int parse_line(char *line, struct mapping *m, const char **path)
{
	char perms[8];
	int consumed = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &m->start,
		   &m->end, perms, &m->file_offset, &m->dev_major, &m->dev_minor, &m->inode,
		   &consumed) < 7)
		return -EINVAL;
	if (m->end <= m->start)
		return -EINVAL;
	if (strlen(perms) < 3 || perms[2] != 'x')
		return 0;
	*path = line + consumed;
	return 1;
}

static int compare_start(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int process_maps__parse(const char *text, size_t len, struct process_maps **out)
{
	struct process_maps *maps;
	size_t cap = 0;
	char *copy, *line, *next;
	int err = 0;

	*out = NULL;
	maps = calloc(1, sizeof(*maps));
	copy = malloc(len + 1);
	if (!maps || !copy) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	/* Paths are stored in place: each line's path is NUL-terminated inside `copy`. */
	maps->strings = copy;
	for (line = copy; line && *line; line = next) {
		struct mapping m = { 0 };
		const char *path;
		int r;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		r = parse_line(line, &m, &path);
		if (r < 0) {
			err = r;
			goto cleanup;
		}
		if (r == 0)
			continue;
		if (grow_array((void **)&maps->items, &cap, maps->nr + 1, sizeof(*maps->items))) {
			err = -ENOMEM;
			goto cleanup;
		}
		m.path = path;
		maps->items[maps->nr++] = m;
	}
	if (maps->nr) /* a maps file without executable mappings leaves items NULL */
		qsort(maps->items, maps->nr, sizeof(*maps->items), compare_start);
	*out = maps;
	maps = NULL;
cleanup:
	process_maps__free(maps);
	return err;
}

struct mapping *process_maps__find(const struct process_maps *maps, uint64_t addr)
{
	size_t lo = 0, hi = maps ? maps->nr : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct mapping *m = &maps->items[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

size_t process_maps__count(const struct process_maps *maps)
{
	return maps ? maps->nr : 0;
}

const struct mapping *process_maps__get(const struct process_maps *maps, size_t i)
{
	return i < maps->nr ? &maps->items[i] : NULL;
}

void process_maps__free(struct process_maps *maps)
{
	if (!maps)
		return;
	free(maps->items);
	free(maps->strings);
	free(maps);
}
