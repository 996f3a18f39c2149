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

/* A frame's copy: the block read with it (HPROF_PY_BLOCK_MAX at most) at 0, or a frame read
 * alone at PY_SINGLE. A power of two, so that an offset masked with PY_BUF_SIZE - 1 stays
 * in the buffer (the 8 bytes past it take a word read at its end). */
#define PY_BUF_SIZE 16384
#define PY_SINGLE (PY_BUF_SIZE - 2 * HPROF_PY_FRAME_READ)
/* frame_read (at most HPROF_PY_FRAME_READ) masked, as the verifier wants a read's size */
#define PY_SPAN_MASK (2 * HPROF_PY_FRAME_READ - 1)

_Static_assert(HPROF_PY_BLOCK_MAX <= PY_SINGLE, "a block and a lone frame do not overlap");
_Static_assert((HPROF_PY_PAGE & (HPROF_PY_PAGE - 1)) == 0, "the page is a power of two");
_Static_assert((HPROF_PY_TSTATE_READ & (HPROF_PY_TSTATE_READ - 1)) == 0 &&
		       (HPROF_PY_CODE_READ & (HPROF_PY_CODE_READ - 1)) == 0,
	       "offsets into the thread state's and code object's copies are masked");

/* The walk of a frame chain: its state, kept in the CPU's py_frame_buf (a map value), not
 * on the BPF stack. The verifier tracks what is stored on the stack, state by state, and
 * forgets what is stored to a map value: read back, each field is a scalar of no history,
 * so that neither bpf_loop's iterations nor the frames one callback takes leave it a state
 * per value of the chain's addresses or of the frame count, and nothing need be passed
 * through memory to hide it. A cycle is caught by Brent's method: the frame at each power
 * of two steps is kept, and meeting it again is a loop. */
struct py_walk {
	__u64 frame;     /* the next frame to read; 0: the chain ended */
	__u64 mark;      /* Brent's kept frame */
	__u64 last;      /* the frame read before this one; 0: none */
	__u64 chunk;     /* the data stack chunk of the innermost frames; 0: not known */
	__u64 block_lo;  /* the block in buf: block_len bytes of the process's from block_lo */
	__u64 block_len;
	__u32 until_mark, mark_span;
	__u32 n;
	__u32 status;
	__u32 frame_read; /* bytes of a frame read: proc->frame_read, bounded */
	__u32 reserved;
};

/* Each CPU's copy of the frames being read and the checks of one walk: kept off the BPF
 * stack, which the sample's handler and bpf_loop's callbacks share, and out of the
 * verifier's sight (a scalar written to the stack is tracked, state by state: the memo
 * there multiplied the states past the verifier's limit). */
struct py_frame_buf {
	__u8 bytes[PY_BUF_SIZE + 8];
	/* the thread state's bytes read, and a code object's for its check; twice as large as
	 * they need be, so that a size masked as the verifier wants it fits */
	__u8 tstate[2 * HPROF_PY_TSTATE_READ];
	__u8 code[2 * HPROF_PY_CODE_READ];
	/* code objects whose checks this walk read, the newest first; cleared by each walk */
	__u64 memo_code[HPROF_PY_CHECK_MEMO];
	__u32 memo_check[HPROF_PY_CHECK_MEMO];
	struct py_walk walk;
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

/* Reads proc->tstate_read bytes of the thread state at tstate to buf->tstate. */
static __always_inline bool read_tstate(const struct hprof_python_proc *proc,
					struct py_frame_buf *buf, __u64 tstate)
{
	__u32 len = proc->tstate_read;

	if (len == 0 || len > HPROF_PY_TSTATE_READ)
		return false;
	/* (the compiler would drop the mask the verifier needs, knowing len's bound) */
	barrier_var(len);
	return bpf_probe_read_user(buf->tstate, len & (2 * HPROF_PY_TSTATE_READ - 1),
				   (void *)(tstate + proc->tstate_read_lo)) == 0;
}

/* The word of the thread state's copy at off (one of the fields read). */
static __always_inline __u64 tstate_word(const struct hprof_python_proc *proc,
					 const struct py_frame_buf *buf, __u32 off)
{
	return *(const __u64 *)(buf->tstate +
				((off - proc->tstate_read_lo) & (HPROF_PY_TSTATE_READ - 1)));
}

/* The thread's PyThreadState, its fields read to buf->tstate; 0 with *status set when
 * there is none to read. */
static __always_inline __u64 py_thread_state(const struct hprof_python_proc *proc, __u32 tid,
					     __u64 fs_base, struct py_frame_buf *buf,
					     enum hprof_py_status *status)
{
	struct py_thread_search t = { .proc = proc, .fs_base = fs_base };
	__u64 *cached = bpf_map_lookup_elem(&python_tstates, &tid);
	__u64 interp;

	/* the one read of the walk's thread state, its thread_id checked in it */
	if (cached && *cached && read_tstate(proc, buf, *cached) &&
	    tstate_word(proc, buf, proc->tstate_thread_id) == fs_base)
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
	if (!read_tstate(proc, buf, t.tstate)) {
		*status = HPROF_PY_READ_FAILED;
		return 0;
	}
	bpf_map_update_elem(&python_tstates, &tid, &t.tstate, BPF_ANY);
	return t.tstate;
}

/* bpf_loop's context for a frame chain's walk: what stays the same from one callback to the
 * next (the walk's state is in buf->walk). */
struct py_walk_ctx {
	const struct hprof_python_proc *proc;
	struct py_frame_buf *buf;
	__u8 *dst; /* where frame n goes: struct hprof_py_frame each */
};

/* The word at at + off of buf (at: where the frame's copy starts); 0 for a field past
 * HPROF_PY_FRAME_READ, as a frame read in full would give. */
static __always_inline __u64 buf_word(const struct py_frame_buf *buf, __u64 at, __u32 off)
{
	/* one 8-byte load, aligned or not (x86 and arm64 JITs take either; a memcpy of
	 * unknown alignment is 8 byte loads and 14 shifts and ors, per field, per frame) */
	if (off <= HPROF_PY_FRAME_READ - 8)
		return *(const __u64 *)(buf->bytes + ((at + off) & (PY_BUF_SIZE - 1)));
	return 0;
}

/* The frame's is_entry or owner byte (proc->frame_entry); 0 where the version has none. */
static __always_inline __u8 buf_entry(const struct hprof_python_proc *proc,
				      const struct py_frame_buf *buf, __u64 at)
{
	if (proc->frame_entry < HPROF_PY_FRAME_READ)
		return buf->bytes[(at + proc->frame_entry) & (PY_BUF_SIZE - 1)];
	return 0;
}

/* Where in buf the copy of w->frame's first frame_read bytes starts, after a read if the
 * block holds no such copy; -1 when it cannot be read. From 3.11 a frame is read with the
 * frames below it on the data stack, its callers then taken from that block: from the
 * start of the thread's current chunk (datastack_chunk) where the frame lies within
 * HPROF_PY_BLOCK_MAX of it, else from the start of its page, for the first frame and one
 * just below the one before it (the data stack's next caller). Any other (3.8-3.10's heap
 * frame objects, 3.12+'s evaluator frames on the C stack, a frame in another chunk or a
 * generator) is read alone, and the block stays for the frames after it. No read touches
 * a page the frame's own read would not, but that from the chunk's start, which the
 * frames of the chunk up to this one have used; should it fail (memory that is not what
 * it says), the page's read is tried. */
static __always_inline long frame_copy(const struct py_walk_ctx *c, struct py_walk *w)
{
	struct py_frame_buf *buf = c->buf;
	__u64 frame = w->frame, at = frame - w->block_lo, lo, len;
	__u32 span = w->frame_read & PY_SPAN_MASK;

	if (w->block_len >= span && at <= w->block_len - span)
		return at;
	if (c->proc->kind == HPROF_PY_FRAME_OBJECT ||
	    (w->last != 0 && (frame >= w->last || w->last - frame > HPROF_PY_PAGE))) {
		if (bpf_probe_read_user(buf->bytes + PY_SINGLE, span & PY_SPAN_MASK, (void *)frame))
			return -1;
		return PY_SINGLE;
	}
	w->block_len = 0;
	if (w->chunk && frame >= w->chunk && frame - w->chunk <= HPROF_PY_BLOCK_MAX - span) {
		len = frame - w->chunk + span;
		if (len <= HPROF_PY_BLOCK_MAX &&
		    !bpf_probe_read_user(buf->bytes, len, (void *)w->chunk)) {
			w->block_lo = w->chunk;
			w->block_len = len;
			return frame - w->chunk;
		}
	}
	lo = frame & ~(__u64)(HPROF_PY_PAGE - 1);
	len = frame - lo + span;
	if (len > HPROF_PY_PAGE + HPROF_PY_FRAME_READ)
		return -1;
	if (bpf_probe_read_user(buf->bytes, len, (void *)lo))
		return -1;
	w->block_lo = lo;
	w->block_len = len;
	return frame - lo;
}

/* The word of a code object's copy at off (code_check or code_name). */
static __always_inline __u64 code_word(const struct hprof_python_proc *proc,
				       const struct py_frame_buf *buf, __u32 off)
{
	return *(const __u64 *)(buf->code + ((off - proc->code_read_lo) & (HPROF_PY_CODE_READ - 1)));
}

/* The check of the code object at code (non-zero) when this walk has read it. */
static __always_inline bool code_check_known(const struct py_frame_buf *buf, __u64 code,
					     __u32 *check)
{
	for (int i = 0; i < HPROF_PY_CHECK_MEMO; i++) {
		if (buf->memo_code[i] == code) {
			*check = buf->memo_check[i];
			return true;
		}
	}
	return false;
}

/* The check of the code object at code (non-zero): remembered within the walk, else read
 * (common/python.h). false when it cannot be read. */
static __always_inline bool code_check(const struct py_walk_ctx *c, __u64 code, __u32 *check)
{
	const struct hprof_python_proc *proc = c->proc;
	struct py_frame_buf *buf = c->buf;
	__u64 word;
	__u32 len;

	if (code_check_known(buf, code, check))
		return true;
	/* the check word and co_name in one read */
	len = proc->code_read;
	if (len == 0 || len > HPROF_PY_CODE_READ)
		return false;
	barrier_var(len);
	if (bpf_probe_read_user(buf->code, len & (2 * HPROF_PY_CODE_READ - 1),
				(void *)(code + proc->code_read_lo)))
		return false;
	word = code_word(proc, buf, proc->code_check);
	/* before 3.12 no word of a code object tells it from another of the same shape made
	 * at its address (a template compiled in a loop): its name's hash does */
	if (proc->code_name) {
		__u64 hash;

		if (!read_word(code_word(proc, buf, proc->code_name) + HPROF_PY_STR_HASH, &hash))
			return false;
		word ^= hash;
	}
	*check = hprof_py__check(word);
	/* the oldest goes */
	for (int i = HPROF_PY_CHECK_MEMO - 1; i > 0; i--) {
		buf->memo_code[i] = buf->memo_code[i - 1];
		buf->memo_check[i] = buf->memo_check[i - 1];
	}
	buf->memo_code[0] = code;
	buf->memo_check[0] = *check;
	return true;
}

/* Stores frame n (< HPROF_PY_MAX_FRAMES) a field at a time: dst need not be aligned, and a
 * memcpy of unknown alignment is a store per byte. */
static __always_inline void store_frame(__u8 *dst, __u32 n, __u64 code, __u32 instr, __u32 check)
{
	__u8 *f = dst + (n & (HPROF_PY_MAX_FRAMES - 1)) * sizeof(struct hprof_py_frame);

	*(__u64 *)f = code;
	*(__u32 *)(f + 8) = instr;
	*(__u32 *)(f + 12) = check;
}

_Static_assert((HPROF_PY_MAX_FRAMES & (HPROF_PY_MAX_FRAMES - 1)) == 0,
	       "a frame's index is masked with HPROF_PY_MAX_FRAMES - 1");

/* hprof_py_frame.instr of a frame running code at instr (f_lasti, or the instruction
 * pointer), its entry byte entry. */
static __always_inline __u32 frame_instr_word(__u32 kind, __u64 code, __u64 instr, __u8 entry)
{
	if (kind == HPROF_PY_FRAME_OBJECT)
		return ((__u32)instr & HPROF_PY_INSTR_MASK) | HPROF_PY_ENTRY;
	if (kind == HPROF_PY_FRAME_IS_ENTRY && entry)
		return ((__u32)(instr - code) & HPROF_PY_INSTR_MASK) | HPROF_PY_ENTRY;
	return (__u32)(instr - code) & HPROF_PY_INSTR_MASK;
}

static __always_inline void mark_last_entry(const struct py_walk_ctx *c, const struct py_walk *w)
{
	__u32 n = w->n;
	struct hprof_py_frame *last;

	if (n == 0 || n > HPROF_PY_MAX_FRAMES)
		return;
	last = (struct hprof_py_frame *)(c->dst + ((n - 1) & (HPROF_PY_MAX_FRAMES - 1)) *
						    sizeof(*last));
	last->instr |= HPROF_PY_ENTRY;
}

/* Frames a callback takes at most before its general step: those the general step would
 * take without a read, a branch out or a mark. */
#define PY_FAST_FRAMES 8

/* The frames from w->frame that the block holds, whose code objects this walk has checked,
 * and that are the interpreter's own (not the evaluator's C-stack frames of 3.12+), taken
 * with the state in registers: a recursion's frames, and a loop's callers once their code
 * objects were met. Stops at the first other frame, at Brent's next mark, at the chain's
 * end and at the frame limit, each the general step's to take. */
static __always_inline void py_fast_frames(const struct py_walk_ctx *c, struct py_walk *w)
{
	const struct hprof_python_proc *proc = c->proc;
	const struct py_frame_buf *buf = c->buf;
	__u64 frame = w->frame, last = w->last, mark = w->mark;
	__u64 lo = w->block_lo, len = w->block_len;
	__u32 n = w->n, until = w->until_mark, span = w->frame_read & PY_SPAN_MASK;
	__u32 kind = proc->kind;

	if (kind == HPROF_PY_FRAME_OBJECT || len < span)
		return;
#pragma unroll
	for (int k = 0; k < PY_FAST_FRAMES; k++) {
		__u64 at = frame - lo, code, instr;
		__u32 check;
		__u8 entry;

		if (frame == 0 || frame == mark || until <= 1 || n >= HPROF_PY_MAX_FRAMES ||
		    at > len - span)
			break;
		code = buf_word(buf, at, proc->frame_code);
		if (code == 0 || !code_check_known(buf, code, &check))
			break;
		entry = buf_entry(proc, buf, at);
		if (kind == HPROF_PY_FRAME_CSTACK_SHIM && entry == HPROF_PY_OWNED_BY_CSTACK)
			break;
		instr = buf_word(buf, at, proc->frame_instr);
		store_frame(c->dst, n, code, frame_instr_word(kind, code, instr, entry), check);
		n++;
		until--;
		last = frame;
		frame = buf_word(buf, at, proc->frame_previous);
	}
	w->frame = frame;
	w->last = last;
	w->n = n;
	w->until_mark = until;
}

/* One frame, whatever it takes: a read of its copy or of its code object's check, Brent's
 * mark, the chain's end. 1 when the walk is over (w->status says why). */
static __always_inline long py_general_step(const struct py_walk_ctx *c, struct py_walk *w)
{
	const struct hprof_python_proc *proc = c->proc;
	struct py_frame_buf *buf = c->buf;
	__u64 code, instr;
	__u32 n = w->n, check;
	long at;
	__u8 entry;

	if (w->frame == 0) {
		w->status = HPROF_PY_OK;
		return 1;
	}
	if (w->frame == w->mark) {
		w->status = HPROF_PY_CYCLE;
		return 1;
	}
	at = frame_copy(c, w);
	if (at < 0) {
		w->status = HPROF_PY_READ_FAILED;
		return 1;
	}
	if (--w->until_mark == 0) {
		w->mark = w->frame;
		w->mark_span *= 2;
		w->until_mark = w->mark_span;
	}
	code = buf_word(buf, at, proc->frame_code);
	instr = buf_word(buf, at, proc->frame_instr);
	entry = buf_entry(proc, buf, at);
	w->last = w->frame;
	w->frame = buf_word(buf, at, proc->frame_previous);
	if (proc->kind == HPROF_PY_FRAME_CSTACK_SHIM && entry == HPROF_PY_OWNED_BY_CSTACK) {
		/* the evaluator's own frame under the ones a call of it ran */
		mark_last_entry(c, w);
		return 0;
	}
	if (n >= HPROF_PY_MAX_FRAMES) {
		w->status = HPROF_PY_TRUNCATED;
		return 1;
	}
	if (code == 0 || !code_check(c, code, &check)) {
		w->status = HPROF_PY_READ_FAILED;
		return 1;
	}
	store_frame(c->dst, n, code, frame_instr_word(proc->kind, code, instr, entry), check);
	w->n = n + 1;
	return 0;
}

static long py_frame_step(__u64 i, void *ctx)
{
	const struct py_walk_ctx *c = ctx;
	struct py_walk *w = &c->buf->walk;

	py_fast_frames(c, w);
	return py_general_step(c, w);
}

/* Reads the sampled thread's Python frames to dst (room for HPROF_PY_MAX_FRAMES) when the
 * process is a known CPython; sets s->nr_python and the status in s->flags. */
static __always_inline void read_python_frames(struct hprof_sample *s, __u8 *dst)
{
	struct hprof_python_proc *proc = bpf_map_lookup_elem(&python_procs, &s->pid);
	struct task_struct *task = bpf_get_current_task_btf();
	enum hprof_py_status status = HPROF_PY_OK;
	struct py_walk_ctx c = { .dst = dst };
	struct py_walk *w;
	__u64 tstate, frame, start;
	__u32 zero = 0;

	if (!proc)
		return;
	/* an entry userspace wrote (0) is claimed by the process's next sample */
	start = task->group_leader->start_time;
	if (proc->start_time == 0)
		proc->start_time = start;
	if (proc->start_time != start)
		return;
	c.buf = bpf_map_lookup_elem(&python_frame_bufs, &zero);
	if (!c.buf) {
		status = HPROF_PY_READ_FAILED;
		goto out;
	}
	w = &c.buf->walk;
	tstate = py_thread_state(proc, s->tid, task->thread.fsbase, c.buf, &status);
	if (!tstate)
		goto out;
	frame = tstate_word(proc, c.buf, proc->tstate_frame);
	w->chunk = proc->tstate_datastack ? tstate_word(proc, c.buf, proc->tstate_datastack) : 0;
	/* 3.11-3.12: the thread state points at the C frame, which points at the frame */
	if (proc->cframe_frame != HPROF_PY_NO_CFRAME &&
	    (frame == 0 || !read_word(frame + proc->cframe_frame, &frame))) {
		status = HPROF_PY_READ_FAILED;
		goto out;
	}
	/* nothing of an earlier sample's walk is trusted: a code object freed since and another
	 * made at its address would take its check */
	for (int i = 0; i < HPROF_PY_CHECK_MEMO; i++)
		c.buf->memo_code[i] = 0;
	c.proc = proc;
	w->frame = frame;
	w->mark = 0;
	w->last = 0;
	w->block_lo = 0;
	w->block_len = 0;
	w->n = 0;
	w->frame_read = proc->frame_read;
	if (w->frame_read < 8 || w->frame_read > HPROF_PY_FRAME_READ)
		w->frame_read = HPROF_PY_FRAME_READ;
	w->until_mark = w->mark_span = 2;
	w->status = HPROF_PY_TRUNCATED;
	/* room for the evaluator's own frames (3.12+), which are read but not kept, and for
	 * the step that finds the chain's end */
	bpf_loop(2 * HPROF_PY_MAX_FRAMES + 1, py_frame_step, &c, 0);
	status = w->status;
	/* a chain that loops is no chain: no frame of it is kept */
	s->nr_python = status == HPROF_PY_CYCLE ? 0 : w->n;
out:
	s->flags |= (__u32)status << HPROF_PY_STATUS_SHIFT;
}

#endif
