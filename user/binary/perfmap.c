#include "binary/perfmap.h"
#include "util/grow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* One line of the file, in file order (seq). */
struct item {
	uint64_t start, end; /* [start, end) */
	uint32_t name;       /* offset in names */
	uint32_t seq;        /* later lines win */
};

/* The table: disjoint ranges, sorted, each naming the latest line that covers it. */
struct segment {
	uint64_t start, end;
	uint32_t name;
};

struct perf_map {
	uint32_t pid;
	bool uid_known;
	uid_t uid; /* the process's effective uid: whose map files are trusted */
	struct segment *segs;
	size_t nr_segs;
	char *names; /* NUL-terminated names, back to back */
	size_t names_len, names_cap;
	/* The file as last read: complete lines up to read_off are in the table. */
	dev_t dev;
	ino_t ino;
	uint64_t size;
	uint64_t read_off;
	bool skip_line; /* the line at read_off is too long: skip it to its newline */
	bool tried;
	uint64_t checked_ns;
	bool ever_read, refused, cut_short;
	uint64_t entries, bad_lines;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int perf_map__new(uint32_t pid, struct perf_map **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->pid = pid;
	return 0;
}

/* The file was rewritten (truncated or replaced): its old lines no longer apply. */
static void reset_table(struct perf_map *pm)
{
	free(pm->segs);
	pm->segs = NULL;
	pm->nr_segs = 0;
	pm->names_len = 0;
	pm->size = 0;
	pm->read_off = 0;
	pm->skip_line = false;
	pm->cut_short = false;
	pm->entries = 0;
	pm->bad_lines = 0;
}

/* Parses 1 to 16 hex digits, with or without 0x, at *p. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, digits++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (digits == 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (digits == 0)
		return false;
	*p = s;
	*out = v;
	return true;
}

/* Skips at least one blank (space or tab). */
static bool skip_blanks(const char **p, const char *end)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == *p)
		return false;
	*p = s;
	return true;
}

/* "START SIZE name": the name runs to the end of the line (spaces included, a trailing
 * '\r' and blanks not). */
static bool parse_line(const char *s, const char *end, uint64_t *start, uint64_t *size,
		       const char **name, size_t *name_len)
{
	while (end > s && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (!parse_hex(&s, end, start) || !skip_blanks(&s, end) || !parse_hex(&s, end, size) ||
	    !skip_blanks(&s, end))
		return false;
	if (*size == 0 || *size > UINT64_MAX - *start || s == end)
		return false;
	*name = s;
	*name_len = (size_t)(end - s);
	return true;
}

static int add_name(struct perf_map *pm, const char *name, size_t len, uint32_t *off)
{
	if (grow_array((void **)&pm->names, &pm->names_cap, pm->names_len + len + 1, 1))
		return -ENOMEM;
	memcpy(pm->names + pm->names_len, name, len);
	pm->names[pm->names_len + len] = '\0';
	*off = (uint32_t)pm->names_len;
	pm->names_len += len + 1;
	return 0;
}

static int compare_item_start(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A max-heap of item indices by seq: the latest line covering the sweep's position. */
struct heap {
	uint32_t *idx;
	size_t n;
	const struct item *items;
};

static bool heap_later(const struct heap *h, size_t a, size_t b)
{
	return h->items[h->idx[a]].seq > h->items[h->idx[b]].seq;
}

static void heap_swap(struct heap *h, size_t a, size_t b)
{
	uint32_t t = h->idx[a];

	h->idx[a] = h->idx[b];
	h->idx[b] = t;
}

static void heap_push(struct heap *h, uint32_t i)
{
	size_t c = h->n++;

	h->idx[c] = i;
	while (c > 0 && heap_later(h, c, (c - 1) / 2)) {
		heap_swap(h, c, (c - 1) / 2);
		c = (c - 1) / 2;
	}
}

static void heap_pop(struct heap *h)
{
	size_t c = 0;

	h->idx[0] = h->idx[--h->n];
	for (;;) {
		size_t l = 2 * c + 1, r = l + 1, top = c;

		if (l < h->n && heap_later(h, l, top))
			top = l;
		if (r < h->n && heap_later(h, r, top))
			top = r;
		if (top == c)
			return;
		heap_swap(h, c, top);
		c = top;
	}
}

/* Sweeps the boundaries of items (sorted by start) left to right; between two boundaries
 * the latest covering item wins. Writes at most 2n segments to out; returns how many. */
static size_t sweep(const struct item *items, size_t n, const uint64_t *points, size_t nr_points,
		    uint32_t *heap_idx, struct segment *out)
{
	struct heap h = { .idx = heap_idx, .items = items };
	size_t next = 0, nr = 0;

	for (size_t i = 0; i + 1 < nr_points; i++) {
		uint64_t x = points[i];
		const struct item *top;

		while (next < n && items[next].start <= x)
			heap_push(&h, (uint32_t)next++);
		while (h.n && items[h.idx[0]].end <= x)
			heap_pop(&h);
		if (!h.n)
			continue;
		top = &items[h.idx[0]];
		if (nr && out[nr - 1].end == x && out[nr - 1].name == top->name)
			out[nr - 1].end = points[i + 1];
		else
			out[nr++] = (struct segment){ .start = x, .end = points[i + 1], .name = top->name };
	}
	return nr;
}

/* Rebuilds the table from its segments and the new lines, which are later than all of
 * them. Returns 0 or -ENOMEM. */
static int merge(struct perf_map *pm, const struct item *added, size_t nr_added)
{
	size_t n = pm->nr_segs + nr_added, nr_points = 0;
	struct item *items = malloc(n * sizeof(*items));
	uint64_t *points = malloc(2 * n * sizeof(*points));
	uint32_t *heap_idx = malloc(n * sizeof(*heap_idx));
	struct segment *out = malloc(2 * n * sizeof(*out));
	int err = 0;

	if (!items || !points || !heap_idx || !out) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < pm->nr_segs; i++)
		items[i] = (struct item){ pm->segs[i].start, pm->segs[i].end, pm->segs[i].name, 0 };
	for (size_t i = 0; i < nr_added; i++) {
		items[pm->nr_segs + i] = added[i];
		items[pm->nr_segs + i].seq = (uint32_t)(i + 1);
	}
	qsort(items, n, sizeof(*items), compare_item_start);
	for (size_t i = 0; i < n; i++) {
		points[2 * i] = items[i].start;
		points[2 * i + 1] = items[i].end;
	}
	qsort(points, 2 * n, sizeof(*points), compare_u64);
	for (size_t i = 0; i < 2 * n; i++) {
		if (nr_points == 0 || points[nr_points - 1] != points[i])
			points[nr_points++] = points[i];
	}
	free(pm->segs);
	pm->segs = out;
	pm->nr_segs = sweep(items, n, points, nr_points, heap_idx, out);
	out = NULL;
cleanup:
	free(items);
	free(points);
	free(heap_idx);
	free(out);
	return err;
}

/* One complete line (without its newline): an item, or a bad line counted. */
static int add_line(struct perf_map *pm, const char *s, size_t len, struct item *item,
		    bool *added)
{
	uint64_t start, size;
	const char *name;
	size_t name_len;
	int err;

	*added = false;
	if (len > PERF_MAP_MAX_LINE || !parse_line(s, s + len, &start, &size, &name, &name_len)) {
		pm->bad_lines++;
		return 0;
	}
	err = add_name(pm, name, name_len, &item->name);
	if (err)
		return err;
	item->start = start;
	item->end = start + size;
	pm->entries++;
	*added = true;
	return 0;
}

int perf_map__add_text(struct perf_map *pm, const char *text, size_t len, size_t *consumed)
{
	struct item *items = NULL;
	size_t nr = 0, cap = 0, pos = 0;
	int err = 0;

	while (pos < len && !pm->cut_short) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t line_len = nl ? (size_t)(nl - (text + pos)) : len - pos;
		bool added;

		if (!nl) {
			/* An unfinished line waits for its end, unless it is too long already. */
			if (pm->skip_line || line_len > PERF_MAP_MAX_LINE) {
				pm->bad_lines += !pm->skip_line;
				pm->skip_line = true;
				pos = len;
			}
			break;
		}
		if (pm->skip_line) {
			pm->skip_line = false;
			pos += line_len + 1;
			continue;
		}
		if (grow_array((void **)&items, &cap, nr + 1, sizeof(*items))) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = add_line(pm, text + pos, line_len, &items[nr], &added);
		if (err)
			goto cleanup;
		nr += added;
		pos += line_len + 1;
		if (pm->entries >= PERF_MAP_MAX_ENTRIES)
			pm->cut_short = true;
	}
	if (nr)
		err = merge(pm, items, nr);
cleanup:
	free(items);
	*consumed = pos;
	return err;
}

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
 * in /tmp. The uid is read once, while the process lives. */
static int check_owner(struct perf_map *pm, uid_t owner)
{
	if (owner == 0)
		return 0;
	if (!pm->uid_known && read_euid(pm->pid, &pm->uid) == 0)
		pm->uid_known = true;
	return pm->uid_known && owner == pm->uid ? 0 : -EPERM;
}

/* Reads the file's bytes from read_off up to end into the table. */
static int read_new(struct perf_map *pm, int fd, uint64_t end)
{
	size_t len = end - pm->read_off, got = 0, consumed;
	char *buf = malloc(len ? len : 1);
	int err;

	if (!buf)
		return -ENOMEM;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(pm->read_off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	err = perf_map__add_text(pm, buf, got, &consumed);
	pm->read_off += consumed;
	free(buf);
	return err;
}

/* Opens the map file without blocking on a FIFO or following a symlink, and keeps it only
 * if it is a regular file with a trusted owner. Returns an fd or -errno. */
static int open_map_file(struct perf_map *pm, struct stat *st)
{
	char path[64];
	int fd, err;

	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pm->pid);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, st) < 0)
		err = -errno;
	else if (!S_ISREG(st->st_mode) || st->st_nlink != 1)
		err = -EPERM; /* a second name: a hard link to a file of root's, planted in /tmp */
	else
		err = check_owner(pm, st->st_uid);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int perf_map__load(struct perf_map *pm)
{
	struct stat st;
	uint64_t end;
	int fd, err = 0;

	pm->tried = true;
	pm->checked_ns = now_ns();
	fd = open_map_file(pm, &st);
	if (fd < 0) {
		pm->refused = fd == -EPERM;
		return fd;
	}
	pm->refused = false;
	if (st.st_dev != pm->dev || st.st_ino != pm->ino || (uint64_t)st.st_size < pm->size) {
		reset_table(pm);
		pm->dev = st.st_dev;
		pm->ino = st.st_ino;
	}
	if (pm->ever_read && (uint64_t)st.st_size == pm->size)
		goto cleanup;
	pm->ever_read = true;
	pm->size = (uint64_t)st.st_size;
	end = pm->size < PERF_MAP_MAX_BYTES ? pm->size : PERF_MAP_MAX_BYTES;
	if (end > pm->read_off && pm->entries < PERF_MAP_MAX_ENTRIES)
		err = read_new(pm, fd, end);
	/* only now: a map cut short takes no more lines, and these are the first 64 MiB's */
	if (end < pm->size)
		pm->cut_short = true;
cleanup:
	close(fd);
	return err;
}

static const char *find(const struct perf_map *pm, uint64_t addr)
{
	size_t lo = 0, hi = pm->nr_segs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct segment *s = &pm->segs[mid];

		if (addr < s->start)
			hi = mid;
		else if (addr >= s->end)
			lo = mid + 1;
		else
			return pm->names + s->name;
	}
	return NULL;
}

const char *perf_map__lookup(struct perf_map *pm, uint64_t addr)
{
	const char *name;

	if (!pm)
		return NULL;
	name = find(pm, addr);
	if (name || (pm->tried && now_ns() - pm->checked_ns < PERF_MAP_RECHECK_MS * 1000000ull))
		return name;
	perf_map__load(pm);
	return find(pm, addr);
}

void perf_map__stats(const struct perf_map *pm, struct perf_map_stats *acc)
{
	acc->read += pm->ever_read;
	acc->refused += pm->refused;
	acc->cut_short += pm->cut_short;
	acc->entries += pm->entries;
	acc->bad_lines += pm->bad_lines;
}

void perf_map__free(struct perf_map *pm)
{
	if (!pm)
		return;
	free(pm->segs);
	free(pm->names);
	free(pm);
}
