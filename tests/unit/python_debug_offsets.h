/* _Py_DebugOffsets of CPython 3.13.0 as pyenv's libpython3.13.so.1.0 holds them at the start
 * of _PyRuntime, after the cookie "xdebugpy" (72 words), for the unit tests of
 * user/python/ (tests/t_python_layout.sh parses a real file's). */
#ifndef HPROF_TESTS_PYTHON_DEBUG_OFFSETS_H
#define HPROF_TESTS_PYTHON_DEBUG_OFFSETS_H

#include <stdint.h>

static const uint64_t debug_offsets_313[72] = {
	0x030d00f0, 0, 283320, 608, 632, 194968, 7272, 7264, 7344, 7400, 7656, 7640,
	7648, 16, 7752, 0, 7768, 7760, 304, 0, 8, 16, 72, 152, 160, 232, 32, 80, 8, 0,
	56, 72, 70, 208, 112, 120, 128, 136, 68, 52, 96, 104, 200, 16, 8, 416, 24, 88,
	168, 32, 24, 16, 40, 24, 16, 48, 32, 40, 24, 16, 32, 16, 24, 40, 16, 32, 64, 32,
	16, 40, 240, 200,
};

#endif
