/* Where CPython keeps what a profiler reads, per version: the fields the BPF program
 * follows from _PyRuntime to the sampled thread's frames (struct hprof_python_proc), and
 * those userspace reads to name a frame (code objects, str and bytes objects).
 *
 * 3.8-3.12: tables in layout.c, from the release headers (checked against them by
 * tests/t_python_layout.sh). 3.13+: from _Py_DebugOffsets, the struct CPython keeps at the
 * start of _PyRuntime for out-of-process tools; only a struct laid out as a version hprof
 * knows (3.13) is parsed. Anything else is refused (-ENOTSUP), never guessed. */
#ifndef HPROF_PYTHON_LAYOUT_H
#define HPROF_PYTHON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "python.h"

/* Bytes of _PyRuntime python_layout__for_version reads for 3.13+ (_Py_DebugOffsets). */
#define PYTHON_DEBUG_OFFSETS_SIZE 1024

/* Bytes of a code object read in one piece: a layout whose fields lie further is refused. */
#define PYTHON_CODE_HEADER_MAX 1024

/* Every offset in bytes. A field a version lacks is 0 unless noted. */
struct python_layout {
	uint32_t version;     /* PY_VERSION_HEX >> 16: 0x030b for 3.11 */
	uint32_t kind;        /* enum hprof_py_frames */
	/* what the kernel follows (struct hprof_python_proc has the same names) */
	uint32_t runtime_interp;   /* _PyRuntime.interpreters.head */
	uint32_t interp_threads;   /* PyInterpreterState.tstate_head / threads.head */
	uint32_t tstate_next;      /* PyThreadState.next */
	uint32_t tstate_thread_id; /* PyThreadState.thread_id */
	uint32_t tstate_frame;     /* PyThreadState.frame / cframe / current_frame */
	uint32_t cframe_frame;     /* _PyCFrame.current_frame, else HPROF_PY_NO_CFRAME */
	uint32_t tstate_datastack; /* PyThreadState.datastack_chunk (3.11+), else 0 */
	uint32_t frame_code;       /* f_code / f_executable */
	uint32_t frame_previous;   /* f_back / previous */
	uint32_t frame_instr;      /* f_lasti / prev_instr / instr_ptr */
	uint32_t frame_entry;      /* is_entry (3.11) / owner (3.12+) */
	/* the 8 bytes of a code object hashed into hprof_py_frame.check, set once so that a
	 * live object's check never changes: 3.12+ the aligned word holding co_version (a
	 * serial CPython gives each code object it makes) and co_nfreevars; before, the one
	 * holding co_firstlineno (its other half 3.8-3.10 padding, 3.11 co_nlocalsplus), with
	 * co_name's hash folded in (check_name) */
	uint32_t code_check;
	uint32_t code_version; /* co_version (3.12+), else 0 */
	uint32_t check_name;   /* co_name when its hash is folded into the check, else 0 */
	/* what userspace reads */
	uint32_t object_type;         /* PyObject.ob_type */
	uint32_t code_size;           /* PyVarObject.ob_size of a code object: its code
				       * units (3.11+), 0 below */
	uint32_t code_name;           /* co_name */
	uint32_t code_qualname;       /* co_qualname (3.11+) */
	uint32_t code_filename;       /* co_filename */
	uint32_t code_firstlineno;    /* co_firstlineno (an int) */
	uint32_t code_linetable;      /* co_lnotab (3.8-3.9) / co_linetable (3.10+) */
	uint32_t code_adaptive;       /* co_code_adaptive (3.11+): the first instruction */
	uint32_t code_firsttraceable; /* _co_firsttraceable (3.11-3.12; 0: not known) */
	uint32_t code_header;         /* bytes of a code object that hold all of the above */
	uint32_t bytes_size;          /* PyBytesObject's ob_size */
	uint32_t bytes_data;          /* PyBytesObject.ob_sval */
	uint32_t str_length;          /* PyASCIIObject.length (code points) */
	uint32_t str_state;           /* PyASCIIObject.state (a 32-bit bit field) */
	uint32_t str_ascii_data;      /* a compact ASCII str's characters */
	uint32_t str_compact_data;    /* a compact non-ASCII str's characters */
};

/* PyASCIIObject.state's bits, the same in 3.8-3.13: interned (2), kind (3), compact,
 * ascii, then ready (3.8-3.11; str objects are always ready from 3.12). */
#define PYTHON_STR_KIND_SHIFT 2
#define PYTHON_STR_KIND_MASK 7u
#define PYTHON_STR_COMPACT (1u << 5)
#define PYTHON_STR_ASCII (1u << 6)
#define PYTHON_STR_READY (1u << 7)

/* The layout of CPython version_hex (PY_VERSION_HEX, or major << 24 | minor << 16).
 * runtime/len: the first bytes of _PyRuntime as the ELF file's .data holds them (at least
 * PYTHON_DEBUG_OFFSETS_SIZE); needed from 3.13 on, ignored below (may be NULL/0). Returns
 * 0, or -ENOTSUP (a version hprof does not know: 3.7 and older, a 3.13+ without a
 * _Py_DebugOffsets it can parse, a free-threaded build) or -EINVAL (debug offsets out of
 * their structs' bounds, a version that contradicts version_hex). */
int python_layout__for_version(uint32_t version_hex, const void *runtime, size_t len,
			       struct python_layout *out);
/* The BPF map value for a process whose _PyRuntime is at runtime_addr: kind, every offset,
 * code_check. start_time is left 0 for the caller. */
void python_layout__kernel(const struct python_layout *l, uint64_t runtime_addr,
			   struct hprof_python_proc *out);
/* The version a CPython binary's file name says: "python3.11", "libpython3.9.so.1.0",
 * "python3.13d", "libpython3.13t.so" (a directory part is ignored) give major << 24 |
 * minor << 16. Returns 0, -ENOENT (no "python3.N" in the name) or -ENOTSUP (a debug build
 * before 3.13: the tables are of release builds). */
int python_version__from_path(const char *path, uint32_t *version_hex);
/* Prints "name value" lines, one per field the version has (tests/tools/pylayout.c). */
void python_layout__print(const struct python_layout *l, FILE *f);

#endif
