/* A thread's Python frames read from userspace (user/python/threads.h) over a synthetic
 * memory image laid out as CPython 3.8-3.13 lay out their runtime, thread states and
 * frames (user/python/layout.h): the thread found by its fs base among others, each
 * version's frame chain and entry markers (every frame, is_entry, the C-stack shim frames),
 * then what hostile memory can do: no such thread, a thread list that loops, a frame chain
 * that loops, one deeper than read, one of shim frames only, reads that fail at each step,
 * and random memory, every one bounded in reads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/layout.h"
#include "python/threads.h"
#include "check.h"

#define BASE 0x7f0000000000ull
#define IMAGE_SIZE (1u << 20)
#define FS_MAIN 0x7f1234567740ull
#define FS_OTHER 0x7f1234000640ull

#include "python_image.h"

static void reset(void)
{
	memset(image, 0, IMAGE_SIZE);
	image_used = 0;
}

/* The most reads one thread's frames take: the runtime and the thread list (2 + 2 per
 * state), the frame pointer and the C frame, then a frame and its code per step. */
#define MAX_READS (2 + 2 * HPROF_PY_MAX_THREADS + 2 + 2 * (2 * HPROF_PY_MAX_FRAMES + 1))

struct image {
	struct hprof_python_proc proc;
	uint64_t tstate;      /* FS_MAIN's; FS_OTHER's comes first in the list */
	uint64_t other;
	uint64_t frame_slot;  /* where the thread's first frame is written */
};

/* _PyRuntime, an interpreter and two thread states, the main one without frames. */
static struct image build_runtime(const struct python_layout *l)
{
	struct image im;
	uint64_t runtime = alloc(1024), interp = alloc(1024);

	im.other = alloc(512);
	im.tstate = alloc(512);
	python_layout__kernel(l, runtime, &im.proc);
	put64(runtime + l->runtime_interp, interp);
	put64(interp + l->interp_threads, im.other);
	put64(im.other + l->tstate_thread_id, FS_OTHER);
	put64(im.other + l->tstate_next, im.tstate);
	put64(im.tstate + l->tstate_thread_id, FS_MAIN);
	put64(im.tstate + l->tstate_next, 0);
	im.frame_slot = im.tstate + l->tstate_frame;
	/* 3.11-3.12: each thread state has its C frame (its root one when idle) */
	if (l->cframe_frame != HPROF_PY_NO_CFRAME) {
		uint64_t cframe = alloc(64);

		put64(im.tstate + l->tstate_frame, cframe);
		im.frame_slot = cframe + l->cframe_frame;
		put64(im.other + l->tstate_frame, alloc(64));
	}
	return im;
}

/* The hash of the name of the code object whose checked word is word (before 3.12). */
static uint64_t name_hash(uint64_t word)
{
	return word * 0x9e3779b97f4a7c15ull;
}

/* A code object whose checked word is word; before 3.12 with a name whose hash is
 * name_hash(word). */
static uint64_t make_code(const struct python_layout *l, uint64_t word)
{
	uint64_t code = alloc(512);

	put64(code + l->code_check, word);
	if (l->check_name) {
		uint64_t name = alloc(64);

		put64(code + l->check_name, name);
		put64(name + HPROF_PY_STR_HASH, name_hash(word));
	}
	return code;
}

/* The check a frame of make_code(l, word)'s code carries (common/python.h). */
static uint32_t code_check(const struct python_layout *l, uint64_t word)
{
	return hprof_py__check(l->check_name ? word ^ name_hash(word) : word);
}

/* A frame running code at instruction unit (f_lasti for 3.8-3.10, else an offset in bytes
 * from code), with entry as its is_entry / owner byte, before previous. */
static uint64_t make_frame(const struct python_layout *l, uint64_t code, uint32_t unit,
			   uint8_t entry, uint64_t previous)
{
	uint64_t f = alloc(HPROF_PY_FRAME_READ);

	put64(f + l->frame_code, code);
	put64(f + l->frame_previous, previous);
	if (l->kind == HPROF_PY_FRAME_OBJECT)
		put32(f + l->frame_instr, unit);
	else
		put64(f + l->frame_instr, code + unit);
	if (l->kind != HPROF_PY_FRAME_OBJECT)
		image[f + l->frame_entry - BASE] = entry;
	return f;
}

static struct python_thread_frames out;

static void read_thread(const struct image *im, uint64_t fs_base)
{
	memset(&out, 0xa5, sizeof(out));
	reads = 0;
	python_thread__frames(&im->proc, fs_base, read_image, NULL, &out);
}

static bool frame_is(const struct python_layout *l, uint32_t i, uint64_t code, uint32_t unit,
		     bool entry, uint64_t word)
{
	const struct hprof_py_frame *f = &out.frames[i];

	return i < out.nr && f->code == code && (f->instr & HPROF_PY_INSTR_MASK) == unit &&
	       ((f->instr & HPROF_PY_ENTRY) != 0) == entry && f->check == code_check(l, word);
}

/* Three frames in two calls of the evaluator (3.8-3.10: three calls), innermost first. */
static void check_version(uint32_t minor)
{
	struct python_layout l = layout(minor);
	struct image im;
	uint64_t c0, c1, c2, f0, f1, f2;
	bool object = l.kind == HPROF_PY_FRAME_OBJECT, shim = l.kind == HPROF_PY_FRAME_CSTACK_SHIM;
	uint8_t entry = shim ? 0 : 1; /* is_entry set; 3.12+: owned by the thread */

	reset();
	im = build_runtime(&l);
	c0 = make_code(&l, 0x1111);
	c1 = make_code(&l, 0x2222);
	c2 = make_code(&l, 0x3333);
	/* outermost first: f2 (an entry), [shim], f1 (an entry), f0 */
	f2 = make_frame(&l, c2, 96, entry, shim ? make_frame(&l, 0, 0, HPROF_PY_OWNED_BY_CSTACK, 0) : 0);
	if (shim)
		f2 = make_frame(&l, 0, 0, HPROF_PY_OWNED_BY_CSTACK, f2);
	f1 = make_frame(&l, c1, 64, entry, f2);
	f0 = make_frame(&l, c0, 32, 0, f1);
	put64(im.frame_slot, f0);

	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_OK && out.nr == 3, "3.%u: the thread's three frames (%u, status %d)",
	      minor, out.nr, out.status);
	check(frame_is(&l, 0, c0, 32, object, 0x1111) && frame_is(&l, 1, c1, 64, true, 0x2222) &&
		      frame_is(&l, 2, c2, 96, true, 0x3333),
	      "3.%u: code, instruction, check and entry of each, innermost first", minor);
	check(reads <= 2 + 4 + 2 + 2 * 6, "3.%u: read in %u reads", minor, reads);

	read_thread(&im, FS_OTHER);
	check(out.status == HPROF_PY_OK && out.nr == 0,
	      "3.%u: a thread running no Python code: none, OK (%d)", minor, out.status);
	read_thread(&im, 0x1234);
	check(out.status == HPROF_PY_NO_THREAD && out.nr == 0,
	      "3.%u: a thread the interpreter does not know: NO_THREAD (%d)", minor, out.status);
}

/* Memory that leads nowhere, round in circles or on too far. */
static void check_hostile(uint32_t minor)
{
	struct python_layout l = layout(minor);
	struct image im;
	uint64_t code, f0, f1, chain;
	enum hprof_py_status status = HPROF_PY_OK;

	reset();
	im = build_runtime(&l);
	code = make_code(&l, 7);

	/* the thread list loops */
	put64(im.tstate + l.tstate_next, im.other);
	read_thread(&im, 0x1234);
	check(out.status == HPROF_PY_NO_THREAD && reads <= MAX_READS,
	      "3.%u: a thread list that loops is searched %u states at most (%u reads)", minor,
	      HPROF_PY_MAX_THREADS, reads);
	/* ... and its thread found all the same */
	check(python_thread__state(&im.proc, FS_MAIN, read_image, NULL, &status) == im.tstate,
	      "3.%u: the thread state found in a list that loops", minor);
	put64(im.tstate + l.tstate_next, BASE + IMAGE_SIZE);
	read_thread(&im, 0x1234);
	check(out.status == HPROF_PY_READ_FAILED, "3.%u: a next state unreadable: READ_FAILED", minor);
	put64(im.tstate + l.tstate_next, 0);

	/* frame chains that loop: on itself, and through another */
	f0 = make_frame(&l, code, 2, 0, 0);
	put64(f0 + l.frame_previous, f0);
	put64(im.frame_slot, f0);
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_CYCLE && out.nr == 0, "3.%u: a frame its own previous: CYCLE, no frame",
	      minor);
	f1 = make_frame(&l, code, 4, 0, f0);
	put64(f0 + l.frame_previous, f1);
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_CYCLE && out.nr == 0, "3.%u: two frames in a loop: CYCLE, no frame",
	      minor);

	/* deeper than read: the innermost HPROF_PY_MAX_FRAMES kept */
	chain = 0;
	for (uint32_t i = 0; i < HPROF_PY_MAX_FRAMES + 50; i++)
		chain = make_frame(&l, code, 2 * (i % 100), 0, chain);
	put64(im.frame_slot, chain);
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_TRUNCATED && out.nr == HPROF_PY_MAX_FRAMES &&
		      (out.frames[0].instr & HPROF_PY_INSTR_MASK) == 2 * ((HPROF_PY_MAX_FRAMES + 49) % 100),
	      "3.%u: a chain of %u frames: TRUNCATED, the innermost %u kept (%u)", minor,
	      HPROF_PY_MAX_FRAMES + 50, HPROF_PY_MAX_FRAMES, out.nr);
	check(reads <= MAX_READS, "3.%u: ... in %u reads", minor, reads);

	/* frames, then one that cannot be read: those before it kept */
	f1 = make_frame(&l, code, 4, 0, BASE + IMAGE_SIZE - 64);
	f0 = make_frame(&l, code, 2, 0, f1);
	put64(im.frame_slot, f0);
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_READ_FAILED && out.nr == 2,
	      "3.%u: a frame cut by the end of memory: READ_FAILED, the two before it kept (%u)",
	      minor, out.nr);
	/* a frame without code, or whose code cannot be read */
	put64(f1 + l.frame_previous, 0);
	put64(f1 + l.frame_code, 0);
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_READ_FAILED && out.nr == 1, "3.%u: a frame without code: READ_FAILED",
	      minor);
	put64(f1 + l.frame_code, BASE + IMAGE_SIZE);
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_READ_FAILED && out.nr == 1,
	      "3.%u: a frame whose code cannot be read: READ_FAILED", minor);

	/* 3.11-3.12: the C frame */
	if (l.cframe_frame != HPROF_PY_NO_CFRAME) {
		put64(im.tstate + l.tstate_frame, 0);
		read_thread(&im, FS_MAIN);
		check(out.status == HPROF_PY_READ_FAILED && out.nr == 0,
		      "3.%u: no C frame: READ_FAILED", minor);
	}
	/* the runtime's interpreter */
	put64(im.proc.runtime + l.runtime_interp, 0);
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_READ_FAILED && out.nr == 0, "3.%u: no interpreter: READ_FAILED", minor);
	im.proc.runtime = BASE + IMAGE_SIZE;
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_READ_FAILED && out.nr == 0, "3.%u: no runtime: READ_FAILED", minor);
}

/* 3.11+: a recursion on one data stack chunk, frames one after the other, callers below:
 * read in one block from the chunk's start, each code object's check read once; the same
 * frames with a chunk pointer that misleads (unreadable, or past them); a code object
 * changed between two walks (freed, another made at its address) gets its new check. */
static void check_data_stack(uint32_t minor)
{
	struct python_layout l = layout(minor);
	struct image im;
	uint64_t code[2], chunk, chain = 0;
	const uint32_t depth = 60;
	unsigned first;
	bool all = true;

	reset();
	im = build_runtime(&l);
	code[0] = make_code(&l, 0xa1);
	code[1] = make_code(&l, 0xb2);
	chunk = alloc(32); /* _PyStackChunk's header */
	for (uint32_t i = 0; i < depth; i++)
		chain = make_frame(&l, code[i % 2], 2 * i, l.kind == HPROF_PY_FRAME_IS_ENTRY && i == 0,
				   chain);
	put64(im.frame_slot, chain);
	put64(im.tstate + l.tstate_datastack, chunk);
	read_thread(&im, FS_MAIN);
	for (uint32_t k = 0; k < depth; k++) {
		uint32_t i = depth - 1 - k;

		all &= frame_is(&l, k, code[i % 2], 2 * i, i == 0 && l.kind == HPROF_PY_FRAME_IS_ENTRY,
				i % 2 ? 0xb2 : 0xa1);
	}
	check(out.status == HPROF_PY_OK && out.nr == depth && all,
	      "3.%u: %u frames on a data stack chunk, each as laid out (%u, status %d)", minor,
	      depth, out.nr, out.status);
	/* the thread search (2 + 2 per state), the thread state, the C frame (3.11-3.12), the
	 * block, one read per code object (two before 3.12: its name's hash) */
	check(reads <= 2 + 4 + 1 + 1 + 1 + 2 * (l.check_name ? 2 : 1), "3.%u: ... in %u reads",
	      minor, reads);
	first = reads;

	/* a chunk pointer that misleads: the page's reads instead */
	put64(im.tstate + l.tstate_datastack, BASE - 4096);
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_OK && out.nr == depth &&
		      frame_is(&l, depth - 1, code[0], 0, l.kind == HPROF_PY_FRAME_IS_ENTRY, 0xa1),
	      "3.%u: a chunk that cannot be read: the frames all the same (%u reads)", minor, reads);
	put64(im.tstate + l.tstate_datastack, chain + 8);
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_OK && out.nr == depth && reads > first,
	      "3.%u: a chunk past the frame: the frames all the same (%u reads)", minor, reads);

	/* nothing is remembered from one walk to the next */
	put64(im.tstate + l.tstate_datastack, chunk);
	put64(code[0] + l.code_check, 0xc3);
	if (l.check_name)
		put64(*(uint64_t *)at(code[0] + l.check_name) + HPROF_PY_STR_HASH, name_hash(0xc3));
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_OK && frame_is(&l, 1, code[0], 2 * (depth - 2), false, 0xc3) &&
		      !frame_is(&l, 1, code[0], 2 * (depth - 2), false, 0xa1),
	      "3.%u: a code object changed between two walks: its new check", minor);
}

/* 3.12+: a chain of the evaluator's own frames only is followed 2 * HPROF_PY_MAX_FRAMES + 1
 * steps, as the kernel does, keeping none. */
static void check_shims(uint32_t minor)
{
	struct python_layout l = layout(minor);
	struct image im;
	uint64_t chain = 0;

	reset();
	im = build_runtime(&l);
	for (uint32_t i = 0; i < 3 * HPROF_PY_MAX_FRAMES; i++)
		chain = make_frame(&l, 0, 0, HPROF_PY_OWNED_BY_CSTACK, chain);
	put64(im.frame_slot, chain);
	read_thread(&im, FS_MAIN);
	check(out.status == HPROF_PY_TRUNCATED && out.nr == 0 && reads <= MAX_READS,
	      "3.%u: %u C-stack frames only: TRUNCATED after %u steps, none kept (%u reads)", minor,
	      3 * HPROF_PY_MAX_FRAMES, 2 * HPROF_PY_MAX_FRAMES + 1, reads);
}

/* Random memory: whatever it holds, the walk ends within its bounds. */
static void check_random(void)
{
	struct hprof_python_proc proc;
	struct python_layout l;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned worst = 0;
	bool bounded = true;

	for (uint32_t round = 0; round < 200; round++) {
		l = layout(8 + round % 6);
		/* words that point into the image, mostly at the start of 64-byte blocks */
		for (size_t i = 0; i < IMAGE_SIZE / 8; i++) {
			uint64_t w;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			w = BASE + ((seed >> 20) % (IMAGE_SIZE / 64)) * 64;
			if ((seed >> 60) == 0)
				w = FS_MAIN;
			else if ((seed >> 60) == 1)
				w = 0;
			memcpy(image + i * 8, &w, 8);
		}
		python_layout__kernel(&l, BASE + 64 * round, &proc);
		memset(&out, 0, sizeof(out));
		reads = 0;
		python_thread__frames(&proc, FS_MAIN, read_image, NULL, &out);
		if (reads > worst)
			worst = reads;
		bounded &= reads <= MAX_READS && out.nr <= HPROF_PY_MAX_FRAMES &&
			   out.status >= HPROF_PY_OK && out.status < HPROF_PY_STATUS_COUNT;
	}
	check(bounded, "random memory: every walk within its bounds (at most %u reads, %u allowed)",
	      worst, MAX_READS);
}

int main(void)
{
	image = calloc(1, IMAGE_SIZE);
	if (!image)
		return 1;
	for (uint32_t minor = 8; minor <= 13; minor++) {
		check_version(minor);
		check_hostile(minor);
	}
	for (uint32_t minor = 11; minor <= 13; minor++)
		check_data_stack(minor);
	check_shims(12);
	check_shims(13);
	check_random();
	free(image);
	return failures ? 1 : 0;
}
