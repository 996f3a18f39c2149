/* CPython frames read by the BPF program at sample time: what userspace tells the kernel of
 * each CPython process (BPF map python_procs, by tgid), and the frames a sample carries.
 * Shared by kernel/hprof.bpf.c and user/python/. */
#ifndef HPROF_PYTHON_H
#define HPROF_PYTHON_H

#include "types.h"

/* Python frames a sample carries at most (nr_python is 8 bits): a deeper chain keeps its
 * innermost frames and says HPROF_PY_TRUNCATED. */
#define HPROF_PY_MAX_FRAMES 128
/* Thread states of one interpreter searched for the sampled thread's. */
#define HPROF_PY_MAX_THREADS 256

_Static_assert(HPROF_PY_MAX_FRAMES <= 255, "nr_python is 8 bits");

/* The bytes from a frame's start that hold the fields read (their largest offset plus 8):
 * a field further in reads as 0. hprof_python_proc.frame_read says how many of them a
 * version's fields need. */
#define HPROF_PY_FRAME_READ 128
/* From 3.11 a thread's frames lie on its data stack, callers below callees, chunk by chunk
 * (the evaluator's own C-stack frames of 3.12+ and generators' frames aside): a frame is
 * read with the frames below it in one block, from its chunk's start (datastack_chunk)
 * where it lies within HPROF_PY_BLOCK_MAX of it, else from its page's start, and the
 * callers found in the block are read from that copy. */
#define HPROF_PY_PAGE 4096
/* The most bytes of a chunk read in one block (a chunk is 16 KiB unless one frame needs
 * more; about 100 frames of a small function) */
#define HPROF_PY_BLOCK_MAX (15 * 1024)
/* The most bytes of a thread state read in one piece (thread_id, the frame pointer and
 * datastack_chunk: one read where there were two), and of a code object for its check
 * (the check word and co_name before 3.12). */
#define HPROF_PY_TSTATE_READ 512
#define HPROF_PY_CODE_READ 128
/* Distinct code objects whose checks one walk remembers: a recursion (the same code in
 * frame after frame) reads its code object's check once per sample, not once per frame. A
 * live frame holds a reference to its code, so within one sample one address is one
 * object; across samples nothing is remembered. */
#define HPROF_PY_CHECK_MEMO 4

/* How a version's frames chain and where one native call of the evaluator ends. */
enum hprof_py_frames {
	/* 3.8-3.10: PyFrameObject, f_back; f_lasti an int (bytes in 3.8-3.9, code units in
	 * 3.10); every frame is run by a call of _PyEval_EvalFrameDefault of its own */
	HPROF_PY_FRAME_OBJECT = 1,
	/* 3.11: _PyInterpreterFrame; prev_instr a pointer; frame_entry is the is_entry byte:
	 * nonzero on the outermost frame of an evaluator call */
	HPROF_PY_FRAME_IS_ENTRY = 2,
	/* 3.12+: _PyInterpreterFrame; the evaluator pushes a frame owned by the C stack
	 * (frame_entry is the owner byte, HPROF_PY_OWNED_BY_CSTACK) under the frames it runs */
	HPROF_PY_FRAME_CSTACK_SHIM = 3,
};

#define HPROF_PY_OWNED_BY_CSTACK 3
/* cframe_frame when tstate_frame points at the frame itself (3.8-3.10, 3.13+) */
#define HPROF_PY_NO_CFRAME 0xffffffffu

/* BPF map python_procs value: where the process's runtime state is, and the offsets of the
 * fields the kernel reads, all in bytes. Userspace writes it only for a process whose
 * binary it recognised as a CPython of a known version; the kernel trusts nothing it reads
 * through it (every read may fail, every loop is bounded). */
struct hprof_python_proc {
	__u64 runtime;            /* address of _PyRuntime */
	__u64 start_time;         /* the process's task start time: a later one given the pid
				   * is not this one */
	__u32 version;            /* PY_VERSION_HEX >> 16: 0x030b for 3.11 */
	__u32 kind;               /* enum hprof_py_frames */
	__u32 runtime_interp;     /* _PyRuntime.interpreters.head */
	__u32 interp_threads;     /* PyInterpreterState.tstate_head / threads.head */
	__u32 tstate_next;        /* PyThreadState.next */
	__u32 tstate_thread_id;   /* PyThreadState.thread_id: pthread_self(), glibc's fs base */
	__u32 tstate_frame;       /* PyThreadState.frame / cframe / current_frame */
	__u32 cframe_frame;       /* _PyCFrame.current_frame, or HPROF_PY_NO_CFRAME */
	__u32 frame_code;         /* f_code / f_executable */
	__u32 frame_previous;     /* f_back / previous */
	__u32 frame_instr;        /* f_lasti (int) / prev_instr / instr_ptr (pointer) */
	__u32 frame_entry;        /* is_entry / owner byte; unused for HPROF_PY_FRAME_OBJECT */
	__u32 code_check;         /* 8 bytes of the code object folded into hprof_py_frame.check */
	/* co_name, whose str's hash (at HPROF_PY_STR_HASH) is folded in with them; 0: not
	 * folded (3.12+, whose word at code_check holds co_version, a serial of its own) */
	__u32 code_name;
	/* bytes from a frame's start that hold the fields read (frame_code ... frame_entry),
	 * at most HPROF_PY_FRAME_READ: only they are read */
	__u32 frame_read;
	/* tstate_read bytes of a thread state from tstate_read_lo hold tstate_thread_id,
	 * tstate_frame and tstate_datastack: read in one piece, HPROF_PY_TSTATE_READ at most */
	__u32 tstate_read_lo, tstate_read;
	/* PyThreadState.datastack_chunk (3.11+): the chunk of the data stack the innermost
	 * frames lie in, read with them from its start; 0: not read */
	__u32 tstate_datastack;
	/* code_read bytes of a code object from code_read_lo hold code_check and code_name:
	 * read in one piece, HPROF_PY_CODE_READ at most */
	__u32 code_read_lo, code_read;
	__u32 reserved;
};
_Static_assert(sizeof(struct hprof_python_proc) == 104, "python_procs value is shared with BPF");

/* One Python frame of a sample, innermost first. */
struct hprof_py_frame {
	__u64 code;  /* the code object's address */
	/* bits 0-30: the instruction: f_lasti (31-bit two's complement) for
	 * HPROF_PY_FRAME_OBJECT, else the instruction pointer's offset from code; bit 31:
	 * HPROF_PY_ENTRY */
	__u32 instr;
	/* hprof_py__check of the 8 bytes at code + code_check (XOR co_name's hash where
	 * code_name is set) when the frame was read: a code object freed and another made at
	 * its address is told apart from it, even one of the same shape and first line (code
	 * compiled from one template, in a loop) */
	__u32 check;
};
_Static_assert(sizeof(struct hprof_py_frame) == 16, "a Python frame is 16 bytes on the wire");

/* The frame is the outermost of one call of the evaluator (_PyEval_EvalFrameDefault): the
 * frames from the previous entry (exclusive) to it ran in that native frame. */
#define HPROF_PY_ENTRY (1u << 31)
#define HPROF_PY_INSTR_MASK (HPROF_PY_ENTRY - 1)

/* PyASCIIObject.hash (Py_hash_t), the same in 3.8-3.13: set once, when the str is first
 * hashed (an identifier such as co_name is interned, so hashed, as it is made). */
#define HPROF_PY_STR_HASH 24

static inline __u32 hprof_py__check(__u64 word)
{
	word ^= word >> 29;
	word *= 0xbf58476d1ce4e5b9ull;
	return (__u32)(word ^ (word >> 32));
}

/* Why a sample of a process in python_procs has the Python frames it has
 * (hprof_sample.flags, HPROF_PY_STATUS_SHIFT). */
enum hprof_py_status {
	HPROF_PY_NONE = 0,        /* not read: not a CPython process userspace knows */
	HPROF_PY_OK = 1,          /* the chain was read to its outermost frame (none: idle) */
	HPROF_PY_TRUNCATED = 2,   /* HPROF_PY_MAX_FRAMES read, the chain goes on */
	HPROF_PY_NO_THREAD = 3,   /* no thread state of the interpreter is this thread's */
	HPROF_PY_READ_FAILED = 4, /* the runtime, a thread state or a frame could not be read */
	HPROF_PY_CYCLE = 5,       /* the chain came back to a frame it had passed: none kept */
	HPROF_PY_STATUS_COUNT,
};
#define HPROF_PY_STATUS_SHIFT 11
#define HPROF_PY_STATUS_MASK 0x7u
_Static_assert(HPROF_PY_STATUS_COUNT - 1 <= HPROF_PY_STATUS_MASK, "status fits its bits");

#endif
