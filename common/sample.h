/* The sample record the BPF program sends to userspace through the ring buffer,
 * and the counters it keeps. Shared by kernel/hprof.bpf.c and user/. */
#ifndef HPROF_SAMPLE_H
#define HPROF_SAMPLE_H

#include "types.h"
#include "python.h"
#include "go.h"

#define HPROF_COMM_LEN 16

/* User frame-pointer chain: the sampled ip plus up to this many return addresses. */
#define HPROF_MAX_FP_DEPTH 256
/* Kernel frames from bpf_get_stack; the kernel's default perf_event_max_stack. */
#define HPROF_MAX_KERNEL_DEPTH 127
/* Largest user stack copy --stack-size accepts. Some programs keep tens of KiB of locals
 * on the stack (x264's analysis: frames of 24-31 KiB, stacks ~85 KiB deep). */
#define HPROF_MAX_STACK_COPY 131072
#define HPROF_MAX_STACK_COPY_TEXT "131072" /* for messages */
/* The stack copy is read a page at a time so that a copy running past the end of the
 * stack mapping keeps the pages before it instead of failing whole. */
#define HPROF_STACK_CHUNK 4096
#define HPROF_MAX_STACK_CHUNKS (HPROF_MAX_STACK_COPY / HPROF_STACK_CHUNK + 1)
/* The ceiling on each sample's copy (--stack-size); what is copied below it is the
 * thread's live stack: from sp to its learned base, else to the end of its stack. */
#define HPROF_DEFAULT_STACK_COPY 131072
/* Stack bytes copied from the outermost frame record the FP chain reached, when the main
 * copy does not hold them: enough for the DWARF walk to go on from there through libc's
 * start-up code (__libc_start_call_main, __libc_start_main, _start; start_thread, clone3),
 * which keeps no frame pointers. */
#define HPROF_FP_TAIL_WINDOW 512
/* A stack deeper than the copy's ceiling, whose thread's base is known, is copied in two
 * parts: the ceiling less this many bytes from sp, and this many below the base. The
 * window holds the frames every walk of the thread ends in (its start routine, main's
 * callers); between the parts lie the middle of frames that keep large buffers (rav1e's
 * 13-43 KiB), which a walk does not read. */
#define HPROF_BASE_WINDOW 16384

/* Bytes below the top of a signal's alternate stack searched for the signal frame the
 * kernel wrote on entering it: the frame lies below the saved FPU state, which is up to
 * about 11 KiB with AMX, 2.7 KiB with AVX-512. */
#define HPROF_SIGFRAME_SEARCH 16384

_Static_assert(HPROF_MAX_FP_DEPTH >= 127, "FP chains must reach at least 127 frames");
_Static_assert(HPROF_MAX_STACK_COPY % HPROF_STACK_CHUNK == 0, "stack copy is whole chunks");
_Static_assert((HPROF_MAX_STACK_CHUNKS - 1) * HPROF_STACK_CHUNK >= HPROF_MAX_STACK_COPY,
	       "enough chunks for the largest copy, plus one for a partial first page");
_Static_assert(HPROF_MAX_STACK_CHUNKS <= 64, "a copy's pages fit its 64-bit map of holes");
_Static_assert(HPROF_SIGFRAME_SEARCH <= HPROF_MAX_STACK_COPY, "the search stays in the copy");
_Static_assert(HPROF_BASE_WINDOW % 8 == 0 && 2 * HPROF_BASE_WINDOW <= HPROF_DEFAULT_STACK_COPY,
	       "the window at the base is whole words, and the smaller part of a default copy");

/* Why the in-kernel frame-pointer walk stopped. */
enum fp_end {
	FP_END_ZERO_LINK = 0,     /* saved rbp or return address was 0: the outermost frame */
	FP_END_READ_FAILED = 1,   /* bp pointed at unreadable memory */
	FP_END_NOT_ASCENDING = 2, /* the next bp was not above the current one */
	FP_END_DEPTH_LIMIT = 3,   /* HPROF_MAX_FP_DEPTH reached */
	FP_END_NO_USER = 4,       /* kernel thread: no user stack at all */
	FP_END_OFF_STACK = 5,     /* bp lay outside the thread's learned stack: not read */
};

/* hprof_sample.flags */
#define SAMPLE_IN_KERNEL   (1u << 0) /* the sample interrupted kernel code */
#define SAMPLE_USER_REGS   (1u << 1) /* user_ip/sp/bp/bx/di are valid */
#define SAMPLE_COPY_CLAMPED (1u << 2) /* the stack copy stopped short of the request */
#define SAMPLE_COPY_LEARNED (1u << 3) /* the copy ended at the thread's learned stack base */
#define SAMPLE_NO_USER_CONTEXT (1u << 5) /* in execve or exit: the task's user registers
					   * describe an address space that is gone */
#define SAMPLE_COPY_FP      (1u << 4) /* the FP chain ended where the thread's always do: only
				       * HPROF_LEAF_COPY bytes were copied, for the leaf */
#define SAMPLE_COPY_ALTSTACK (1u << 6) /* sp was on the thread's signal stack (sigaltstack): the
					 * copy ends at its top, the interrupted stack follows */
#define SAMPLE_STACK_DELTA  (1u << 7) /* on the wire only: the stack region is a struct
				       * hprof_stack_delta encoding, rebuilt whole by userspace
				       * before anything else reads the record */
#define SAMPLE_DELTA_BASE_MISSING (1u << 8) /* the copy was a delta against one userspace no
					     * longer held: its stack is lost (stack_len 0) */
#define SAMPLE_COPY_BASE_WINDOW (1u << 9) /* the stack runs deeper than the ceiling: the copy
					   * from sp is followed by up to HPROF_BASE_WINDOW bytes
					   * below the thread's learned base, ending at it */
#define SAMPLE_FP_TAIL_OFF_STACK (1u << 10) /* the FP chain's outermost record lies outside the
					    * mapping of the stack sp is on (a runtime that runs
					    * code on a stack of its own, entered from the
					    * thread's: SBCL): no window was copied there */
#define SAMPLE_NO_R8 (1u << 15) /* userspace only: read from a capture that predates user_r8
				 * (version 6), which holds 0 */
#define SAMPLE_GO_SWITCH (1u << 14) /* a Go thread on its g0 stack: the record ends with a
				     * struct hprof_go_switch and its goroutine's stack (go.h) */
/* bits 11-13 hold the Python status (python.h, HPROF_PY_STATUS_SHIFT) */
_Static_assert(((SAMPLE_NO_R8 | SAMPLE_GO_SWITCH | SAMPLE_FP_TAIL_OFF_STACK) &
		(HPROF_PY_STATUS_MASK << HPROF_PY_STATUS_SHIFT)) == 0,
	       "flags clear of the Python status");

/* What userspace has learned of a thread's stack (BPF map thread_stacks, by tid). */
struct hprof_thread_stack {
	__u64 base;    /* the outermost frame's CFA: no walk of this thread reads at or above it */
	/* The frame record at which this thread's FP chains end when they are right (main's,
	 * in a program built with frame pointers); 0 when its chains cannot be trusted. */
	__u64 fp_tail;
	__u64 fp_tail_ip; /* the return address read at fp_tail + 8: main's into libc */
	/* The thread's task start time, which a later thread given the same tid does not
	 * share: userspace writes 0, and the thread's next sample claims the entry with its
	 * own. Userspace deletes the entry when it handles the thread's exit; a claimed entry
	 * it missed is checked rather than trusted (a BPF hook on every exit cost more than
	 * everything else the kernel does for an always-on agent). */
	__u64 start_time;
};
_Static_assert(sizeof(struct hprof_thread_stack) == 32, "thread_stacks value is shared with BPF");
/* The frames beyond a chain's end that may be learned: libc's start-up code only
 * (__libc_start_call_main, __libc_start_main, _start; start_thread, clone3). Beyond a
 * function deeper than main they depend on the call path, not on the thread. */
#define HPROF_MAX_LEARNED_TAIL 3
/* Copied from sp when the FP chain suffices: enough for a leaf without a frame pointer and
 * its callers in libc to be walked onto the chain (snprintf's __vsnprintf_internal keeps
 * 400 bytes, snprintf 216 more: 256 bytes left fp_demo's samples there "copy too short"). */
#define HPROF_LEAF_COPY 1024
#define HPROF_MAX_THREADS 65536
/* The pid filter (BPF map pids) holds, for each profiled tgid, the start time of the
 * process a fork added (task_struct.start_time, which a later process given the same pid
 * does not share), or HPROF_PID_ADDED for a pid userspace added (-p, -- COMMAND). */
#define HPROF_PID_ADDED 0

/* Followed by data[]: __u64 user_ips[nr_user]; __u64 kernel_ips[nr_kernel];
 * __u8 stack[stack_len] (user memory from user_sp upwards); __u8
 * interrupted[interrupted_len] (a second copy: user memory from interrupted_sp upwards); __u8
 * tail[tail_len] (user memory from fp_tail_frame upwards); struct hprof_py_frame
 * python[nr_python] (innermost first, unaligned); with SAMPLE_GO_SWITCH, struct
 * hprof_go_switch go and __u8 go_stack[go.len]. user_ips[0] is user_ip. Read it
 * through the hprof_sample__* accessors below, never by computing offsets.
 *
 * A map of holes marks the pages of a copy that could not be read (never touched, or
 * swapped out) and were left zero-filled, so that the pages above them still are: bit i
 * is the i-th page from the copy's first (the page holding its first byte). */
struct hprof_sample {
	__u64 timestamp_ns;
	__u64 user_ip;
	__u64 user_sp;
	__u64 user_bp;
	/* Two more of the user registers, for the DWARF walk: rbx, which a CFA rule may be
	 * based on (ld.so's lazy-binding trampoline), and rdi, where a leaf may keep its return
	 * address (glibc's __vfork). */
	__u64 user_bx;
	__u64 user_di;
	/* The registers GCC's realigned frames keep their CFA in, in their prologue and
	 * epilogue (the DRAP register: r10, else one of r12-r15). */
	__u64 user_r10, user_r12, user_r13, user_r14, user_r15;
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 cpu;
	__u32 flags;
	__u16 nr_user;
	__u16 nr_kernel;
	__u32 stack_len;
	__u8 fp_end; /* enum fp_end */
	__u8 nr_python; /* Python frames (struct hprof_py_frame) after the tail */
	__u16 tail_len;
	__u32 interrupted_len; /* see interrupted_sp */
	__u64 stack_holes; /* the stack copy's unreadable pages */
	/* Address of the frame record the FP chain's last return address was read from
	 * (user_ips[nr_user - 1] is at fp_tail_frame + 8); 0 when the chain has one frame. */
	__u64 fp_tail_frame;
	char comm[HPROF_COMM_LEN];
	/* A second copy. On a signal's alternate stack (SAMPLE_COPY_ALTSTACK), the stack the
	 * signal interrupted, copied from the sp saved in the kernel's signal frame; on a
	 * stack deeper than the ceiling (SAMPLE_COPY_BASE_WINDOW), the window below the
	 * thread's base. 0 and 0 when there is none. stack_len + interrupted_len stay within
	 * the copy's ceiling. */
	__u64 interrupted_sp;
	__u64 interrupted_holes; /* the interrupted copy's unreadable pages */
	/* r8, where sljit's fast calls (PCRE2's JIT) keep a callee's return address: its UTF
	 * helpers pop it there and return with push %r8; ret. Not in captures older than
	 * version 7 (SAMPLE_NO_R8). */
	__u64 user_r8;
	__u8 data[];
};
_Static_assert(sizeof(struct hprof_sample) == 176, "hprof_sample layout is shared with BPF");

#define HPROF_PY_MAX_BYTES (HPROF_PY_MAX_FRAMES * sizeof(struct hprof_py_frame))
#define HPROF_SAMPLE_MAX_SIZE                                                              \
	(sizeof(struct hprof_sample) + (HPROF_MAX_FP_DEPTH + HPROF_MAX_KERNEL_DEPTH) * 8 + \
	 HPROF_MAX_STACK_COPY + HPROF_FP_TAIL_WINDOW + HPROF_PY_MAX_BYTES + HPROF_GO_MAX_BYTES)
_Static_assert(HPROF_FP_TAIL_WINDOW < 65536, "tail_len is 16 bits");

/* Delta copies. A copy to the thread's learned base is cut into HPROF_DELTA_CHUNK-byte
 * chunks counted down from the copy's end (chunk 0 ends there; the one holding sp may be
 * shorter). The kernel keeps a 64-bit hash of each of the first HPROF_DELTA_MAX_CHUNKS
 * chunks of a thread's last copy the ring buffer accepted, and sends only those that
 * changed since, with one bit per chunk; the bytes below the tracked chunks (a stack
 * deeper than they reach) are always sent. With SAMPLE_STACK_DELTA the stack region of a
 * record, stack_len bytes, holds:
 *   struct hprof_stack_delta;
 *   __u64 sent[hprof_delta__map_words(nr_chunks)]   only when base_seq != 0 (a delta);
 *                                                   bit i: chunk i is in the payload
 *   __u8 payload[]   the untracked bytes, then the chunks sent, in address order;
 *                    a full copy (base_seq 0) sends every chunk
 *   __u8 image[full_len]   only with HPROF_DELTA_VERIFY: the whole copy, to check against
 * Chunks a delta leaves out are those of the copy numbered base_seq of the same thread. */
#define HPROF_DELTA_CHUNK 64
#define HPROF_DELTA_MAX_CHUNKS 256 /* tracked: the 16 KiB next to the base */
#define HPROF_DELTA_MAP_WORDS (HPROF_DELTA_MAX_CHUNKS / 64)
/* Every this many copies of a thread, one is sent whole whatever changed. */
#define HPROF_DELTA_FULL_EVERY 64
/* Slots of the kernel's chunk hashes (BPF array delta_states), one thread each: tid's is
 * hprof_delta__slot(tid). Two live threads on the same slot take turns: each one's copy
 * after the other's is whole. */
#define HPROF_DELTA_SLOTS 4096
#define HPROF_DELTA_VERIFY 1 /* hprof_stack_delta.flags: the whole copy follows (a check) */

_Static_assert(HPROF_DELTA_MAX_CHUNKS % 64 == 0, "the map of chunks sent is whole words");
_Static_assert(HPROF_DELTA_MAX_CHUNKS * HPROF_DELTA_CHUNK <= HPROF_MAX_STACK_COPY,
	       "tracked chunks lie within the largest copy");
_Static_assert(HPROF_DELTA_MAX_CHUNKS < 65536, "nr_chunks is 16 bits");
_Static_assert((HPROF_DELTA_SLOTS & (HPROF_DELTA_SLOTS - 1)) == 0, "slots by the tid's low bits");

struct hprof_stack_delta {
	__u64 seq;      /* this copy's number among its thread's copies */
	__u64 base_seq; /* the copy this one leaves chunks out of; 0: none, all is here */
	__u32 full_len; /* bytes of stack the copy stands for, from user_sp */
	__u16 nr_chunks; /* tracked chunks: hprof_delta__nr_chunks(full_len) */
	__u16 flags;    /* HPROF_DELTA_VERIFY */
};
_Static_assert(sizeof(struct hprof_stack_delta) == 24, "hprof_stack_delta is shared with BPF");

/* Largest stack region a record sends: a delta's header and map, a payload as long as the
 * copy, and with HPROF_DELTA_VERIFY the copy again. */
#define HPROF_MAX_STACK_WIRE                                                               \
	(sizeof(struct hprof_stack_delta) + HPROF_DELTA_MAP_WORDS * 8 + 2 * HPROF_MAX_STACK_COPY)
#define HPROF_SAMPLE_MAX_WIRE_SIZE                                                         \
	(sizeof(struct hprof_sample) + (HPROF_MAX_FP_DEPTH + HPROF_MAX_KERNEL_DEPTH) * 8 + \
	 HPROF_MAX_STACK_WIRE + HPROF_FP_TAIL_WINDOW + HPROF_PY_MAX_BYTES + HPROF_GO_MAX_BYTES)

/* Chunks tracked in a copy of full_len bytes. */
static inline __u32 hprof_delta__nr_chunks(__u64 full_len)
{
	__u64 n = (full_len + HPROF_DELTA_CHUNK - 1) / HPROF_DELTA_CHUNK;

	return n < HPROF_DELTA_MAX_CHUNKS ? n : HPROF_DELTA_MAX_CHUNKS;
}

/* Bytes from sp below the tracked chunks: always sent. */
static inline __u64 hprof_delta__untracked(__u64 full_len)
{
	__u64 tracked = (__u64)HPROF_DELTA_MAX_CHUNKS * HPROF_DELTA_CHUNK;

	return full_len > tracked ? full_len - tracked : 0;
}

/* Chunk i of a copy of full_len bytes: [*lo, hi) as offsets from sp. */
static inline __u64 hprof_delta__chunk(__u64 full_len, __u32 i, __u64 *lo)
{
	__u64 hi = full_len - (__u64)i * HPROF_DELTA_CHUNK;

	*lo = hi > HPROF_DELTA_CHUNK ? hi - HPROF_DELTA_CHUNK : 0;
	return hi;
}

static inline __u32 hprof_delta__map_words(__u32 nr_chunks)
{
	return (nr_chunks + 63) / 64;
}

static inline __u32 hprof_delta__slot(__u32 tid)
{
	return tid & (HPROF_DELTA_SLOTS - 1);
}

#ifndef __bpf__
/* A record of size bytes whose parts before its Go section take at bytes: true when it is
 * that long, and with SAMPLE_GO_SWITCH holds the section whole. */
static inline int hprof_sample__go_fits(const struct hprof_sample *s, __u64 size, __u64 at)
{
	struct hprof_go_switch go;

	if (size < at)
		return 0;
	if (!(s->flags & SAMPLE_GO_SWITCH))
		return 1;
	if (size - at < sizeof(go))
		return 0;
	__builtin_memcpy(&go, (const __u8 *)s + at, sizeof(go));
	return go.len <= HPROF_GO_STACK_MAX && size - at - sizeof(go) >= go.len;
}

/* A record of size bytes is well formed when its counts are within their limits and its
 * data holds everything they describe. Every other accessor assumes this. */
static inline int hprof_sample__well_formed(const struct hprof_sample *s, __u64 size)
{
	/* a delta is not a stack until userspace rebuilt it */
	if (size < sizeof(*s) || (s->flags & SAMPLE_STACK_DELTA) ||
	    s->nr_user > HPROF_MAX_FP_DEPTH || s->nr_kernel > HPROF_MAX_KERNEL_DEPTH ||
	    s->stack_len > HPROF_MAX_STACK_COPY ||
	    s->interrupted_len > HPROF_MAX_STACK_COPY - s->stack_len ||
	    s->tail_len > HPROF_FP_TAIL_WINDOW || s->nr_python > HPROF_PY_MAX_FRAMES)
		return 0;
	return hprof_sample__go_fits(s, size, sizeof(*s) + (s->nr_user + s->nr_kernel) * 8ull +
						      s->stack_len + s->interrupted_len +
						      s->tail_len +
						      s->nr_python * (__u64)sizeof(struct hprof_py_frame));
}

/* Frame addresses may be unaligned in the ring buffer: copy them out. */
static inline __u64 hprof_sample__user_ip(const struct hprof_sample *s, __u32 i)
{
	__u64 v;

	__builtin_memcpy(&v, s->data + (__u64)i * 8, sizeof(v));
	return v;
}

static inline __u64 hprof_sample__kernel_ip(const struct hprof_sample *s, __u32 i)
{
	return hprof_sample__user_ip(s, s->nr_user + i);
}

static inline const __u8 *hprof_sample__stack(const struct hprof_sample *s)
{
	return s->data + (__u64)(s->nr_user + s->nr_kernel) * 8;
}

static inline const __u8 *hprof_sample__interrupted(const struct hprof_sample *s)
{
	return hprof_sample__stack(s) + s->stack_len;
}

static inline const __u8 *hprof_sample__tail(const struct hprof_sample *s)
{
	return hprof_sample__interrupted(s) + s->interrupted_len;
}

/* Python frame i (innermost first) of a well-formed record. */
static inline struct hprof_py_frame hprof_sample__python(const struct hprof_sample *s, __u32 i)
{
	struct hprof_py_frame f;

	__builtin_memcpy(&f, hprof_sample__tail(s) + s->tail_len + (__u64)i * sizeof(f), sizeof(f));
	return f;
}

static inline enum hprof_py_status hprof_sample__python_status(const struct hprof_sample *s)
{
	return (enum hprof_py_status)((s->flags >> HPROF_PY_STATUS_SHIFT) & HPROF_PY_STATUS_MASK);
}

/* The Go section (SAMPLE_GO_SWITCH) of a well-formed record: its header, false without one. */
static inline int hprof_sample__go_switch(const struct hprof_sample *s, struct hprof_go_switch *go)
{
	if (!(s->flags & SAMPLE_GO_SWITCH))
		return 0;
	__builtin_memcpy(go, hprof_sample__tail(s) + s->tail_len +
				     s->nr_python * (__u64)sizeof(struct hprof_py_frame),
			 sizeof(*go));
	return 1;
}

/* The goroutine's stack bytes of the Go section: go->len of them from go->sched_sp. */
static inline const __u8 *hprof_sample__go_stack(const struct hprof_sample *s)
{
	return hprof_sample__tail(s) + s->tail_len +
	       s->nr_python * (__u64)sizeof(struct hprof_py_frame) + sizeof(struct hprof_go_switch);
}

/* Bytes after the tail: the Python frames and the Go section. */
static inline __u64 hprof_sample__after_tail_len(const struct hprof_sample *s)
{
	struct hprof_go_switch go;
	__u64 len = s->nr_python * (__u64)sizeof(struct hprof_py_frame);

	if (hprof_sample__go_switch(s, &go))
		len += sizeof(go) + go.len;
	return len;
}

/* All the user memory the record carries, from hprof_sample__stack on: the stack, the
 * interrupted stack and the window at the FP chain's end, one after the other. */
static inline __u64 hprof_sample__user_memory_len(const struct hprof_sample *s)
{
	return (__u64)s->stack_len + s->interrupted_len + s->tail_len;
}

/* A map of holes for the first len bytes of a copy from base: its pages past them go. */
static inline __u64 hprof_sample__holes_within(__u64 holes, __u64 base, __u64 len)
{
	__u64 pages = len ? ((base + len - 1) / HPROF_STACK_CHUNK - base / HPROF_STACK_CHUNK) + 1 : 0;

	return pages >= 64 ? holes : holes & ((1ull << pages) - 1);
}

/* Cuts a well-formed record of *size bytes to the copy --stack-size limit would have
 * given: a copy to the learned base in two parts (hprof_sample__split_copy); else at most
 * limit bytes of stack, then of the second copy: the interrupted stack's lowest bytes, the
 * window below the base's highest (the frames next to the base). The window at the FP
 * chain's end moves down with what follows it. */
/* A copy from sp to the thread's learned base, longer than limit, cut as the kernel cuts a
 * stack deeper than its ceiling (copy_with_base_window): limit less HPROF_BASE_WINDOW from
 * sp, then the window below the base as the second copy. False (nothing done) when the copy
 * is not of that kind, or the window would hold a hole (returns 0; 1 when cut). */
static inline int hprof_sample__split_copy(struct hprof_sample *s, __u64 *size, __u32 limit)
{
	__u8 *stack = (__u8 *)hprof_sample__stack(s);
	__u32 first = (limit - HPROF_BASE_WINDOW) & ~7u, window = HPROF_BASE_WINDOW;
	__u64 window_sp = s->user_sp + s->stack_len - window;
	__u32 window_page = (__u32)(window_sp / HPROF_STACK_CHUNK - s->user_sp / HPROF_STACK_CHUNK);

	if (!(s->flags & SAMPLE_COPY_LEARNED) || (s->flags & SAMPLE_COPY_BASE_WINDOW) ||
	    s->interrupted_len || limit < 2 * HPROF_BASE_WINDOW || s->stack_len <= limit ||
	    (window_page < 64 && (s->stack_holes >> window_page)))
		return 0;
	__builtin_memmove(stack + first, stack + s->stack_len - window, window);
	__builtin_memmove(stack + first + window, hprof_sample__tail(s),
			  s->tail_len + hprof_sample__after_tail_len(s));
	*size -= s->stack_len - first - window;
	s->stack_holes = hprof_sample__holes_within(s->stack_holes, s->user_sp, first);
	s->stack_len = first;
	s->interrupted_sp = window_sp;
	s->interrupted_len = window;
	s->interrupted_holes = 0;
	s->flags |= SAMPLE_COPY_BASE_WINDOW;
	return 1;
}

static inline void hprof_sample__limit_copy(struct hprof_sample *s, __u64 *size, __u32 limit)
{
	__u8 *stack = (__u8 *)hprof_sample__stack(s);
	__u32 stack_len = s->stack_len < limit ? s->stack_len : limit;
	__u32 room = limit - stack_len;
	__u32 interrupted_len = s->interrupted_len < room ? s->interrupted_len : room;
	__u64 cut = (__u64)s->stack_len + s->interrupted_len - stack_len - interrupted_len;
	__u32 skip = 0; /* bytes cut from the second copy's start */

	if (cut == 0 || hprof_sample__split_copy(s, size, limit))
		return;
	if ((s->flags & SAMPLE_COPY_BASE_WINDOW) && interrupted_len < s->interrupted_len) {
		skip = (s->interrupted_len - interrupted_len + 7) & ~7u;
		interrupted_len = skip < s->interrupted_len ? s->interrupted_len - skip : 0;
		cut = (__u64)s->stack_len + s->interrupted_len - stack_len - interrupted_len;
		s->interrupted_holes = 0; /* the window is read whole, without holes */
		s->interrupted_sp += skip;
	}
	__builtin_memmove(stack + stack_len, hprof_sample__interrupted(s) + skip, interrupted_len);
	__builtin_memmove(stack + stack_len + interrupted_len, hprof_sample__tail(s),
			  s->tail_len + hprof_sample__after_tail_len(s));
	s->stack_holes = hprof_sample__holes_within(s->stack_holes, s->user_sp, stack_len);
	s->interrupted_holes =
		hprof_sample__holes_within(s->interrupted_holes, s->interrupted_sp, interrupted_len);
	s->stack_len = stack_len;
	s->interrupted_len = interrupted_len;
	if (interrupted_len == 0)
		s->interrupted_sp = 0;
	*size -= cut;
}

/* Bytes before the stack region: the header and the frames. */
static inline __u64 hprof_sample__head_len(const struct hprof_sample *s)
{
	return hprof_sample__stack(s) - (const __u8 *)s;
}

/* For building a record: where its stack region goes once nr_user and nr_kernel are set. */
static inline __u8 *hprof_sample__stack_to_fill(struct hprof_sample *s)
{
	return s->data + (__u64)(s->nr_user + s->nr_kernel) * 8;
}

/* A delta record as the ring buffer delivers it, of size bytes: well formed as a rebuilt
 * one would be, except that its stack region may be as long as HPROF_MAX_STACK_WIRE. A
 * delta is a copy to the thread's learned base, never one from a signal's alternate
 * stack: it has no interrupted stack. */
static inline int hprof_sample__wire_well_formed(const struct hprof_sample *s, __u64 size)
{
	if (size < sizeof(*s) || !(s->flags & SAMPLE_STACK_DELTA) ||
	    s->nr_user > HPROF_MAX_FP_DEPTH || s->nr_kernel > HPROF_MAX_KERNEL_DEPTH ||
	    s->stack_len > HPROF_MAX_STACK_WIRE || s->interrupted_len != 0 ||
	    s->tail_len > HPROF_FP_TAIL_WINDOW || s->nr_python > HPROF_PY_MAX_FRAMES)
		return 0;
	return hprof_sample__go_fits(s, size, sizeof(*s) + (s->nr_user + s->nr_kernel) * 8ull +
						      s->stack_len + s->interrupted_len +
						      s->tail_len +
						      s->nr_python * (__u64)sizeof(struct hprof_py_frame));
}

/* The parts of a delta's stack region (see struct hprof_stack_delta). */
struct hprof_delta_parts {
	struct hprof_stack_delta hdr;
	const __u8 *map;     /* hprof_delta__map_words(hdr.nr_chunks) words; NULL: a full copy */
	const __u8 *payload;
	__u64 payload_len;
	const __u8 *image;   /* with HPROF_DELTA_VERIFY, hdr.full_len bytes; else NULL */
};

/* Splits the stack region of a wire-well-formed delta record into its parts. Returns 0
 * when the region is too short for what its header says, or the header is out of its
 * limits; what the payload must hold is for the caller to check against the map. */
static inline int hprof_sample__delta_parts(const struct hprof_sample *s,
					    struct hprof_delta_parts *p)
{
	const __u8 *region = hprof_sample__stack(s);
	__u64 len = s->stack_len, at = sizeof(p->hdr), map_len, image_len;

	if (len < at)
		return 0;
	__builtin_memcpy(&p->hdr, region, sizeof(p->hdr));
	if (p->hdr.full_len > HPROF_MAX_STACK_COPY ||
	    p->hdr.nr_chunks != hprof_delta__nr_chunks(p->hdr.full_len) || p->hdr.seq == 0 ||
	    (p->hdr.flags & ~HPROF_DELTA_VERIFY))
		return 0;
	map_len = p->hdr.base_seq ? hprof_delta__map_words(p->hdr.nr_chunks) * 8ull : 0;
	image_len = (p->hdr.flags & HPROF_DELTA_VERIFY) ? p->hdr.full_len : 0;
	if (len - at < map_len + image_len)
		return 0;
	p->map = map_len ? region + at : NULL;
	p->payload = region + at + map_len;
	p->payload_len = len - at - map_len - image_len;
	p->image = image_len ? p->payload + p->payload_len : NULL;
	return 1;
}
#endif

/* Per-CPU counters kept by the BPF program, indexed by enum kernel_counter. */
enum kernel_counter {
	KC_SAMPLES = 0,          /* perf events handled (after idle/pid filtering) */
	KC_IDLE,                 /* samples of the idle task, not recorded */
	KC_FILTERED,             /* samples of processes not being profiled */
	KC_DROP_RINGBUF_FULL,    /* lost: no room in the ring buffer */
	KC_DROP_NO_SCRATCH,      /* lost: per-CPU scratch buffer unavailable */
	KC_USER_REGS_MISSING,    /* recorded without user registers */
	KC_NO_USER_CONTEXT,      /* recorded without a user stack: the task was in execve or exit */
	KC_FP_READ_FAILED,       /* FP walk ended on an unreadable bp (frames lost) */
	KC_STACK_COPY_FAILED,    /* the stack copy read nothing */
	KC_STACK_COPY_CLAMPED,   /* the stack copy stopped at the end of readable memory */
	KC_KERNEL_STACK_FAILED,  /* bpf_get_stack failed on a kernel-mode sample */
	KC_FORKS_FOLLOWED,       /* children added to the pid filter */
	KC_FP_TAIL_FAILED,       /* the window at the FP chain's end could not be read */
	KC_COPY_LEARNED,         /* stack copies up to the thread's learned base */
	KC_COPY_DEFAULT,         /* stack copies to the end of the stack (thread not known yet) */
	KC_COPY_FP,              /* only the leaf copied: the FP chain suffices */
	KC_STACK_COPY_HOLES,     /* copies with unreadable pages inside, left as marked holes */
	KC_COPY_ALTSTACK,        /* copies from a signal's alternate stack, with the interrupted stack */
	KC_SIGFRAME_NOT_FOUND,   /* on an alternate stack, its signal frame not found: the
				  * interrupted stack not copied */
	KC_FORKS_NOT_FOLLOWED,   /* children of profiled processes not added to the pid filter,
				  * which was full: their samples count as other processes' */
	KC_COPY_BASE_WINDOW,     /* stacks deeper than the ceiling: copied from sp, and below
				  * the thread's learned base */
	KC_COPY_OFF_STACK,       /* of those, sp was off the thread's stack (a workspace of the
				  * code's own): copied from sp, and below its learned base */
	KC_FP_OFF_STACK,         /* FP walk ended on a bp outside the thread's learned stack,
				  * not read (rbp holding data: code without frame pointers) */
	KC_NR,
};

#endif
