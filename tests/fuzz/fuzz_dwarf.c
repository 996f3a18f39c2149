/* The DWARF index (user/binary/dwarf_index.c): ELF images, as a file (a memfd), to
 * dwarf_index__open; the chains of 256 pcs across the first 16 KiB and of the input's last
 * 8 bytes as a pc, each twice (the second from the cache). libdw reads the DWARF; the
 * index bounds every walk over what it returns (depth, DIEs, scopes, ranges). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "binary/dwarf_index.h"

static void exercise(struct dwarf_index *ix, uint64_t pc)
{
	struct source_chain chain;

	for (int pass = 0; pass < 2; pass++) {
		if (dwarf_index__chain(ix, pc, &chain) != 0)
			continue;
		for (uint32_t i = 0; i < chain.nr; i++) {
			/* every string must be readable to its end */
			if (strlen(chain.frames[i].function) + strlen(chain.frames[i].file) == SIZE_MAX)
				__builtin_trap();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dwarf_index *ix;
	struct dwarf_index_stats st;
	char path[64], msg[256];
	uint64_t last = 0;
	int fd = memfd_create("fuzz-dwarf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (dwarf_index__open(path, &ix, msg, sizeof(msg)) == 0) {
			for (uint64_t pc = 0; pc < 0x4000; pc += 0x40)
				exercise(ix, pc);
			if (size >= 8)
				memcpy(&last, data + size - 8, 8);
			exercise(ix, last);
			dwarf_index__stats(ix, &st);
			dwarf_index__bytes(ix);
			dwarf_index__free(ix);
		}
	}
	close(fd);
	return 0;
}
