#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

#include "binary/modules.h"
#include "proc/processes.h"
#include "proc/threads.h"
#include "binary/symbols.h"

struct session {
	struct module_registry *modules;
	struct ksyms *ksyms;
	struct profile *profile;
	struct process_table *processes;
	struct session_stats stats;
	bool dwarf;
	bool replay; /* a capture: no live process to read perf map files of */
	struct frame *frames;            /* scratch, MAX_STACK_FRAMES */
	struct unwind_frame *walked;     /* scratch, UNWIND_MAX_FRAMES */
	struct unwind_cache *unwind_cache;
	session_stack_base_fn stack_base_hook;
	void *stack_base_ctx;
	struct thread_table *threads;
	/* HPROF_DEBUG=unwind[:N]: walks still to print step by step on stderr. */
	uint64_t walks_to_trace;
	/* Learned from the sample being handled: the outermost frame's sp when its walk
	 * reached the entry (0 otherwise), where its thread's stack ends; and when its FP chain
	 * proved right, the frames beyond the chain's end. */
	uint64_t walk_base;
	bool tail_learned;
	uint32_t nr_tail;
	struct unwind_frame tail[THREAD_TAIL_FRAMES];
};

/* The DWARF walk from the FP chain's outermost frame goes through a few frames of libc's
 * start-up code; more than this is not a start-up path. */
#define FP_TAIL_MAX_FRAMES 64

/* Kernel frames, then the FP chain's user frames, and after them (moved down once
 * chosen) the DWARF walk's frames with a stitched FP chain and the walk from its end. */
#define MAX_STACK_FRAMES                                                                  \
	(HPROF_MAX_KERNEL_DEPTH + HPROF_MAX_FP_DEPTH + UNWIND_MAX_FRAMES + HPROF_MAX_FP_DEPTH + \
	 FP_TAIL_MAX_FRAMES)

static const char *const method_names[METHOD_COUNT] = {
	[METHOD_FP] = "fp",
	[METHOD_DWARF] = "dwarf",
	[METHOD_DWARF_FP] = "dwarf+fp",
	[METHOD_TRUNCATED] = "truncated",
};

static const char *const truncated_roots[TRUNCATED_COUNT] = {
	[UNWIND_END_COMPLETE] = "[truncated]",
	[UNWIND_END_COPY_SHORT] = "[truncated: copy too short]",
	[UNWIND_END_NO_CFI] = "[truncated: no CFI for pc]",
	[UNWIND_END_UNSUPPORTED] = "[truncated: unsupported rule]",
	[UNWIND_END_UNMAPPED] = "[truncated: pc outside any known mapping]",
	[UNWIND_END_BAD_FRAME] = "[truncated: CFA did not move up]",
	[UNWIND_END_DEPTH] = "[truncated: too deep]",
	[TRUNCATED_FP_ONLY] = "[truncated: frame-pointer chain broken]",
	[TRUNCATED_NO_COPY] = "[truncated: no stack copy]",
};

const char *session__method_name(enum stack_method m)
{
	return m < METHOD_COUNT ? method_names[m] : "?";
}

const char *session__truncated_root(unsigned reason)
{
	return reason < TRUNCATED_COUNT ? truncated_roots[reason] : "[truncated]";
}

/* HPROF_DEBUG=unwind traces every walk, unwind:N the first N. */
static uint64_t walks_to_trace(void)
{
	const char *debug = getenv("HPROF_DEBUG"), *opt;

	if (!debug || !(opt = strstr(debug, "unwind")))
		return 0;
	opt += strlen("unwind");
	return *opt == ':' ? strtoull(opt + 1, NULL, 10) : UINT64_MAX;
}

int session__new(bool dwarf, struct session **out)
{
	struct session *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->dwarf = dwarf;
	s->walks_to_trace = walks_to_trace();
	s->frames = calloc(MAX_STACK_FRAMES, sizeof(*s->frames));
	s->walked = calloc(UNWIND_MAX_FRAMES, sizeof(*s->walked));
	s->unwind_cache = unwind_cache__new();
	s->threads = thread_table__new();
	if (!s->frames || !s->walked || !s->unwind_cache || !s->threads) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = module_registry__new(&s->modules);
	if (!err)
		err = process_table__new(&s->processes);
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

void session__set_stack_base_hook(struct session *s, session_stack_base_fn fn, void *ctx)
{
	s->stack_base_hook = fn;
	s->stack_base_ctx = ctx;
}

void session__set_maps_hook(struct session *s, session_maps_hook_fn fn, void *ctx)
{
	process_table__set_maps_hook(s->processes, fn, ctx);
}

void session__set_replay(struct session *s)
{
	s->replay = true;
	process_table__set_replay(s->processes);
}

void session__track_process(struct session *s, uint32_t pid)
{
	process_table__get(s->processes, pid);
}

int session__load_maps(struct session *s, uint32_t pid, const char *text, size_t len)
{
	return process_table__load_maps(s->processes, pid, text, len);
}

int session__handle_map_event(struct session *s, const struct map_event *e, const char *path)
{
	return process_table__apply(s->processes, e, path);
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

const struct process_table_stats *session__process_stats(const struct session *s)
{
	return process_table__stats(s->processes);
}

struct module_registry *session__modules(struct session *s)
{
	return s->modules;
}

static struct mapping *find_mapping(struct session *s, struct process *proc, uint64_t addr)
{
	(void)s;
	return process__find_mapping(proc, addr);
}

/* The module behind a mapping, with its load bias, looked up once per mapping. Code in
 * no file (not even the vDSO's image) is the process's anonymous code: JIT code, absolute
 * addresses, named from its perf map (which a replay does not have). */
static struct module *mapping_module(struct session *s, struct process *proc, struct mapping *m)
{
	if (m->module)
		return m->module;
	if (m->path[0] != '/' && strcmp(m->path, "[vdso]") != 0) {
		m->module = module_registry__anon_code(s->modules, proc->pid, m->path, !s->replay);
		m->bias = 0;
	} else {
		m->module = s->replay ? module_registry__get(s->modules, m->path)
				      : module_registry__get_mapped(s->modules, proc->pid, m);
		if (m->module)
			m->bias_err = module__bias(m->module, m, &m->bias);
	}
	return m->module;
}

/* Resolves a user address to a frame; returns false when no mapping holds it. */
static bool resolve_user_frame(struct session *s, struct process *proc, uint64_t addr,
			       bool caller, struct frame *f)
{
	struct mapping *m = find_mapping(s, proc, addr);
	struct module *mod;

	f->flags = caller ? FRAME_CALLER : 0;
	f->addr = addr;
	if (!m) {
		f->module = MODULE_UNMAPPED;
		return false;
	}
	mod = mapping_module(s, proc, m);
	if (!mod) {
		f->module = MODULE_ANON;
		return true;
	}
	f->module = mod->id;
	/* Read the perf map while the process lives: its uid vouches for the file, and a
	 * JIT appends to it as it compiles. */
	if (mod->perf_map)
		perf_map__lookup(mod->perf_map, addr);
	/* Without a readable ELF, name the frame by its offset in the file. */
	f->addr = m->bias_err ? addr - m->start + m->file_offset : addr - (uint64_t)m->bias;
	return true;
}

struct walk_ctx {
	struct session *s;
	struct process *proc;
};

/* unwind_find_map_fn over a process's mappings. */
static int find_map(void *ctx, uint64_t pc, struct unwind_map *map)
{
	struct walk_ctx *w = ctx;
	struct mapping *m;
	struct module *mod;

	m = find_mapping(w->s, w->proc, pc);
	if (!m)
		return -ENOENT;
	mod = mapping_module(w->s, w->proc, m);
	if (!mod || m->bias_err)
		return -ENODATA;
	map->table = module_registry__unwind_table(w->s->modules, mod);
	if (!map->table)
		return -ENODATA;
	map->start = m->start;
	map->end = m->end;
	map->bias = (uint64_t)m->bias;
	return 0;
}

/* The DWARF walk over a copy of one of proc's stacks. */
static void walk_in_process(struct session *s, struct process *proc,
			    const struct unwind_regs *regs, const struct stack_copy *copy,
			    struct unwind_frame *frames, uint32_t max, struct unwind_result *result)
{
	struct walk_ctx w = { .s = s, .proc = proc };
	const struct unwind_space space = { .find_map = find_map, .ctx = &w, .id = proc->space_id };

	if (s->walks_to_trace) {
		s->walks_to_trace--;
		fprintf(stderr, "unwind: pid %u\n", proc->pid);
		unwind__trace(regs, copy, &space, s->unwind_cache, stderr);
	}
	unwind__walk(regs, copy, &space, s->unwind_cache, frames, max, result);
}

/* Functions a process's or thread's stack starts in: _start and clone/clone3 zero rbp
 * and mark their return address undefined. */
static bool is_entry_function(const char *name)
{
	static const char *const entries[] = {
		"_start", "clone", "clone3", "__clone", "__clone3", "thread_start",
	};

	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		if (strcmp(name, entries[i]) == 0)
			return true;
	}
	return false;
}

/* Distributions build libc's start-up code without frame pointers, so the best an FP chain
 * through a correct program can reach is main's caller or a thread's start routine. In
 * frame-pointer-only mode that counts as complete; with DWARF the walk goes on to _start. */
static bool is_libc_start_function(const char *name)
{
	return strcmp(name, "__libc_start_call_main") == 0 ||
	       strcmp(name, "__libc_start_main") == 0 || strcmp(name, "start_thread") == 0;
}

/* The chain reached the outermost frame through executable mappings only. */
static bool fp_chain_is_complete(struct session *s, const struct frame *outermost,
				 bool all_mapped)
{
	const char *name;

	if (!all_mapped)
		return false;
	name = profile__frame_name(s->profile, outermost);
	if (!name)
		return false;
	return is_entry_function(name) || (!s->dwarf && is_libc_start_function(name));
}

/* The user memory a sample carries: the stack copied from sp, and the window copied from
 * the FP chain's outermost frame record when the copy did not reach it. */
struct sample_memory {
	struct stack_copy stack;
	struct stack_copy tail;
};

static struct sample_memory sample_memory(const struct hprof_sample *sample)
{
	return (struct sample_memory){
		.stack = { .bytes = hprof_sample__stack(sample), .base = sample->user_sp,
			   .len = sample->stack_len },
		.tail = { .bytes = hprof_sample__tail(sample), .base = sample->fp_tail_frame,
			  .len = sample->tail_len },
	};
}

static bool sample_memory__read_u64(const struct sample_memory *mem, uint64_t addr,
				    uint64_t *value)
{
	return stack_copy__read_u64(&mem->stack, addr, value) ||
	       stack_copy__read_u64(&mem->tail, addr, value);
}

/* The CFI at pc agrees that rbp is its function's frame pointer. When it does not (the
 * function keeps no frame pointer, or is in its prologue), the kernel's chain skipped the
 * function's caller even if it looks complete. Without CFI there is nothing to contradict
 * the chain. */
static bool frame_uses_frame_pointer(struct walk_ctx *w, uint64_t ip)
{
	const struct unwind_row *row;
	struct unwind_rules rules;
	struct unwind_map map;

	if (find_map(w, ip, &map) != 0)
		return true;
	row = unwind_table__find(map.table, ip - map.bias);
	if (!row)
		return true;
	unwind_table__decode(map.table, row, &rules);
	return rules.cfa == UNWIND_CFA_BP_OFFSET;
}

/* Where the DWARF walk stopped (it ran out of copied stack, or met code without usable
 * CFI, such as JIT code), continue with the kernel's FP chain if the walk's last frame is
 * one of the chain's: same pc, and its rbp is the chain's frame address there. The chain's
 * next return address is then that frame's caller. The chain's frame addresses are
 * rebuilt from the copy, up to the first one outside it. Returns the index of the first
 * FP return address to append, or 0 when the two do not join. */
static uint32_t stitch_point(const struct hprof_sample *sample, const struct sample_memory *mem,
			     const struct unwind_regs *last, bool last_owns_bp)
{
	uint64_t bp = sample->user_bp;

	if (!last->bp_valid)
		return 0;
	for (uint32_t i = 1; i < sample->nr_user; i++) {
		/* The chain holds no return address into the function owning the sample's own
		 * rbp when the leaf keeps no frame pointer: there the walk's last frame must be
		 * that function by its own rules (a function that merely left rbp alone has it
		 * too). */
		if (bp == last->bp && (i == 1 ? last_owns_bp
					      : hprof_sample__user_ip(sample, i - 1) == last->ip))
			return i;
		if (!sample_memory__read_u64(mem, bp, &bp))
			return 0;
	}
	return 0;
}

/* The frame (pc, or the call before a return address) is the entry point's own code, the
 * outermost frame of a process. A hand-written _start, such as the dynamic loader's, has
 * no CFI to say that its return address is undefined; the ELF header says where it is. */
static bool is_entry_code(struct session *s, struct process *proc, uint64_t pc, bool caller)
{
	struct mapping *m = find_mapping(s, proc, pc);
	struct module *mod = m ? mapping_module(s, proc, m) : NULL;
	uint64_t entry, vaddr;

	if (!mod || m->bias_err || !(entry = elf_symbols__entry(mod->syms)))
		return false;
	vaddr = pc - (uint64_t)m->bias - (caller ? 1 : 0);
	return vaddr >= entry && vaddr - entry < ELF_ENTRY_CODE_MAX;
}

/* Walk ends after which the FP chain may carry on. */
static bool fp_may_continue(enum unwind_end end)
{
	return end == UNWIND_END_COPY_SHORT || end == UNWIND_END_NO_CFI ||
	       end == UNWIND_END_UNSUPPORTED || end == UNWIND_END_UNMAPPED ||
	       end == UNWIND_END_BAD_FRAME;
}

static uint32_t add_fp_frames(struct session *s, struct process *proc,
			      const struct hprof_sample *sample, uint32_t from, struct frame *out,
			      bool *all_mapped)
{
	uint32_t n = 0;

	*all_mapped = true;
	for (uint32_t i = from; i < sample->nr_user; i++) {
		if (!resolve_user_frame(s, proc, hprof_sample__user_ip(sample, i), i > 0, &out[n++]))
			*all_mapped = false;
	}
	return n;
}

/* The frames beyond a right FP chain's end, for the thread's later samples. */
static void keep_tail(struct session *s, const struct unwind_frame *frames, uint32_t nr)
{
	if (nr > HPROF_MAX_LEARNED_TAIL)
		return;
	memcpy(s->tail, frames, nr * sizeof(*frames));
	s->nr_tail = nr;
	s->tail_learned = true;
}

/* A sample whose chain ended where its thread's right chains end carries no copy of the
 * stack there (the kernel saw to that): the frames beyond are the ones learned. */
static bool finish_from_thread(struct session *s, struct walk_ctx *w,
			       const struct hprof_sample *sample, struct frame *out, uint32_t *added)
{
	const struct thread_info *ti = thread_table__get(s->threads, sample->tid, 0);

	if (!ti || ti->fp_tail != sample->fp_tail_frame ||
	    ti->tail_ip != hprof_sample__user_ip(sample, sample->nr_user - 1))
		return false;
	for (uint32_t i = 0; i < ti->nr_tail; i++)
		resolve_user_frame(s, w->proc, ti->tail[i].pc, !ti->tail[i].exact, &out[(*added)++]);
	s->stats.fp_tails_learned++;
	return true;
}

/* Libc's start-up code keeps no frame pointers, so an FP chain ends in it (main's caller,
 * a thread's start routine) rather than at the entry. The DWARF walk goes on from the
 * chain's outermost frame, whose registers the frame record gives: the caller's sp is
 * just above the record, its rbp the value saved in it. Appends the frames beyond that
 * frame to out and returns true when the walk reaches the entry. */
static bool finish_fp_chain(struct session *s, struct walk_ctx *w,
			    const struct hprof_sample *sample, const struct sample_memory *mem,
			    struct frame *out, uint32_t *added)
{
	uint64_t record = sample->fp_tail_frame, saved_bp, ra;
	uint64_t outermost = hprof_sample__user_ip(sample, sample->nr_user - 1);
	struct unwind_result result;
	struct unwind_regs regs;

	*added = 0;
	if (record == 0 || sample->nr_user < 2)
		return false;
	/* The kernel copied only the leaf: the thread's frames beyond are known. */
	if (sample->flags & SAMPLE_COPY_FP)
		return finish_from_thread(s, w, sample, out, added);
	if (!sample_memory__read_u64(mem, record, &saved_bp) ||
	    !sample_memory__read_u64(mem, record + 8, &ra))
		return finish_from_thread(s, w, sample, out, added);
	if (ra != outermost)
		return false;
	/* A return address: its frame's rules are the call instruction's, at ra - 1. */
	regs = (struct unwind_regs){
		.ip = outermost - 1, .sp = record + 16, .bp = saved_bp, .bp_valid = true,
	};
	walk_in_process(s, w->proc, &regs, sample->tail_len ? &mem->tail : &mem->stack, s->walked,
			FP_TAIL_MAX_FRAMES, &result);
	if (result.end == UNWIND_END_COPY_SHORT)
		return finish_from_thread(s, w, sample, out, added);
	if (result.end != UNWIND_END_COMPLETE)
		return false;
	for (uint32_t i = 1; i < result.nr_frames; i++)
		resolve_user_frame(s, w->proc, s->walked[i].pc, !s->walked[i].exact, &out[(*added)++]);
	s->stats.fp_tails++;
	s->walk_base = result.last.sp;
	keep_tail(s, s->walked + 1, result.nr_frames - 1);
	return true;
}

/* The chain ends at the entry: by its own frames' rules, or, where there is no CFI, by
 * the name of the function it ends in. */
static bool fp_chain_reaches_entry(struct session *s, struct walk_ctx *w,
				   const struct hprof_sample *sample, const struct sample_memory *mem,
				   const struct frame *outermost, struct frame *out,
				   uint32_t *added)
{
	const char *name;

	if (finish_fp_chain(s, w, sample, mem, out, added))
		return true;
	if (is_entry_code(s, w->proc, hprof_sample__user_ip(sample, sample->nr_user - 1),
			  sample->nr_user > 1))
		return true;
	name = profile__frame_name(s->profile, outermost);
	return name && is_entry_function(name);
}

/* Every frame of the FP chain is the walk's, and the walk went on past the chain's end:
 * this thread's chains can be trusted where they end there. */
static bool chain_matches_walk(const struct hprof_sample *sample,
			       const struct unwind_frame *walked, uint32_t nr_walked)
{
	if (sample->fp_tail_frame == 0 || nr_walked <= sample->nr_user)
		return false;
	for (uint32_t i = 0; i < sample->nr_user; i++) {
		if (walked[i].pc != hprof_sample__user_ip(sample, i))
			return false;
	}
	return true;
}

/* A walk over only the leaf's copy that ran through the chain's end: the frames beyond
 * are the ones learned for the thread, from the frame whose pc is the learned outermost
 * return address on. */
static bool reached_learned_tail(struct session *s, struct walk_ctx *w,
				 const struct hprof_sample *sample, uint32_t nr_walked,
				 struct frame *out, uint32_t *n)
{
	const struct thread_info *ti;
	uint32_t added = 0;

	if (!(sample->flags & SAMPLE_COPY_FP) ||
	    !(ti = thread_table__get(s->threads, sample->tid, 0)) || !ti->fp_tail)
		return false;
	for (uint32_t i = 1; i < nr_walked; i++) {
		if (s->walked[i].pc != ti->tail_ip)
			continue;
		if (!finish_from_thread(s, w, sample, out + i + 1, &added))
			return false;
		*n = i + 1 + added;
		return true;
	}
	return false;
}

/* The DWARF walk over the sample's copy into out; where it stops short, the FP chain from
 * where the two join, finished by a DWARF walk from the chain's end. Returns the frame
 * count and sets *method and *reason. */
static uint32_t walk_dwarf(struct session *s, struct walk_ctx *w,
			   const struct hprof_sample *sample, const struct sample_memory *mem,
			   struct frame *out, enum stack_method *method, unsigned *reason)
{
	const struct unwind_regs regs = {
		.ip = sample->user_ip, .sp = sample->user_sp, .bp = sample->user_bp, .bp_valid = true,
	};
	const struct unwind_frame *last;
	struct unwind_result result;
	uint32_t n = 0, join, fp, tail;
	bool all_mapped;

	walk_in_process(s, w->proc, &regs, &mem->stack, s->walked, UNWIND_MAX_FRAMES, &result);
	for (uint32_t i = 0; i < result.nr_frames; i++)
		resolve_user_frame(s, w->proc, s->walked[i].pc, !s->walked[i].exact, &out[n++]);
	if (result.end == UNWIND_END_NO_CFI && result.nr_frames > 0 &&
	    is_entry_code(s, w->proc, s->walked[result.nr_frames - 1].pc,
			  !s->walked[result.nr_frames - 1].exact))
		result.end = UNWIND_END_COMPLETE;
	*reason = result.end;
	*method = result.end == UNWIND_END_COMPLETE ? METHOD_DWARF : METHOD_TRUNCATED;
	if (result.end == UNWIND_END_COMPLETE && !result.started_stack) {
		s->walk_base = result.last.sp;
		if (chain_matches_walk(sample, s->walked, result.nr_frames))
			keep_tail(s, s->walked + sample->nr_user, result.nr_frames - sample->nr_user);
	}
	if (!fp_may_continue(result.end))
		return n;
	if (reached_learned_tail(s, w, sample, result.nr_frames, out, &n)) {
		*method = METHOD_DWARF_FP;
		return n;
	}
	last = &s->walked[result.nr_frames - 1];
	join = stitch_point(sample, mem, &result.last,
			    frame_uses_frame_pointer(w, last->exact ? last->pc : last->pc - 1));
	if (join == 0)
		return n;
	fp = add_fp_frames(s, w->proc, sample, join, out + n, &all_mapped);
	if (fp == 0 || !all_mapped ||
	    !fp_chain_reaches_entry(s, w, sample, mem, &out[n + fp - 1], out + n + fp, &tail))
		return n;
	*method = METHOD_DWARF_FP;
	return n + fp + tail;
}

/* Picks the user stack: the FP chain when it reaches the entry and the leaf keeps a frame
 * pointer; else the DWARF walk, continued on the FP chain where it cannot go on; else the
 * FP chain finished by a DWARF walk from its end; else whatever the walk found, marked
 * truncated. Returns the frame count. */
static uint32_t user_stack(struct session *s, struct process *proc,
			   const struct hprof_sample *sample, struct frame *out,
			   enum stack_method *method, unsigned *reason)
{
	struct walk_ctx w = { .s = s, .proc = proc };
	const struct sample_memory mem = sample_memory(sample);
	bool all_mapped, fp_complete, leaf_fp;
	uint32_t n, walked, tail;

	n = add_fp_frames(s, proc, sample, 0, out, &all_mapped);
	fp_complete = fp_chain_is_complete(s, &out[n - 1], all_mapped);
	if (fp_complete)
		s->stats.fp_complete++;
	leaf_fp = !s->dwarf || frame_uses_frame_pointer(&w, sample->user_ip);
	if (fp_complete && leaf_fp) {
		*method = METHOD_FP;
		return n;
	}
	if (!s->dwarf || sample->stack_len == 0) {
		*method = fp_complete ? METHOD_FP : METHOD_TRUNCATED;
		*reason = s->dwarf ? TRUNCATED_NO_COPY : TRUNCATED_FP_ONLY;
		return n;
	}
	walked = walk_dwarf(s, &w, sample, &mem, out + n, method, reason);
	if (*method != METHOD_TRUNCATED) {
		memmove(out, out + n, walked * sizeof(*out));
		return walked;
	}
	/* The walk could not start or join the chain: the chain alone, if the leaf agrees. */
	if (leaf_fp && all_mapped && finish_fp_chain(s, &w, sample, &mem, out + n, &tail)) {
		*method = METHOD_DWARF_FP;
		return n + tail;
	}
	/* A complete-looking FP chain beats a truncated walk. */
	if (fp_complete) {
		*method = METHOD_FP;
		return n;
	}
	memmove(out, out + n, walked * sizeof(*out));
	return walked;
}

/* Keeps what the sample taught about its thread, and tells the kernel whenever that
 * changed or the kernel did not use it (it forgets a thread when it exits; tids come back):
 * where its stack ends, and where its FP chains end when they are right. A copy that the
 * learned facts made too short unlearns them. */
static void learn_thread(struct session *s, const struct hprof_sample *sample,
			 enum stack_method method, unsigned reason)
{
	bool used = sample->flags & (SAMPLE_COPY_LEARNED | SAMPLE_COPY_FP), tell = false;
	struct thread_info *ti;

	/* Learned on replays too: their samples that copied only the leaf need it. */
	ti = thread_table__get(s->threads, sample->tid, method != METHOD_TRUNCATED);
	if (!ti)
		return;
	/* A truncated stack of a sample that copied only the leaf says nothing against the
	 * chain's end (the kernel checked it): it is the leaf that could not be walked. */
	if (method == METHOD_TRUNCATED) {
		if ((sample->flags & SAMPLE_COPY_LEARNED) && reason == UNWIND_END_COPY_SHORT &&
		    ti->base) {
			ti->base = 0;
			tell = true;
		}
	} else {
		if (s->walk_base && s->walk_base != ti->base) {
			ti->base = s->walk_base;
			tell = true;
		}
		if (s->tail_learned && !(sample->flags & SAMPLE_COPY_FP) &&
		    ti->fp_tail != sample->fp_tail_frame) {
			ti->fp_tail = sample->fp_tail_frame;
			ti->tail_ip = hprof_sample__user_ip(sample, sample->nr_user - 1);
			ti->nr_tail = s->nr_tail;
			memcpy(ti->tail, s->tail, s->nr_tail * sizeof(*s->tail));
			tell = true;
		}
		tell |= !used && (ti->base || ti->fp_tail);
	}
	if (tell && s->stack_base_hook)
		s->stack_base_hook(s->stack_base_ctx, sample->tid, ti->base, ti->fp_tail,
				   ti->tail_ip);
}

int session__handle_sample(struct session *s, const struct hprof_sample *sample, size_t size)
{
	struct frame *frames = s->frames;
	enum stack_method method;
	unsigned reason = 0;
	struct process *proc;
	uint32_t n = 0, user;
	char comm[HPROF_COMM_LEN + 1] = { 0 };

	s->stats.samples++;
	s->stats.bytes += size;
	if (!hprof_sample__well_formed(sample, size)) {
		s->stats.malformed++;
		return 0;
	}
	s->stats.tail_windows += sample->tail_len > 0;
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
		return profile__add(s->profile, comm, NULL, frames, n);
	}
	proc = find_process(s, sample);
	if (!proc)
		return -ENOMEM;
	if (!proc->seeded)
		s->stats.no_maps++;
	s->walk_base = 0;
	s->tail_learned = false;
	user = user_stack(s, proc, sample, frames + n, &method, &reason);
	learn_thread(s, sample, method, reason);
	for (uint32_t i = n; i < n + user; i++)
		s->stats.frames_unmapped += frames[i].module == MODULE_UNMAPPED;
	n += user;
	s->stats.methods[method]++;
	if (method != METHOD_TRUNCATED)
		return profile__add(s->profile, comm, NULL, frames, n);
	s->stats.truncated[reason]++;
	return profile__add(s->profile, comm, session__truncated_root(reason), frames, n);
}

void session__unwind_cache_stats(const struct session *s, struct unwind_cache_stats *stats)
{
	unwind_cache__stats(s->unwind_cache, stats);
}

int session__walk_sample(struct session *s, const struct hprof_sample *sample, size_t size,
			 struct unwind_frame *frames, uint32_t max, struct unwind_result *result)
{
	const struct unwind_regs regs = {
		.ip = sample->user_ip, .sp = sample->user_sp, .bp = sample->user_bp, .bp_valid = true,
	};
	struct process *proc;
	struct stack_copy copy;

	if (!hprof_sample__well_formed(sample, size) || sample->nr_user == 0 || sample->stack_len == 0)
		return -EINVAL;
	proc = find_process(s, sample);
	if (!proc)
		return -ENOMEM;
	copy = sample_memory(sample).stack;
	walk_in_process(s, proc, &regs, &copy, frames, max, result);
	return 0;
}

/* A process looked up outside of samples (hprof stack): its maps read on first use. */
static struct process *live_process(struct session *s, uint32_t pid)
{
	return process_table__get(s->processes, pid);
}

int session__walk_process(struct session *s, uint32_t pid, const struct unwind_regs *regs,
			  const struct stack_copy *copy, struct unwind_frame *frames, uint32_t max,
			  struct unwind_result *result)
{
	struct process *proc = live_process(s, pid);

	if (!proc)
		return -ENOMEM;
	walk_in_process(s, proc, regs, copy, frames, max, result);
	return 0;
}

int session__resolve_frame(struct session *s, uint32_t pid, uint64_t addr, bool caller,
			   struct frame *f)
{
	struct process *proc = live_process(s, pid);

	if (!proc)
		return -ENOMEM;
	return resolve_user_frame(s, proc, addr, caller, f) ? 0 : -ENOENT;
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
	if (!s)
		return;
	process_table__free(s->processes);
	profile__free(s->profile);
	ksyms__free(s->ksyms);
	module_registry__free(s->modules);
	free(s->frames);
	free(s->walked);
	unwind_cache__free(s->unwind_cache);
	thread_table__free(s->threads);
	free(s);
}
