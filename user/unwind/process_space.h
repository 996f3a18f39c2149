/* The walk's view of a process (hybrid.h's struct hybrid_space): its mappings' unwind
 * tables, its binaries' entry code and start routines, and where its runtimes' stacks end
 * (process_space.c), with the callbacks about its code (process_code.h). */
#ifndef HPROF_UNWIND_PROCESS_SPACE_H
#define HPROF_UNWIND_PROCESS_SPACE_H

#include "proc/processes.h"
#include "unwind/hybrid.h"
#include "unwind/process_code.h"
#include "unwind/process_view.h"

/* The callbacks about the process's mappings and symbols; ctx is a struct process_view
 * (walk.h and hybrid.h say what each answers). */
int process_space__find_map(void *ctx, uint64_t pc, struct unwind_map *map);
bool process_space__is_mapped(void *ctx, uint64_t pc);
bool process_space__is_stack_end(void *ctx, uint64_t ra);
const char *process_space__go_function(void *ctx, uint64_t pc);
bool process_space__is_entry_code(void *ctx, uint64_t pc, bool caller);
bool process_space__is_function_entry(void *ctx, uint64_t pc);
bool process_space__in_start_routine(void *ctx, uint64_t pc);

/* The space of c->proc, valid while c is. Inline: built for every sample. */
static inline struct hybrid_space process_view__space(struct process_view *c)
{
	return (struct hybrid_space){
		.walk = { .find_map = process_space__find_map, .ctx = c, .id = c->proc->space_id,
			  .code = { .analyze = c->scan_only ? NULL : process_code__analyze,
				    .call_before = process_code__call_before,
				    .jumps = process_code__jumps },
			  .symbols = { .function_start = process_code__function_start,
				       .is_jit_code = process_code__is_jit_code,
				       .is_function_entry = process_space__is_function_entry,
				       .is_entry_code = process_space__is_entry_code,
				       .is_stack_end = process_space__is_stack_end },
			  .no_scan = c->no_scan, .scan_only = c->scan_only },
		.is_mapped = process_space__is_mapped,
		.in_start_routine = process_space__in_start_routine,
		.go_function = process_space__go_function,
		.pid = c->proc->pid,
	};
}


#endif
