#include "util/process_memory.h"

#include <sys/types.h>
#include <sys/uio.h>

bool process_memory__read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	size_t done = 0;

	if (pid == 0)
		return false;
	while (done < len) {
		struct iovec local = { .iov_base = (uint8_t *)buf + done, .iov_len = len - done };
		struct iovec remote = { .iov_base = (void *)(uintptr_t)(addr + done),
					.iov_len = len - done };
		ssize_t n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);

		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}
