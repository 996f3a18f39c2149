/* Mixed stacks: each native frame of CPython's evaluator replaced by the Python frames it
 * was running, read by the kernel at sample time (common/python.h). The frames between
 * two calls of the evaluator that belong to the interpreter itself (its call machinery)
 * are left out unless asked for; C extensions, libraries, code without CFI and the kernel
 * stay where they are. */
#ifndef HPROF_PYTHON_STACK_H
#define HPROF_PYTHON_STACK_H

#include <stdbool.h>
#include <stdint.h>

#include "binary/frame.h"
#include "binary/modules.h"
#include "binary/python_names.h"
#include "python/code.h"
#include "python/memory.h"
#include "python/process.h"
#include "sample.h"

/* Why a sample of a CPython process has no Python frames (or, for PYTHON_TRUNCATED, not
 * all of them). */
enum python_reason {
	PYTHON_NOT_YET_KNOWN,  /* taken before hprof had told the kernel of the process */
	PYTHON_IDLE,           /* the thread ran no Python code */
	PYTHON_NO_THREAD,      /* a thread the interpreter does not know (a native thread) */
	PYTHON_READ_FAILED,    /* the kernel could not read its thread state or frames */
	PYTHON_CYCLE,          /* its frame chain looped */
	PYTHON_TRUNCATED,      /* deeper than the kernel reads: the outermost frames missing */
	PYTHON_CODE_UNREADABLE, /* no code object of its chain could be read, or was one */
	PYTHON_MISMATCH,       /* the native stack's evaluator frames and the Python frames'
				* calls of it do not pair up */
	PYTHON_UNKNOWN_VERSION, /* a CPython of a version or build hprof does not know */
	PYTHON_REASON_COUNT,
};

struct python_stats {
	uint64_t samples;      /* of processes running a CPython */
	uint64_t with_frames;  /* ... whose stacks got Python frames */
	uint64_t frames;       /* Python frames placed */
	uint64_t frames_unreadable; /* ... of them, named [python: code unreadable]: their code
				     * object was freed before it was read, or is none */
	uint64_t reasons[PYTHON_REASON_COUNT];
};

/* A short name of each reason, for the summary. */
const char *python_reason__name(enum python_reason r);

struct python_stack {
	struct module_registry *modules;
	struct python_memory *memory; /* what code objects are read through */
	struct python_code_cache *codes;
	struct python_names *names;
	bool keep_interpreter; /* keep the interpreter's frames between Python frames */
	struct python_stats stats;
	struct frame *scratch;
	size_t scratch_cap;
};

int python_stack__init(struct python_stack *ps, struct module_registry *modules,
		       struct python_memory *memory);
/* Places sample's Python frames into its user stack frames[0..*n) (innermost first, as
 * resolved: module and file address), at most max frames. A sample whose frames cannot be
 * placed exactly keeps its native stack, counted under a reason. Returns 0 or -ENOMEM. */
int python_stack__merge(struct python_stack *ps, const struct python_proc *pp, uint32_t pid,
			const struct hprof_sample *sample, struct frame *frames, uint32_t *n,
			uint32_t max);

/* A thread's Python frames, innermost first, and why it has those: a sample's, or read
 * from a stopped thread (python/threads.h). */
struct python_chain {
	const struct hprof_py_frame *frames;
	uint32_t nr; /* at most HPROF_PY_MAX_FRAMES */
	enum hprof_py_status status;
};

/* Where python_stack__place put frames: for each frame of the result, the index of the
 * native frame of the input it is, or PYTHON_FRAME_PLACED for a Python frame. */
#define PYTHON_FRAME_PLACED UINT32_MAX

/* python_stack__merge for a chain read outside of samples (hprof stack). origin: NULL, or
 * room for max entries (see PYTHON_FRAME_PLACED). *why: the reason counted, or
 * PYTHON_REASON_COUNT when none was (every Python frame placed); the frames were placed
 * when it is that or PYTHON_TRUNCATED. Returns 0 or -ENOMEM. */
int python_stack__place(struct python_stack *ps, const struct python_proc *pp, uint32_t pid,
			const struct python_chain *chain, struct frame *frames, uint32_t *n,
			uint32_t max, uint32_t *origin, enum python_reason *why);
void python_stack__process_gone(struct python_stack *ps, uint32_t pid);
void python_stack__fini(struct python_stack *ps);

#endif
