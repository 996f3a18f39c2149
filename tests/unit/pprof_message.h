/* The unit tests' view of a pprof profile hprof wrote: gzip undone, strings looked up. */
#ifndef HPROF_TESTS_PPROF_MESSAGE_H
#define HPROF_TESTS_PPROF_MESSAGE_H

#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "profile.pb-c.h"

/* The message inside data[0..len), malloc'd (at most 1 MiB: the tests' profiles are small). */
static inline uint8_t *gunzip_all(const char *data, size_t len, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *buf = malloc(cap);
	z_stream z = { 0 };

	inflateInit2(&z, 15 + 16);
	z.next_in = (uint8_t *)data;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	inflate(&z, Z_FINISH);
	*out_len = cap - z.avail_out;
	inflateEnd(&z);
	return buf;
}

static inline const char *pb_string(const Perftools__Profiles__Profile *m, int64_t i)
{
	return i >= 0 && (size_t)i < m->n_string_table ? m->string_table[i] : "?";
}

#endif
