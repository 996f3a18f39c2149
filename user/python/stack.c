#include "python/stack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/process_memory.h"

/* Code objects cached across all processes: enough for large programs' hot code, bounded
 * for those that make code objects all the time. */
#define PYTHON_CODE_CACHE_BYTES (8u << 20)

static const char *const reason_names[PYTHON_REASON_COUNT] = {
	[PYTHON_NOT_YET_KNOWN] = "before the process was known",
	[PYTHON_IDLE] = "no Python code running",
	[PYTHON_NO_THREAD] = "thread unknown to the interpreter",
	[PYTHON_READ_FAILED] = "frames unreadable",
	[PYTHON_CYCLE] = "frame chain looped",
	[PYTHON_TRUNCATED] = "deeper than read",
	[PYTHON_CODE_UNREADABLE] = "code object unreadable",
	[PYTHON_MISMATCH] = "evaluator frames unpaired",
	[PYTHON_UNKNOWN_VERSION] = "unknown version",
};

const char *python_reason__name(enum python_reason r)
{
	return r < PYTHON_REASON_COUNT ? reason_names[r] : "?";
}

int python_stack__init(struct python_stack *ps, struct python_names *names)
{
	memset(ps, 0, sizeof(*ps));
	ps->names = names;
	return python_code_cache__new(PYTHON_CODE_CACHE_BYTES, &ps->codes);
}

static bool read_process(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return process_memory__read(*(const uint32_t *)ctx, addr, buf, len);
}

static bool is_eval_frame(const struct python_proc *pp, const struct frame *f)
{
	uint64_t pc = (f->flags & FRAME_CALLER) ? f->addr - 1 : f->addr;

	return f->module == pp->eval_module && pc >= pp->eval_start && pc < pp->eval_end;
}

/* The reason for a kernel status that gave no frame. */
static enum python_reason kernel_reason(enum hprof_py_status status)
{
	switch (status) {
	case HPROF_PY_NONE:
		return PYTHON_NOT_YET_KNOWN;
	case HPROF_PY_NO_THREAD:
		return PYTHON_NO_THREAD;
	case HPROF_PY_CYCLE:
		return PYTHON_CYCLE;
	case HPROF_PY_TRUNCATED:
		return PYTHON_TRUNCATED;
	case HPROF_PY_OK:
		return PYTHON_IDLE;
	case HPROF_PY_READ_FAILED:
	default:
		return PYTHON_READ_FAILED;
	}
}

/* Names the sample's Python frames into py[0..nr_python): MODULE_PYTHON frames; entry[i]
 * set where frame i is the outermost of a call of the evaluator. */
static int name_frames(struct python_stack *ps, const struct python_proc *pp, uint32_t pid,
		       const struct hprof_sample *sample, struct frame *py, bool *entry,
		       uint32_t *nr)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < sample->nr_python; i++) {
		struct hprof_py_frame f = hprof_sample__python(sample, i);
		struct python_frame_name name;
		struct python_location loc;
		uint64_t id;
		int err = python_code_cache__name(ps->codes, pid, &pp->layout, pp->code_type, &f,
						  read_process, &pid, &name);

		if (err)
			return err;
		if (name.incomplete) {
			/* a frame the interpreter is still setting up runs no code yet */
			if ((f.instr & HPROF_PY_ENTRY) && n > 0)
				entry[n - 1] = true;
			continue;
		}
		loc = (struct python_location){ .module = name.module, .function = name.qualname,
						.file = name.filename,
						.firstlineno = name.firstlineno,
						.line = name.line > 0 ? name.line : 0 };
		if (python_names__intern(ps->names, &loc, &id))
			return -ENOMEM;
		py[n] = (struct frame){ .module = MODULE_PYTHON, .addr = id };
		entry[n++] = (f.instr & HPROF_PY_ENTRY) != 0;
	}
	*nr = n;
	return 0;
}

static uint32_t count_groups(const bool *entry, uint32_t n)
{
	uint32_t groups = 0;

	for (uint32_t i = 0; i < n; i++)
		groups += entry[i] || i == n - 1;
	return groups;
}

/* Builds the mixed stack into out: frames with each evaluator frame replaced by its group
 * of Python frames, in order. */
static uint32_t splice(const struct python_stack *ps, const struct python_proc *pp,
		       const struct frame *frames, uint32_t n, const struct frame *py,
		       const bool *entry, uint32_t np, struct frame *out)
{
	uint32_t o = 0, next_py = 0;
	bool between = false; /* under a Python frame already placed */

	for (uint32_t i = 0; i < n; i++) {
		if (is_eval_frame(pp, &frames[i])) {
			while (next_py < np) {
				out[o++] = py[next_py];
				if (entry[next_py++])
					break;
			}
			between = true;
			continue;
		}
		/* the interpreter's own call machinery between two Python frames */
		if (between && !ps->keep_interpreter && frames[i].module == pp->eval_module &&
		    next_py < np)
			continue;
		out[o++] = frames[i];
	}
	return o;
}

int python_stack__merge(struct python_stack *ps, const struct python_proc *pp, uint32_t pid,
			const struct hprof_sample *sample, struct frame *frames, uint32_t *n,
			uint32_t max)
{
	enum hprof_py_status status = hprof_sample__python_status(sample);
	uint32_t np = 0, evals = 0, total;
	struct frame py[HPROF_PY_MAX_FRAMES];
	bool entry[HPROF_PY_MAX_FRAMES];
	int err;

	ps->stats.samples++;
	if (pp->state != PYTHON_PROC_KNOWN) {
		ps->stats.reasons[PYTHON_UNKNOWN_VERSION]++;
		return 0;
	}
	if (sample->nr_python == 0) {
		ps->stats.reasons[kernel_reason(status)]++;
		return 0;
	}
	err = name_frames(ps, pp, pid, sample, py, entry, &np);
	if (err == -ENOMEM)
		return err;
	if (err || np == 0) {
		ps->stats.reasons[err ? PYTHON_CODE_UNREADABLE : PYTHON_IDLE]++;
		return 0;
	}
	for (uint32_t i = 0; i < *n; i++)
		evals += is_eval_frame(pp, &frames[i]);
	if (evals != count_groups(entry, np)) {
		ps->stats.reasons[PYTHON_MISMATCH]++;
		return 0;
	}
	total = *n + np;
	if (grow_array((void **)&ps->scratch, &ps->scratch_cap, total, sizeof(*ps->scratch)))
		return -ENOMEM;
	total = splice(ps, pp, frames, *n, py, entry, np, ps->scratch);
	if (total > max)
		total = max;
	memcpy(frames, ps->scratch, total * sizeof(*frames));
	*n = total;
	ps->stats.with_frames++;
	ps->stats.frames += np;
	if (status == HPROF_PY_TRUNCATED)
		ps->stats.reasons[PYTHON_TRUNCATED]++;
	return 0;
}

void python_stack__process_gone(struct python_stack *ps, uint32_t pid)
{
	python_code_cache__forget_pid(ps->codes, pid);
}

void python_stack__fini(struct python_stack *ps)
{
	python_code_cache__free(ps->codes);
	free(ps->scratch);
}
