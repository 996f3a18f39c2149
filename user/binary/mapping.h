/* Where a file (or anonymous code) is mapped in a process: what the process stage reads
 * from /proc/PID/maps and mapping events, and what the binary stage needs to find the
 * file and its load bias. */
#ifndef HPROF_BINARY_MAPPING_H
#define HPROF_BINARY_MAPPING_H

#include <stdint.h>

struct mapping {
	uint64_t start, end; /* [start, end) in the process */
	uint64_t file_offset; /* offset of start in the file */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	const char *path; /* "" for anonymous memory; "[vdso]" and the like as the kernel names them */
	/* Filled in by whoever resolves addresses (user/proc/resolver.c), once per mapping. */
	void *module;     /* struct module *, NULL until looked up */
	int64_t bias;     /* process address - ELF virtual address */
	int bias_err;     /* 0, or -errno when no segment holds the mapping */
};

#endif
