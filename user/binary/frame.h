/* A frame as the later stages see it: which binary, and where in it. */
#ifndef HPROF_BINARY_FRAME_H
#define HPROF_BINARY_FRAME_H

#include <stdint.h>

struct frame {
	uint32_t module; /* MODULE_* or a module id (binary/modules.h) */
	uint32_t flags;  /* FRAME_* */
	uint64_t addr;   /* ELF vaddr in the module, or absolute for pseudo-modules */
};

/* The address is a return address: name the call instruction before it. */
#define FRAME_CALLER (1u << 0)

#endif
