#include "python/layout.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The tables: offsetof() of the release headers of CPython 3.8.18, 3.9.18, 3.10.13, 3.11.7
 * and 3.12.1 (x86-64, default build: no Py_DEBUG, no Py_TRACE_REFS), the same for every
 * patch release of a minor version (the structs are part of its ABI). Fields, in order:
 *   runtime_interp    _PyRuntimeState.interpreters.head
 *   interp_threads    PyInterpreterState.tstate_head (3.8-3.10), .threads.head (3.11+)
 *   tstate_next       PyThreadState.next
 *   tstate_thread_id  PyThreadState.thread_id
 *   tstate_frame      PyThreadState.frame (3.8-3.10), .cframe (3.11-3.12)
 *   cframe_frame      _PyCFrame.current_frame (3.11-3.12)
 *   tstate_datastack  PyThreadState.datastack_chunk (3.11+)
 *   frame_code        PyFrameObject.f_code (3.8-3.10), _PyInterpreterFrame.f_code (3.11+)
 *   frame_previous    PyFrameObject.f_back, _PyInterpreterFrame.previous
 *   frame_instr       PyFrameObject.f_lasti, _PyInterpreterFrame.prev_instr
 *   frame_entry       _PyInterpreterFrame.is_entry (3.11), .owner (3.12)
 *   code_*            PyCodeObject.co_name, co_qualname, co_filename, co_firstlineno,
 *                     co_lnotab (3.8-3.9) / co_linetable, co_code_adaptive,
 *                     _co_firsttraceable
 *   str_*             PyASCIIObject.length, .state; sizeof(PyASCIIObject),
 *                     sizeof(PyCompactUnicodeObject) (3.12 dropped wstr: 8 and 16 less)
 *   bytes_*           PyBytesObject.ob_base.ob_size, .ob_sval */
static const struct python_layout tables[] = {
	{
		.version = 0x0308, .kind = HPROF_PY_FRAME_OBJECT,
		.runtime_interp = 32, .interp_threads = 8, .tstate_next = 8,
		.tstate_thread_id = 176, .tstate_frame = 24, .cframe_frame = HPROF_PY_NO_CFRAME,
		.frame_code = 32, .frame_previous = 24, .frame_instr = 104,
		.code_name = 112, .code_filename = 104, .code_firstlineno = 40,
		.code_linetable = 120,
		.str_ascii_data = 48, .str_compact_data = 72,
	},
	{
		.version = 0x0309, .kind = HPROF_PY_FRAME_OBJECT,
		.runtime_interp = 32, .interp_threads = 8, .tstate_next = 8,
		.tstate_thread_id = 176, .tstate_frame = 24, .cframe_frame = HPROF_PY_NO_CFRAME,
		.frame_code = 32, .frame_previous = 24, .frame_instr = 104,
		.code_name = 112, .code_filename = 104, .code_firstlineno = 40,
		.code_linetable = 120,
		.str_ascii_data = 48, .str_compact_data = 72,
	},
	{
		.version = 0x030a, .kind = HPROF_PY_FRAME_OBJECT,
		.runtime_interp = 32, .interp_threads = 8, .tstate_next = 8,
		.tstate_thread_id = 176, .tstate_frame = 24, .cframe_frame = HPROF_PY_NO_CFRAME,
		.frame_code = 32, .frame_previous = 24, .frame_instr = 96,
		.code_name = 112, .code_filename = 104, .code_firstlineno = 40,
		.code_linetable = 120,
		.str_ascii_data = 48, .str_compact_data = 72,
	},
	{
		.version = 0x030b, .kind = HPROF_PY_FRAME_IS_ENTRY,
		.runtime_interp = 40, .interp_threads = 16, .tstate_next = 8,
		.tstate_thread_id = 152, .tstate_frame = 56, .cframe_frame = 8,
		.tstate_datastack = 296,
		.frame_code = 32, .frame_previous = 48, .frame_instr = 56, .frame_entry = 68,
		.code_size = 16, .code_name = 120, .code_qualname = 128, .code_filename = 112,
		.code_firstlineno = 72, .code_linetable = 136, .code_adaptive = 184,
		.code_firsttraceable = 168,
		.str_ascii_data = 48, .str_compact_data = 72,
	},
	{
		.version = 0x030c, .kind = HPROF_PY_FRAME_CSTACK_SHIM,
		.runtime_interp = 40, .interp_threads = 72, .tstate_next = 8,
		.tstate_thread_id = 136, .tstate_frame = 56, .cframe_frame = 0,
		.tstate_datastack = 232,
		.frame_code = 0, .frame_previous = 8, .frame_instr = 56, .frame_entry = 70,
		.code_size = 16, .code_name = 120, .code_qualname = 128, .code_filename = 112,
		.code_firstlineno = 68, .code_version = 92, .code_linetable = 136,
		.code_adaptive = 192, .code_firsttraceable = 176,
		.str_ascii_data = 40, .str_compact_data = 56,
	},
};

/* Fields every version 3.8-3.13 has at the same place (PyObject_HEAD, PyASCIIObject's and
 * PyBytesObject's first fields). */
static void common_fields(struct python_layout *l)
{
	l->object_type = 8;
	l->bytes_size = 16;
	l->bytes_data = 32;
	l->str_length = 16;
	l->str_state = 32;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* code_check and code_header, from the other fields. */
static void derived_fields(struct python_layout *l)
{
	uint32_t end = 0;

	/* before 3.12 the word of co_firstlineno is the same for code objects of one shape
	 * (a template compiled in a loop, the old one freed and the new one made at its
	 * address): their names tell them apart */
	if (l->code_version) {
		l->code_check = l->code_version & ~7u;
		l->check_name = 0;
	} else {
		l->code_check = l->code_firstlineno & ~7u;
		l->check_name = l->code_name;
	}
	end = max_u32(end, l->object_type + 8);
	end = max_u32(end, l->code_check + 8);
	end = max_u32(end, l->code_name + 8);
	end = max_u32(end, l->code_filename + 8);
	end = max_u32(end, l->code_linetable + 8);
	if (l->code_size)
		end = max_u32(end, l->code_size + 8);
	if (l->code_qualname)
		end = max_u32(end, l->code_qualname + 8);
	if (l->code_firsttraceable)
		end = max_u32(end, l->code_firsttraceable + 4);
	l->code_header = end;
}

/* The bytes of a thread state the kernel reads in one piece, from *lo: thread_id, the frame
 * pointer and datastack_chunk. */
static uint32_t tstate_span(const struct python_layout *l, uint32_t *lo)
{
	uint32_t first = l->tstate_thread_id, last = l->tstate_thread_id;

	first = l->tstate_frame < first ? l->tstate_frame : first;
	last = max_u32(last, l->tstate_frame);
	if (l->tstate_datastack) {
		first = l->tstate_datastack < first ? l->tstate_datastack : first;
		last = max_u32(last, l->tstate_datastack);
	}
	*lo = first;
	return last + 8 - first;
}

/* _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h), as 64-bit words after the
 * 8-byte cookie: the index of each field hprof uses. */
enum {
	DO_VERSION = 0,
	DO_FREE_THREADED = 1,
	DO_RUNTIME_SIZE = 2, /* runtime_state: size, finalizing, interpreters_head */
	DO_RUNTIME_INTERP = 4,
	DO_INTERP_SIZE = 5, /* interpreter_state: size, id, next, threads_head, ... (13) */
	DO_INTERP_THREADS = 8,
	DO_TSTATE_SIZE = 18, /* thread_state: size, prev, next, interp, current_frame,
			      * thread_id, native_thread_id, datastack_chunk, status */
	DO_TSTATE_NEXT = 20,
	DO_TSTATE_FRAME = 22,
	DO_TSTATE_THREAD_ID = 23,
	DO_TSTATE_DATASTACK = 25,
	DO_FRAME_SIZE = 27, /* interpreter_frame: size, previous, executable, instr_ptr,
			     * localsplus, owner */
	DO_FRAME_PREVIOUS = 28,
	DO_FRAME_EXECUTABLE = 29,
	DO_FRAME_INSTR = 30,
	DO_FRAME_OWNER = 32,
	DO_CODE_SIZE = 33, /* code_object: size, filename, name, qualname, linetable,
			    * firstlineno, argcount, localsplusnames, localspluskinds,
			    * co_code_adaptive */
	DO_CODE_FILENAME = 34,
	DO_CODE_NAME = 35,
	DO_CODE_QUALNAME = 36,
	DO_CODE_LINETABLE = 37,
	DO_CODE_FIRSTLINENO = 38,
	DO_CODE_ADAPTIVE = 42,
	DO_OBJECT_SIZE = 43, /* pyobject: size, ob_type */
	DO_OBJECT_TYPE = 44,
	/* type_object (4), tuple_object (3), list_object (3), dict_object (3),
	 * float_object (2), long_object (3) */
	DO_BYTES_SIZE = 63, /* bytes_object: size, ob_size, ob_sval */
	DO_BYTES_OB_SIZE = 64,
	DO_BYTES_DATA = 65,
	DO_STR_SIZE = 66, /* unicode_object: size, state, length, asciiobject_size */
	DO_STR_STATE = 67,
	DO_STR_LENGTH = 68,
	DO_STR_ASCII_SIZE = 69,
	DO_GC_SIZE = 70, /* gc: size, collecting */
	DO_WORDS = 72,
};
_Static_assert(8 + DO_WORDS * 8 <= PYTHON_DEBUG_OFFSETS_SIZE, "the caller reads enough");

/* A field's offset within its struct: below the struct's size (and the size sane). */
static int field(const uint64_t *w, int size_index, int index, uint32_t *out)
{
	uint64_t size = w[size_index], v = w[index];

	if (size == 0 || size > (1u << 20) || v >= size)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int from_debug_offsets(uint32_t version_hex, const void *runtime, size_t len,
			      struct python_layout *out)
{
	uint64_t w[DO_WORDS];
	struct python_layout l = {0};
	uint32_t bytes_size, str_size, lo;
	int err = 0;

	if (!runtime || len < 8 + sizeof(w) || memcmp(runtime, "xdebugpy", 8))
		return -ENOTSUP;
	memcpy(w, (const uint8_t *)runtime + 8, sizeof(w));
	/* only 3.13's struct is known: 3.14 added fields in the middle of it */
	if ((w[DO_VERSION] >> 16) != 0x030d || (w[DO_VERSION] >> 32) || w[DO_FREE_THREADED])
		return -ENOTSUP;
	if ((version_hex >> 16) != (w[DO_VERSION] >> 16))
		return -EINVAL;
	l.version = 0x030d;
	l.kind = HPROF_PY_FRAME_CSTACK_SHIM;
	l.cframe_frame = HPROF_PY_NO_CFRAME;
	err |= field(w, DO_RUNTIME_SIZE, DO_RUNTIME_INTERP, &l.runtime_interp);
	err |= field(w, DO_INTERP_SIZE, DO_INTERP_THREADS, &l.interp_threads);
	err |= field(w, DO_TSTATE_SIZE, DO_TSTATE_NEXT, &l.tstate_next);
	err |= field(w, DO_TSTATE_SIZE, DO_TSTATE_FRAME, &l.tstate_frame);
	err |= field(w, DO_TSTATE_SIZE, DO_TSTATE_THREAD_ID, &l.tstate_thread_id);
	err |= field(w, DO_TSTATE_SIZE, DO_TSTATE_DATASTACK, &l.tstate_datastack);
	err |= field(w, DO_FRAME_SIZE, DO_FRAME_PREVIOUS, &l.frame_previous);
	err |= field(w, DO_FRAME_SIZE, DO_FRAME_EXECUTABLE, &l.frame_code);
	err |= field(w, DO_FRAME_SIZE, DO_FRAME_INSTR, &l.frame_instr);
	err |= field(w, DO_FRAME_SIZE, DO_FRAME_OWNER, &l.frame_entry);
	err |= field(w, DO_CODE_SIZE, DO_CODE_FILENAME, &l.code_filename);
	err |= field(w, DO_CODE_SIZE, DO_CODE_NAME, &l.code_name);
	err |= field(w, DO_CODE_SIZE, DO_CODE_QUALNAME, &l.code_qualname);
	err |= field(w, DO_CODE_SIZE, DO_CODE_LINETABLE, &l.code_linetable);
	err |= field(w, DO_CODE_SIZE, DO_CODE_FIRSTLINENO, &l.code_firstlineno);
	/* not among the debug offsets: 3.13's code object has 3.12's five ints between
	 * co_firstlineno and co_version (checked against the headers by t_python_layout.sh) */
	l.code_version = l.code_firstlineno + 24;
	err |= field(w, DO_OBJECT_SIZE, DO_OBJECT_TYPE, &l.object_type);
	err |= field(w, DO_BYTES_SIZE, DO_BYTES_OB_SIZE, &l.bytes_size);
	err |= field(w, DO_STR_SIZE, DO_STR_STATE, &l.str_state);
	err |= field(w, DO_STR_SIZE, DO_STR_LENGTH, &l.str_length);
	if (err)
		return -EINVAL;
	/* co_code_adaptive is the code object's last field; ob_sval may be at the end of
	 * PyBytesObject (its size counts one byte of it) */
	l.code_adaptive = (uint32_t)w[DO_CODE_ADAPTIVE];
	l.bytes_data = (uint32_t)w[DO_BYTES_DATA];
	bytes_size = (uint32_t)w[DO_BYTES_SIZE];
	str_size = (uint32_t)w[DO_STR_ASCII_SIZE];
	/* what code.c reads in one piece: a str's header (at most 128 bytes with its compact
	 * form's 16 more), a bytes object's size (64), a code object's check word */
	if (w[DO_CODE_ADAPTIVE] > w[DO_CODE_SIZE] || w[DO_CODE_ADAPTIVE] < 16 ||
	    w[DO_BYTES_DATA] >= bytes_size || l.bytes_size + 8 > 64 || str_size > 96 ||
	    l.str_state + 4 > str_size || l.str_length + 8 > str_size ||
	    l.code_firstlineno + 4 > w[DO_CODE_SIZE] ||
	    (l.code_firstlineno & ~7u) + 8 > w[DO_CODE_SIZE] ||
	    (l.code_version & ~7u) + 8 > w[DO_CODE_SIZE])
		return -EINVAL;
	/* ob_size of a PyVarObject is where a bytes object has it */
	l.code_size = l.bytes_size;
	l.str_ascii_data = str_size;
	/* PyCompactUnicodeObject: PyASCIIObject, then utf8_length and utf8 */
	l.str_compact_data = str_size + 16;
	derived_fields(&l);
	if (l.code_header > PYTHON_CODE_HEADER_MAX || tstate_span(&l, &lo) > HPROF_PY_TSTATE_READ)
		return -EINVAL;
	*out = l;
	return 0;
}

int python_layout__for_version(uint32_t version_hex, const void *runtime, size_t len,
			       struct python_layout *out)
{
	uint32_t v = version_hex >> 16;

	if (v >> 8 != 3)
		return -ENOTSUP;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		if (tables[i].version == v) {
			*out = tables[i];
			common_fields(out);
			derived_fields(out);
			return 0;
		}
	}
	if (v < 0x030d)
		return -ENOTSUP;
	return from_debug_offsets(version_hex, runtime, len, out);
}

/* The end of a frame's word at off, 0 where it lies past HPROF_PY_FRAME_READ (read as 0). */
static uint32_t word_end(uint32_t off)
{
	return off <= HPROF_PY_FRAME_READ - 8 ? off + 8 : 0;
}

void python_layout__kernel(const struct python_layout *l, uint64_t runtime_addr,
			   struct hprof_python_proc *out)
{
	uint32_t end, lo, hi;

	memset(out, 0, sizeof(*out));
	out->runtime = runtime_addr;
	out->version = l->version;
	out->kind = l->kind;
	out->runtime_interp = l->runtime_interp;
	out->interp_threads = l->interp_threads;
	out->tstate_next = l->tstate_next;
	out->tstate_thread_id = l->tstate_thread_id;
	out->tstate_frame = l->tstate_frame;
	out->cframe_frame = l->cframe_frame;
	out->frame_code = l->frame_code;
	out->frame_previous = l->frame_previous;
	out->frame_instr = l->frame_instr;
	out->frame_entry = l->frame_entry;
	out->code_check = l->code_check;
	out->code_name = l->check_name;
	/* a frame is read up to its last field, not HPROF_PY_FRAME_READ bytes of it */
	end = max_u32(word_end(l->frame_code), word_end(l->frame_previous));
	end = max_u32(end, word_end(l->frame_instr));
	if (l->kind != HPROF_PY_FRAME_OBJECT && l->frame_entry < HPROF_PY_FRAME_READ)
		end = max_u32(end, l->frame_entry + 1);
	out->frame_read = end ? end : 8;
	out->tstate_datastack = l->tstate_datastack;
	out->tstate_read = tstate_span(l, &out->tstate_read_lo);
	/* the check word and co_name in one piece */
	lo = l->code_check;
	hi = l->code_check + 8;
	if (l->check_name) {
		lo = l->check_name < lo ? l->check_name : lo;
		hi = max_u32(hi, l->check_name + 8);
	}
	out->code_read_lo = lo;
	out->code_read = hi - lo;
}

int python_version__from_path(const char *path, uint32_t *version_hex)
{
	const char *base = strrchr(path, '/'), *s;
	unsigned long minor;
	bool debug = false;
	char *end;

	base = base ? base + 1 : path;
	if (!strncmp(base, "lib", 3))
		base += 3;
	if (strncmp(base, "python3.", 8))
		return -ENOENT;
	s = base + 8;
	if (!isdigit((unsigned char)*s) || (s[0] == '0' && isdigit((unsigned char)s[1])))
		return -ENOENT;
	minor = strtoul(s, &end, 10);
	if (minor > 255)
		return -ENOENT;
	/* ABI flags (d: debug, t: free-threaded, m: pymalloc before 3.8, u), then the end or
	 * a library's ".so" */
	while (*end == 'd' || *end == 't' || *end == 'm' || *end == 'u') {
		debug |= *end == 'd';
		end++;
	}
	if (*end && strncmp(end, ".so", 3))
		return -ENOENT;
	/* the tables are of release builds; from 3.13 _Py_DebugOffsets describes any build */
	if (debug && minor < 13)
		return -ENOTSUP;
	*version_hex = 3u << 24 | (uint32_t)minor << 16;
	return 0;
}

void python_layout__print(const struct python_layout *l, FILE *f)
{
	bool frame_object = l->kind == HPROF_PY_FRAME_OBJECT;

#define P(name) fprintf(f, "%s %u\n", #name, l->name)
	fprintf(f, "version 0x%04x\n", l->version);
	P(runtime_interp);
	P(interp_threads);
	P(tstate_next);
	P(tstate_thread_id);
	P(tstate_frame);
	if (l->tstate_datastack)
		P(tstate_datastack);
	if (l->cframe_frame != HPROF_PY_NO_CFRAME)
		P(cframe_frame);
	P(frame_code);
	P(frame_previous);
	P(frame_instr);
	if (!frame_object)
		P(frame_entry);
	P(object_type);
	P(code_name);
	P(code_filename);
	P(code_firstlineno);
	P(code_linetable);
	if (!frame_object) {
		P(code_qualname);
		P(code_adaptive);
	}
	if (l->code_version)
		P(code_version);
	if (l->code_firsttraceable)
		P(code_firsttraceable);
	P(bytes_size);
	P(bytes_data);
	P(str_length);
	fprintf(f, "str_hash %d\n", HPROF_PY_STR_HASH);
	P(str_state);
	P(str_ascii_data);
	P(str_compact_data);
#undef P
}
