/* The walk's callbacks about a process's code (walk.h: unwind_analyze_fn,
 * unwind_call_before_fn, unwind_function_start_fn, unwind_is_jit_code_fn, unwind_jumps_fn):
 * its bytes read from the pinned file or the process's memory, decoded by x86_code.h, the
 * answers kept in the code cache. ctx is a struct process_view. */
#ifndef HPROF_UNWIND_PROCESS_CODE_H
#define HPROF_UNWIND_PROCESS_CODE_H

#include <stdbool.h>
#include <stdint.h>

struct code_rules;

int process_code__analyze(void *ctx, uint64_t pc, struct code_rules *rules);
int process_code__call_before(void *ctx, uint64_t ra, uint64_t *target);
int process_code__function_start(void *ctx, uint64_t pc, uint64_t *start);
bool process_code__is_jit_code(void *ctx, uint64_t pc);
uint32_t process_code__jumps(void *ctx, uint64_t addr, bool from_start, int32_t *values,
			     uint64_t *at, uint32_t max);

#endif
