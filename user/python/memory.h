/* What hprof reads of a CPython process's memory (its version, its runtime's layout, code
 * objects and their strings): read from the live process, each successful read handed to a
 * hook (a --raw capture keeps them), or in a replay served from what the capture kept, and
 * never from a live process that has the recorded one's pid now. */
#ifndef HPROF_PYTHON_MEMORY_H
#define HPROF_PYTHON_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct python_memory;

typedef void (*python_memory_hook_fn)(void *ctx, uint32_t pid, uint64_t addr,
				      const void *bytes, size_t len);

struct python_memory *python_memory__new(void);
/* Called with every read of a live process that succeeded. */
void python_memory__set_hook(struct python_memory *m, python_memory_hook_fn fn, void *ctx);
/* A replay: reads are served from python_memory__add's bytes only. */
void python_memory__set_replay(struct python_memory *m);
/* A replay's: len bytes pid's memory held at addr when it was recorded. Returns 0 or
 * -ENOMEM. */
int python_memory__add(struct python_memory *m, uint32_t pid, uint64_t addr, const void *bytes,
		       size_t len);
/* Exactly len bytes at addr of pid into buf; a replay has only the reads the recording
 * made, each as it was made. */
bool python_memory__read(struct python_memory *m, uint32_t pid, uint64_t addr, void *buf,
			 size_t len);
/* pid is gone: a replay's bytes of it are dropped. */
void python_memory__forget_pid(struct python_memory *m, uint32_t pid);
void python_memory__free(struct python_memory *m);

#endif
