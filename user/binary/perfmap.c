#include "binary/perfmap.h"
#include "binary/jit_file.h"
#include "util/grow.h"
#include "util/range_map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct perf_map {
	uint32_t pid;
	struct jit_file_owner owner; /* whose map files are trusted */
	struct range_map table;      /* each range's value: its name's offset in names */
	char *names; /* NUL-terminated names, back to back, each after its entry's range */
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
	bool fixed; /* no file: filled by perf_map__add_text alone */
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
	(*out)->owner.pid = pid;
	return 0;
}

int perf_map__new_fixed(struct perf_map **out)
{
	int err = perf_map__new(0, out);

	if (!err)
		(*out)->fixed = true;
	return err;
}

static perf_map_read_hook_fn read_hook;
static void *read_hook_ctx;

void perf_map__set_read_hook(perf_map_read_hook_fn fn, void *ctx)
{
	read_hook = fn;
	read_hook_ctx = ctx;
}

/* The file was rewritten (truncated or replaced): its old lines no longer apply. */
static void reset_table(struct perf_map *pm)
{
	range_map__release(&pm->table);
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

/* An entry's name, after its range as the line gave it (ENTRY_RANGE_BYTES: start and end,
 * what perf_map__bounds compares a segment run with); *off is the name's offset. */
#define ENTRY_RANGE_BYTES 16

static int add_name(struct perf_map *pm, const char *name, size_t len, uint64_t start,
		    uint64_t end, uint32_t *off)
{
	char *at;

	if (grow_array((void **)&pm->names, &pm->names_cap,
		       pm->names_len + ENTRY_RANGE_BYTES + len + 1, 1))
		return -ENOMEM;
	at = pm->names + pm->names_len;
	memcpy(at, &start, 8);
	memcpy(at + 8, &end, 8);
	memcpy(at + ENTRY_RANGE_BYTES, name, len);
	at[ENTRY_RANGE_BYTES + len] = '\0';
	*off = (uint32_t)(pm->names_len + ENTRY_RANGE_BYTES);
	pm->names_len += ENTRY_RANGE_BYTES + len + 1;
	return 0;
}

/* One complete line (without its newline): an item, or a bad line counted. */
static int add_line(struct perf_map *pm, const char *s, size_t len, struct range_map_seg *item,
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
	err = add_name(pm, name, name_len, start, start + size, &item->value);
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
	struct range_map_seg *items = NULL;
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
		err = range_map__add(&pm->table, items, nr);
cleanup:
	free(items);
	*consumed = pos;
	return err;
}

/* Reads the file's bytes from read_off up to end into the table. */
static int read_new(struct perf_map *pm, int fd, uint64_t end)
{
	size_t len = end - pm->read_off, got, consumed;
	char *buf = malloc(len ? len : 1);
	int err;

	if (!buf)
		return -ENOMEM;
	got = jit_file__pread(fd, buf, len, pm->read_off);
	err = perf_map__add_text(pm, buf, got, &consumed);
	pm->read_off += consumed;
	if (read_hook && consumed)
		read_hook(read_hook_ctx, pm->pid, buf, consumed);
	free(buf);
	return err;
}

/* The map file, if jit_file.h's rules let it be used. Returns an fd or -errno. */
static int open_map_file(struct perf_map *pm, struct stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "/tmp/perf-%u.map", jit_file__ns_pid(&pm->owner));
	return jit_file__open(path, &pm->owner, st);
}

int perf_map__load(struct perf_map *pm)
{
	struct stat st;
	uint64_t end;
	int fd, err = 0;

	pm->tried = true;
	pm->checked_ns = now_ns();
	if (pm->fixed)
		return -ENOENT;
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
	uint32_t name;

	return range_map__find(&pm->table, addr, &name) ? pm->names + name : NULL;
}

const char *perf_map__lookup(struct perf_map *pm, uint64_t addr)
{
	const char *name;

	if (!pm)
		return NULL;
	name = find(pm, addr);
	if (name || pm->fixed || (pm->tried && now_ns() - pm->checked_ns < PERF_MAP_RECHECK_MS * 1000000ull))
		return name;
	perf_map__load(pm);
	return find(pm, addr);
}

int perf_map__bounds(struct perf_map *pm, uint64_t addr, uint64_t *start, uint64_t *end)
{
	uint64_t entry_start, entry_end;
	uint32_t name;

	if (!perf_map__lookup(pm, addr) || !range_map__find(&pm->table, addr, &name) ||
	    !range_map__extent(&pm->table, addr, start, end))
		return -ENOENT;
	/* only an entry no later one cut into: a piece's ends are not the function's */
	memcpy(&entry_start, pm->names + name - ENTRY_RANGE_BYTES, 8);
	memcpy(&entry_end, pm->names + name - ENTRY_RANGE_BYTES + 8, 8);
	return *start == entry_start && *end == entry_end ? 0 : -ENOENT;
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
	range_map__release(&pm->table);
	free(pm->names);
	free(pm);
}
