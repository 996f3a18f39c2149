#include "session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

#include "modules.h"
#include "procmaps.h"
#include "symbols.h"

/* Mappings change (dlopen, exec); reread a process's maps on a miss, at most this often. */
#define MAPS_REFRESH_NS (50 * 1000 * 1000ull)

struct process {
	uint32_t pid;
	char comm[HPROF_COMM_LEN];
	struct process_maps *maps;
	uint64_t maps_read_ns;
	UT_hash_handle hh;
};

struct session {
	struct module_registry *modules;
	struct ksyms *ksyms;
	struct profile *profile;
	struct process *processes;
	struct session_stats stats;
	struct frame *frames; /* scratch, HPROF_MAX_FP_DEPTH + HPROF_MAX_KERNEL_DEPTH */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int session__new(struct session **out)
{
	struct session *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->frames = calloc(HPROF_MAX_FP_DEPTH + HPROF_MAX_KERNEL_DEPTH, sizeof(*s->frames));
	if (!s->frames) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = module_registry__new(&s->modules);
	if (err)
		goto cleanup;
	/* Without kallsyms kernel frames are still shown, as addresses. */
	ksyms__load("/proc/kallsyms", &s->ksyms);
	err = profile__new(s->modules, s->ksyms, &s->profile);
	if (err)
		goto cleanup;
	*out = s;
	return 0;
cleanup:
	session__free(s);
	return err;
}

static void refresh_maps(struct process *proc)
{
	struct process_maps *maps;

	proc->maps_read_ns = now_ns();
	if (process_maps__read(proc->pid, &maps) == 0) {
		process_maps__free(proc->maps);
		proc->maps = maps;
	}
}

static struct process *find_process(struct session *s, const struct hprof_sample *sample)
{
	struct process *proc;

	HASH_FIND(hh, s->processes, &sample->pid, sizeof(sample->pid), proc);
	if (!proc) {
		proc = calloc(1, sizeof(*proc));
		if (!proc)
			return NULL;
		proc->pid = sample->pid;
		memcpy(proc->comm, sample->comm, HPROF_COMM_LEN);
		HASH_ADD(hh, s->processes, pid, sizeof(proc->pid), proc);
		s->stats.processes++;
		refresh_maps(proc);
	} else if (memcmp(proc->comm, sample->comm, HPROF_COMM_LEN) != 0) {
		/* A new comm usually means exec: the old mappings are stale. */
		memcpy(proc->comm, sample->comm, HPROF_COMM_LEN);
		refresh_maps(proc);
	}
	return proc;
}

/* The mapping holding addr, rereading the maps once if the cached ones miss it. */
static const struct mapping *find_mapping(struct process *proc, uint64_t addr)
{
	const struct mapping *m = process_maps__find(proc->maps, addr);

	if (!m && now_ns() - proc->maps_read_ns > MAPS_REFRESH_NS) {
		refresh_maps(proc);
		m = process_maps__find(proc->maps, addr);
	}
	return m;
}

/* Resolves a user address to a frame; returns false when no mapping holds it. */
static bool resolve_user_frame(struct session *s, struct process *proc, uint64_t addr,
			       bool caller, struct frame *f)
{
	const struct mapping *m = find_mapping(proc, addr);
	struct module *mod;
	uint64_t vaddr;

	f->flags = caller ? FRAME_CALLER : 0;
	f->addr = addr;
	if (!m) {
		f->module = MODULE_UNMAPPED;
		return false;
	}
	if (!m->path[0]) {
		f->module = MODULE_ANON;
		return true;
	}
	mod = module_registry__get(s->modules, m->path);
	if (mod && module__addr_to_vaddr(mod, m, addr, &vaddr) == 0) {
		f->module = mod->id;
		f->addr = vaddr;
	} else if (mod) {
		/* Unreadable file: name it by its offset in the file. */
		f->module = mod->id;
		f->addr = addr - m->start + m->file_offset;
	} else {
		f->module = MODULE_UNMAPPED;
	}
	return true;
}

/* Functions a process's or thread's stack starts in. A frame-pointer chain ending in one
 * of them is complete: libc's start-up code keeps no frame pointers, so a chain through a
 * correct program ends at its caller's caller, __libc_start_call_main, or at a thread's
 * start_thread. */
static bool is_entry_function(const char *name)
{
	static const char *const entries[] = {
		"_start", "__libc_start_main", "__libc_start_call_main", "start_thread",
		"clone", "clone3", "__clone", "__clone3", "thread_start",
	};

	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		if (strcmp(name, entries[i]) == 0)
			return true;
	}
	return false;
}

/* The chain reached the outermost frame (a zero link or an entry function) through
 * executable mappings only. */
static bool fp_chain_is_complete(struct session *s, const struct hprof_sample *sample,
				 const struct frame *outermost, bool all_mapped)
{
	const char *name;

	if (!all_mapped)
		return false;
	if (sample->fp_end == FP_END_ZERO_LINK)
		return true;
	name = profile__frame_name(s->profile, outermost);
	return name && is_entry_function(name);
}

static bool sample_is_well_formed(const struct hprof_sample *sample, size_t size)
{
	if (size < sizeof(*sample) || sample->nr_user > HPROF_MAX_FP_DEPTH ||
	    sample->nr_kernel > HPROF_MAX_KERNEL_DEPTH || sample->stack_len > HPROF_MAX_STACK_COPY)
		return false;
	return size >= sizeof(*sample) + (sample->nr_user + sample->nr_kernel) * 8ull +
			       sample->stack_len;
}

/* Copies frame addresses out of the record (it may be unaligned in the ring buffer). */
static uint64_t record_u64(const struct hprof_sample *sample, uint32_t index)
{
	uint64_t v;

	memcpy(&v, sample->data + (size_t)index * 8, sizeof(v));
	return v;
}

int session__handle_sample(struct session *s, const struct hprof_sample *sample, size_t size)
{
	struct frame *frames = s->frames;
	struct process *proc;
	uint32_t n = 0;
	bool all_mapped = true;
	char comm[HPROF_COMM_LEN + 1] = { 0 };

	s->stats.samples++;
	s->stats.bytes += size;
	if (!sample_is_well_formed(sample, size)) {
		s->stats.malformed++;
		return 0;
	}
	memcpy(comm, sample->comm, HPROF_COMM_LEN);
	for (uint32_t i = 0; i < sample->nr_kernel; i++) {
		frames[n++] = (struct frame){
			.module = MODULE_KERNEL,
			.flags = i > 0 ? FRAME_CALLER : 0,
			.addr = record_u64(sample, sample->nr_user + i),
		};
	}
	if (sample->nr_user == 0) {
		s->stats.kernel_only++;
		return profile__add(s->profile, comm, NULL, frames, n);
	}
	proc = find_process(s, sample);
	if (!proc)
		return -ENOMEM;
	if (!proc->maps)
		s->stats.no_maps++;
	for (uint32_t i = 0; i < sample->nr_user; i++) {
		if (!resolve_user_frame(s, proc, record_u64(sample, i), i > 0, &frames[n++])) {
			all_mapped = false;
			s->stats.frames_unmapped++;
		}
	}
	if (fp_chain_is_complete(s, sample, &frames[n - 1], all_mapped))
		s->stats.fp_complete++;
	return profile__add(s->profile, comm, NULL, frames, n);
}

struct profile *session__profile(struct session *s)
{
	return s->profile;
}

const struct session_stats *session__stats(const struct session *s)
{
	return &s->stats;
}

void session__free(struct session *s)
{
	struct process *proc, *tmp;

	if (!s)
		return;
	HASH_ITER(hh, s->processes, proc, tmp) {
		HASH_DEL(s->processes, proc);
		process_maps__free(proc->maps);
		free(proc);
	}
	profile__free(s->profile);
	ksyms__free(s->ksyms);
	module_registry__free(s->modules);
	free(s->frames);
	free(s);
}
