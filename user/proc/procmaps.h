/* Executable mappings of processes, from /proc/PID/maps, cached per pid. */
#ifndef HPROF_PROCMAPS_H
#define HPROF_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mapping {
	uint64_t start, end; /* [start, end) in the process */
	uint64_t file_offset; /* offset of start in the file */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	const char *path; /* "" for anonymous memory; "[vdso]" and the like as the kernel names them */
	/* Filled in by whoever resolves addresses (user/session.c), once per mapping. */
	void *module;     /* struct module *, NULL until looked up */
	int64_t bias;     /* process address - ELF virtual address */
	int bias_err;     /* 0, or -errno when no segment holds the mapping */
};

struct process_maps;

/* Reads /proc/PID/maps. Returns 0 or -errno (-ESRCH when the process is gone). */
int process_maps__read(pid_t pid, struct process_maps **out);
/* The text of /proc/PID/maps (malloc'd, NUL-terminated). Returns 0 or -errno. */
int process_maps__read_text(pid_t pid, char **text, size_t *len);
/* Parses the text of a maps file (executable mappings only). Returns 0 or -errno. */
int process_maps__parse(const char *text, size_t len, struct process_maps **out);
/* The executable mapping holding addr, or NULL. */
struct mapping *process_maps__find(const struct process_maps *maps, uint64_t addr);
size_t process_maps__count(const struct process_maps *maps);
const struct mapping *process_maps__get(const struct process_maps *maps, size_t i);
void process_maps__free(struct process_maps *maps);

#endif
