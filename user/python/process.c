#include "python/process.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "binary/modules.h"
#include "python/memory.h"

struct entry {
	uint32_t pid;
	uint64_t space_id; /* the mappings last looked at */
	bool told;         /* the kernel holds an entry for pid */
	struct python_proc p;
	UT_hash_handle hh;
};

struct python_procs {
	struct python_memory *memory;
	struct entry *by_pid;
	python_proc_hook_fn hook;
	void *hook_ctx;
};

int python_procs__new(struct python_memory *memory, struct python_procs **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->memory = memory;
	return 0;
}

void python_procs__set_hook(struct python_procs *t, python_proc_hook_fn fn, void *ctx)
{
	t->hook = fn;
	t->hook_ctx = ctx;
}

/* The version the binary was built as: Py_Version (3.11+) read from the process, where
 * the file defines it, else the file's name. */
static int binary_version(struct python_memory *memory, uint32_t pid, struct module *mod,
			  const struct mapping *m, uint32_t *version_hex)
{
	uint64_t vaddr, value;

	if (module__runtime_symbol(mod, RUNTIME_PY_VERSION, &vaddr) == 0) {
		if (!python_memory__read(memory, pid, vaddr + (uint64_t)m->bias, &value,
					 sizeof(value)))
			return -EIO;
		*version_hex = (uint32_t)value;
		return 0;
	}
	return python_version__from_path(mod->path, version_hex);
}

/* Fills p from the file of mapping m, which defines the runtime and the evaluator. */
static void recognise(struct python_memory *memory, uint32_t pid, struct module *mod,
		      const struct mapping *m, struct python_proc *p,
		      struct hprof_python_proc *kernel)
{
	uint8_t runtime_bytes[PYTHON_DEBUG_OFFSETS_SIZE];
	uint64_t runtime, code_type = 0, eval, eval_end;
	uint32_t version_hex;
	size_t len = 0;

	p->state = PYTHON_PROC_UNKNOWN;
	if (module__runtime_symbol(mod, RUNTIME_PY_RUNTIME, &runtime) != 0 ||
	    module__runtime_symbol(mod, RUNTIME_PY_EVAL, &eval) != 0 ||
	    module__runtime_symbol(mod, RUNTIME_PY_EVAL_END, &eval_end) != 0 ||
	    module__runtime_symbol(mod, RUNTIME_PY_CODE_TYPE, &code_type) != 0 ||
	    binary_version(memory, pid, mod, m, &version_hex) != 0)
		return;
	runtime += (uint64_t)m->bias;
	/* 3.13+ describe themselves at the start of _PyRuntime */
	if (python_memory__read(memory, pid, runtime, runtime_bytes, sizeof(runtime_bytes)))
		len = sizeof(runtime_bytes);
	if (python_layout__for_version(version_hex, len ? runtime_bytes : NULL, len, &p->layout))
		return;
	p->state = PYTHON_PROC_KNOWN;
	p->version = p->layout.version;
	p->code_type = code_type + (uint64_t)m->bias;
	p->eval_module = mod->id;
	p->eval_start = eval;
	p->eval_end = eval_end;
	python_layout__kernel(&p->layout, runtime, kernel);
}

/* The file of proc that defines _PyRuntime and the evaluator, as the dynamic linker would
 * bind them: the executable's own, else the library mapped first. */
static void look(struct python_memory *memory, struct entry *e, struct process *proc,
		 const struct resolver *resolver,
		 struct hprof_python_proc *kernel)
{
	size_t n = address_space__count(proc->as);

	memset(&e->p, 0, sizeof(e->p));
	for (size_t i = 0; i < n; i++) {
		struct mapping *m = address_space__at(proc->as, i);
		struct module *mod = resolver__module(resolver, proc, m);
		uint64_t vaddr;

		if (!mod || mod->anon_code || m->bias_err ||
		    module__runtime_symbol(mod, RUNTIME_PY_RUNTIME, &vaddr) != 0 ||
		    module__runtime_symbol(mod, RUNTIME_PY_EVAL, &vaddr) != 0)
			continue;
		recognise(memory, proc->pid, mod, m, &e->p, kernel);
		return;
	}
}

const struct python_proc *python_procs__get(struct python_procs *t, struct process *proc,
					    const struct resolver *resolver)
{
	struct hprof_python_proc kernel = { 0 };
	struct entry *e;

	HASH_FIND(hh, t->by_pid, &proc->pid, sizeof(proc->pid), e);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		e->pid = proc->pid;
		HASH_ADD(hh, t->by_pid, pid, sizeof(e->pid), e);
	} else if (e->space_id == proc->space_id) {
		return &e->p;
	}
	e->space_id = proc->space_id;
	/* a CPython found stays what it is until the process execs (a new entry) */
	if (e->p.state == PYTHON_PROC_KNOWN)
		return &e->p;
	look(t->memory, e, proc, resolver, &kernel);
	if (e->p.state == PYTHON_PROC_KNOWN && t->hook) {
		t->hook(t->hook_ctx, e->pid, &kernel);
		e->told = true;
	}
	return &e->p;
}

bool python_file__maybe(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "python", 6) == 0 || strncmp(base, "libpython", 9) == 0;
}

void python_procs__gone(struct python_procs *t, uint32_t pid)
{
	struct entry *e;

	HASH_FIND(hh, t->by_pid, &pid, sizeof(pid), e);
	if (!e)
		return;
	if (e->told && t->hook)
		t->hook(t->hook_ctx, pid, NULL);
	HASH_DEL(t->by_pid, e);
	free(e);
}

void python_procs__free(struct python_procs *t)
{
	struct entry *e, *tmp;

	if (!t)
		return;
	HASH_ITER(hh, t->by_pid, e, tmp) {
		HASH_DEL(t->by_pid, e);
		free(e);
	}
	free(t);
}
