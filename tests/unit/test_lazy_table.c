/* Unit tests for lazily opened unwind tables (unwind_table__open): on the real binaries this
 * test runs from (itself, and the shared libraries it loaded), every lookup must give what
 * the whole-table compile of the same file gives, with a row cache large enough to keep
 * every function and with one so small that it evicts all the time; a file truncated and
 * rewritten under an open table must never crash a lookup nor give rules of other bytes.
 * HPROF_LAZY_FILES (colon-separated paths) adds files to compare (bench: large libraries). */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfi/unwind_table.h"
#include "check.h"
#include "lazy_compare.h"

#define MAX_FILES 32

static char *files[MAX_FILES];
static size_t nr_files;

static void add_file(const char *path)
{
	struct stat st;

	if (nr_files == MAX_FILES || !path[0] || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	for (size_t i = 0; i < nr_files; i++) {
		if (strcmp(files[i], path) == 0)
			return;
	}
	files[nr_files++] = strdup(path);
}

static int add_loaded(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	add_file(info->dlpi_name);
	return 0;
}

/* The whole table and lazy lookups agree on path, with a cache of cache_bytes. */
static void compare_file(const char *path, size_t cache_bytes)
{
	struct unwind_table *whole = NULL, *lazy = NULL;
	struct unwind_row_cache *cache = NULL;
	struct unwind_row_cache_stats st;
	char err[256] = "", why[256] = "";
	size_t pcs = 0;
	int ew, el;

	ew = unwind_table__from_file(path, UNWIND_SRC_ALL, &whole, err, sizeof(err));
	if (unwind_row_cache__new(cache_bytes, &cache) != 0)
		abort();
	el = unwind_table__open(path, cache, &lazy, err, sizeof(err));
	if (ew == 0 && el == 0)
		pcs = lazy_compare(whole, lazy, why, sizeof(why));
	unwind_row_cache__stats(cache, &st);
	if (ew == -ENOENT && el == -ENOENT) {
		printf("# %s: no CFI\n", path);
	} else {
		check(ew == 0 && el == 0 && pcs > 0 &&
		      (cache_bytes > (1u << 20) || st.evictions > 0 || st.compiled < 100),
		      "%s, cache %zu KiB: %zu pcs look up the same (compiled %llu functions, evicted %llu)%s%s",
		      path, cache_bytes >> 10, pcs, (unsigned long long)st.compiled,
		      (unsigned long long)st.evictions, why[0] || err[0] ? ": " : "", why[0] ? why : err);
	}
	unwind_table__free(whole);
	unwind_table__free(lazy);
	unwind_row_cache__free(cache);
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n = 0;

	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return in >= 0 && out >= 0 && n == 0 ? 0 : -1;
}

enum change { TOUCHED, REWRITTEN, TRUNCATED };

/* Writes the file's first page again as it was (its bytes unchanged, but nothing says so
 * short of reading them all), rewrites it all with other bytes, or truncates it to a page. */
static int change_file(int fd, enum change how)
{
	char junk[4096];
	struct stat st;

	if (how == TOUCHED)
		return pread(fd, junk, sizeof(junk), 0) == sizeof(junk) &&
		       pwrite(fd, junk, sizeof(junk), 0) == sizeof(junk) ? 0 : -1;
	if (how == TRUNCATED)
		return ftruncate(fd, 4096);
	if (fstat(fd, &st) != 0)
		return -1;
	memset(junk, 0x55, sizeof(junk));
	for (off_t off = 0; off < st.st_size; off += (off_t)sizeof(junk)) {
		size_t n = st.st_size - off < (off_t)sizeof(junk) ? (size_t)(st.st_size - off) : sizeof(junk);

		if (pwrite(fd, junk, n, off) != (ssize_t)n)
			return -1;
	}
	return 0;
}

/* A copy of this test's binary changed under an open table after half its functions were
 * compiled: lookups go on without a crash (pages past a truncated end read as zeros) and
 * give either nothing or the rules the original file gave. */
static void test_changed_file(enum change how)
{
	static const char *const what[] = { "written to", "rewritten in place", "truncated" };
	char path[] = "/tmp/hprof-test-lazy-XXXXXX", err[256] = "";
	struct timespec long_ago[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	struct unwind_table *whole = NULL, *lazy = NULL;
	struct unwind_row_cache *cache = NULL;
	struct unwind_row_cache_stats st;
	const struct unwind_row *rows;
	size_t n, wrong = 0, found_after = 0, found_before = 0;
	int fd = mkstemp(path);

	/* a time the change surely moves: the rewrite may come within the clock's tick */
	if (fd < 0 || copy_file("/proc/self/exe", path) != 0 || futimens(fd, long_ago) != 0 ||
	    unwind_table__from_file(path, UNWIND_SRC_ALL, &whole, err, sizeof(err)) != 0 ||
	    unwind_row_cache__new(1 << 20, &cache) != 0 ||
	    unwind_table__open(path, cache, &lazy, err, sizeof(err)) != 0) {
		check(false, "file %s: set-up failed: %s", what[how], err);
		goto cleanup;
	}
	rows = unwind_table__rows(whole, &n);
	for (size_t i = 0; i < n / 2; i++) {
		struct unwind_rules r;

		found_before += unwind_table__rules_at(lazy, rows[i].pc, &r);
	}
	if (change_file(fd, how) != 0)
		check(false, "file %s: %s", what[how], strerror(errno));
	for (size_t i = 0; i < n; i++) {
		struct unwind_rules a, b;
		uint64_t lo, hi, start;

		unwind_table__gap(lazy, rows[i].pc, &lo, &hi);
		unwind_table__function_start(lazy, rows[i].pc, &start);
		if (!unwind_table__rules_at(lazy, rows[i].pc, &b))
			continue;
		found_after++;
		if (!unwind_table__rules_at(whole, rows[i].pc, &a) || memcmp(&a, &b, sizeof(a)) != 0)
			wrong++;
	}
	unwind_row_cache__stats(cache, &st);
	check(found_before > 100 && wrong == 0 && found_after < n &&
	      (how != TOUCHED || st.changed_files == 1),
	      "file %s under its table: %zu of %zu rows found before, %zu of %zu after, %zu with "
	      "other rules; %llu change noticed", what[how], found_before, n / 2, found_after, n,
	      wrong, (unsigned long long)st.changed_files);
cleanup:
	unwind_table__free(whole);
	unwind_table__free(lazy);
	unwind_row_cache__free(cache);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
}

int main(void)
{
	const char *extra = getenv("HPROF_LAZY_FILES");

	add_file("/proc/self/exe");
	dl_iterate_phdr(add_loaded, NULL);
	if (extra) {
		char *list = strdup(extra), *save = NULL;

		for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save))
			add_file(p);
		free(list);
	}
	check(nr_files >= 3, "%zu binaries to compare (this test and its libraries)", nr_files);
	for (size_t i = 0; i < nr_files; i++) {
		compare_file(files[i], 64u << 20);
		compare_file(files[i], 16u << 10);
	}
	test_changed_file(TOUCHED);
	test_changed_file(REWRITTEN);
	test_changed_file(TRUNCATED);
	return failures ? 1 : 0;
}
