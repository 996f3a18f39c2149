/* The instruction analysis of code without CFI, and the traces for jumps a scan asks for:
 * the code is the profiled process's (a file hprof did not build, or JIT memory), so any
 * bytes. The first 6 bytes pick the pc, the function's start and end (offsets into the
 * rest, or none), and a return address whose call is checked; the rest is the code, at an
 * address near the top of the address space half the time, so that wrapping arithmetic is
 * exercised. */
#include <stdint.h>
#include <string.h>

#include "unwind/x86_code.h"

#define HEADER 6

static uint64_t offset_in(uint8_t byte_lo, uint8_t byte_hi, size_t len)
{
	return len ? ((uint64_t)byte_lo | (uint64_t)byte_hi << 8) % (len + 1) : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct code_window w;
	struct code_rules rules;
	uint64_t pc, start, end, target;
	size_t len;

	if (size < HEADER)
		return 0;
	len = size - HEADER;
	w = (struct code_window){
		.bytes = data + HEADER,
		.addr = (data[5] & 1) ? UINT64_MAX - len - 16 : 0x400000,
		.len = len,
	};
	pc = w.addr + offset_in(data[0], data[1], len);
	start = (data[4] & 2) ? w.addr + offset_in(data[2], 0, len) : 0;
	end = (data[4] & 4) ? w.addr + offset_in(data[3], data[4] >> 3, len) : 0;
	int32_t depths[4];
	uint64_t at[4];

	x86_code__analyze(&w, pc, start, end, &rules);
	x86_code__jump_depths(&w, start ? start : pc, end, depths, at, 4);
	x86_code__jump_offsets(&w, pc, depths, 4);
	x86_code__call_before(&w, pc, &target);
	x86_code__call_before(&w, w.addr + len, &target);
	return 0;
}
