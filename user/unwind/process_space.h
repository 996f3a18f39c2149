/* The walk's view of a process (hybrid.h's struct hybrid_space): its mappings' unwind
 * tables, its binaries' entry code and start routines, and where its runtimes' stacks end
 * (process_space.c), with the callbacks about its code (process_code.h). */
#ifndef HPROF_UNWIND_PROCESS_SPACE_H
#define HPROF_UNWIND_PROCESS_SPACE_H

#include "unwind/hybrid.h"
#include "unwind/process_view.h"

/* The space of v->proc, valid while v is. */
struct hybrid_space process_view__space(struct process_view *v);

#endif
