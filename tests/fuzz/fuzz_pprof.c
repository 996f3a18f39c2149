/* The pprof reader of `hprof diff` (gzip-compressed profile.proto). The first byte picks
 * what the rest is: bit 0 clear, the file as it is (gzip and all); set, the protobuf
 * message, compressed here so that mutations reach the message parser past gzip's CRC.
 * Bit 1: frame names normalized, as diff does. */
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "output/pprof.h"
#include "output/stack_set.h"

/* gzip of in, or NULL. */
static uint8_t *gzip(const uint8_t *in, size_t len, size_t *out_len)
{
	z_stream z = { 0 };
	uLong cap = compressBound(len) + 32;
	uint8_t *out = malloc(cap);

	if (!out || deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct name_table *names = NULL;
	struct stack_set *set = NULL;
	uint8_t *packed = NULL;
	const uint8_t *in = data + 1;
	size_t len = size - 1;
	char err[256];

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		packed = gzip(data + 1, size - 1, &len);
		if (!packed)
			return 0;
		in = packed;
	}
	if (name_table__new(&names) == 0 && stack_set__new(names, data[0] & 2, &set) == 0 &&
	    pprof__read(in, len, set, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < stack_set__nr_stacks(set); i++) {
			const uint32_t *ids;
			uint32_t n;
			uint64_t count;

			stack_set__stack(set, i, &ids, &n, &count);
			for (uint32_t j = 0; j < n; j++)
				stack_set__inclusive(set, ids[j]);
		}
	}
	stack_set__free(set);
	name_table__free(names);
	free(packed);
	return 0;
}
