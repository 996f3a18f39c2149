#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "binary/fetch_debug.h"
#include "binary/ksyms.h"
#include "binary/modules.h"
#include "proc/processes.h"
#include "proc/resolver.h"
#include "go/process.h"
#include "python/process.h"
#include "python/stack.h"
#include "unwind/code_cache.h"
#include "unwind/process_space.h"
#include "util/file_view.h"

/* Kernel frames, then the user stack with its Python frames. */
#define MAX_STACK_FRAMES (HPROF_MAX_KERNEL_DEPTH + HYBRID_MAX_FRAMES + HPROF_PY_MAX_FRAMES)
/* Binaries no process used for MODULE_IDLE_SWEEPS sweeps this far apart (in the samples'
 * time, so that a replay drops what its recording did) give their memory back. */
#define MODULE_SWEEP_NS (10 * 1000 * 1000 * 1000ull)

struct session {
	struct module_registry *modules;
	struct ksyms *ksyms;
	struct profile *profile;
	struct process_table *processes;
	struct resolver resolver;
	struct hybrid *hybrid;
	struct sample_stats stats;
	uint64_t next_sweep_ns;          /* 0: at the first sample's time */
	uint64_t next_view_drop_ns;
	struct frame *frames;            /* scratch, MAX_STACK_FRAMES */
	struct unwind_frame *user;       /* scratch, HYBRID_MAX_FRAMES */
	struct code_cache *code;         /* what was learned of code without CFI */
	bool no_scan;                    /* --no-scan: exact methods only */
	bool scan_only;                  /* HPROF_DEBUG=scan: scans only, to measure them */
	session_sample_fn sink;          /* NULL: samples count in profile */
	void *sink_ctx;
	struct python_procs *python;     /* NULL: Python frames are not placed (--python=off) */
	struct python_memory *python_memory; /* CPython processes' memory, as read */
	struct python_stack python_stack;
	struct go_procs *go; /* Go processes whose stack switches the kernel reads */
	struct fetch_debug_report debug_files; /* session__fetch_debug_files's */
	uint64_t anon_code_sampled_ns;   /* session__anon_code_sampled_ns */
};

/* HPROF_DEBUG=scan: code without CFI only by scanning (no analysis, no frame records). */
static bool scan_only_debug(void)
{
	const char *debug = getenv("HPROF_DEBUG");

	return debug && strstr(debug, "scan") != NULL;
}

/* /proc/kallsyms; HPROF_KALLSYMS names another file of its format (tests: a report on a
 * machine whose kernel symbols differ, or hide them). */
static const char *kallsyms_path(void)
{
	const char *path = getenv("HPROF_KALLSYMS");

	return path && path[0] ? path : "/proc/kallsyms";
}

int session__new(bool dwarf, struct session **out)
{
	return session__new_with_ksyms(dwarf, NULL, out);
}

int session__new_with_ksyms(bool dwarf, struct ksyms *ksyms, struct session **out)
{
	struct session *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s) {
		ksyms__free(ksyms);
		return -ENOMEM;
	}
	s->ksyms = ksyms;
	s->frames = calloc(MAX_STACK_FRAMES, sizeof(*s->frames));
	s->user = calloc(HYBRID_MAX_FRAMES, sizeof(*s->user));
	if (!s->frames || !s->user) {
		err = -ENOMEM;
		goto cleanup;
	}
	s->scan_only = scan_only_debug();
	err = hybrid__new(dwarf, &s->hybrid);
	if (!err && !(s->code = code_cache__new()))
		err = -ENOMEM;
	if (!err)
		err = module_registry__new(&s->modules);
	if (!err)
		err = process_table__new(&s->processes);
	if (err)
		goto cleanup;
	s->resolver.modules = s->modules;
	/* Without kallsyms kernel frames are still shown, as addresses. */
	if (!s->ksyms)
		ksyms__load(kallsyms_path(), &s->ksyms);
	err = profile__new(s->modules, s->ksyms, &s->profile);
	if (!err)
		err = (s->python_memory = python_memory__new()) ? 0 : -ENOMEM;
	if (!err)
		err = python_stack__init(&s->python_stack, s->modules, s->python_memory);
	if (!err)
		err = python_procs__new(s->python_memory, &s->python);
	if (!err)
		err = go_procs__new(&s->go);
	if (err)
		goto cleanup;
	*out = s;
	return 0;
cleanup:
	session__free(s);
	return err;
}

static struct process *find_process(struct session *s, const struct hprof_sample *sample)
{
	struct process *proc = process_table__get(s->processes, sample->pid);

	if (!proc)
		return NULL;
	if (!proc->counted) {
		proc->counted = true;
		s->stats.processes++;
	}
	/* A thread's own name, or the process's before its exec event was handled. */
	memcpy(proc->comm, sample->comm, HPROF_COMM_LEN);
	return proc;
}

void session__set_stack_base_hook(struct session *s, hybrid_thread_fn fn, void *ctx)
{
	hybrid__set_thread_hook(s->hybrid, fn, ctx);
}

void session__set_python_hook(struct session *s, python_proc_hook_fn fn, void *ctx)
{
	if (s->python)
		python_procs__set_hook(s->python, fn, ctx);
}

void session__set_python(struct session *s, enum session_python mode)
{
	if (mode == SESSION_PYTHON_OFF) {
		python_procs__free(s->python);
		s->python = NULL;
	}
	s->python_stack.keep_interpreter = mode == SESSION_PYTHON_NATIVE;
}

void session__set_go_hook(struct session *s, go_proc_hook_fn fn, void *ctx)
{
	go_procs__set_hook(s->go, fn, ctx);
}

int session__look_go_command(struct session *s, uint32_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	return go_procs__look_file(s->go, pid, path);
}

const struct go_proc_stats *session__go_stats(const struct session *s)
{
	return go_procs__stats(s->go);
}

const struct python_stats *session__python_stats(const struct session *s)
{
	return &s->python_stack.stats;
}

const struct python_proc *session__python_proc(struct session *s, uint32_t pid)
{
	struct process *proc;

	if (!s->python || !(proc = process_table__get(s->processes, pid)))
		return NULL;
	return python_procs__get(s->python, proc, &s->resolver);
}

int session__python_place(struct session *s, uint32_t pid, const struct python_chain *chain,
			  struct frame *frames, uint32_t *n, uint32_t max, uint32_t *origin,
			  enum python_reason *why)
{
	const struct python_proc *pp = session__python_proc(s, pid);

	*why = PYTHON_REASON_COUNT;
	if (!pp || pp->state == PYTHON_PROC_ABSENT)
		return s->python && !pp ? -ENOMEM : 0;
	return python_stack__place(&s->python_stack, pp, pid, chain, frames, n, max, origin,
				   why);
}

void session__set_maps_hook(struct session *s, session_maps_hook_fn fn, void *ctx)
{
	process_table__set_maps_hook(s->processes, fn, ctx);
}

void session__set_replay(struct session *s)
{
	s->resolver.replay = true;
	process_table__set_replay(s->processes);
	python_memory__set_replay(s->python_memory);
}

void session__set_python_memory_hook(struct session *s, python_memory_hook_fn fn, void *ctx)
{
	python_memory__set_hook(s->python_memory, fn, ctx);
}

int session__add_python_memory(struct session *s, uint32_t pid, uint64_t addr,
			       const void *bytes, size_t len)
{
	return python_memory__add(s->python_memory, pid, addr, bytes, len);
}

void session__track_process(struct session *s, uint32_t pid)
{
	process_table__get(s->processes, pid);
}

int session__load_maps(struct session *s, uint32_t pid, const char *text, size_t len)
{
	return process_table__load_maps(s->processes, pid, text, len);
}

/* What pid runs of Go, looked at anew when its mappings changed. 0 or -ENOMEM. */
static int session__look_go(struct session *s, uint32_t pid)
{
	struct process *proc = process_table__get(s->processes, pid);

	return proc ? go_procs__look(s->go, proc, &s->resolver) : -ENOMEM;
}

int session__handle_map_event(struct session *s, const struct map_event *e, const char *path)
{
	int err;

	/* a process's exit is its main thread's too; what a thread learned of its stack before
	 * execve is of an address space gone (the thread keeps its tid and start time) */
	if (e->type == MAP_EVENT_THREAD_EXIT || e->type == MAP_EVENT_EXIT ||
	    e->type == MAP_EVENT_EXEC)
		hybrid__forget_thread(s->hybrid, e->type == MAP_EVENT_THREAD_EXIT ? e->tid : e->pid);
	/* the process's JIT code goes with its address space, named for good first: a JIT
	 * may write its perf map or jitdump only as it ends (HotSpot's DumpPerfMapAtExit) */
	if (e->type == MAP_EVENT_EXIT || e->type == MAP_EVENT_EXEC) {
		if (s->python)
			python_procs__gone(s->python, e->pid);
		go_procs__gone(s->go, e->pid, e->type == MAP_EVENT_EXEC);
		python_stack__process_gone(&s->python_stack, e->pid);
		python_memory__forget_pid(s->python_memory, e->pid);
		module_registry__reload_jit(s->modules, e->pid);
		profile__settle_names(s->profile, e->pid);
		module_registry__process_gone(s->modules, e->pid);
	}
	err = process_table__apply(s->processes, e, path);
	/* a CPython's file mapped: the kernel learns the process now, in the order of its
	 * events (a replay does the same), not at its first sample, which comes a wakeup and
	 * the reorder window later; its samples between would have no Python frames */
	if (!err && s->python && e->type == MAP_EVENT_MMAP && (e->prot & PROT_EXEC) &&
	    python_file__maybe(path) && !session__python_proc(s, e->pid))
		err = -ENOMEM;
	/* a Go executable's first samples on g0 already need the kernel to read its switches */
	if (!err && e->type == MAP_EVENT_MMAP && (e->prot & PROT_EXEC))
		err = session__look_go(s, e->pid);
	return err;
}

void session__pin_mapped_file(struct session *s, const struct map_event *e, const char *path)
{
	const struct mapping m = {
		.start = e->start, .end = e->start + e->len, .inode = e->inode,
		.dev_major = e->dev_major, .dev_minor = e->dev_minor, .path = path,
	};

	if (e->type == MAP_EVENT_MMAP)
		module_registry__pin(s->modules, e->pid, &m);
}

uint64_t session__anon_code_sampled_ns(const struct session *s)
{
	return s->anon_code_sampled_ns;
}

void session__process_exit_seen(struct session *s, uint32_t pid)
{
	process_table__exit_seen(s->processes, pid);
}

const struct process_table_stats *session__process_stats(const struct session *s)
{
	return process_table__stats(s->processes);
}

struct module_registry *session__modules(struct session *s)
{
	return s->modules;
}

void session__set_no_scan(struct session *s, bool no_scan)
{
	s->no_scan = no_scan;
}

const struct code_cache_stats *session__code_stats(const struct session *s)
{
	return code_cache__stats(s->code);
}

/* The walk's view of proc (unwind/process_space.h). */
static struct process_view view_of(struct session *s, struct process *proc)
{
	return (struct process_view){ .proc = proc, .resolver = &s->resolver,
				      .modules = s->modules, .code = s->code,
				      .no_scan = s->no_scan, .scan_only = s->scan_only };
}

/* What the walks and the analysis did with code without CFI, for the summary. */
static void count_nocfi(struct session *s)
{
	const struct code_cache_stats *code = code_cache__stats(s->code);
	struct nocfi_stats *n = &s->stats.nocfi;
	struct unwind_cache_stats walk;

	hybrid__cache_stats(s->hybrid, &walk);
	n->analyses = code->analyses;
	memcpy(n->failed, code->failed, sizeof(n->failed));
	n->failed[CODE_OK] = 0;
	n->unreadable = code->unreadable;
	n->widened = code->widened;
	n->analysis_rejected = walk.analysis_rejected;
	n->analysis_ra_by_walk = walk.analysis_ra_by_walk;
	n->ra_moved = walk.analysis_ra_moved;
	n->ra_register = walk.analysis_ra_register;
	n->ra_top_word = walk.analysis_ra_top_word;
	n->frame_pointer_frames = walk.nocfi_frames[UNWIND_FOUND_FRAME_POINTER];
	n->scan_frames = walk.nocfi_frames[UNWIND_FOUND_SCAN];
	n->scan_rejected_code = walk.scan_rejected_code;
	n->scan_rejected_walk = walk.scan_rejected_walk;
	n->scan_rejected_stale = walk.scan_rejected_stale;
	n->scan_passed_over = walk.scan_passed_over;
	n->scan_through_jumps = walk.scan_through_jumps;
}

/* The sample's user stack, resolved to frames in out (stack->nr_frames of them). */
static struct user_stack user_stack(struct session *s, struct process *proc,
				    const struct hprof_sample *sample, struct frame *out)
{
	struct process_view c = view_of(s, proc);
	const struct hybrid_space space = process_view__space(&c);
	struct user_stack stack = hybrid__user_stack(s->hybrid, &space, sample, s->user);

	s->stats.unwind = *hybrid__stats(s->hybrid);
	count_nocfi(s);
	for (uint32_t i = 0; i < stack.nr_frames; i++) {
		if (!resolver__frame(&s->resolver, proc, s->user[i].pc, !s->user[i].exact, &out[i]))
			s->stats.frames_unmapped++;
	}
	return stack;
}

/* Pages of binaries read for CFI and names go back once a second (util/file_view.h). */
#define VIEW_DROP_NS (1000 * 1000 * 1000ull)

static void sweep_modules(struct session *s, uint64_t now_ns)
{
	if (now_ns >= s->next_view_drop_ns) {
		file_view__drop_touched();
		s->next_view_drop_ns = now_ns + VIEW_DROP_NS;
	}
	if (!s->next_sweep_ns)
		s->next_sweep_ns = now_ns + MODULE_SWEEP_NS;
	if (now_ns < s->next_sweep_ns)
		return;
	module_registry__sweep(s->modules);
	s->next_sweep_ns = now_ns + MODULE_SWEEP_NS;
}

/* Counts the sample's stack in the profile, or hands it to the sink with its labels (proc:
 * NULL for a stack without user frames, whose process is not looked up). */
static int count_sample(struct session *s, struct process *proc, const struct hprof_sample *sample,
			const char *comm, const char *root, const struct frame *frames, uint32_t n)
{
	struct profile_labels labels = { .pid = sample->pid, .tid = sample->tid };

	if (!s->sink)
		return profile__add(s->profile, comm, root, frames, n);
	if (proc) {
		process_table__read_labels(s->processes, proc);
		labels.process = proc->name[0] ? proc->name : NULL;
		labels.cgroup = proc->cgroup;
	}
	return s->sink(s->sink_ctx, comm, root, &labels, frames, n);
}

/* A CPython process's Python frames in place of its evaluator's (python/stack.h); user
 * frames follow the kernel's. */
static int python_frames(struct session *s, struct process *proc,
			 const struct hprof_sample *sample, struct frame *frames, uint32_t *n)
{
	const struct python_proc *pp = python_procs__get(s->python, proc, &s->resolver);
	uint32_t nr_user = *n - sample->nr_kernel;
	int err;

	if (!pp)
		return -ENOMEM;
	if (pp->state == PYTHON_PROC_ABSENT)
		return 0;
	err = python_stack__merge(&s->python_stack, pp, proc->pid, sample,
				  frames + sample->nr_kernel, &nr_user,
				  MAX_STACK_FRAMES - sample->nr_kernel);
	*n = sample->nr_kernel + nr_user;
	return err;
}

int session__handle_sample(struct session *s, const struct hprof_sample *sample, size_t size)
{
	struct frame *frames = s->frames;
	struct user_stack stack;
	struct process *proc;
	uint32_t n = 0;
	char comm[HPROF_COMM_LEN + 1] = { 0 };

	s->stats.samples++;
	s->stats.bytes += size;
	if (!hprof_sample__well_formed(sample, size)) {
		s->stats.malformed++;
		return 0;
	}
	s->stats.tail_windows += sample->tail_len > 0;
	sweep_modules(s, sample->timestamp_ns);
	memcpy(comm, sample->comm, HPROF_COMM_LEN);
	for (uint32_t i = 0; i < sample->nr_kernel; i++) {
		frames[n++] = (struct frame){
			.module = MODULE_KERNEL,
			.flags = i > 0 ? FRAME_CALLER : 0,
			.addr = hprof_sample__kernel_ip(sample, i),
		};
	}
	if (sample->nr_user == 0) {
		s->stats.kernel_only++;
		return count_sample(s, NULL, sample, comm, NULL, frames, n);
	}
	proc = find_process(s, sample);
	if (!proc || go_procs__look(s->go, proc, &s->resolver) != 0)
		return -ENOMEM;
	if (!proc->seeded)
		s->stats.no_maps++;
	stack = user_stack(s, proc, sample, frames + n);
	n += stack.nr_frames;
	if (module_registry__has_anon_code(s->modules, sample->pid))
		s->anon_code_sampled_ns = sample->timestamp_ns;
	if (s->python && python_frames(s, proc, sample, frames, &n) == -ENOMEM)
		return -ENOMEM;
	s->stats.methods[stack.method]++;
	if (stack.method != METHOD_TRUNCATED)
		return count_sample(s, proc, sample, comm, NULL, frames, n);
	s->stats.truncated[stack.reason]++;
	return count_sample(s, proc, sample, comm, hybrid__truncated_root(stack.reason), frames,
			    n);
}

void session__set_debuginfod(struct session *s, bool on)
{
	module_registry__set_debuginfod(s->modules, on);
}

int session__fetch_debug_files(struct session *s, double total_timeout_s, FILE *progress_out)
{
	int err;

	fetch_debug__free_report(&s->debug_files);
	err = fetch_debug__run(s->modules, total_timeout_s, progress_out, &s->debug_files);
	if (!err && fetch_debug__fetched(&s->debug_files))
		err = profile__recount_inline(s->profile);
	return err;
}

const struct fetch_debug_report *session__debug_files(const struct session *s)
{
	return &s->debug_files;
}

void session__settle_names(struct session *s)
{
	module_registry__reload_jit(s->modules, 0);
	profile__settle_names(s->profile, 0);
}

const struct ksyms *session__ksyms(const struct session *s)
{
	return s->ksyms;
}

void session__set_sample_sink(struct session *s, session_sample_fn fn, void *ctx)
{
	s->sink = fn;
	s->sink_ctx = ctx;
}

void session__unwind_cache_stats(const struct session *s, struct unwind_cache_stats *stats)
{
	hybrid__cache_stats(s->hybrid, stats);
}

int session__walk_sample(struct session *s, const struct hprof_sample *sample, size_t size,
			 struct unwind_frame *frames, uint32_t max, struct unwind_result *result)
{
	const struct unwind_regs regs = hybrid__sample_regs(sample);
	struct stack_copy copy, interrupted;
	struct process_view c = view_of(s, NULL);
	struct hybrid_space space;

	if (!hprof_sample__well_formed(sample, size) || sample->nr_user == 0 || sample->stack_len == 0)
		return -EINVAL;
	c.proc = find_process(s, sample);
	if (!c.proc)
		return -ENOMEM;
	space = process_view__space(&c);
	hybrid__sample_copy(sample, &copy, &interrupted);
	hybrid__walk(s->hybrid, &space, &regs, &copy, frames, max, result);
	return 0;
}

int session__walk_process(struct session *s, uint32_t pid, const struct unwind_regs *regs,
			  const struct stack_copy *copy, struct unwind_frame *frames, uint32_t max,
			  struct unwind_result *result)
{
	struct process_view c = view_of(s, process_table__get(s->processes, pid));
	struct hybrid_space space;

	if (!c.proc)
		return -ENOMEM;
	space = process_view__space(&c);
	hybrid__walk(s->hybrid, &space, regs, copy, frames, max, result);
	return 0;
}

int session__resolve_frame(struct session *s, uint32_t pid, uint64_t addr, bool caller,
			   struct frame *f)
{
	struct process *proc = process_table__get(s->processes, pid);

	if (!proc)
		return -ENOMEM;
	return resolver__frame(&s->resolver, proc, addr, caller, f) ? 0 : -ENOENT;
}

struct profile *session__profile(struct session *s)
{
	return s->profile;
}

const struct sample_stats *session__stats(const struct session *s)
{
	return &s->stats;
}

struct run_summary session__summary(struct session *s, double duration_s, unsigned frequency,
				    bool no_dwarf, const uint64_t *kernel_counters,
				    uint64_t sideband_lost)
{
	return (struct run_summary){
		.stats = &s->stats,
		.processes = process_table__stats(s->processes),
		.profile = s->profile,
		.modules = s->modules,
		.duration_s = duration_s,
		.frequency = frequency,
		.no_dwarf = no_dwarf,
		.kernel_counters = kernel_counters,
		.sideband_lost = sideband_lost,
		.python = s->python ? &s->python_stack.stats : NULL,
		.go = go_procs__stats(s->go),
		.debug_files = &s->debug_files,
	};
}

void session__memory(const struct session *s, struct memory_stats *m)
{
	size_t sampled;

	memset(m, 0, sizeof(*m));
	m->processes = process_table__count(s->processes, &sampled);
	m->processes_sampled = sampled;
	m->threads = hybrid__thread_count(s->hybrid);
	module_registry__memory(s->modules, &m->modules);
	profile__memory(s->profile, &m->profile);
}

void session__free(struct session *s)
{
	if (!s)
		return;
	process_table__free(s->processes);
	python_procs__free(s->python);
	go_procs__free(s->go);
	python_stack__fini(&s->python_stack);
	python_memory__free(s->python_memory);
	profile__free(s->profile);
	ksyms__free(s->ksyms);
	fetch_debug__free_report(&s->debug_files);
	module_registry__free(s->modules);
	hybrid__free(s->hybrid);
	code_cache__free(s->code);
	free(s->frames);
	free(s->user);
	free(s);
}
