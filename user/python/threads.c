#include "python/threads.h"

#include <stdbool.h>
#include <string.h>

_Static_assert(HPROF_PY_FRAME_READ % 8 == 0 && HPROF_PY_FRAME_READ >= 8, "whole words");

static bool read_word(python_read_fn read, void *ctx, uint64_t addr, uint64_t *out)
{
	return read(ctx, addr, out, sizeof(*out));
}

uint64_t python_thread__state(const struct hprof_python_proc *proc, uint64_t fs_base,
			      python_read_fn read, void *ctx, enum hprof_py_status *status)
{
	uint64_t interp, tstate, thread_id;

	if (!read_word(read, ctx, proc->runtime + proc->runtime_interp, &interp) || interp == 0 ||
	    !read_word(read, ctx, interp + proc->interp_threads, &tstate)) {
		*status = HPROF_PY_READ_FAILED;
		return 0;
	}
	/* a list that loops or runs on past the bound is searched no further: no thread */
	for (uint32_t i = 0; i < HPROF_PY_MAX_THREADS && tstate; i++) {
		if (!read_word(read, ctx, tstate + proc->tstate_thread_id, &thread_id)) {
			*status = HPROF_PY_READ_FAILED;
			return 0;
		}
		if (thread_id == fs_base)
			return tstate;
		if (!read_word(read, ctx, tstate + proc->tstate_next, &tstate)) {
			*status = HPROF_PY_READ_FAILED;
			return 0;
		}
	}
	*status = HPROF_PY_NO_THREAD;
	return 0;
}

/* The word at off of a copy of 2 * max bytes, off masked as the kernel masks it (a field of
 * a thread state or code object read in one piece, max a power of two). */
static uint64_t copy_word(const uint8_t *copy, uint32_t off, uint32_t max)
{
	uint64_t v;

	memcpy(&v, copy + (off & (max - 1)), sizeof(v));
	return v;
}

/* The copies of one walk, as the kernel's struct py_frame_walk and py_frame_buf keep them. */
struct walk {
	const struct hprof_python_proc *proc;
	python_read_fn read;
	void *ctx;
	uint32_t frame_read;
	uint64_t last;      /* the frame read before this one; 0: none */
	uint64_t chunk;     /* the data stack chunk of the innermost frames; 0: not known */
	uint64_t block_lo;  /* block holds block_len bytes of the process's from block_lo */
	uint64_t block_len;
	uint64_t memo_code[HPROF_PY_CHECK_MEMO]; /* the newest first */
	uint32_t memo_check[HPROF_PY_CHECK_MEMO];
	uint8_t block[HPROF_PY_BLOCK_MAX];
	uint8_t single[HPROF_PY_FRAME_READ];
	uint8_t code[2 * HPROF_PY_CODE_READ];
};

/* The word at off of a frame's copy; 0 for a field past HPROF_PY_FRAME_READ (as the
 * kernel's buf_word). */
static uint64_t buf_word(const uint8_t *copy, uint32_t off)
{
	uint64_t v = 0;

	if (off <= HPROF_PY_FRAME_READ - 8)
		memcpy(&v, copy + off, sizeof(v));
	return v;
}

/* The copy of frame's first frame_read bytes, read if the block holds none; NULL when it
 * cannot be read. As the kernel's frame_copy: from 3.11 the first frame and one just below
 * the one before it are read with the frames below them, from the chunk's start where the
 * frame lies within HPROF_PY_BLOCK_MAX of it, else from the start of its page (the callers
 * then taken from that block); any other alone, so that the block stays for the frames
 * after it. */
static const uint8_t *frame_copy(struct walk *w, uint64_t frame)
{
	uint64_t at = frame - w->block_lo, lo, len;
	uint32_t span = w->frame_read;

	if (w->block_len >= span && at <= w->block_len - span)
		return w->block + at;
	if (w->proc->kind == HPROF_PY_FRAME_OBJECT ||
	    (w->last != 0 && (frame >= w->last || w->last - frame > HPROF_PY_PAGE)))
		return w->read(w->ctx, frame, w->single, span) ? w->single : NULL;
	w->block_len = 0;
	if (w->chunk && frame >= w->chunk && frame - w->chunk <= HPROF_PY_BLOCK_MAX - span) {
		len = frame - w->chunk + span;
		if (w->read(w->ctx, w->chunk, w->block, len)) {
			w->block_lo = w->chunk;
			w->block_len = len;
			return w->block + (frame - w->chunk);
		}
	}
	lo = frame & ~(uint64_t)(HPROF_PY_PAGE - 1);
	len = frame - lo + span;
	if (!w->read(w->ctx, lo, w->block, len))
		return NULL;
	w->block_lo = lo;
	w->block_len = len;
	return w->block + (frame - lo);
}

/* The check of the code object at code (non-zero), remembered within the walk, else read
 * as the kernel's code_check (common/python.h). false when it cannot be read. */
static bool code_check(struct walk *w, uint64_t code, uint32_t *check)
{
	const struct hprof_python_proc *proc = w->proc;
	uint64_t word;

	for (int i = 0; i < HPROF_PY_CHECK_MEMO; i++) {
		if (w->memo_code[i] == code) {
			*check = w->memo_check[i];
			return true;
		}
	}
	/* the check word and co_name in one read */
	if (proc->code_read == 0 || proc->code_read > HPROF_PY_CODE_READ ||
	    !w->read(w->ctx, code + proc->code_read_lo, w->code, proc->code_read))
		return false;
	word = copy_word(w->code, proc->code_check - proc->code_read_lo, HPROF_PY_CODE_READ);
	/* before 3.12 co_name's hash tells apart code objects of one template */
	if (proc->code_name) {
		uint64_t hash, name;

		name = copy_word(w->code, proc->code_name - proc->code_read_lo, HPROF_PY_CODE_READ);
		if (!read_word(w->read, w->ctx, name + HPROF_PY_STR_HASH, &hash))
			return false;
		word ^= hash;
	}
	*check = hprof_py__check(word);
	memmove(w->memo_code + 1, w->memo_code, sizeof(w->memo_code) - sizeof(w->memo_code[0]));
	memmove(w->memo_check + 1, w->memo_check, sizeof(w->memo_check) - sizeof(w->memo_check[0]));
	w->memo_code[0] = code;
	w->memo_check[0] = *check;
	return true;
}

/* The walk of a frame chain from frame, as kernel/python.bpf.h's py_frame_step: a cycle is
 * caught by Brent's method (the frame at each power of two steps is kept, and meeting it
 * again is a loop). Returns the status; out->nr the frames kept. */
static enum hprof_py_status walk(const struct hprof_python_proc *proc, uint64_t frame,
				 uint64_t chunk, python_read_fn read, void *ctx,
				 struct python_thread_frames *out)
{
	struct walk w = { .proc = proc, .read = read, .ctx = ctx, .frame_read = proc->frame_read,
			  .chunk = chunk };
	uint64_t mark = 0, code, instr;
	uint32_t until_mark = 2, mark_span = 2, n = 0;

	if (w.frame_read < 8 || w.frame_read > HPROF_PY_FRAME_READ)
		w.frame_read = HPROF_PY_FRAME_READ;
	for (uint32_t step = 0; step < 2 * HPROF_PY_MAX_FRAMES + 1; step++) {
		struct hprof_py_frame f;
		const uint8_t *copy;
		uint8_t entry;

		if (frame == 0) {
			out->nr = n;
			return HPROF_PY_OK;
		}
		if (frame == mark)
			return HPROF_PY_CYCLE;
		copy = frame_copy(&w, frame);
		if (!copy) {
			out->nr = n;
			return HPROF_PY_READ_FAILED;
		}
		if (--until_mark == 0) {
			mark = frame;
			mark_span *= 2;
			until_mark = mark_span;
		}
		code = buf_word(copy, proc->frame_code);
		instr = buf_word(copy, proc->frame_instr);
		entry = proc->frame_entry < HPROF_PY_FRAME_READ ? copy[proc->frame_entry] : 0;
		w.last = frame;
		frame = buf_word(copy, proc->frame_previous);
		if (proc->kind == HPROF_PY_FRAME_CSTACK_SHIM && entry == HPROF_PY_OWNED_BY_CSTACK) {
			/* the evaluator's own frame under the ones a call of it ran */
			if (n > 0)
				out->frames[n - 1].instr |= HPROF_PY_ENTRY;
			continue;
		}
		if (n >= HPROF_PY_MAX_FRAMES)
			break;
		if (code == 0 || !code_check(&w, code, &f.check)) {
			out->nr = n;
			return HPROF_PY_READ_FAILED;
		}
		f.code = code;
		if (proc->kind == HPROF_PY_FRAME_OBJECT) {
			/* every frame is run by an evaluator call of its own */
			f.instr = ((uint32_t)instr & HPROF_PY_INSTR_MASK) | HPROF_PY_ENTRY;
		} else {
			f.instr = (uint32_t)(instr - code) & HPROF_PY_INSTR_MASK;
			if (proc->kind == HPROF_PY_FRAME_IS_ENTRY && entry)
				f.instr |= HPROF_PY_ENTRY;
		}
		out->frames[n++] = f;
	}
	out->nr = n;
	return HPROF_PY_TRUNCATED;
}

void python_thread__frames(const struct hprof_python_proc *proc, uint64_t fs_base,
			   python_read_fn read, void *ctx, struct python_thread_frames *out)
{
	enum hprof_py_status status = HPROF_PY_OK;
	uint8_t state[2 * HPROF_PY_TSTATE_READ];
	uint64_t tstate, frame, chunk = 0;

	out->nr = 0;
	tstate = python_thread__state(proc, fs_base, read, ctx, &status);
	/* thread_id, the frame pointer and datastack_chunk in one read, as the kernel reads
	 * them */
	if (tstate && (proc->tstate_read == 0 || proc->tstate_read > HPROF_PY_TSTATE_READ ||
		       !read(ctx, tstate + proc->tstate_read_lo, state, proc->tstate_read))) {
		tstate = 0;
		status = HPROF_PY_READ_FAILED;
	}
	if (!tstate) {
		out->status = status;
		return;
	}
	frame = copy_word(state, proc->tstate_frame - proc->tstate_read_lo, HPROF_PY_TSTATE_READ);
	if (proc->tstate_datastack)
		chunk = copy_word(state, proc->tstate_datastack - proc->tstate_read_lo,
				  HPROF_PY_TSTATE_READ);
	/* 3.11-3.12: the thread state points at the C frame, which points at the frame */
	if (proc->cframe_frame != HPROF_PY_NO_CFRAME &&
	    (frame == 0 || !read_word(read, ctx, frame + proc->cframe_frame, &frame))) {
		out->status = HPROF_PY_READ_FAILED;
		return;
	}
	out->status = walk(proc, frame, chunk, read, ctx, out);
	/* a chain that loops is no chain: no frame of it is kept */
	if (out->status == HPROF_PY_CYCLE)
		out->nr = 0;
}
