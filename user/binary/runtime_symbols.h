/* Symbols language runtimes define for tools to find by name in their binary's .dynsym
 * or .symtab: gdb's JIT interface descriptor (binary/gdb_jit.h), the variable in which
 * BEAM, Erlang's virtual machine, keeps the address an Erlang process's first frame
 * returns to, and what CPython's frames are read through. One read of each file's symbol
 * tables finds them all. */
#ifndef HPROF_BINARY_RUNTIME_SYMBOLS_H
#define HPROF_BINARY_RUNTIME_SYMBOLS_H

#include <stdint.h>

enum runtime_symbol {
	RUNTIME_GDB_JIT_DESCRIPTOR, /* __jit_debug_descriptor */
	/* beam_normal_exit (OTP 24+, beam.smp's .dynsym): a pointer to the JIT code every
	 * Erlang process's stack returns to at its end */
	RUNTIME_BEAM_NORMAL_EXIT,
	/* CPython (user/python/): its runtime state, the version it was built as (3.11+), the
	 * type of its code objects, and its evaluator, a function, whose native frames run
	 * Python frames; RUNTIME_PY_EVAL_END is no symbol but the evaluator's end */
	RUNTIME_PY_RUNTIME,   /* _PyRuntime */
	RUNTIME_PY_VERSION,   /* Py_Version */
	RUNTIME_PY_CODE_TYPE, /* PyCode_Type */
	RUNTIME_PY_EVAL,      /* _PyEval_EvalFrameDefault */
	RUNTIME_PY_EVAL_END,
	RUNTIME_SYMBOL_COUNT,
};

/* The name of each symbol. */
const char *runtime_symbols__name(enum runtime_symbol which);

/* Where file path defines each symbol, as a data object (a function for RUNTIME_PY_EVAL):
 * vaddrs[i], its ELF virtual address, 0 where it defines none. Returns 0, or -errno when the file is no readable ELF. */
int runtime_symbols__in_file(const char *path, uint64_t vaddrs[RUNTIME_SYMBOL_COUNT]);

#endif
