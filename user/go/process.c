#include "go/process.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "binary/modules.h"

struct entry {
	uint32_t pid;
	uint64_t space_id; /* the mappings last looked at */
	bool looked;       /* space_id is set */
	bool decided;      /* a Go executable was found and counted: it stays what it is */
	bool told;         /* the kernel holds an entry for pid */
	bool command;      /* decided by go_procs__look_file before the exec was handled */
	UT_hash_handle hh;
};

/* What a binary (a module: one file for the registry's life) was found to be, read once. */
struct binary {
	uint32_t module;
	enum go_layout_reason reason;
	struct hprof_go_proc kernel;
	char version[32];
	UT_hash_handle hh;
};

struct go_procs {
	struct entry *by_pid;
	struct binary *by_module;
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

/* What mod's file is, read on first sight (its pinned copy where there is one). NULL only
 * when out of memory. */
static const struct binary *binary_of(struct go_procs *t, const struct module *mod)
{
	struct binary *b;

	HASH_FIND(hh, t->by_module, &mod->id, sizeof(mod->id), b);
	if (b)
		return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->module = mod->id;
	b->reason = go_layout__from_file(mod->load_path[0] ? mod->load_path : mod->path,
					 &b->kernel, b->version, sizeof(b->version));
	HASH_ADD(hh, t->by_module, module, sizeof(b->module), b);
	return b;
}

/* The first file of proc's mappings that is a Go program (the executable: Go maps it
 * first), GO_LAYOUT_NOT_GO in *found for none. -ENOMEM, or 0. */
static int find_go(struct go_procs *t, struct process *proc, const struct resolver *resolver,
		   const struct binary **found)
{
	size_t n = address_space__count(proc->as);
	uint32_t last = UINT32_MAX;

	*found = NULL;
	for (size_t i = 0; i < n; i++) {
		struct mapping *m = address_space__at(proc->as, i);
		struct module *mod = resolver__module(resolver, proc, m);
		const struct binary *b;

		if (!mod || mod->anon_code || m->bias_err || mod->id == last)
			continue;
		last = mod->id;
		if (!(b = binary_of(t, mod)))
			return -ENOMEM;
		if (b->reason != GO_LAYOUT_NOT_GO) {
			*found = b;
			return 0;
		}
	}
	return 0;
}

/* pid's entry, made when there is none; NULL only when out of memory. */
static struct entry *entry_of(struct go_procs *t, uint32_t pid)
{
	struct entry *e;

	HASH_FIND(hh, t->by_pid, &pid, sizeof(pid), e);
	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->pid = pid;
	HASH_ADD(hh, t->by_pid, pid, sizeof(e->pid), e);
	return e;
}

/* Counts what was found of e's process and tells the kernel a layout it can read. */
static void decide(struct go_procs *t, struct entry *e, enum go_layout_reason r,
		   const struct hprof_go_proc *kernel, const char *version)
{
	if (r == GO_LAYOUT_NOT_GO)
		return;
	e->decided = true;
	t->stats.processes[r]++;
	if (r == GO_LAYOUT_UNKNOWN_VERSION)
		snprintf(t->stats.last_unknown, sizeof(t->stats.last_unknown), "%s", version);
	if (r == GO_LAYOUT_OK && t->hook) {
		t->hook(t->hook_ctx, e->pid, kernel);
		e->told = true;
	}
}

int go_procs__look(struct go_procs *t, struct process *proc, const struct resolver *resolver)
{
	struct entry *e = entry_of(t, proc->pid);
	const struct binary *b;

	if (!e)
		return -ENOMEM;
	if (e->decided || (e->looked && e->space_id == proc->space_id))
		return 0;
	e->looked = true;
	e->space_id = proc->space_id;
	if (find_go(t, proc, resolver, &b) != 0)
		return -ENOMEM;
	if (b)
		decide(t, e, b->reason, &b->kernel, b->version);
	return 0;
}

int go_procs__look_file(struct go_procs *t, uint32_t pid, const char *path)
{
	struct hprof_go_proc kernel;
	enum go_layout_reason r;
	char version[32];
	struct entry *e = entry_of(t, pid);

	if (!e)
		return -ENOMEM;
	if (e->decided)
		return 0;
	r = go_layout__from_file(path, &kernel, version, sizeof(version));
	decide(t, e, r, &kernel, version);
	e->command = e->decided;
	return 0;
}

void go_procs__gone(struct go_procs *t, uint32_t pid, bool exec)
{
	struct entry *e;

	HASH_FIND(hh, t->by_pid, &pid, sizeof(pid), e);
	if (!e)
		return;
	/* the exec that go_procs__look_file already looked at */
	if (exec && e->command) {
		e->command = false;
		return;
	}
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
	struct binary *b, *btmp;

	if (!t)
		return;
	HASH_ITER(hh, t->by_pid, e, tmp) {
		HASH_DEL(t->by_pid, e);
		free(e);
	}
	HASH_ITER(hh, t->by_module, b, btmp) {
		HASH_DEL(t->by_module, b);
		free(b);
	}
	free(t);
}
