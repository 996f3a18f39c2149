/* What walks have taught hprof about each thread's stack, which stays the same for the
 * thread's life: where it ends (the outermost frame's CFA), and, when its frame-pointer
 * chains are right, the frame record they end at and the frames beyond it (libc's start-up
 * code, which keeps no frame pointers). The kernel is told both (BPF map thread_stacks), so
 * it copies only the live stack, or only the leaf's when the chain suffices. */
#ifndef HPROF_THREADS_H
#define HPROF_THREADS_H

#include <stdint.h>
#include <uthash.h>

#include "sample.h"
#include "unwind/walk.h"

/* Frames kept beyond a chain's end: libc's start-up code only (HPROF_MAX_LEARNED_TAIL). */
#define THREAD_TAIL_FRAMES HPROF_MAX_LEARNED_TAIL
/* Threads remembered; the oldest is forgotten first (a thread's knowledge is relearned
 * from its next complete walk). */
#define THREAD_TABLE_MAX 65536

/* Return addresses of a deep stack's frames, by the sp of the frame they return into,
 * from the thread's recent walks that read its whole stack (the newest at each sp): a later
 * copy too deep for the ceiling leaves a gap between the part from sp and the window below
 * the base, and a frame whose return address lies in the gap is found here (hybrid.c:
 * cross_gap). THREAD_DEEP_WALK frames come from one walk, the outermost. */
#define THREAD_DEEP_WALK 64
#define THREAD_DEEP_FRAMES 256

struct thread_deep_frame {
	uint64_t sp, pc;
	uint32_t walk; /* the learning walk's number: the oldest is replaced first */
};

struct thread_deep_frames {
	uint32_t nr, walks;
	struct thread_deep_frame frames[THREAD_DEEP_FRAMES];
};

/* Merges a walk's frames into d, the newest at each sp. */
void thread_deep_frames__merge(struct thread_deep_frames *d, const struct thread_deep_frame *walk,
			       uint32_t n);

struct thread_info {
	uint32_t tid;
	struct thread_deep_frames *deep; /* NULL: none learned (the stack never ran deep) */
	uint64_t base;    /* 0: not known */
	uint64_t fp_tail; /* 0: its FP chains are not known to be right */
	uint64_t tail_ip; /* the chain's outermost return address, read at fp_tail + 8 */
	uint32_t nr_tail;
	struct unwind_frame tail[THREAD_TAIL_FRAMES]; /* beyond tail_ip's frame, outwards */
	UT_hash_handle hh;
};

struct thread_table;

struct thread_table *thread_table__new(void);
/* The pc learned for the frame at sp (thread_deep_frames): true when there is one. */
bool thread_info__deep_frame(const struct thread_info *ti, uint64_t sp, uint64_t *pc);
/* tid's entry, created when create is set (NULL when out of memory, or not there). */
struct thread_info *thread_table__get(struct thread_table *t, uint32_t tid, int create);
/* Drops tid's entry (the thread exited), if there is one. */
void thread_table__remove(struct thread_table *t, uint32_t tid);
size_t thread_table__count(const struct thread_table *t);
void thread_table__free(struct thread_table *t);

#endif
