/* The offsets hprof's Python tables hold, as the CPython headers it is compiled against
 * say (tests/t_python_layout.sh builds it once per installed version with -DPy_BUILD_CORE
 * and compares its output with build/tools/pylayout's). One "name value" line each, the
 * names python_layout__print uses. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>

#if PY_VERSION_HEX < 0x03090000
#include <internal/pycore_pystate.h>
#else
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#include <internal/pycore_code.h>
#else
#include <frameobject.h>
#endif

#define P(name, value) printf("%s %lu\n", name, (unsigned long)(value))

int main(void)
{
	printf("version 0x%04x\n", PY_VERSION_HEX >> 16);
	P("runtime_interp", offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX < 0x030b0000
	P("interp_threads", offsetof(PyInterpreterState, tstate_head));
#else
	P("interp_threads", offsetof(PyInterpreterState, threads.head));
#endif
	P("tstate_next", offsetof(PyThreadState, next));
	P("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030b0000
	P("tstate_datastack", offsetof(PyThreadState, datastack_chunk));
#endif
#if PY_VERSION_HEX < 0x030b0000
	P("tstate_frame", offsetof(PyThreadState, frame));
	P("frame_code", offsetof(PyFrameObject, f_code));
	P("frame_previous", offsetof(PyFrameObject, f_back));
	P("frame_instr", offsetof(PyFrameObject, f_lasti));
#elif PY_VERSION_HEX < 0x030d0000
	P("tstate_frame", offsetof(PyThreadState, cframe));
	P("cframe_frame", offsetof(_PyCFrame, current_frame));
	P("frame_code", offsetof(_PyInterpreterFrame, f_code));
	P("frame_previous", offsetof(_PyInterpreterFrame, previous));
	P("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
	P("tstate_frame", offsetof(PyThreadState, current_frame));
	P("frame_code", offsetof(_PyInterpreterFrame, f_executable));
	P("frame_previous", offsetof(_PyInterpreterFrame, previous));
	P("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
	P("frame_entry", offsetof(_PyInterpreterFrame, is_entry));
#elif PY_VERSION_HEX >= 0x030c0000
	P("frame_entry", offsetof(_PyInterpreterFrame, owner));
#endif
	P("object_type", offsetof(PyObject, ob_type));
	P("code_name", offsetof(PyCodeObject, co_name));
	P("code_filename", offsetof(PyCodeObject, co_filename));
	P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX < 0x030a0000
	P("code_linetable", offsetof(PyCodeObject, co_lnotab));
#else
	P("code_linetable", offsetof(PyCodeObject, co_linetable));
#endif
#if PY_VERSION_HEX >= 0x030b0000
	P("code_qualname", offsetof(PyCodeObject, co_qualname));
	P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#endif
#if PY_VERSION_HEX >= 0x030c0000
	P("code_version", offsetof(PyCodeObject, co_version));
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030d0000
	P("code_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
#endif
	P("bytes_size", offsetof(PyBytesObject, ob_base.ob_size));
	P("bytes_data", offsetof(PyBytesObject, ob_sval));
	P("str_length", offsetof(PyASCIIObject, length));
	P("str_hash", offsetof(PyASCIIObject, hash));
	P("str_state", offsetof(PyASCIIObject, hash) + sizeof(Py_hash_t));
	P("str_ascii_data", sizeof(PyASCIIObject));
	P("str_compact_data", sizeof(PyCompactUnicodeObject));
	return 0;
}
