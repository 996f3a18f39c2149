/* No frame pointers: main -> map_unmap, which maps, touches and unmaps memory in a loop, so
 * that most samples land in the kernel's mmap and munmap code, where the process's mapping
 * lock is held for writing. Usage: nofp_mmap [SECONDS] (default 3). */
#include <stdio.h>
#include <sys/mman.h>

#include "workload.h"

#define MAP_BYTES (256 * 1024)

static volatile unsigned long sink;

__attribute__((noinline)) void map_unmap(double seconds)
{
	double start = workload_now();

	while (workload_now() - start < seconds) {
		for (int i = 0; i < 100; i++) {
			char *p = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED)
				return;
			p[0] = (char)i;
			sink += (unsigned char)p[0];
			munmap(p, MAP_BYTES);
		}
	}
}

int main(int argc, char **argv)
{
	map_unmap(workload_seconds(argc, argv, 3.0));
	printf("mmap done\n");
	return 0;
}
