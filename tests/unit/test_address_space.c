/* Unit tests for a process's mappings as they change (user/proc/address_space.h): a new
 * mapping replaces what it overlaps on the left, on the right, inside (splitting it in two)
 * and across several; find is start-inclusive and end-exclusive; a clone is independent of
 * its original; random adds agree with a page-by-page model. Prints one "ok - NAME" /
 * "not ok - NAME" line per check. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/address_space.h"
#include "check.h"

static struct address_space *new_space(void)
{
	struct address_space *as = address_space__new();

	if (!as)
		abort();
	return as;
}

static void add(struct address_space *as, uint64_t start, uint64_t end, uint64_t offset,
		const char *path)
{
	struct mapping m = { .start = start, .end = end, .file_offset = offset, .inode = start };

	if (address_space__add(as, &m, path) != 0)
		abort();
}

/* Every mapping in [lo, hi), probed every 0x100 bytes, as "start-end path+offset" joined by
 * spaces; "!" marks a count that disagrees with the mappings found. */
static const char *layout(const struct address_space *as, uint64_t lo, uint64_t hi)
{
	static char buf[1024];
	const struct mapping *prev = NULL;
	size_t len = 0, found = 0;

	buf[0] = '\0';
	for (uint64_t a = lo; a < hi; a += 0x100) {
		const struct mapping *m = address_space__find(as, a);

		if (!m || m == prev)
			continue;
		len += snprintf(buf + len, sizeof(buf) - len, "%s%" PRIx64 "-%" PRIx64 " %s+%" PRIx64,
				found ? " " : "", m->start, m->end, m->path, m->file_offset);
		prev = m;
		found++;
	}
	if (found != address_space__count(as))
		snprintf(buf + len, sizeof(buf) - len, " !count %zu", address_space__count(as));
	return buf;
}

static bool has_layout(const struct address_space *as, const char *want)
{
	const char *got = layout(as, 0, 0x10000);

	if (strcmp(got, want) != 0)
		printf("# want: %s\n#  got: %s\n", want, got);
	return strcmp(got, want) == 0;
}

static void test_empty(void)
{
	struct address_space *as = new_space();

	check(address_space__find(as, 0) == NULL && address_space__find(as, UINT64_MAX) == NULL,
	      "empty: finds nothing");
	check(address_space__count(as) == 0, "empty: count 0");
	check(address_space__find(NULL, 0x1000) == NULL && address_space__count(NULL) == 0,
	      "empty: NULL finds nothing and counts 0");
	add(as, 0x2000, 0x2000, 0, "nothing");
	add(as, 0x3000, 0x2000, 0, "backwards");
	check(address_space__count(as) == 0, "empty: empty and reversed ranges are not added");
	address_space__free(as);
	address_space__free(NULL);
}

static void test_find_boundaries(void)
{
	struct address_space *as = new_space();
	const struct mapping *m;

	/* Out of order, and two that touch. */
	add(as, 0x5000, 0x6000, 0, "c");
	add(as, 0x1000, 0x2000, 0, "a");
	add(as, 0x2000, 0x3000, 0, "b");
	check(has_layout(as, "1000-2000 a+0 2000-3000 b+0 5000-6000 c+0"),
	      "find: sorted, touching mappings left whole");
	m = address_space__find(as, 0x1000);
	check(m && strcmp(m->path, "a") == 0, "find: the start is inside");
	m = address_space__find(as, 0x1fff);
	check(m && strcmp(m->path, "a") == 0, "find: the last byte is inside");
	m = address_space__find(as, 0x2000);
	check(m && strcmp(m->path, "b") == 0, "find: the end is the next mapping's start");
	check(address_space__find(as, 0xfff) == NULL, "find: the byte before the start is outside");
	check(address_space__find(as, 0x3000) == NULL, "find: the end is outside");
	check(address_space__find(as, 0x4fff) == NULL && address_space__find(as, 0x6000) == NULL,
	      "find: nothing in a gap or past the last mapping");
	address_space__free(as);
}

static void test_overlaps(void)
{
	struct address_space *as = new_space();

	add(as, 0x2000, 0x4000, 0x10000, "old");
	add(as, 0x1000, 0x3000, 0, "new");
	check(has_layout(as, "1000-3000 new+0 3000-4000 old+11000"),
	      "overlap on the left: the old mapping keeps its right part, offset moved on");
	address_space__free(as);

	as = new_space();
	add(as, 0x2000, 0x4000, 0x10000, "old");
	add(as, 0x3000, 0x5000, 0, "new");
	check(has_layout(as, "2000-3000 old+10000 3000-5000 new+0"),
	      "overlap on the right: the old mapping keeps its left part");
	address_space__free(as);

	as = new_space();
	add(as, 0x1000, 0x5000, 0x10000, "old");
	add(as, 0x2000, 0x3000, 0, "new");
	check(has_layout(as, "1000-2000 old+10000 2000-3000 new+0 3000-5000 old+12000"),
	      "inside: the old mapping is split in two around the new one");
	add(as, 0x3000, 0x4000, 0, "second");
	check(has_layout(as, "1000-2000 old+10000 2000-3000 new+0 3000-4000 second+0 4000-5000 old+13000"),
	      "inside: the split's right part is a mapping of its own");
	address_space__free(as);

	as = new_space();
	add(as, 0x1000, 0x2000, 0, "a");
	add(as, 0x2000, 0x3000, 0x1000, "b");
	add(as, 0x3000, 0x4000, 0x2000, "c");
	add(as, 0x4000, 0x5000, 0x3000, "d");
	add(as, 0x6000, 0x7000, 0, "far");
	add(as, 0x1800, 0x4800, 0, "new");
	check(has_layout(as, "1000-1800 a+0 1800-4800 new+0 4800-5000 d+3800 6000-7000 far+0"),
	      "across several: the first and last trimmed, those inside gone");
	add(as, 0x1000, 0x8000, 0, "all");
	check(has_layout(as, "1000-8000 all+0"), "covering: every mapping inside is gone");
	add(as, 0x1000, 0x8000, 0x5000, "same");
	check(has_layout(as, "1000-8000 same+5000"), "the same range: replaced");
	address_space__free(as);
}

/* A mapping whose range changed, or that is new, has no module yet; the others keep theirs. */
static void test_resolution_reset(void)
{
	struct address_space *as = new_space();
	struct mapping m = { .start = 0x1000, .end = 0x2000, .module = (void *)1, .bias = 7 };
	struct mapping *found;
	int marker;

	if (address_space__add(as, &m, "a") != 0)
		abort();
	found = address_space__find(as, 0x1000);
	check(found && found->module == NULL && found->bias == 0, "reset: an added mapping has no module");
	add(as, 0x3000, 0x5000, 0, "b");
	add(as, 0x6000, 0x7000, 0, "c");
	for (uint64_t a = 0x1000; a < 0x7000; a += 0x1000) {
		found = address_space__find(as, a);
		if (found) {
			found->module = &marker;
			found->bias = 5;
			found->bias_err = -2;
		}
	}
	add(as, 0x4000, 0x4800, 0, "inside b");
	found = address_space__find(as, 0x3000);
	check(found && !found->module && !found->bias && !found->bias_err, "reset: a trimmed mapping's module is forgotten");
	found = address_space__find(as, 0x4800);
	check(found && !found->module && !found->bias && !found->bias_err, "reset: a split's right part has no module");
	found = address_space__find(as, 0x1000);
	check(found && found->module == &marker && found->bias == 5, "reset: a mapping left alone keeps its module");
	found = address_space__find(as, 0x6000);
	check(found && found->module == &marker, "reset: one after the change keeps its module too");
	address_space__free(as);
}

static void test_clone(void)
{
	struct address_space *parent = new_space(), *child;

	add(parent, 0x1000, 0x3000, 0, "lib");
	add(parent, 0x4000, 0x5000, 0, "exe");
	child = address_space__clone(parent);
	check(child && has_layout(child, "1000-3000 lib+0 4000-5000 exe+0"), "clone: the same mappings");
	add(parent, 0x2000, 0x2800, 0, "parent only");
	check(has_layout(child, "1000-3000 lib+0 4000-5000 exe+0"), "clone: the parent's change is not the child's");
	add(child, 0x4000, 0x5000, 0, "child only");
	check(has_layout(parent, "1000-2000 lib+0 2000-2800 parent only+0 2800-3000 lib+1800 4000-5000 exe+0"),
	      "clone: the child's change is not the parent's");
	address_space__free(parent);
	check(has_layout(child, "1000-3000 lib+0 4000-5000 child only+0"), "clone: outlives the parent");
	address_space__free(child);

	parent = new_space();
	child = address_space__clone(parent);
	check(child && address_space__count(child) == 0, "clone: of an empty space is empty");
	address_space__free(child);
	address_space__free(parent);
}

static void test_add_maps(void)
{
	static const char text[] =
		"55d0c0000000-55d0c0001000 r--p 00000000 08:01 100 /usr/bin/prog\n"
		"55d0c0001000-55d0c0003000 r-xp 00001000 08:01 100 /usr/bin/prog\n"
		"7f0000000000-7f0000010000 rw-p 00000000 00:00 0\n"
		"7f0000010000-7f0000020000 r-xp 00004000 08:01 200 /usr/lib/libx.so\n"
		"7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0 [vdso]\n";
	struct process_maps *maps;
	struct address_space *as = new_space();
	const struct mapping *m;

	if (process_maps__parse(text, sizeof(text) - 1, &maps) != 0)
		abort();
	check(address_space__add_maps(as, maps) == 0 && address_space__count(as) == 3,
	      "maps file: its 3 executable mappings");
	m = address_space__find(as, 0x7f0000010000);
	check(m && strcmp(m->path, "/usr/lib/libx.so") == 0 && m->file_offset == 0x4000 && m->inode == 200,
	      "maps file: path, offset and inode kept");
	check(address_space__find(as, 0x55d0c0000000) == NULL && address_space__find(as, 0x7f0000000000) == NULL,
	      "maps file: no non-executable mapping");
	m = address_space__find(as, 0x7ffc00001fff);
	check(m && strcmp(m->path, "[vdso]") == 0, "maps file: the vDSO by its name");
	process_maps__free(maps);
	address_space__free(as);
}

/* Pages of a 64-page space: which add last covered each and at what file offset. */
#define PAGES 64
#define PAGE 0x1000

static void test_random_against_model(void)
{
	struct address_space *as = new_space();
	int owner[PAGES];
	uint64_t offset[PAGES];
	unsigned seed = 12345, wrong = 0, splits = 0;

	for (int p = 0; p < PAGES; p++)
		owner[p] = -1;
	for (int i = 0; i < 2000 && !wrong; i++) {
		int first, last;
		uint64_t off;
		char path[16];
		size_t before = address_space__count(as);

		seed = seed * 1103515245u + 12345u;
		first = (seed >> 8) % PAGES;
		seed = seed * 1103515245u + 12345u;
		last = first + (int)((seed >> 8) % (i % 3 ? 4 : 24));
		if (last >= PAGES)
			last = PAGES - 1;
		off = (uint64_t)i * 0x100000;
		snprintf(path, sizeof(path), "m%d", i);
		add(as, (uint64_t)first * PAGE, (uint64_t)(last + 1) * PAGE, off, path);
		for (int p = first; p <= last; p++) {
			owner[p] = i;
			offset[p] = off + (uint64_t)(p - first) * PAGE;
		}
		splits += address_space__count(as) > before + 1;
		for (int p = 0; p < PAGES; p++) {
			uint64_t a = (uint64_t)p * PAGE + (p % 7) * 0x100;
			const struct mapping *m = address_space__find(as, a);

			if (owner[p] < 0) {
				wrong += m != NULL;
				continue;
			}
			snprintf(path, sizeof(path), "m%d", owner[p]);
			if (!m || strcmp(m->path, path) != 0 || m->start > a || m->end <= a ||
			    m->file_offset + (a - m->start) != offset[p] + (p % 7) * 0x100) {
				printf("# after add %d: page %d wants %s+%" PRIx64 "\n", i, p, path, offset[p]);
				wrong++;
			}
		}
	}
	check(wrong == 0 && splits > 0, "random: 2000 adds agree with a page model (%u splits)", splits);
	address_space__free(as);
}

int main(void)
{
	test_empty();
	test_find_boundaries();
	test_overlaps();
	test_resolution_reset();
	test_clone();
	test_add_maps();
	test_random_against_model();
	return failures ? 1 : 0;
}
