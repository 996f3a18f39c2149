#include "python/stack.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "binary/naming.h"
#include "util/grow.h"

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

int python_stack__init(struct python_stack *ps, struct module_registry *modules,
		       struct python_memory *memory)
{
	memset(ps, 0, sizeof(*ps));
	ps->modules = modules;
	ps->memory = memory;
	ps->names = module_registry__python_names(modules);
	return python_code_cache__new(PYTHON_CODE_CACHE_BYTES, &ps->codes);
}

struct read_ctx {
	struct python_memory *memory;
	uint32_t pid;
};

static bool read_process(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct read_ctx *c = ctx;

	return python_memory__read(c->memory, c->pid, addr, buf, len);
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

/* The name of a Python frame whose code object could not be read. */
#define UNREADABLE_CODE "[python: code unreadable]"

/* Names the chain's Python frames into py[0..chain->nr): MODULE_PYTHON frames; entry[i]
 * set where frame i is the outermost of a call of the evaluator; hidden[i] where frame i is
 * one the interpreter is still setting up, which runs no code yet: it pairs with its
 * evaluator frame but is not shown, as CPython's own frame walks skip it. */
static int name_frames(struct python_stack *ps, const struct python_proc *pp, uint32_t pid,
		       const struct python_chain *chain, struct frame *py, bool *entry,
		       bool *hidden, uint32_t *nr, uint32_t *unreadable)
{
	struct read_ctx rc = { .memory = ps->memory, .pid = pid };
	uint32_t n = 0;

	*unreadable = 0;

	for (uint32_t i = 0; i < chain->nr && i < HPROF_PY_MAX_FRAMES; i++) {
		struct hprof_py_frame f = chain->frames[i];
		struct python_frame_name name;
		struct python_location loc;
		uint64_t id = 0;
		int err = python_code_cache__name(ps->codes, pid, &pp->layout, pp->code_type, &f,
						  read_process, &rc, &name);

		if (err == -ENOMEM)
			return err;
		if (err) {
			/* freed, or never a code object: the frame stays, unnamed, so that the
			 * callers around it keep their names and the pairing holds */
			(*unreadable)++;
			name = (struct python_frame_name){ .module = "", .qualname = UNREADABLE_CODE,
							   .filename = "" };
		}
		loc = (struct python_location){ .module = name.module, .function = name.qualname,
						.file = name.filename,
						.firstlineno = name.firstlineno,
						.line = name.line > 0 ? name.line : 0 };
		if (!name.incomplete && python_names__intern(ps->names, &loc, &id))
			return -ENOMEM;
		py[n] = (struct frame){ .module = MODULE_PYTHON, .addr = id };
		hidden[n] = name.incomplete;
		entry[n++] = (f.instr & HPROF_PY_ENTRY) != 0;
	}
	*nr = n;
	return 0;
}

/* A frame of CPython's perf trampolines (-X perf, 3.12+: JIT code its perf map names
 * "py::FUNCTION:FILE"): the Python frame placed beside it says the same. */
static bool is_trampoline(const struct python_stack *ps, const struct frame *f)
{
	struct module *mod = f->module >= MODULE_FIRST_FILE ?
				     module_registry__by_id(ps->modules, f->module) : NULL;
	char *name;
	bool yes;

	if (!mod || !mod->anon_code)
		return false;
	name = frame_name__format(ps->modules, NULL, f);
	yes = name && strncmp(name, "py::", 4) == 0;
	free(name);
	return yes;
}

static uint32_t count_groups(const bool *entry, uint32_t n)
{
	uint32_t groups = 0;

	for (uint32_t i = 0; i < n; i++)
		groups += entry[i] || i == n - 1;
	return groups;
}

/* Builds the mixed stack into out: frames with each evaluator frame replaced by its group
 * of Python frames, in order; origin[o] (for o < max) where out[o] came from. With one
 * evaluator frame more than groups, the innermost runs no frame of its own: it is entering
 * a call whose frame it has not yet marked, or leaving one whose frame it has popped; it
 * stays a native frame. */
static uint32_t splice(const struct python_stack *ps, const struct python_proc *pp,
		       const struct frame *frames, uint32_t n, const struct frame *py,
		       const bool *entry, const bool *hidden, uint32_t np, bool spare_eval,
		       struct frame *out, uint32_t *origin, uint32_t max)
{
	uint32_t o = 0, next_py = 0;
	bool between = false; /* under a Python frame already placed */

	for (uint32_t i = 0; i < n; i++) {
		bool eval = is_eval_frame(pp, &frames[i]);

		if (eval && !spare_eval) {
			while (next_py < np) {
				if (!hidden[next_py]) {
					if (origin && o < max)
						origin[o] = PYTHON_FRAME_PLACED;
					out[o++] = py[next_py];
				}
				if (entry[next_py++])
					break;
			}
			between = true;
			continue;
		}
		spare_eval = spare_eval && !eval;
		/* -X perf's trampolines exist from 3.12 on: older ones name no frame */
		if (pp->version >= 0x030c && is_trampoline(ps, &frames[i]))
			continue;
		/* the interpreter's own call machinery between two Python frames */
		if (between && !ps->keep_interpreter && frames[i].module == pp->eval_module &&
		    next_py < np)
			continue;
		if (origin && o < max)
			origin[o] = i;
		out[o++] = frames[i];
	}
	return o;
}

/* HPROF_DEBUG=python: each sample whose frames could not be placed, on stderr. */
static bool debug_python(void)
{
	static int on = -1;

	if (on < 0) {
		const char *debug = getenv("HPROF_DEBUG");

		on = debug && strstr(debug, "python") != NULL;
	}
	return on;
}

static void print_frames(const struct python_stack *ps, const struct frame *f, uint32_t n,
			 const bool *entry)
{
	for (uint32_t i = 0; i < n; i++) {
		char *name = frame_name__format(ps->modules, NULL, &f[i]);

		fprintf(stderr, "%s%s%s", i ? ";" : "", name ? name : "?",
			entry && entry[i] ? "|" : "");
		free(name);
	}
}

static void debug_unpaired(const struct python_stack *ps, const struct frame *frames, uint32_t n,
			   const struct frame *py, const bool *entry, uint32_t np)
{
	fprintf(stderr, "python: unpaired: native ");
	print_frames(ps, frames, n, NULL);
	fprintf(stderr, " python ");
	print_frames(ps, py, np, entry);
	fprintf(stderr, "\n");
}

/* Counts the reason a chain's frames were not placed (or not all of them), and says it. */
static void count_reason(struct python_stack *ps, enum python_reason r, enum python_reason *why)
{
	ps->stats.reasons[r]++;
	*why = r;
}

int python_stack__place(struct python_stack *ps, const struct python_proc *pp, uint32_t pid,
			const struct python_chain *chain, struct frame *frames, uint32_t *n,
			uint32_t max, uint32_t *origin, enum python_reason *why)
{
	uint32_t np = 0, evals = 0, groups, total, unreadable;
	struct frame py[HPROF_PY_MAX_FRAMES];
	bool entry[HPROF_PY_MAX_FRAMES], hidden[HPROF_PY_MAX_FRAMES];
	int err;

	*why = PYTHON_REASON_COUNT;
	/* frames kept where they are unless placed below */
	for (uint32_t i = 0; origin && i < *n && i < max; i++)
		origin[i] = i;
	ps->stats.samples++;
	if (pp->state != PYTHON_PROC_KNOWN) {
		count_reason(ps, PYTHON_UNKNOWN_VERSION, why);
		return 0;
	}
	if (chain->nr == 0) {
		count_reason(ps, kernel_reason(chain->status), why);
		return 0;
	}
	err = name_frames(ps, pp, pid, chain, py, entry, hidden, &np, &unreadable);
	if (err)
		return err;
	/* a chain none of whose code could be read names nothing: its native frames stay */
	if (np == 0 || unreadable == np) {
		count_reason(ps, np ? PYTHON_CODE_UNREADABLE : PYTHON_IDLE, why);
		return 0;
	}
	for (uint32_t i = 0; i < *n; i++)
		evals += is_eval_frame(pp, &frames[i]);
	groups = count_groups(entry, np);
	if (evals != groups && evals != groups + 1) {
		if (debug_python())
			debug_unpaired(ps, frames, *n, py, entry, np);
		count_reason(ps, PYTHON_MISMATCH, why);
		return 0;
	}
	total = *n + np;
	if (grow_array((void **)&ps->scratch, &ps->scratch_cap, total, sizeof(*ps->scratch)))
		return -ENOMEM;
	total = splice(ps, pp, frames, *n, py, entry, hidden, np, evals == groups + 1,
		       ps->scratch, origin, max);
	if (total > max)
		total = max;
	memcpy(frames, ps->scratch, total * sizeof(*frames));
	*n = total;
	ps->stats.with_frames++;
	ps->stats.frames += np;
	ps->stats.frames_unreadable += unreadable;
	if (chain->status == HPROF_PY_TRUNCATED)
		count_reason(ps, PYTHON_TRUNCATED, why);
	return 0;
}

int python_stack__merge(struct python_stack *ps, const struct python_proc *pp, uint32_t pid,
			const struct hprof_sample *sample, struct frame *frames, uint32_t *n,
			uint32_t max)
{
	struct hprof_py_frame py[HPROF_PY_MAX_FRAMES];
	struct python_chain chain = { .frames = py, .status = hprof_sample__python_status(sample) };
	enum python_reason why;

	/* the record's frames are packed in it: copied out whole */
	for (; chain.nr < sample->nr_python && chain.nr < HPROF_PY_MAX_FRAMES; chain.nr++)
		py[chain.nr] = hprof_sample__python(sample, chain.nr);
	return python_stack__place(ps, pp, pid, &chain, frames, n, max, NULL, &why);
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
