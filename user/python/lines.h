/* CPython's line tables: which source line an instruction of a code object is on, as
 * PyCode_Addr2Line computes it, per version:
 *   3.8-3.9  co_lnotab: (bytecode bytes, signed line delta) pairs
 *   3.10     co_linetable: (bytes, signed line delta) pairs, -128: no line
 *   3.11+    co_linetable: the location table, one entry per run of code units (the first
 *            byte's bit 7 set, bits 3-6 a code 0-15 saying how the line is given, bits
 *            0-2 the run's length less one), only each entry's start line decoded
 * The table is the code object's, read from the profiled process: hostile. Every read is
 * bounds-checked and every loop ends with the table. */
#ifndef HPROF_PYTHON_LINES_H
#define HPROF_PYTHON_LINES_H

#include <stddef.h>
#include <stdint.h>

/* The line of the instruction at offset in a code object of CPython version (PY_VERSION_HEX
 * >> 16: 0x030b) whose table is table[0, len) and co_firstlineno firstlineno. offset is in
 * bytes for 3.8-3.9 (f_lasti) and in code units (16 bits) from 3.10 on; a negative one (a
 * frame before its first instruction) is on firstlineno, as CPython says. *line is -1 where
 * the table gives the instruction no line or ends before it. Returns 0, -EINVAL (a table
 * CPython never writes: a truncated entry, a line out of int range) or -ENOTSUP (a version
 * before 3.8). */
int python_lines__line(uint32_t version, const uint8_t *table, size_t len, int firstlineno,
		       int32_t offset, int *line);

#endif
