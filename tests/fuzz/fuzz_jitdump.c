/* The jitdump reader: the file arrives in pieces, as a growing file is read (the first byte
 * picks the piece size), then every code load's range is looked up and its unwinding info,
 * if any, compiled into rows, which are looked up in turn. */
#include <stdint.h>

#include "binary/jitdump.h"

/* The most code loads whose unwinding info one input compiles: each compile is cheap, but
 * a file of thousands would slow the fuzzer down for nothing. */
#define MAX_COMPILES 64

static void exercise_table(const struct unwind_table *t, uint64_t start, uint64_t size)
{
	struct unwind_rules rules;
	const struct unwind_row *row;
	uint64_t fn;

	for (uint64_t off = 0; off < size && off < 64; off++) {
		row = unwind_table__find(t, start + off);
		if (row) {
			unwind_table__decode(t, row, &rules);
			unwind_table__function_start(t, start + off, &fn);
		}
	}
}

static volatile uint8_t sink;

/* Every code load: its ends and the bytes around them looked up, its blobs touched, its
 * unwinding info compiled. */
static void exercise(struct jitdump *jd)
{
	const struct unwind_table *t;
	struct jitdump_code c, found;
	char err[128];

	for (size_t i = 0; i < jitdump__nr_codes(jd); i++) {
		if (jitdump__code_at(jd, i, &c) != 0)
			break;
		jitdump__find(jd, c.start - 1, &found);
		jitdump__find(jd, c.start + c.size, &found);
		if (jitdump__find(jd, c.start + c.size - 1, &found) != 0)
			continue;
		/* the blobs' ends: ASan checks they lie inside what the table holds */
		if (found.eh_frame)
			sink = found.eh_frame[0] ^ found.eh_frame[found.eh_frame_size - 1];
		if (found.eh_frame_hdr)
			sink = found.eh_frame_hdr[0] ^ found.eh_frame_hdr[found.eh_frame_hdr_size - 1];
		if (i < MAX_COMPILES && found.has_unwind &&
		    jitdump__unwind_table(jd, c.start + c.size - 1, &t, err, sizeof(err)) == 0)
			exercise_table(t, found.start, found.size);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *bytes = data + 1;
	size_t len, step, pos = 0, consumed;
	struct jitdump_stats st = { 0 };
	struct jitdump *jd;

	if (size < 1 || jitdump__new(1, "/nonexistent/jit-1.dump", &jd))
		return 0;
	len = size - 1;
	step = data[0] ? data[0] : len + 1;
	/* unconsumed bytes (an unfinished record) come again with the next piece */
	while (pos < len) {
		size_t end = pos + step < len ? pos + step : len;

		if (jitdump__add_bytes(jd, bytes + pos, end - pos, &consumed))
			break;
		pos += consumed;
		if (end == len && consumed == 0)
			break;
		if (consumed == 0)
			step *= 2;
	}
	exercise(jd);
	jitdump__stats(jd, &st);
	jitdump__free(jd);
	return 0;
}
