/* Which processes run Go code whose stack switches the kernel reads (common/go.h): the Go
 * executable a process maps (each binary read once), looked at again whenever its mappings
 * change, its layout read (go/layout.h) and told to the kernel through a hook. Each process
 * is counted under the reason its switches are or are not read. */
#ifndef HPROF_GO_PROCESS_H
#define HPROF_GO_PROCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "go.h"
#include "go/layout.h"
#include "proc/processes.h"
#include "proc/resolver.h"

/* Tells the kernel pid's layout (NULL: it has none now). */
typedef void (*go_proc_hook_fn)(void *ctx, uint32_t pid, const struct hprof_go_proc *p);

/* Processes with Go code by what became of them (not Go is not counted). */
struct go_proc_stats {
	uint64_t processes[GO_LAYOUT_REASON_COUNT];
	char last_unknown[32]; /* the version of the last process of GO_LAYOUT_UNKNOWN_VERSION */
};

struct go_procs;

int go_procs__new(struct go_procs **out);
void go_procs__set_hook(struct go_procs *t, go_proc_hook_fn fn, void *ctx);
/* Looks at proc when its mappings changed since the last call: 0, or -ENOMEM. */
int go_procs__look(struct go_procs *t, struct process *proc, const struct resolver *resolver);
/* Looks at pid's executable at path now, before its mappings are known (a command hprof
 * just started: its first collections come before its mapping events are handled). 0, or
 * -ENOMEM. */
int go_procs__look_file(struct go_procs *t, uint32_t pid, const char *path);
/* pid exited or exec'd (exec: an exec, which go_procs__look_file may have seen already):
 * forgotten, and the kernel told. */
void go_procs__gone(struct go_procs *t, uint32_t pid, bool exec);
const struct go_proc_stats *go_procs__stats(const struct go_procs *t);
void go_procs__free(struct go_procs *t);

#endif
