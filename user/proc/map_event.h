/* Changes to a process's mappings, as the kernel reports them while hprof runs (perf's
 * side-band records, user/record/sideband.c): a new executable mapping, an exec, a fork,
 * an exit; and a thread's exit, after which what walks learned about it is dropped. Raw
 * captures store them as they are, so the layout is fixed (a reader skips types it does
 * not know). */
#ifndef HPROF_MAP_EVENT_H
#define HPROF_MAP_EVENT_H

#include <stdint.h>

#include "binary/elf_facts.h"

enum map_event_type {
	MAP_EVENT_MMAP = 1, /* an executable mapping was made (path follows the struct) */
	MAP_EVENT_EXEC = 2, /* pid replaced its address space; comm is the new name */
	MAP_EVENT_FORK = 3, /* pid was created by ppid with a copy of its mappings */
	MAP_EVENT_EXIT = 4, /* pid (the whole process) is gone */
	MAP_EVENT_THREAD_EXIT = 5, /* thread tid of pid is gone (the process is not) */
	MAP_EVENT_TYPES,
};

/* Longest mapping path kept (the kernel's PATH_MAX). */
#define MAP_EVENT_PATH_MAX 4096

struct map_event {
	uint64_t time_ns; /* CLOCK_MONOTONIC, like the samples' timestamps */
	uint32_t type;    /* enum map_event_type */
	uint32_t pid;
	union {
		uint32_t ppid; /* FORK */
		uint32_t tid;  /* THREAD_EXIT */
	};
	uint32_t prot;    /* MMAP: PROT_* */
	uint64_t start;   /* MMAP: [start, start + len) */
	uint64_t len;
	uint64_t pgoff;   /* MMAP: file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint8_t build_id_len; /* 0: the kernel sent none */
	uint8_t pad[3];
	uint8_t build_id[BUILD_ID_MAX];
	char comm[16];    /* EXEC */
};
_Static_assert(sizeof(struct map_event) == 104, "map_event is a capture format");

#endif
