/* The processes hprof has seen and the mappings of each at the moment being processed:
 * seeded from /proc/PID/maps for processes that were running when hprof started, then
 * kept current by the kernel's mapping events (fork, exec, mmap, exit), applied in time
 * order with the samples (user/record/reorder.c). A process's state is freed when it
 * exits: every sample taken before that has been handled by then. */
#ifndef HPROF_PROCESSES_H
#define HPROF_PROCESSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

#include "proc/address_space.h"
#include "proc/map_event.h"
#include "sample.h"

struct process {
	uint32_t pid;
	char comm[HPROF_COMM_LEN];
	bool counted;  /* in the session's process count */
	bool seeded;   /* its mappings are known: read from /proc, or followed since fork/exec */
	struct address_space *as;
	/* Names this set of mappings for the unwind cache: new with every change. */
	uint64_t space_id;
	/* For labels (process__read_labels): the process's own command name (its exec's, its
	 * parent's at fork, else /proc/PID/comm), and its cgroup path (NULL: the root or
	 * unknown). */
	char name[HPROF_COMM_LEN];
	char *cgroup;
	bool labels_read;
	UT_hash_handle hh;
};

struct process_table;

/* Called with the text of every /proc/PID/maps read (for --raw). */
typedef void (*process_maps_hook_fn)(void *ctx, uint32_t pid, const char *text, size_t len);

struct process_table_stats {
	uint64_t seeded_from_proc; /* processes whose mappings were read from /proc */
	uint64_t events[MAP_EVENT_TYPES]; /* mapping events applied, by enum map_event_type */
	uint64_t exited;           /* processes freed after their exit */
};

int process_table__new(struct process_table **out);
/* Replaying a capture: mappings come only from the capture, never from /proc. */
void process_table__set_replay(struct process_table *t);
void process_table__set_maps_hook(struct process_table *t, process_maps_hook_fn fn, void *ctx);
/* The process pid, created on first sight and then seeded from /proc/PID/maps (unless
 * replaying). NULL only when out of memory. */
struct process *process_table__get(struct process_table *t, uint32_t pid);
/* Applies one mapping event (path: the mapped file for MAP_EVENT_MMAP). Returns 0 or
 * -ENOMEM. */
int process_table__apply(struct process_table *t, const struct map_event *e, const char *path);
/* Seeds pid's mappings from the text of a maps file (a capture's). Returns 0 or -errno. */
int process_table__load_maps(struct process_table *t, uint32_t pid, const char *text, size_t len);
/* Reads what labels need and the events did not give (the name, the cgroup) from /proc,
 * once per process; nothing in a replay, nor once its exit was seen. */
void process_table__read_labels(struct process_table *t, struct process *proc);
/* pid's exit was read (it is handled later, in time order): its labels are not looked for
 * in /proc, where a short-lived process's samples would find nothing by then. */
void process_table__exit_seen(struct process_table *t, uint32_t pid);
/* The executable mapping of proc holding addr, or NULL. */
struct mapping *process__find_mapping(const struct process *proc, uint64_t addr);
const struct process_table_stats *process_table__stats(const struct process_table *t);
/* Processes held now (not yet exited, or not known to have); *counted of them are in the
 * session's process count (had samples). */
size_t process_table__count(const struct process_table *t, size_t *counted);
void process_table__free(struct process_table *t);

#endif
