/* CPython line tables (user/python/lines.h): every instruction of a small program's code
 * objects, as each version 3.8-3.13 compiled it, gets the line CPython itself gives
 * (tests/fixtures/python/lines-3.X.txt, written by gen_lines.py from co_lines() or
 * dis.findlinestarts); then tables CPython never writes are refused, never read past. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/lines.h"
#include "fixture.h"

#define MAX_TABLE 4096
#define MAX_LINES 4096

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;

	if (!strcmp(s, "-"))
		return 0;
	for (; s[0] && s[1] && n < cap; s += 2) {
		unsigned v;

		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
	}
	return n;
}

/* Checks one version's file (3.12 on inline comprehensions: a code object fewer). */
static void check_version(const char *minor)
{
	char name[64], *text, *line, *save;
	static uint8_t table[MAX_TABLE];
	static int expect[MAX_LINES];
	unsigned version = 0, codes = 0, offsets = 0, wrong = 0;
	size_t len;

	snprintf(name, sizeof(name), "python/lines-3.%s.txt", minor);
	text = (char *)fixture_read(name, &len);
	text = realloc(text, len + 1);
	text[len] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char code_name[256], hex[2 * MAX_TABLE + 1];
		int first, units, n = 0, pos;
		size_t table_len;
		char *next, *lines;

		if (sscanf(line, "version %x", &version) == 1 || line[0] == '#')
			continue;
		if (sscanf(line, "code %255s %d %d %8192s", code_name, &first, &units, hex) != 4)
			continue;
		table_len = unhex(hex, table, sizeof(table));
		lines = strtok_r(NULL, "\n", &save);
		if (!lines || strncmp(lines, "lines ", 6)) {
			check(false, "lines 3.%s: %s has its lines", minor, code_name);
			continue;
		}
		for (next = lines + 6; n < MAX_LINES && sscanf(next, "%d%n", &expect[n], &pos) == 1;
		     next += pos)
			n++;
		codes++;
		/* expect[0] is offset -1; then bytes (even ones) before 3.10, units from 3.10 */
		for (int i = 0; i < n; i++) {
			int32_t off = i == 0 ? -1 : version < 0x030a ? (i - 1) * 2 : i - 1;
			int got = -2, rc;

			rc = python_lines__line(version, table, table_len, first, off, &got);
			offsets++;
			if (rc || got != expect[i]) {
				if (wrong++ < 5)
					printf("# 3.%s %s offset %d: got %d (rc %d), CPython says %d\n",
					       minor, code_name, off, got, rc, expect[i]);
			}
		}
	}
	check(version == (0x0300u | (unsigned)atoi(minor)) && codes >= 8 && offsets > 100 && !wrong,
	      "lines 3.%s: %u code objects, %u offsets, %u lines unlike CPython's", minor, codes,
	      offsets, wrong);
	free(text);
}

static int line_of(uint32_t version, const uint8_t *t, size_t len, int32_t off, int *line)
{
	*line = -2;
	return python_lines__line(version, t, len, 10, off, line);
}

static void check_hostile(void)
{
	int line, rc;
	/* 3.11: a long entry (code 14) whose line delta varint never ends */
	static const uint8_t endless[] = {0xf0, 0x41, 0x41, 0x41};
	/* a varint past 32 bits */
	static const uint8_t wide[] = {0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f};
	/* a first byte without bit 7 */
	static const uint8_t unmarked[] = {0x08, 0x00};
	/* line deltas adding up past INT_MAX: 13-coded entries of +2^29 each */
	uint8_t huge[64];
	/* 3.10: one range of 200 bytes on line 10 + 3, then -128 (no line) */
	static const uint8_t t310[] = {200, 3, 10, 0x80};
	static const uint8_t t310_odd[] = {200, 3, 10};
	/* 3.8: lnotab, line deltas signed */
	static const uint8_t t38[] = {0, 1, 6, 0xff, 4, 3};

	rc = line_of(0x030b, endless, sizeof(endless), 0, &line);
	check(rc == -EINVAL, "lines hostile: a varint running off the table's end is refused (%d)", rc);
	rc = line_of(0x030c, wide, sizeof(wide), 0, &line);
	check(rc == -EINVAL, "lines hostile: a varint wider than 32 bits is refused (%d)", rc);
	rc = line_of(0x030d, unmarked, sizeof(unmarked), 0, &line);
	check(rc == -EINVAL, "lines hostile: an entry without its first-byte mark is refused (%d)", rc);
	for (size_t i = 0; i + 6 <= sizeof(huge); i += 6) {
		/* code 13 (no columns), 1 unit; the line delta a 5-chunk varint */
		huge[i] = 0x80 | 13 << 3;
		huge[i + 1] = 0x40;
		huge[i + 2] = 0x40;
		huge[i + 3] = 0x40;
		huge[i + 4] = 0x40;
		huge[i + 5] = 0x03; /* v = 3 << 24 | 0: line += 3 << 23 */
	}
	rc = line_of(0x030b, huge, 60, 9, &line);
	check(rc == 0 && line == 10 + 10 * (3 << 23),
	      "lines: large line deltas add up (%d, line %d)", rc, line);
	for (size_t i = 0; i + 6 <= sizeof(huge); i += 6)
		huge[i + 5] = 0x3f; /* line += 63 << 23 each: past INT_MAX after 5 */
	rc = line_of(0x030b, huge, 60, 9, &line);
	check(rc == -EINVAL,
	      "lines hostile: line deltas past INT_MAX do not wrap (%d, line %d)", rc, line);
	rc = line_of(0x030b, NULL, 0, 0, &line);
	check(rc == 0 && line == -1, "lines: an empty table gives no line (%d, %d)", rc, line);
	rc = line_of(0x030b, NULL, 0, -1, &line);
	check(rc == 0 && line == 10, "lines: before the first instruction: co_firstlineno (%d)", line);
	rc = line_of(0x030a, t310, sizeof(t310), 99, &line);
	check(rc == 0 && line == 13, "lines 3.10: units 0-99 are the first range's (%d)", line);
	rc = line_of(0x030a, t310, sizeof(t310), 100, &line);
	check(rc == 0 && line == -1, "lines 3.10: a -128 delta is no line (%d)", line);
	rc = line_of(0x030a, t310, sizeof(t310), 105, &line);
	check(rc == 0 && line == -1, "lines 3.10: past the end: no line (%d)", line);
	rc = line_of(0x030a, t310_odd, sizeof(t310_odd), 0, &line);
	check(rc == -EINVAL, "lines hostile: a 3.10 table of an odd length is refused (%d)", rc);
	rc = line_of(0x0308, t38, sizeof(t38), 6, &line);
	check(rc == 0 && line == 10, "lines 3.8: a negative delta (%d)", line);
	rc = line_of(0x0309, t38, sizeof(t38), 10, &line);
	check(rc == 0 && line == 13, "lines 3.9: the last pair's line holds to the end (%d)", line);
	rc = line_of(0x0307, t38, sizeof(t38), 0, &line);
	check(rc == -ENOTSUP, "lines: 3.7 is not known (%d)", rc);
}

int main(void)
{
	static const char *minors[] = {"8", "9", "10", "11", "12", "13"};

	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++)
		check_version(minors[i]);
	check_hostile();
	return failures ? 1 : 0;
}
