/* The folded-stack reader of `hprof flamegraph`: folded text in, an SVG out. */
#include <stdint.h>
#include <stdio.h>

#include "flamegraph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct flamegraph_opts opts = { .title = "fuzz", .subtitle = "folded" };
	char err[256];
	FILE *in;

	if (!sink && !(sink = fopen("/dev/null", "w")))
		return 0;
	if (size == 0)
		return 0;
	in = fmemopen((void *)data, size, "r");
	if (!in)
		return 0;
	flamegraph__render(in, sink, &opts, err, sizeof(err));
	fclose(in);
	return 0;
}
