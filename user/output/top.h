/* The top table (--top N): the functions with the most self samples, each with its self
 * and inclusive share of the profile's samples, its samples and its binary, the table
 * `perf report --stdio` and `pprof -top` users read first.
 *
 * A function is a frame name, as folded stacks, flame graphs, `hprof diff` and pprof -top
 * (whose default granularity merges functions by name) tell functions apart, so its shares
 * are theirs: self is the samples with it innermost, inclusive the samples with it anywhere
 * on the stack, once per sample however often it recurs. A stack's comm is no function (it
 * is a label in pprof); a root frame such as "[truncated: ...]" is one. The module column
 * names the binary (its file name, "[kernel.kallsyms]", "[jit]", "[python]") the function's samples
 * came from; where one name is in several binaries (every program's main), the one with
 * the most samples, then "+N" for the others. */
#ifndef HPROF_OUTPUT_TOP_H
#define HPROF_OUTPUT_TOP_H

#include <stddef.h>
#include <stdio.h>

#include "binary/modules.h"
#include "output/profile.h"

/* Writes the header and the n functions of p with the most self samples (ties by name,
 * then module) to out. Returns 0 or -errno (-ENOMEM, or the stream's error). */
int top__write(struct profile *p, struct module_registry *modules, size_t n, FILE *out);

#endif
