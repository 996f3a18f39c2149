/* perf's map file parser: the input arrives in pieces, as a growing file is read, and
 * every entry's range is looked up afterwards. The first byte picks the piece size. */
#include <stdint.h>

#include "binary/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1;
	size_t len, step, pos = 0, consumed;
	struct perf_map *pm;

	if (size < 1 || perf_map__new(1, &pm))
		return 0;
	len = size - 1;
	step = data[0] ? data[0] : len + 1;
	/* unconsumed bytes (an unfinished line) come again with the next piece */
	while (pos < len) {
		size_t end = pos + step < len ? pos + step : len;

		if (perf_map__add_text(pm, text + pos, end - pos, &consumed))
			break;
		pos += consumed;
		if (end == len && consumed == 0)
			break;
		if (consumed == 0)
			step *= 2;
	}
	for (uint64_t a = 0; a < 64; a++)
		perf_map__lookup(pm, a << 4);
	perf_map__lookup(pm, UINT64_MAX);
	perf_map__free(pm);
	return 0;
}
