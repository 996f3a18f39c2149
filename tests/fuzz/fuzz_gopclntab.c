/* Go's function tables (.gopclntab): the input is the section's bytes. Every function is
 * read, named and its pcsp table decoded, and addresses across the text are looked up. */
#include <stdint.h>

#include "cfi/go_pclntab.h"

static int take(void *arg, uint64_t lo, uint64_t hi, int32_t delta)
{
	*(uint64_t *)arg += (hi - lo) ^ (uint32_t)delta;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct go_pclntab go;
	struct go_func f;
	uint64_t sum = 0;

	if (go_pclntab__parse(data, size, &go) != 0)
		return 0;
	for (uint32_t i = 0; i < go.nfunc && i < 4096; i++) {
		if (!go_pclntab__func(&go, i, &f))
			continue;
		go_pclntab__name(&go, &f);
		go_pclntab__sp_deltas(&go, &f, take, &sum);
	}
	for (uint64_t a = 0; a < 256; a++)
		go_pclntab__func_at(&go, go.text + a * 16, &f);
	go_pclntab__func_at(&go, UINT64_MAX, &f);
	return (int)(sum & 0);
}
