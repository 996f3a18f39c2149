/* Executable mappings of processes, from /proc/PID/maps, cached per pid. */
#ifndef HPROF_PROCMAPS_H
#define HPROF_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "binary/mapping.h"


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
