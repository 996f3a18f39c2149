/* Which processes run a CPython hprof reads frames of, and what it needs to: found from
 * the symbols of the binaries a process maps (_PyRuntime and _PyEval_EvalFrameDefault in
 * one file, the python3.X executable or libpython3.X), looked at again whenever the
 * process's mappings change (a program may load libpython later), and told to the kernel
 * (common/python.h) through a hook. */
#ifndef HPROF_PYTHON_PROCESS_H
#define HPROF_PYTHON_PROCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "proc/processes.h"
#include "proc/resolver.h"
#include "python.h"
#include "python/layout.h"
#include "python/memory.h"

enum python_proc_state {
	PYTHON_PROC_ABSENT,  /* no CPython in the process */
	PYTHON_PROC_KNOWN,   /* a CPython of a version hprof knows: its frames are read */
	PYTHON_PROC_UNKNOWN, /* a CPython whose version or layout hprof does not know */
};

struct python_proc {
	enum python_proc_state state;
	uint32_t version;        /* PY_VERSION_HEX >> 16 when known */
	struct python_layout layout;
	uint64_t code_type;      /* PyCode_Type's address: what every code object's type is */
	/* The evaluator: its file's module, and its ELF virtual addresses there */
	uint32_t eval_module;
	uint64_t eval_start, eval_end;
};

struct python_procs;

/* Tells the kernel pid's CPython (NULL: it has none now). */
typedef void (*python_proc_hook_fn)(void *ctx, uint32_t pid, const struct hprof_python_proc *p);

/* Reads of the processes go through memory, which outlives the table. */
int python_procs__new(struct python_memory *memory, struct python_procs **out);
void python_procs__set_hook(struct python_procs *t, python_proc_hook_fn fn, void *ctx);
/* What proc runs, looked at anew when its mappings changed since the last call. NULL only
 * when out of memory. */
const struct python_proc *python_procs__get(struct python_procs *t, struct process *proc,
					    const struct resolver *resolver);
/* path's file may be a CPython's executable or library (python3.X, libpython3.X.so): its
 * mapping is worth looking at before the process's first sample. */
bool python_file__maybe(const char *path);
/* pid exited or exec'd: forgotten, and the kernel told. */
void python_procs__gone(struct python_procs *t, uint32_t pid);
void python_procs__free(struct python_procs *t);

#endif
