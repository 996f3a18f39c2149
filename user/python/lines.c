#include "python/lines.h"

#include <errno.h>
#include <stdbool.h>

/* Lines stay in int range, as CPython's own computed_line does for a real table. */
static bool line_ok(int64_t line)
{
	return line >= INT32_MIN && line <= INT32_MAX;
}

/* 3.8-3.9 (Objects/lnotab_notes.txt): the line of the last pair whose address is at or
 * before offset; an odd last byte is ignored, as CPython's size / 2 does. */
static int lnotab_line(const uint8_t *t, size_t len, int firstlineno, int32_t offset,
		       int *line)
{
	int64_t addr = 0, l = firstlineno;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > offset)
			break;
		l += (int8_t)t[i + 1];
		if (!line_ok(l))
			return -EINVAL;
	}
	*line = (int)l;
	return 0;
}

/* 3.10 (Objects/lnotab_notes.txt of 3.10): ranges of bytecode bytes, each with a line or
 * none; a range of length 0 only moves the line. The range holding offset * 2 bytes. */
static int linetable310_line(const uint8_t *t, size_t len, int firstlineno, int32_t offset,
			     int *line)
{
	int64_t start = 0, end = 0, computed = firstlineno, target = (int64_t)offset * 2;
	int range_line = -1;
	size_t i = 0;

	if (len % 2)
		return -EINVAL;
	while (end <= target) {
		/* the next range of nonzero length */
		do {
			if (i >= len) {
				*line = -1;
				return 0;
			}
			start = end;
			end += t[i];
			if ((int8_t)t[i + 1] == -128) {
				range_line = -1;
			} else {
				computed += (int8_t)t[i + 1];
				if (!line_ok(computed))
					return -EINVAL;
				range_line = (int)computed;
			}
			i += 2;
		} while (start == end);
	}
	*line = range_line;
	return 0;
}

/* A location table's varint: 6-bit chunks, least significant first, bit 6 set on every
 * chunk but the last. */
static int varint(const uint8_t *t, size_t len, size_t *i, uint32_t *out)
{
	uint32_t v = 0;

	for (unsigned shift = 0;; shift += 6) {
		uint8_t b;

		if (*i >= len || shift > 30)
			return -EINVAL;
		b = t[(*i)++];
		if (shift == 30 && (b & 63) > 3)
			return -EINVAL;
		v |= (uint32_t)(b & 63) << shift;
		if (!(b & 64))
			break;
	}
	*out = v;
	return 0;
}

enum {
	LOC_NONE = 15,       /* no location: no line, the line does not move */
	LOC_LONG = 14,       /* line delta (svarint), end line, columns */
	LOC_NO_COLUMNS = 13, /* line delta (svarint) */
	LOC_ONE_LINE0 = 10,  /* 10-12: line delta 0-2, columns in two bytes */
};

/* 3.11+ (Objects/locations.md): the entry holding code unit offset. */
static int location_line(const uint8_t *t, size_t len, int firstlineno, int32_t offset,
			 int *line)
{
	int64_t end = 0, computed = firstlineno;
	int entry_line = -1;
	size_t i = 0;

	while (end <= offset) {
		uint8_t first;
		unsigned code;

		if (i >= len) {
			*line = -1;
			return 0;
		}
		first = t[i];
		if (!(first & 128))
			return -EINVAL;
		code = (first >> 3) & 15;
		i++;
		if (code == LOC_NO_COLUMNS || code == LOC_LONG) {
			uint32_t v;

			if (varint(t, len, &i, &v))
				return -EINVAL;
			computed += v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
		} else if (code >= LOC_ONE_LINE0 && code < LOC_NO_COLUMNS) {
			computed += code - LOC_ONE_LINE0;
		}
		if (!line_ok(computed))
			return -EINVAL;
		entry_line = code == LOC_NONE ? -1 : (int)computed;
		end += (first & 7) + 1;
		/* the rest of the entry (columns), up to the next entry's first byte */
		while (i < len && !(t[i] & 128))
			i++;
	}
	*line = entry_line;
	return 0;
}

int python_lines__line(uint32_t version, const uint8_t *table, size_t len, int firstlineno,
		       int32_t offset, int *line)
{
	if (version < 0x0308 || version >> 8 != 3)
		return -ENOTSUP;
	if (!table)
		len = 0;
	if (offset < 0) {
		*line = firstlineno;
		return 0;
	}
	if (version < 0x030a)
		return lnotab_line(table, len, firstlineno, offset, line);
	if (version == 0x030a)
		return linetable310_line(table, len, firstlineno, offset, line);
	return location_line(table, len, firstlineno, offset, line);
}
