/* A process that passes for CPython (tests/t_python_hostile.sh): it defines _PyRuntime,
 * _PyEval_EvalFrameDefault, PyCode_Type and (unless built with FAKE_NO_VERSION) Py_Version,
 * so hprof recognises it and tells the kernel to walk its "frames", which are adversarial:
 * garbage pointers, a thread list and a frame chain that loop, frames and code objects in
 * unmapped memory, code objects of another type, code objects whose strings are not strs,
 * code objects unmapped and mapped again while they are sampled. Nothing it holds is a code
 * object CPython could have made, so no sample of it may carry a Python frame: each must keep
 * its native stack (..._PyEval_EvalFrameDefault) and be counted under a reason.
 *
 * Built once per version it claims (the Makefile's pyfake_* rule): FAKE_PY_VERSION is
 * Py_Version's value; FAKE_LAYOUT (311 or 312) the layout of CPython 3.11 or 3.12 its
 * structures follow (user/python/layout.c's tables), so that the kernel's walk reaches them.
 *
 * usage: python_fake SECONDS_PER_PHASE (CPU seconds; default 0.4) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workload.h"

#ifndef FAKE_LAYOUT
#define FAKE_LAYOUT 312
#endif

/* The offsets of user/python/layout.c for the version claimed. */
#if FAKE_LAYOUT == 311
enum {
	RUNTIME_INTERP = 40, INTERP_THREADS = 16, TSTATE_NEXT = 8, TSTATE_THREAD_ID = 152,
	TSTATE_FRAME = 56, CFRAME_FRAME = 8, FRAME_CODE = 32, FRAME_PREVIOUS = 48,
	FRAME_INSTR = 56, FRAME_ENTRY = 68,
	CODE_NAME = 120, CODE_QUALNAME = 128, CODE_FILENAME = 112, CODE_FIRSTLINENO = 72,
	CODE_LINETABLE = 136,
};
#elif FAKE_LAYOUT == 312
enum {
	RUNTIME_INTERP = 40, INTERP_THREADS = 72, TSTATE_NEXT = 8, TSTATE_THREAD_ID = 136,
	TSTATE_FRAME = 56, CFRAME_FRAME = 0, FRAME_CODE = 0, FRAME_PREVIOUS = 8,
	FRAME_INSTR = 56, FRAME_ENTRY = 70,
	CODE_NAME = 120, CODE_QUALNAME = 128, CODE_FILENAME = 112, CODE_FIRSTLINENO = 68,
	CODE_LINETABLE = 136,
};
#else
#error "FAKE_LAYOUT is 311 or 312"
#endif
#define OBJECT_TYPE 8
#define OWNED_BY_CSTACK 3 /* 3.12's owner byte of the evaluator's own frame */

/* What hprof looks up by name. Py_Version is const in CPython (.rodata); _PyRuntime and
 * PyCode_Type are data. */
#ifndef FAKE_NO_VERSION
const unsigned long Py_Version = FAKE_PY_VERSION;
#endif
unsigned char _PyRuntime[4096] __attribute__((aligned(64)));
unsigned char PyCode_Type[512] __attribute__((aligned(64)));
/* a type that is not PyCode_Type */
static unsigned char other_type[512] __attribute__((aligned(64)));

#define ARENA_SIZE (1u << 20)
#define OBJ_SIZE 512
static unsigned char *arena;  /* thread states, frames, fake objects */
static unsigned char *hole;   /* a page that was mapped and is not: plausible, unreadable */
static unsigned char *flicker; /* code objects mapped and unmapped while sampled */
static size_t flicker_size;
static unsigned next_obj;

static void put64(void *base, size_t off, uint64_t v)
{
	memcpy((unsigned char *)base + off, &v, sizeof(v));
}

static void put8(void *base, size_t off, uint8_t v)
{
	((unsigned char *)base)[off] = v;
}

/* A fresh zeroed object of the arena. */
static unsigned char *obj(void)
{
	unsigned char *p = arena + (size_t)next_obj++ * OBJ_SIZE;

	if ((size_t)next_obj * OBJ_SIZE > ARENA_SIZE) {
		fprintf(stderr, "python_fake: arena full\n");
		exit(1);
	}
	memset(p, 0, OBJ_SIZE);
	return p;
}

/* A "str" no reader may take: not compact, a length of 2^40, or pointing at itself. */
static unsigned char *bad_str(int how)
{
	unsigned char *s = obj();

	put64(s, OBJECT_TYPE, (uint64_t)(uintptr_t)s);
	put64(s, 16, how == 0 ? (1ull << 40) : 5);     /* length */
	memset(s + 32, 0, 4);
	if (how == 1)
		put8(s, 32, 0x04);                      /* kind 1 but not compact */
	else
		put8(s, 32, 0xe4);                      /* compact ascii ready, kind 1 */
	return s;
}

/* A code object: of type type, its strings hostile (a str too long, a non-compact one, the
 * code object itself, an unmapped one), its line table a "bytes" of negative size. */
static unsigned char *code_obj(const void *type, int variant)
{
	unsigned char *c = obj();

	put64(c, OBJECT_TYPE, (uint64_t)(uintptr_t)type);
	put64(c, CODE_FIRSTLINENO & ~7u, 0x0000000700000001ull);
	switch (variant % 4) {
	case 0:
		put64(c, CODE_QUALNAME, (uint64_t)(uintptr_t)bad_str(0));
		put64(c, CODE_NAME, (uint64_t)(uintptr_t)bad_str(0));
		break;
	case 1:
		put64(c, CODE_QUALNAME, (uint64_t)(uintptr_t)bad_str(1));
		put64(c, CODE_NAME, (uint64_t)(uintptr_t)bad_str(1));
		break;
	case 2:
		put64(c, CODE_QUALNAME, (uint64_t)(uintptr_t)c);
		put64(c, CODE_NAME, (uint64_t)(uintptr_t)c);
		break;
	default:
		put64(c, CODE_QUALNAME, (uint64_t)(uintptr_t)hole);
		put64(c, CODE_NAME, (uint64_t)(uintptr_t)hole);
		break;
	}
	put64(c, CODE_FILENAME, (uint64_t)(uintptr_t)bad_str(variant % 2));
	put64(c, CODE_LINETABLE, (uint64_t)(uintptr_t)c);
	return c;
}

/* A frame running code, whose previous is prev. */
static unsigned char *frame(const void *code, const void *prev)
{
	unsigned char *f = obj();

	put64(f, FRAME_CODE, (uint64_t)(uintptr_t)code);
	put64(f, FRAME_PREVIOUS, (uint64_t)(uintptr_t)prev);
	put64(f, FRAME_INSTR, (uint64_t)(uintptr_t)code + 200);
	put8(f, FRAME_ENTRY, FAKE_LAYOUT == 311 ? 1 : 0);
	return f;
}

/* _PyRuntime's interpreter, with tstate as its thread list's head. */
static void set_threads(void *tstate)
{
	unsigned char *interp = obj();

	put64(interp, INTERP_THREADS, (uint64_t)(uintptr_t)tstate);
	put64(_PyRuntime, RUNTIME_INTERP, (uint64_t)(uintptr_t)interp);
}

/* A thread state for thread id, whose current frame is top (through a _PyCFrame in
 * 3.11-3.12, as CPython keeps it). The kernel remembers the state it last found for a
 * thread while its thread_id is the thread's, as CPython keeps it for the thread's life:
 * this thread's state is made once (self_state), its frame set per phase. */
static unsigned char *tstate(uint64_t id, const void *top)
{
	unsigned char *t = obj(), *cframe = obj();

	put64(t, TSTATE_THREAD_ID, id);
	put64(cframe, CFRAME_FRAME, (uint64_t)(uintptr_t)top);
	put64(t, TSTATE_FRAME, (uint64_t)(uintptr_t)cframe);
	return t;
}

static unsigned char *self_tstate, *self_cframe;

/* This thread's state, now running top, the interpreter's only one. */
static void self_state(const void *top)
{
	if (!self_tstate) {
		self_tstate = obj();
		self_cframe = obj();
		put64(self_tstate, TSTATE_THREAD_ID, (uint64_t)pthread_self());
		put64(self_tstate, TSTATE_FRAME, (uint64_t)(uintptr_t)self_cframe);
	}
	put64(self_cframe, CFRAME_FRAME, (uint64_t)(uintptr_t)top);
	set_threads(self_tstate);
}

/* Maps the flicker pages (again) at their address, with code objects that are not code. */
static void flicker_map(void)
{
	void *p = mmap(flicker, flicker_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	if (p == MAP_FAILED) {
		perror("python_fake: mmap");
		exit(1);
	}
	for (size_t off = 0; off + OBJ_SIZE <= flicker_size; off += OBJ_SIZE)
		put64(flicker, off + OBJECT_TYPE, (uint64_t)(uintptr_t)other_type);
}

/* The evaluator: samples land here while the fake's structures say a Python thread runs.
 * Every flip_every iterations (0: never) the flicker pages are unmapped or mapped again. */
__attribute__((noinline)) unsigned long _PyEval_EvalFrameDefault(double seconds, long flip_every)
{
	double end = workload_cpu_now() + seconds;
	unsigned long n = 0;
	long until_flip = flip_every;
	int mapped = 1;

	while (workload_cpu_now() < end) {
		for (int i = 0; i < 20000; i++)
			n += (unsigned long)i * (unsigned long)i % 7;
		if (flip_every && --until_flip == 0) {
			if (mapped)
				munmap(flicker, flicker_size);
			else
				flicker_map();
			mapped = !mapped;
			until_flip = flip_every;
		}
	}
	return n;
}

static const char *phase_name;
static unsigned long total;

__attribute__((noinline)) static void phase_run(const char *name, double seconds, long flip)
{
	phase_name = name;
	total += _PyEval_EvalFrameDefault(seconds, flip);
}

int main(int argc, char **argv)
{
	double secs = workload_seconds(argc, argv, 0.4);
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *ring[64], *t1, *t2, *f1, *f2, *codes[8];

	arena = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	flicker_size = 4 * (size_t)page;
	flicker = mmap(NULL, flicker_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED || hole == MAP_FAILED || flicker == MAP_FAILED) {
		perror("python_fake: mmap");
		return 1;
	}
	munmap(hole, (size_t)page);
	flicker_map();

	/* 1. the interpreter is garbage: an unmapped address, then a low one */
	put64(_PyRuntime, RUNTIME_INTERP, (uint64_t)(uintptr_t)hole);
	phase_run("interpreter unmapped", secs / 2, 0);
	put64(_PyRuntime, RUNTIME_INTERP, 0x1000);
	phase_run("interpreter garbage", secs / 2, 0);

	/* 2. a thread list that loops, none of its states this thread's */
	t1 = tstate(1, NULL);
	t2 = tstate(2, NULL);
	put64(t1, TSTATE_NEXT, (uint64_t)(uintptr_t)t2);
	put64(t2, TSTATE_NEXT, (uint64_t)(uintptr_t)t1);
	set_threads(t1);
	phase_run("thread list loops", secs, 0);

	/* 3. this thread's state, its frame chain a loop: 64 frames, the last back to the 20th
	 * (not code objects: the kernel reads only their check word, and their name's hash
	 * before 3.12) */
	for (int i = 0; i < 8; i++)
		codes[i] = code_obj(other_type, i);
	ring[63] = frame(codes[0], NULL);
	for (int i = 62; i >= 0; i--)
		ring[i] = frame(codes[i % 3], ring[i + 1]);
	put64(ring[63], FRAME_PREVIOUS, (uint64_t)(uintptr_t)ring[20]);
	self_state(ring[0]);
	phase_run("frame chain loops", secs, 0);
	/* ... and a frame that is its own previous */
	f1 = frame(codes[1], NULL);
	put64(f1, FRAME_PREVIOUS, (uint64_t)(uintptr_t)f1);
	self_state(f1);
	phase_run("frame is its own previous", secs / 2, 0);
#if FAKE_LAYOUT == 312
	/* ... and a loop of the evaluator's own frames, which the kernel reads but keeps none of */
	for (int i = 0; i < 64; i++)
		put8(ring[i], FRAME_ENTRY, OWNED_BY_CSTACK);
	self_state(ring[0]);
	phase_run("evaluator frames loop", secs / 2, 0);
#endif

	/* 4. frames in unmapped memory: the current frame, then a frame's previous, then a
	 * frame's code object */
	self_state(hole);
	phase_run("current frame unmapped", secs / 2, 0);
	f2 = frame(codes[2], hole);
	f1 = frame(codes[3], f2);
	self_state(f1);
	phase_run("previous frame unmapped", secs / 2, 0);
	f1 = frame(hole, NULL);
	self_state(f1);
	phase_run("code object unmapped", secs / 2, 0);

	/* 5. code objects that are not: another type, then PyCode_Type with strings no reader
	 * may take */
	f2 = frame(codes[4], NULL);
	f1 = frame(codes[5], f2);
	self_state(f1);
	phase_run("code objects of another type", secs / 2, 0);
	for (int i = 0; i < 8; i++)
		codes[i] = code_obj(PyCode_Type, i);
	f1 = NULL;
	for (int i = 0; i < 8; i++)
		f1 = frame(codes[i], f1);
	self_state(f1);
	phase_run("code objects with hostile strings", secs, 0);

	/* 6. code objects unmapped for good once the frames are set up, then unmapped and mapped
	 * again while the thread runs: read by the kernel, gone (or another) when named */
	f1 = NULL;
	for (size_t off = 0; off + OBJ_SIZE <= flicker_size; off += OBJ_SIZE)
		f1 = frame(flicker + off, f1);
	self_state(f1);
	munmap(flicker, flicker_size);
	phase_run("code objects unmapped", secs / 2, 0);
	flicker_map();
	phase_run("code objects flicker", secs, 20);

	/* the thread runs no Python code any more */
	self_state(NULL);
	phase_run("idle", secs / 4, 0);
	printf("%s %lu\n", phase_name, total);
	return 0;
}
