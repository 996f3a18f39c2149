/* Reads of another process's memory (process_vm_readv): a runtime's data, such as gdb's JIT
 * list or BEAM's exit variable. What comes back is the process's to choose: hostile. */
#ifndef HPROF_UTIL_PROCESS_MEMORY_H
#define HPROF_UTIL_PROCESS_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads exactly len bytes at addr of live process pid into buf. False when any byte cannot
 * be read (pid 0, a replay's, never can). */
bool process_memory__read(uint32_t pid, uint64_t addr, void *buf, size_t len);

#endif
