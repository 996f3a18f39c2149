#include "proc/processes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proc/procmaps.h"
#include "util/tid_set.h"

struct process_table {
	struct process *by_pid;
	struct process *last; /* samples come in runs from one process: skip the hash */
	uint64_t last_space_id;
	size_t nr;
	bool replay;
	process_maps_hook_fn maps_hook;
	void *maps_hook_ctx;
	struct process_table_stats stats;
	/* Processes whose exit was read and not yet handled (process_table__exit_seen). */
	struct tid_set *exiting;
};

int process_table__new(struct process_table **out)
{
	struct process_table *t = calloc(1, sizeof(*t));

	if (t && !(t->exiting = tid_set__new())) {
		free(t);
		t = NULL;
	}
	*out = t;
	return t ? 0 : -ENOMEM;
}

void process_table__set_replay(struct process_table *t)
{
	t->replay = true;
}

void process_table__set_maps_hook(struct process_table *t, process_maps_hook_fn fn, void *ctx)
{
	t->maps_hook = fn;
	t->maps_hook_ctx = ctx;
}

const struct process_table_stats *process_table__stats(const struct process_table *t)
{
	return &t->stats;
}

/* Cached unwind rules of the old mappings must never be used for the new ones. */
static void mappings_changed(struct process_table *t, struct process *proc)
{
	proc->space_id = ++t->last_space_id;
}

static struct process *find(struct process_table *t, uint32_t pid)
{
	struct process *proc;

	if (t->last && t->last->pid == pid)
		return t->last;
	HASH_FIND(hh, t->by_pid, &pid, sizeof(pid), proc);
	if (proc)
		t->last = proc;
	return proc;
}

static void free_process(struct process *proc)
{
	if (proc) {
		address_space__free(proc->as);
		free(proc->cgroup);
		free(proc);
	}
}

static void remove_process(struct process_table *t, struct process *proc)
{
	HASH_DEL(t->by_pid, proc);
	t->nr--;
	if (t->last == proc)
		t->last = NULL;
	free_process(proc);
}

/* A new, empty process pid, replacing any earlier one of that pid (pids are reused). */
static struct process *create(struct process_table *t, uint32_t pid)
{
	struct process *old = find(t, pid), *proc = calloc(1, sizeof(*proc));

	if (old)
		remove_process(t, old);
	if (!proc || !(proc->as = address_space__new())) {
		free_process(proc);
		return NULL;
	}
	proc->pid = pid;
	mappings_changed(t, proc);
	HASH_ADD(hh, t->by_pid, pid, sizeof(proc->pid), proc);
	t->nr++;
	t->last = proc;
	return proc;
}

static int seed_from_text(struct process_table *t, struct process *proc, const char *text,
			  size_t len)
{
	struct process_maps *maps;
	int err = process_maps__parse(text, len, &maps);

	if (err)
		return err;
	err = address_space__add_maps(proc->as, maps);
	process_maps__free(maps);
	if (!err) {
		proc->seeded = true;
		mappings_changed(t, proc);
	}
	return err;
}

/* A process that was running before hprof started: its mappings as /proc shows them. */
static void seed_from_proc(struct process_table *t, struct process *proc)
{
	char *text;
	size_t len;

	if (t->replay || process_maps__read_text(proc->pid, &text, &len) != 0)
		return;
	if (t->maps_hook)
		t->maps_hook(t->maps_hook_ctx, proc->pid, text, len);
	if (seed_from_text(t, proc, text, len) == 0)
		t->stats.seeded_from_proc++;
	free(text);
}

struct process *process_table__get(struct process_table *t, uint32_t pid)
{
	struct process *proc = find(t, pid);

	if (proc)
		return proc;
	proc = create(t, pid);
	if (proc)
		seed_from_proc(t, proc);
	return proc;
}

int process_table__load_maps(struct process_table *t, uint32_t pid, const char *text, size_t len)
{
	struct process *proc = find(t, pid);

	if (!proc && !(proc = create(t, pid)))
		return -ENOMEM;
	return seed_from_text(t, proc, text, len);
}

/* A child starts with a copy of its parent's mappings; a parent hprof does not know
 * leaves the child to be seeded from /proc like any process met for the first time. */
static int apply_fork(struct process_table *t, const struct map_event *e)
{
	struct process *parent = find(t, e->ppid), *child;
	struct address_space *copy = NULL;

	if (parent && parent->seeded && !(copy = address_space__clone(parent->as)))
		return -ENOMEM;
	if (!copy) {
		/* Forget a dead process that had this pid; seed the child when it is met. */
		child = find(t, e->pid);
		if (child)
			remove_process(t, child);
		return 0;
	}
	child = create(t, e->pid);
	if (!child) {
		address_space__free(copy);
		return -ENOMEM;
	}
	address_space__free(child->as);
	child->as = copy;
	child->seeded = true;
	memcpy(child->comm, parent->comm, sizeof(child->comm));
	memcpy(child->name, parent->name, sizeof(child->name));
	return 0;
}

static int apply_exec(struct process_table *t, const struct map_event *e)
{
	struct process *proc = create(t, e->pid);

	if (!proc)
		return -ENOMEM;
	proc->seeded = true; /* everything it maps from now on comes as events */
	memcpy(proc->comm, e->comm, sizeof(e->comm) < sizeof(proc->comm) ? sizeof(e->comm)
									   : sizeof(proc->comm));
	memcpy(proc->name, proc->comm, sizeof(proc->name));
	proc->name[sizeof(proc->name) - 1] = '\0';
	return 0;
}

/* A process hprof has not met yet is left alone: when its first sample comes, /proc shows
 * this mapping too. */
static int apply_mmap(struct process_table *t, const struct map_event *e, const char *path)
{
	struct process *proc = find(t, e->pid);
	struct mapping m = {
		.start = e->start,
		.end = e->start + e->len,
		.file_offset = e->pgoff,
		.inode = e->inode,
		.dev_major = e->dev_major,
		.dev_minor = e->dev_minor,
	};
	int err;

	if (!proc || !proc->seeded || !(e->prot & PROT_EXEC) || m.end <= m.start)
		return 0;
	err = address_space__add(proc->as, &m, path);
	if (!err)
		mappings_changed(t, proc);
	return err;
}

int process_table__apply(struct process_table *t, const struct map_event *e, const char *path)
{
	struct process *proc;

	if (e->type < sizeof(t->stats.events) / sizeof(t->stats.events[0]))
		t->stats.events[e->type]++;
	switch (e->type) {
	case MAP_EVENT_FORK:
		return apply_fork(t, e);
	case MAP_EVENT_EXEC:
		return apply_exec(t, e);
	case MAP_EVENT_MMAP:
		return apply_mmap(t, e, path);
	case MAP_EVENT_EXIT:
		tid_set__remove(t->exiting, e->pid);
		proc = find(t, e->pid);
		if (proc) {
			remove_process(t, proc);
			t->stats.exited++;
		}
		return 0;
	}
	return 0;
}

size_t process_table__count(const struct process_table *t, size_t *counted)
{
	const struct process *proc;

	*counted = 0;
	for (proc = t->by_pid; proc; proc = proc->hh.next)
		*counted += proc->counted;
	return t->nr;
}

/* The first line of /proc/PID/FILE into buf, without its newline; false when unreadable. */
static bool read_proc_line(uint32_t pid, const char *file, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%u/%s", pid, file);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* The cgroup v2 path ("0::/system.slice/x.scope"), NULL for the root or without one. Read
 * with plain open and read: it is read once for each new process a profile labels, and
 * under churn a stdio stream's allocations were most of its cost. */
static char *read_cgroup(uint32_t pid)
{
	char path[64], text[8192];
	char *line, *end;
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (got <= 0)
		return NULL;
	text[got] = '\0';
	for (line = text; *line; line = end + (*end != '\0')) {
		end = line + strcspn(line, "\n");
		if (strncmp(line, "0::", 3) == 0 && end > line + 3 && !(end == line + 4 && line[3] == '/'))
			return strndup(line + 3, (size_t)(end - line - 3));
	}
	return NULL;
}

void process_table__read_labels(struct process_table *t, struct process *proc)
{
	if (proc->labels_read)
		return;
	proc->labels_read = true;
	if (t->replay || tid_set__contains(t->exiting, proc->pid))
		return;
	if (!proc->name[0] && !read_proc_line(proc->pid, "comm", proc->name, sizeof(proc->name)))
		proc->name[0] = '\0';
	proc->cgroup = read_cgroup(proc->pid);
}

void process_table__exit_seen(struct process_table *t, uint32_t pid)
{
	/* when full, labels are looked for as before */
	tid_set__add(t->exiting, pid);
}

struct mapping *process__find_mapping(const struct process *proc, uint64_t addr)
{
	return address_space__find(proc->as, addr);
}

void process_table__free(struct process_table *t)
{
	struct process *proc, *tmp;

	if (!t)
		return;
	HASH_ITER(hh, t->by_pid, proc, tmp) {
		HASH_DEL(t->by_pid, proc);
		free_process(proc);
	}
	tid_set__free(t->exiting);
	free(t);
}
