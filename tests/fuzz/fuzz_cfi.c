/* The CFI compiler over whole ELF images: .eh_frame and .debug_frame, found through the
 * section headers or through PT_GNU_EH_FRAME, then every row decoded and looked up; and the
 * same image opened lazily from a file (its .eh_frame_hdr table as the index), looked up at
 * the whole table's pcs and at pcs taken from the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfi/unwind_table.h"

static void exercise(const struct unwind_table *t)
{
	struct unwind_rules rules;
	const struct unwind_row *rows;
	uint64_t start;
	size_t n;

	rows = unwind_table__rows(t, &n);
	for (size_t i = 0; i < n && i < 4096; i++) {
		unwind_table__decode(t, &rows[i], &rules);
		if (unwind_table__find(t, rows[i].pc))
			unwind_table__function_start(t, rows[i].pc, &start);
		unwind_table__find(t, rows[i].pc - 1);
	}
}

/* Lookups in the lazily opened image: rules, function starts and gaps, at the whole
 * table's pcs (when it compiled) and at every 8-byte word of the input read as a pc. */
static void exercise_lazy(const uint8_t *data, size_t size, const struct unwind_table *whole)
{
	struct unwind_row_cache *cache = NULL;
	struct unwind_table *t = NULL;
	struct unwind_rules rules;
	const struct unwind_row *rows;
	uint64_t start, lo, hi;
	char path[64], err[256];
	size_t n;
	int fd = memfd_create("fuzz_cfi", MFD_CLOEXEC);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		goto cleanup;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* a small cache: evictions while the lookups run */
	if (unwind_row_cache__new(4096, &cache) || unwind_table__open(path, cache, &t, err, sizeof(err)))
		goto cleanup;
	rows = unwind_table__rows(whole, &n);
	for (size_t i = 0; i < n && i < 4096; i++) {
		unwind_table__rules_at(t, rows[i].pc, &rules);
		unwind_table__function_start(t, rows[i].pc, &start);
		unwind_table__gap(t, rows[i].pc - 1, &lo, &hi);
	}
	for (size_t i = 0; i + 8 <= size && i < 8 * 4096; i += 8) {
		uint64_t pc;

		memcpy(&pc, data + i, sizeof(pc));
		unwind_table__rules_at(t, pc, &rules);
		unwind_table__gap(t, pc, &lo, &hi);
	}
cleanup:
	unwind_table__free(t);
	unwind_row_cache__free(cache);
	if (fd >= 0)
		close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_table *whole = NULL;
	static const unsigned sources[] = { UNWIND_SRC_ALL, UNWIND_SRC_EH_FRAME | UNWIND_SRC_VIA_HDR };
	struct unwind_table *t;
	char err[256];

	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
		if (unwind_table__from_image(data, size, "fuzz", sources[i], &t, err, sizeof(err)))
			continue;
		exercise(t);
		if (sources[i] == UNWIND_SRC_ALL)
			whole = t;
		else
			unwind_table__free(t);
	}
	if (size > 0)
		exercise_lazy(data, size, whole);
	unwind_table__free(whole);
	return 0;
}
