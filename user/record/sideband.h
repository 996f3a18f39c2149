/* The kernel's mapping changes as they happen: one dummy software perf event per CPU that
 * delivers perf's side-band records (mmap2 for executable mappings, comm on exec, fork,
 * exit), timestamped on CLOCK_MONOTONIC like the BPF program's samples, so that every
 * sample can be resolved against the mappings in force when it was taken.
 *
 * Why perf's records and not BPF programs on the mmap, exec and exit paths: the kernel
 * already emits a complete record for every executable mapping, including those exec
 * makes for the program, the dynamic loader and the vDSO, with path, device, inode and
 * protection; BPF would have to rebuild all of that from hooks that change between kernel
 * versions. */
#ifndef HPROF_SIDEBAND_H
#define HPROF_SIDEBAND_H

#include <stdint.h>

#include "proc/map_event.h"

struct sideband;

/* path is the mapping's file ("" for anonymous memory) for MAP_EVENT_MMAP, else "".
 * Returns 0 or -errno (which stops the drain). */
typedef int (*sideband_event_fn)(void *ctx, const struct map_event *e, const char *path);

/* Opens the events on every online CPU. Returns 0 or -errno with a one-line message. */
int sideband__open(struct sideband **out, char *err, size_t errlen);
/* Hands every record received so far to fn, in each CPU's order. Returns 0 or -errno. */
int sideband__drain(struct sideband *sb, sideband_event_fn fn, void *ctx);
/* Records the kernel dropped because a buffer was full. */
uint64_t sideband__lost(const struct sideband *sb);
void sideband__free(struct sideband *sb);

#endif
