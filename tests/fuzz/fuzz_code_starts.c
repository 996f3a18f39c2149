/* The sweep for function starts in code without CFI or symbols: the code is a file hprof
 * did not build, so any bytes. The first 3 bytes pick the address looked up (an offset
 * into the rest) and where reads start to fail (a file cut short, or none); the rest is
 * the segment's code, at an address near the top of the address space half the time, so
 * that wrapping arithmetic is exercised. Every start found must lie in the segment, at or
 * below the address. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "binary/code_starts.h"

#define HEADER 3

struct input {
	const uint8_t *bytes;
	uint64_t addr, len, fail_at;
};

static ssize_t read_input(void *arg, uint64_t vaddr, uint8_t *buf, size_t len)
{
	const struct input *in = arg;

	if (vaddr < in->addr || vaddr >= in->addr + in->len || vaddr >= in->fail_at)
		return -EIO;
	if (len > in->addr + in->len - vaddr)
		len = in->addr + in->len - vaddr;
	if (len > in->fail_at - vaddr)
		len = in->fail_at - vaddr;
	memcpy(buf, in->bytes + (vaddr - in->addr), len);
	return (ssize_t)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in;
	struct code_source src;
	struct code_starts *cache = NULL;
	uint64_t vaddr, start;

	if (size <= HEADER)
		return 0;
	in = (struct input){ .bytes = data + HEADER, .len = size - HEADER };
	in.addr = (data[2] & 1) ? UINT64_MAX - in.len - 16 : 0x400000;
	in.fail_at = (data[2] & 2) ? in.addr + data[1] % in.len : UINT64_MAX;
	src = (struct code_source){ .seg_start = in.addr, .seg_end = in.addr + in.len,
				    .read = read_input, .arg = &in };
	for (int i = 0; i < 2; i++) {
		vaddr = in.addr + (uint64_t)(data[0] + i * 131) % in.len;
		if (code_starts__find(&cache, &src, vaddr, &start) == 0 &&
		    (start < in.addr || start > vaddr))
			abort();
	}
	code_starts__free(cache);
	return 0;
}
