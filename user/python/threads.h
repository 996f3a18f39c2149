/* A thread's Python frames read from userspace (hprof stack, with the process stopped), the
 * way the BPF program reads them at sample time (kernel/python.bpf.h): the same fields,
 * found through the same struct hprof_python_proc, the same entry markers and bounds, the
 * same status. So the frames hprof stack prints are merged by the code that merges a
 * sample's (python/stack.h), and the two can be held against each other.
 *
 * Everything read is the process's to choose: hostile. Each read may fail, a thread list
 * is searched for at most HPROF_PY_MAX_THREADS states, a frame chain is followed for at
 * most 2 * HPROF_PY_MAX_FRAMES + 1 steps (3.12+ pass a C-stack frame per evaluator call,
 * read but not kept) and a chain that comes back to a frame it passed is refused. */
#ifndef HPROF_PYTHON_THREADS_H
#define HPROF_PYTHON_THREADS_H

#include <stdint.h>

#include "python.h"
#include "python/code.h"

/* One thread's Python frames, innermost first (as a sample carries them). */
struct python_thread_frames {
	struct hprof_py_frame frames[HPROF_PY_MAX_FRAMES];
	uint32_t nr;
	enum hprof_py_status status; /* HPROF_PY_OK ... HPROF_PY_CYCLE; never HPROF_PY_NONE */
};

/* The PyThreadState of the interpreter's whose thread_id is fs_base (the thread's pthread,
 * glibc's fs base), searched from proc->runtime. Returns 0 with *status set to
 * HPROF_PY_NO_THREAD or HPROF_PY_READ_FAILED when there is none to read. */
uint64_t python_thread__state(const struct hprof_python_proc *proc, uint64_t fs_base,
			      python_read_fn read, void *ctx, enum hprof_py_status *status);
/* Reads the Python frames of the thread whose fs base is fs_base into out, through
 * read(ctx, ...) (process_memory__read for a live process). */
void python_thread__frames(const struct hprof_python_proc *proc, uint64_t fs_base,
			   python_read_fn read, void *ctx, struct python_thread_frames *out);

#endif
