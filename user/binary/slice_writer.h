/* Making slices of binaries (binary/slice.h) while they are still on the machine: told the
 * addresses a capture's samples hold in each binary (every word of their registers, chains
 * and stack copies that lands in its code) and the code bytes its replay read, it keeps of
 * each binary what a replay around those addresses asks for:
 *   - symbols: the function holding each address, and the next one where that function's
 *     symbol has no size (it runs to the next);
 *   - rows: the function holding each address (its FDE's, or Go's), or where no function
 *     holds it, the functions on either side of the gap (unwind_table__gap);
 *   - Go's stretches that switch stacks, around the addresses in them;
 *   - the function entries (elf_symbols__is_function_entry) among the addresses;
 *   - for code neither symbols nor CFI cover, where naming finds its function to start
 *     (frame_name__code_start), rather than the code it sweeps to find it;
 *   - the code bytes the walk read (code__read), exactly.
 * What the walk asks of addresses no sample holds is not kept: a replay from the slices is
 * to be compared with one from the files (tests/replay/record.sh does) before it is kept. */
#ifndef HPROF_BINARY_SLICE_WRITER_H
#define HPROF_BINARY_SLICE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "binary/modules.h"
#include "binary/slice.h"

struct slice_writer;

struct slice_writer *slice_writer__new(void);
/* vaddr (an ELF virtual address) of file module mod is one a sample holds. Returns 0 or
 * -ENOMEM. */
int slice_writer__address(struct slice_writer *w, const struct module *mod, uint64_t vaddr);
/* The replay read these bytes of mod's file at offset (code__set_file_read_hook). */
void slice_writer__code(struct slice_writer *w, const struct module *mod, uint64_t offset,
			const uint8_t *bytes, size_t len);
/* The slices of every file module of reg that an address or a read touched. Returns 0 or
 * -errno. */
int slice_writer__finish(struct slice_writer *w, struct module_registry *reg,
			 struct module_slices **out);
void slice_writer__free(struct slice_writer *w);

#endif
