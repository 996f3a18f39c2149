/* CPython frames, read when a sample of a process userspace recognised as CPython is taken
 * (common/python.h): the sampled thread's thread state, found by its pthread (the fs
 * base, which CPython keeps as PyThreadState.thread_id), then its frame chain, innermost
 * first. From 3.11 the frames live in chunks on the heap, not on the C stack: the stack
 * copy does not hold them, so they are read here, while they are what the thread runs.
 * Everything read through the process's memory is untrusted: each read may fail, and
 * each loop is bounded. Included by hprof.bpf.c. */
#ifndef HPROF_PYTHON_BPF_H
#define HPROF_PYTHON_BPF_H

#include "python.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct hprof_python_proc);
} python_procs SEC(".maps");

/* The thread state last found for a thread: checked (its thread_id is the thread's fs
 * base) before it is used, so a stale one costs a search, never a wrong chain. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, HPROF_MAX_THREADS);
	__type(key, __u32); /* tid */
	__type(value, __u64);
} python_tstates SEC(".maps");

/* The largest offset of a frame field read, plus its 8 bytes: one read per frame. */
#define PY_FRAME_READ 128

/* Each CPU's copy of the frame being read: kept off the BPF stack, which the sample's
 * handler and bpf_loop's callbacks share. */
struct py_frame_buf {
	__u8 bytes[PY_FRAME_READ];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_frame_buf);
} python_frame_bufs SEC(".maps");

static __always_inline bool read_word(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr) == 0;
}

/* The search of an interpreter's thread states (bpf_loop's context). */
struct py_thread_search {
	const struct hprof_python_proc *proc;
	__u64 fs_base;
	__u64 tstate; /* the one to look at next; the thread's once found */
	bool found, failed;
};

static long py_thread_step(__u64 i, void *ctx)
{
	struct py_thread_search *t = ctx;
	const struct hprof_python_proc *proc = t->proc;
	__u64 thread_id;

	if (t->tstate == 0)
		return 1;
	if (!read_word(t->tstate + proc->tstate_thread_id, &thread_id)) {
		t->failed = true;
		return 1;
	}
	if (thread_id == t->fs_base) {
		t->found = true;
		return 1;
	}
	if (!read_word(t->tstate + proc->tstate_next, &t->tstate)) {
		t->failed = true;
		return 1;
	}
	return 0;
}

/* The thread's PyThreadState, 0 with *status set when there is none to read. */
static __always_inline __u64 py_thread_state(const struct hprof_python_proc *proc, __u32 tid,
					     __u64 fs_base, enum hprof_py_status *status)
{
	struct py_thread_search t = { .proc = proc, .fs_base = fs_base };
	__u64 *cached = bpf_map_lookup_elem(&python_tstates, &tid);
	__u64 interp, thread_id;

	if (cached && *cached && read_word(*cached + proc->tstate_thread_id, &thread_id) &&
	    thread_id == fs_base)
		return *cached;
	if (!read_word(proc->runtime + proc->runtime_interp, &interp) || interp == 0 ||
	    !read_word(interp + proc->interp_threads, &t.tstate)) {
		*status = HPROF_PY_READ_FAILED;
		return 0;
	}
	bpf_loop(HPROF_PY_MAX_THREADS, py_thread_step, &t, 0);
	if (!t.found) {
		*status = t.failed ? HPROF_PY_READ_FAILED : HPROF_PY_NO_THREAD;
		return 0;
	}
	bpf_map_update_elem(&python_tstates, &tid, &t.tstate, BPF_ANY);
	return t.tstate;
}

/* The walk of a frame chain (bpf_loop's context). A cycle is caught by Brent's method:
 * the frame at each power of two steps is kept, and meeting it again is a loop. */
struct py_frame_walk {
	const struct hprof_python_proc *proc;
	__u8 *dst;       /* where frame n goes: struct hprof_py_frame each */
	__u64 frame;     /* the next frame to read; 0: the chain ended */
	__u64 mark;      /* Brent's kept frame */
	__u32 until_mark, mark_span;
	__u32 n;
	__u32 status;
	struct py_frame_buf *buf;
};

static __always_inline __u64 buf_word(const struct py_frame_walk *w, __u32 off)
{
	__u64 v = 0;

	if (off <= PY_FRAME_READ - 8)
		__builtin_memcpy(&v, w->buf->bytes + off, sizeof(v));
	return v;
}

static __always_inline void mark_last_entry(struct py_frame_walk *w)
{
	__u32 n = w->n;
	struct hprof_py_frame *last;

	if (n == 0 || n > HPROF_PY_MAX_FRAMES)
		return;
	last = (struct hprof_py_frame *)(w->dst + (n - 1) * sizeof(*last));
	last->instr |= HPROF_PY_ENTRY;
}

static long py_frame_step(__u64 i, void *ctx)
{
	struct py_frame_walk *w = ctx;
	const struct hprof_python_proc *proc = w->proc;
	struct hprof_py_frame f;
	__u64 code, instr, word;
	__u32 n = w->n;
	__u8 entry;

	if (w->frame == 0) {
		w->status = HPROF_PY_OK;
		return 1;
	}
	if (w->frame == w->mark ||
	    bpf_probe_read_user(w->buf->bytes, PY_FRAME_READ, (void *)w->frame)) {
		w->status = w->frame == w->mark ? HPROF_PY_CYCLE : HPROF_PY_READ_FAILED;
		return 1;
	}
	if (--w->until_mark == 0) {
		w->mark = w->frame;
		w->mark_span *= 2;
		w->until_mark = w->mark_span;
	}
	code = buf_word(w, proc->frame_code);
	instr = buf_word(w, proc->frame_instr);
	entry = proc->frame_entry < PY_FRAME_READ ?
			w->buf->bytes[proc->frame_entry & (PY_FRAME_READ - 1)] : 0;
	w->frame = buf_word(w, proc->frame_previous);
	if (proc->kind == HPROF_PY_FRAME_CSTACK_SHIM && entry == HPROF_PY_OWNED_BY_CSTACK) {
		/* the evaluator's own frame under the ones a call of it ran */
		mark_last_entry(w);
		return 0;
	}
	if (n >= HPROF_PY_MAX_FRAMES) {
		w->status = HPROF_PY_TRUNCATED;
		return 1;
	}
	if (code == 0 || !read_word(code + proc->code_check, &word)) {
		w->status = HPROF_PY_READ_FAILED;
		return 1;
	}
	/* before 3.12 no word of a code object tells it from another of the same shape made
	 * at its address (a template compiled in a loop): its name's hash does */
	if (proc->code_name) {
		__u64 name, hash;

		if (!read_word(code + proc->code_name, &name) ||
		    !read_word(name + HPROF_PY_STR_HASH, &hash)) {
			w->status = HPROF_PY_READ_FAILED;
			return 1;
		}
		word ^= hash;
	}
	f.code = code;
	f.check = hprof_py__check(word);
	if (proc->kind == HPROF_PY_FRAME_OBJECT) {
		f.instr = (__u32)instr & HPROF_PY_INSTR_MASK;
		f.instr |= HPROF_PY_ENTRY;
	} else {
		f.instr = (__u32)(instr - code) & HPROF_PY_INSTR_MASK;
		if (proc->kind == HPROF_PY_FRAME_IS_ENTRY && entry)
			f.instr |= HPROF_PY_ENTRY;
	}
	__builtin_memcpy(w->dst + n * sizeof(f), &f, sizeof(f));
	w->n = n + 1;
	return 0;
}

/* Reads the sampled thread's Python frames to dst (room for HPROF_PY_MAX_FRAMES) when the
 * process is a known CPython; sets s->nr_python and the status in s->flags. */
static __always_inline void read_python_frames(struct hprof_sample *s, __u8 *dst)
{
	struct hprof_python_proc *proc = bpf_map_lookup_elem(&python_procs, &s->pid);
	struct task_struct *task = bpf_get_current_task_btf();
	enum hprof_py_status status = HPROF_PY_OK;
	struct py_frame_walk w = { .dst = dst };
	__u64 tstate, frame = 0, start;
	__u32 zero = 0;

	if (!proc)
		return;
	/* an entry userspace wrote (0) is claimed by the process's next sample */
	start = task->group_leader->start_time;
	if (proc->start_time == 0)
		proc->start_time = start;
	if (proc->start_time != start)
		return;
	tstate = py_thread_state(proc, s->tid, task->thread.fsbase, &status);
	if (tstate && !read_word(tstate + proc->tstate_frame, &frame))
		status = HPROF_PY_READ_FAILED;
	if (tstate && status == HPROF_PY_OK && proc->cframe_frame != HPROF_PY_NO_CFRAME &&
	    (frame == 0 || !read_word(frame + proc->cframe_frame, &frame)))
		status = HPROF_PY_READ_FAILED;
	w.buf = bpf_map_lookup_elem(&python_frame_bufs, &zero);
	if (!w.buf)
		status = HPROF_PY_READ_FAILED;
	if (!tstate || status != HPROF_PY_OK)
		goto out;
	w.proc = proc;
	w.frame = frame;
	w.until_mark = w.mark_span = 2;
	w.status = HPROF_PY_TRUNCATED;
	/* room for the evaluator's own frames (3.12+), which are read but not kept, and for
	 * the step that finds the chain's end */
	bpf_loop(2 * HPROF_PY_MAX_FRAMES + 1, py_frame_step, &w, 0);
	status = w.status;
	/* a chain that loops is no chain: no frame of it is kept */
	s->nr_python = status == HPROF_PY_CYCLE ? 0 : w.n;
out:
	s->flags |= (__u32)status << HPROF_PY_STATUS_SHIFT;
}

#endif
