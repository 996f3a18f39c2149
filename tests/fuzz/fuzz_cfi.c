/* The CFI compiler over whole ELF images: .eh_frame and .debug_frame, found through the
 * section headers or through PT_GNU_EH_FRAME, then every row decoded and looked up. */
#include <stddef.h>
#include <stdint.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned sources[] = { UNWIND_SRC_ALL, UNWIND_SRC_EH_FRAME | UNWIND_SRC_VIA_HDR };
	struct unwind_table *t;
	char err[256];

	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
		if (unwind_table__from_image(data, size, "fuzz", sources[i], &t, err, sizeof(err)))
			continue;
		exercise(t);
		unwind_table__free(t);
	}
	return 0;
}
