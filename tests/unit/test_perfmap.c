/* Unit tests for the perf map parser (user/binary/perfmap.h): line formats, bad lines,
 * overlapping entries (the later one wins), lines split across reads of a growing file.
 * Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binary/perfmap.h"
#include "check.h"

/* No process has this pid, so a miss finds no /tmp/perf-PID.map to read. */
#define NO_PID UINT32_MAX

static struct perf_map *new_map_of(uint32_t pid)
{
	struct perf_map *pm;

	if (perf_map__new(pid, &pm) != 0)
		abort();
	return pm;
}

static struct perf_map *new_map(void)
{
	return new_map_of(NO_PID);
}

static size_t add(struct perf_map *pm, const char *text)
{
	size_t consumed = 0;

	if (perf_map__add_text(pm, text, strlen(text), &consumed) != 0)
		abort();
	return consumed;
}

static bool names(struct perf_map *pm, uint64_t addr, const char *want)
{
	const char *got = perf_map__lookup(pm, addr);

	if (!want || !got)
		return got == want;
	return strcmp(got, want) == 0;
}

static struct perf_map_stats stats_of(const struct perf_map *pm)
{
	struct perf_map_stats st = { 0 };

	perf_map__stats(pm, &st);
	return st;
}

static void test_formats(void)
{
	struct perf_map *pm = new_map();

	add(pm, "1000 10 plain\n0X2000\t0x20\tLazyCompile:*hot /app/x.js:3:10\r\n"
		"abcdefABCDEF0000 1 wide\n");
	check(names(pm, 0x1000, "plain") && names(pm, 0x100f, "plain"), "formats: range start and last byte");
	check(names(pm, 0xfff, NULL) && names(pm, 0x1010, NULL), "formats: nothing outside the range");
	check(names(pm, 0x201f, "LazyCompile:*hot /app/x.js:3:10"),
	      "formats: 0X, tabs, a name with spaces, \\r stripped");
	check(names(pm, 0xabcdefABCDEF0000ull, "wide"), "formats: 16 hex digits, either case");
	check(stats_of(pm).entries == 3 && stats_of(pm).bad_lines == 0, "formats: 3 entries, no bad lines");
	perf_map__free(pm);
}

static void test_bad_lines(void)
{
	static const char *const bad[] = {
		"\n",                          /* empty */
		"zz 10 name\n",                /* not hex */
		"5000 0 zero_size\n",          /* nothing to name */
		"5000 10\n",                   /* no name */
		"5000 10   \n",                /* blank name */
		"50001 name\n",                /* one number */
		"12345678901234567 1 long\n",  /* 17 digits */
		"ffffffffffffffff 2 wraps\n",  /* end past 2^64 */
		"5000x 10 junk\n",             /* junk after START */
		"0x 10 no_digits\n",           /* prefix only */
		" 5000 10 leading_blank\n",
	};
	size_t n = sizeof(bad) / sizeof(bad[0]);
	struct perf_map *pm = new_map();

	for (size_t i = 0; i < n; i++)
		add(pm, bad[i]);
	add(pm, "5000 10 good\n");
	check(stats_of(pm).bad_lines == n && stats_of(pm).entries == 1,
	      "bad lines: %zu skipped and counted (%" PRIu64 "), the good one kept", n,
	      stats_of(pm).bad_lines);
	check(names(pm, 0x5000, "good") && names(pm, 0x4fff, NULL), "bad lines: no entry from any");
	perf_map__free(pm);
}

static void test_overlaps(void)
{
	struct perf_map *pm = new_map();

	add(pm, "3000 100 big\n3040 10 small\n4000 10 early\n3ff0 100 late\n");
	check(names(pm, 0x3000, "big") && names(pm, 0x3045, "small") && names(pm, 0x3050, "big") &&
		      names(pm, 0x30ff, "big"),
	      "overlaps: a later small range punches into an earlier big one");
	check(names(pm, 0x4005, "late") && names(pm, 0x3ff0, "late") && names(pm, 0x40ef, "late"),
	      "overlaps: a later big range covers an earlier small one");
	add(pm, "3040 8 reused\n");
	check(names(pm, 0x3044, "reused") && names(pm, 0x3048, "small") && names(pm, 0x3039, "big"),
	      "overlaps: a later read wins over the table already built");
	add(pm, "3000 100 big\n");
	check(names(pm, 0x3044, "big") && names(pm, 0x30ff, "big"), "overlaps: the same range again, latest wins");
	perf_map__free(pm);
}

static bool bounds(struct perf_map *pm, uint64_t addr, uint64_t want_start, uint64_t want_end)
{
	uint64_t start = 0, end = 0;

	if (perf_map__bounds(pm, addr, &start, &end) != 0)
		return want_end == 0;
	return start == want_start && end == want_end;
}

/* The analysis of JIT code traces from a function's start: an entry's range, as far as a
 * later entry left it. */
static void test_bounds(void)
{
	struct perf_map *pm = new_map();

	add(pm, "3000 100 big\n3040 10 small\n5000 20 next\n5020 20 after\n");
	check(bounds(pm, 0x3045, 0x3040, 0x3050), "bounds: an entry punched into another");
	check(bounds(pm, 0x3000, 0, 0) && bounds(pm, 0x30ff, 0, 0),
	      "bounds: none for an entry a later one cut in two (its pieces' ends are not its own)");
	check(bounds(pm, 0x501f, 0x5000, 0x5020) && bounds(pm, 0x5020, 0x5020, 0x5040),
	      "bounds: entries that touch stay apart");
	check(bounds(pm, 0x4000, 0, 0), "bounds: none where no entry is");
	add(pm, "3000 100 big\n");
	check(bounds(pm, 0x3045, 0x3000, 0x3100), "bounds: the same range again joins its pieces");
	perf_map__free(pm);
}

static void test_growing_file(void)
{
	struct perf_map *pm = new_map();
	char long_line[PERF_MAP_MAX_LINE + 100];
	size_t consumed;

	consumed = add(pm, "6000 10 done\n6100 10 unfini");
	check(consumed == strlen("6000 10 done\n") && names(pm, 0x6100, NULL),
	      "growing: an unfinished last line waits (consumed %zu)", consumed);
	consumed = add(pm, "6100 10 unfinished\n");
	check(consumed == strlen("6100 10 unfinished\n") && names(pm, 0x6100, "unfinished"),
	      "growing: the line is taken once complete");
	memset(long_line, 'a', sizeof(long_line) - 1);
	long_line[sizeof(long_line) - 1] = '\0';
	consumed = add(pm, long_line);
	check(consumed == strlen(long_line) && stats_of(pm).bad_lines == 1,
	      "growing: an unfinished line longer than the limit is skipped at once, counted once");
	consumed = add(pm, "aaaa\n6200 10 after\n");
	check(names(pm, 0x6200, "after") && stats_of(pm).bad_lines == 1 && stats_of(pm).entries == 3,
	      "growing: the rest of the long line is skipped, the next line read");
	long_line[PERF_MAP_MAX_LINE + 1] = '\n';
	long_line[PERF_MAP_MAX_LINE + 2] = '\0';
	add(pm, long_line);
	check(stats_of(pm).bad_lines == 2, "growing: a complete line over the limit is a bad line");
	perf_map__free(pm);
}

/* Random overlapping entries, read in batches, against the rule itself: an address is
 * named by the last line whose range holds it. */
static void test_random_against_last_line(void)
{
	enum { LINES = 3000, SPACE = 4096, CHUNKS = 7 };
	static uint64_t starts[LINES], sizes[LINES];
	struct perf_map *pm = new_map();
	static char batch[LINES * 64];
	unsigned seed = 12345, wrong = 0;
	size_t batch_len = 0;
	char name[16];

	for (int i = 0; i < LINES; i++) {
		seed = seed * 1103515245u + 12345u;
		starts[i] = (seed >> 8) % SPACE;
		seed = seed * 1103515245u + 12345u;
		sizes[i] = 1 + (seed >> 8) % (i % 10 == 0 ? 1024 : 16);
		batch_len += snprintf(batch + batch_len, sizeof(batch) - batch_len,
				      "%" PRIx64 " %" PRIx64 " f%d\n", starts[i], sizes[i], i);
		if (i % (LINES / CHUNKS) != 0 && i != LINES - 1)
			continue;
		add(pm, batch);
		batch_len = 0;
		batch[0] = '\0';
		for (uint64_t a = 0; a < SPACE + 1100; a++) {
			int last = -1;

			for (int j = 0; j <= i; j++) {
				if (a >= starts[j] && a < starts[j] + sizes[j])
					last = j;
			}
			snprintf(name, sizeof(name), "f%d", last);
			wrong += !names(pm, a, last < 0 ? NULL : name);
		}
	}
	check(wrong == 0, "random: %u addresses named by other than their last line", wrong);
	perf_map__free(pm);
}

static void test_empty(void)
{
	struct perf_map *pm = new_map();

	check(names(pm, 0x1000, NULL), "empty: a map with no file names nothing");
	check(perf_map__lookup(NULL, 0x1000) == NULL, "empty: no map names nothing");
	perf_map__free(NULL);
	perf_map__free(pm);
}

/* A second name for the file (a hard link planted in /tmp, perhaps to a file of root's,
 * which the owner check would pass): refused. */
static void test_hard_link(void)
{
	char path[64], link_path[80];
	struct perf_map *pm;
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(link_path, sizeof(link_path), "%s.second-name", path);
	f = fopen(path, "w");
	if (!f) {
		check(false, "hard link: cannot write %s", path);
		return;
	}
	fputs("1000 10 linked\n", f);
	fclose(f);
	pm = new_map_of((uint32_t)getpid());
	err = perf_map__load(pm);
	check(err == 0 && names(pm, 0x1000, "linked"), "hard link: the file alone is read (%d)", err);
	perf_map__free(pm);
	if (link(path, link_path) == 0) {
		pm = new_map_of((uint32_t)getpid());
		err = perf_map__load(pm);
		check(err == -EPERM && names(pm, 0x1000, NULL),
		      "hard link: a file with a second name is refused (%d)", err);
		perf_map__free(pm);
		unlink(link_path);
	} else {
		check(false, "hard link: cannot link %s", path);
	}
	unlink(path);
}

/* A symlink at the name (to a file of root's, say) is refused; a file past
 * PERF_MAP_MAX_BYTES is read up to there and counted as cut short. */
static void test_symlink_and_size(void)
{
	char path[64], target[80];
	struct perf_map_stats st = { 0 };
	struct perf_map *pm;
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(target, sizeof(target), "%s.target", path);
	f = fopen(target, "w");
	if (!f) {
		check(false, "symlink: cannot write %s", target);
		return;
	}
	fputs("1000 10 first\n", f);
	/* sparse: the rest reads as zeros, one overlong line */
	check(ftruncate(fileno(f), PERF_MAP_MAX_BYTES + 4096) == 0, "size: file made");
	fclose(f);
	unlink(path);
	if (symlink(target, path) == 0) {
		pm = new_map_of((uint32_t)getpid());
		err = perf_map__load(pm);
		check(err == -EPERM, "symlink: a symlink at the name is refused (%d)", err);
		perf_map__free(pm);
		unlink(path);
	}
	rename(target, path);
	pm = new_map_of((uint32_t)getpid());
	err = perf_map__load(pm);
	perf_map__stats(pm, &st);
	check(err == 0 && names(pm, 0x1000, "first") && st.cut_short == 1,
	      "size: a file past %u bytes is read up to there and cut short (%d, %" PRIu64 ")",
	      PERF_MAP_MAX_BYTES, err, st.cut_short);
	perf_map__free(pm);
	unlink(path);
}

int main(void)
{
	test_formats();
	test_bad_lines();
	test_overlaps();
	test_bounds();
	test_growing_file();
	test_random_against_last_line();
	test_empty();
	test_hard_link();
	test_symlink_and_size();
	return failures ? 1 : 0;
}
