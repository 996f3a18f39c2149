#include "python/threads.h"

#include <stdbool.h>
#include <string.h>

_Static_assert(PYTHON_FRAME_READ % 8 == 0 && PYTHON_FRAME_READ >= 8, "whole words");

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

/* The word at off of a frame read in one piece; 0 past it (as the kernel's buf_word). */
static uint64_t buf_word(const uint8_t *buf, uint32_t off)
{
	uint64_t v = 0;

	if (off <= PYTHON_FRAME_READ - 8)
		memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* The walk of a frame chain from frame, as kernel/python.bpf.h's py_frame_step: a cycle is
 * caught by Brent's method (the frame at each power of two steps is kept, and meeting it
 * again is a loop). Returns the status; out->nr the frames kept. */
static enum hprof_py_status walk(const struct hprof_python_proc *proc, uint64_t frame,
				 python_read_fn read, void *ctx, struct python_thread_frames *out)
{
	uint8_t buf[PYTHON_FRAME_READ];
	uint64_t mark = 0, code, instr, word;
	uint32_t until_mark = 2, mark_span = 2, n = 0;

	for (uint32_t step = 0; step < 2 * HPROF_PY_MAX_FRAMES + 1; step++) {
		struct hprof_py_frame f;
		uint8_t entry;

		if (frame == 0) {
			out->nr = n;
			return HPROF_PY_OK;
		}
		if (frame == mark)
			return HPROF_PY_CYCLE;
		if (!read(ctx, frame, buf, sizeof(buf))) {
			out->nr = n;
			return HPROF_PY_READ_FAILED;
		}
		if (--until_mark == 0) {
			mark = frame;
			mark_span *= 2;
			until_mark = mark_span;
		}
		code = buf_word(buf, proc->frame_code);
		instr = buf_word(buf, proc->frame_instr);
		entry = proc->frame_entry < PYTHON_FRAME_READ ? buf[proc->frame_entry] : 0;
		frame = buf_word(buf, proc->frame_previous);
		if (proc->kind == HPROF_PY_FRAME_CSTACK_SHIM && entry == HPROF_PY_OWNED_BY_CSTACK) {
			/* the evaluator's own frame under the ones a call of it ran */
			if (n > 0)
				out->frames[n - 1].instr |= HPROF_PY_ENTRY;
			continue;
		}
		if (n >= HPROF_PY_MAX_FRAMES)
			break;
		if (code == 0 || !read_word(read, ctx, code + proc->code_check, &word)) {
			out->nr = n;
			return HPROF_PY_READ_FAILED;
		}
		/* before 3.12, as the kernel: co_name's hash folded in */
		if (proc->code_name) {
			uint64_t name, hash;

			if (!read_word(read, ctx, code + proc->code_name, &name) ||
			    !read_word(read, ctx, name + HPROF_PY_STR_HASH, &hash)) {
				out->nr = n;
				return HPROF_PY_READ_FAILED;
			}
			word ^= hash;
		}
		f.code = code;
		f.check = hprof_py__check(word);
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
	uint64_t tstate, frame = 0;

	out->nr = 0;
	tstate = python_thread__state(proc, fs_base, read, ctx, &status);
	if (tstate && !read_word(read, ctx, tstate + proc->tstate_frame, &frame))
		status = HPROF_PY_READ_FAILED;
	/* 3.11-3.12: the thread state points at the C frame, which points at the frame */
	if (tstate && status == HPROF_PY_OK && proc->cframe_frame != HPROF_PY_NO_CFRAME &&
	    (frame == 0 || !read_word(read, ctx, frame + proc->cframe_frame, &frame)))
		status = HPROF_PY_READ_FAILED;
	if (!tstate || status != HPROF_PY_OK) {
		out->status = status;
		return;
	}
	out->status = walk(proc, frame, read, ctx, out);
	/* a chain that loops is no chain: no frame of it is kept */
	if (out->status == HPROF_PY_CYCLE)
		out->nr = 0;
}
