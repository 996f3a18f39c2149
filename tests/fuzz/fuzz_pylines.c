/* CPython line tables (user/python/lines.c), any bytes as a table of any version 3.8-3.13:
 * byte 0 picks the version, bytes 1-4 are co_firstlineno, 5-8 an instruction offset, the
 * rest the table. The offset given, the first 256 and the extremes are looked up. */
#include <stdint.h>
#include <string.h>

#include "python/lines.h"

static volatile int sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t versions[] = {0x0308, 0x0309, 0x030a, 0x030b, 0x030c, 0x030d};
	int32_t first, offset;
	uint32_t version;
	int line;

	if (size < 9)
		return 0;
	version = versions[data[0] % 6];
	memcpy(&first, data + 1, 4);
	memcpy(&offset, data + 5, 4);
	data += 9;
	size -= 9;
	if (!python_lines__line(version, data, size, first, offset, &line))
		sink ^= line;
	for (int32_t o = -1; o < 256; o++)
		if (!python_lines__line(version, data, size, first, o, &line))
			sink ^= line;
	if (!python_lines__line(version, data, size, first, INT32_MAX, &line))
		sink ^= line;
	if (!python_lines__line(version, data, size, first, INT32_MIN, &line))
		sink ^= line;
	return 0;
}
