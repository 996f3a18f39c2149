#include "go/process.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "binary/modules.h"

struct entry {
	uint32_t pid;
	uint64_t space_id; /* the mappings last looked at */
	bool decided;      /* a Go executable was found and counted: it stays what it is */
	bool told;         /* the kernel holds an entry for pid */
	UT_hash_handle hh;
};

struct go_procs {
	struct entry *by_pid;
	go_proc_hook_fn hook;
	void *hook_ctx;
	struct go_proc_stats stats;
};

int go_procs__new(struct go_procs **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void go_procs__set_hook(struct go_procs *t, go_proc_hook_fn fn, void *ctx)
{
	t->hook = fn;
	t->hook_ctx = ctx;
}

/* The first file of proc's mappings that is a Go program (the executable: Go maps it
 * first), with the reason its switches can or cannot be read; GO_LAYOUT_NOT_GO for none. */
static enum go_layout_reason find_go(struct process *proc, const struct resolver *resolver,
				     struct hprof_go_proc *kernel, char *version, size_t size)
{
	size_t n = address_space__count(proc->as);
	uint32_t last = UINT32_MAX;

	for (size_t i = 0; i < n; i++) {
		struct mapping *m = address_space__at(proc->as, i);
		struct module *mod = resolver__module(resolver, proc, m);
		enum go_layout_reason r;

		if (!mod || mod->anon_code || m->bias_err || mod->id == last)
			continue;
		last = mod->id;
		r = go_layout__from_file(mod->path, kernel, version, size);
		if (r != GO_LAYOUT_NOT_GO)
			return r;
	}
	return GO_LAYOUT_NOT_GO;
}

int go_procs__look(struct go_procs *t, struct process *proc, const struct resolver *resolver)
{
	struct hprof_go_proc kernel;
	enum go_layout_reason r;
	char version[32];
	struct entry *e;

	HASH_FIND(hh, t->by_pid, &proc->pid, sizeof(proc->pid), e);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->pid = proc->pid;
		HASH_ADD(hh, t->by_pid, pid, sizeof(e->pid), e);
	} else if (e->decided || e->space_id == proc->space_id) {
		return 0;
	}
	e->space_id = proc->space_id;
	r = find_go(proc, resolver, &kernel, version, sizeof(version));
	if (r == GO_LAYOUT_NOT_GO)
		return 0;
	e->decided = true;
	t->stats.processes[r]++;
	if (r == GO_LAYOUT_UNKNOWN_VERSION)
		memcpy(t->stats.last_unknown, version, sizeof(version));
	if (r == GO_LAYOUT_OK && t->hook) {
		t->hook(t->hook_ctx, e->pid, &kernel);
		e->told = true;
	}
	return 0;
}

void go_procs__gone(struct go_procs *t, uint32_t pid)
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

const struct go_proc_stats *go_procs__stats(const struct go_procs *t)
{
	return &t->stats;
}

void go_procs__free(struct go_procs *t)
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
