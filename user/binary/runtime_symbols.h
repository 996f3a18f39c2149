/* Variables language runtimes define for tools to find by name in their binary's .dynsym
 * or .symtab: gdb's JIT interface descriptor (binary/gdb_jit.h), and the variable in which
 * BEAM, Erlang's virtual machine, keeps the address an Erlang process's first frame
 * returns to. One read of each file's symbol tables finds them all. */
#ifndef HPROF_BINARY_RUNTIME_SYMBOLS_H
#define HPROF_BINARY_RUNTIME_SYMBOLS_H

#include <stdint.h>

enum runtime_symbol {
	RUNTIME_GDB_JIT_DESCRIPTOR, /* __jit_debug_descriptor */
	/* beam_normal_exit (OTP 24+, beam.smp's .dynsym): a pointer to the JIT code every
	 * Erlang process's stack returns to at its end */
	RUNTIME_BEAM_NORMAL_EXIT,
	RUNTIME_SYMBOL_COUNT,
};

/* The name of each symbol. */
const char *runtime_symbols__name(enum runtime_symbol which);

/* Where file path defines each symbol, as a data object: vaddrs[i], its ELF virtual
 * address, 0 where it defines none. Returns 0, or -errno when the file is no readable ELF. */
int runtime_symbols__in_file(const char *path, uint64_t vaddrs[RUNTIME_SYMBOL_COUNT]);

#endif
