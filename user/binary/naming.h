/* A frame's printable name, the one symbolizer every output and subcommand shares: the
 * (demangled) symbol, "func_[k]" for the kernel, JIT code by its perf map, and code no
 * symbol covers after the function its CFI says holds it ("module+0xSTART"). */
#ifndef HPROF_BINARY_NAMING_H
#define HPROF_BINARY_NAMING_H

#include "binary/frame.h"
#include "binary/ksyms.h"
#include "binary/modules.h"

/* The name of f, malloc'd; NULL when out of memory. ksyms may be NULL (kernel frames are
 * then named by address). */
char *frame_name__format_provisional(struct module_registry *modules, const struct ksyms *ksyms,
				     const struct frame *f, bool *provisional);
/* As frame_name__format_provisional, without saying whether the name may change: *provisional
 * there is set for JIT code named after its mapping while its process lives (its perf map or
 * jitdump may name it later: HotSpot's -XX:+DumpPerfMapAtExit, buffered jitdump records),
 * and, while debuginfod is on (module_registry__set_debuginfod), for a frame no symbol
 * names in a binary whose debug file may still be fetched (its module then
 * wants_debug_file). */
char *frame_name__format(struct module_registry *modules, const struct ksyms *ksyms,
			 const struct frame *f);

/* For code that neither symbols nor CFI cover: the start its code shows for the function
 * holding vaddr (binary/code_starts.h), from the slice in a registry given slices.
 * Returns 0 or -ENOENT. */
int frame_name__code_start(struct module_registry *modules, struct module *mod, uint64_t vaddr,
			   uint64_t *start);

#endif
