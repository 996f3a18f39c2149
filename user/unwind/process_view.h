/* A process as the walk sees it: its mappings and binaries through the resolver and the
 * module registry, what was learned of its code without CFI (code_cache.h), and the
 * session's scan settings. Both groups of the walk's callbacks take one as their ctx: the
 * process's mappings and symbols (process_space.c) and its code (process_code.c). */
#ifndef HPROF_UNWIND_PROCESS_VIEW_H
#define HPROF_UNWIND_PROCESS_VIEW_H

#include <stdbool.h>

struct process;
struct resolver;
struct module_registry;
struct code_cache;

struct process_view {
	struct process *proc;
	struct resolver *resolver;
	struct module_registry *modules;
	struct code_cache *code;
	bool no_scan;   /* --no-scan: exact methods only */
	bool scan_only; /* HPROF_DEBUG=scan: scans only, to measure them */
};

#endif
