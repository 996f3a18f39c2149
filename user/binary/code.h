/* The code bytes behind a process address, for the analysis of code without CFI: a
 * file's from the very file that was mapped (its pinned descriptor), JIT code's from the
 * process's memory. Both are input from the profiled process: the caller bounds what it
 * asks for and treats what comes back as hostile. */
#ifndef HPROF_BINARY_CODE_H
#define HPROF_BINARY_CODE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "binary/mapping.h"
#include "binary/modules.h"

/* Reads up to len bytes at process address addr, inside mapping m of module mod (of
 * process pid, 0 when it cannot be read: a replay's) and never beyond it, into buf. Returns the bytes read (a short read where
 * the file or a page ends), or -errno: -ENOENT for code that cannot be read (a file not
 * pinned, JIT code of a process that is gone, a replay's). */
ssize_t code__read(const struct module *mod, const struct mapping *m, uint32_t pid,
		   uint64_t addr, uint8_t *buf, size_t len);

/* Reads up to len bytes of file module mod at its ELF virtual address vaddr, never past
 * the PT_LOAD segment that holds vaddr, from its pinned file (a replay's by path). Returns
 * the bytes read or -errno (-ENOENT for anonymous code, or a vaddr in no segment). */
ssize_t code__read_vaddr(const struct module *mod, uint64_t vaddr, uint8_t *buf, size_t len);

/* Called with the bytes of every code__read of a file's code (not JIT code's, and not
 * code__read_vaddr's: naming's), at their file offset: what a slice of the binary must
 * hold (binary/slice_writer.h). NULL: none. One hook for the whole program: a tool that
 * records slices sets it around one replay. */
typedef void (*code_read_hook_fn)(void *ctx, const struct module *mod, uint64_t offset,
				  const uint8_t *bytes, size_t len);
void code__set_file_read_hook(code_read_hook_fn fn, void *ctx);
/* Called with the bytes of every read of JIT code from a live process (what a raw capture
 * keeps for replays: capture/format.h's CAPTURE_CODE). NULL: none. One for the program. */
typedef void (*code_jit_read_hook_fn)(void *ctx, uint32_t pid, uint64_t addr,
				      const uint8_t *bytes, size_t len);
void code__set_jit_read_hook(code_jit_read_hook_fn fn, void *ctx);

#endif
