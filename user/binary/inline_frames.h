/* A binary's frame as its DWARF tells it (binary/dwarf_index.h): the calls inlined at its
 * pc, each an inline frame (MODULE_INLINE) whose id in the registry's inline_names is its
 * function, file and line, and the frame's own source line. Expansions are cached per
 * (binary, pc), at most INLINE_FRAMES_MAX_CACHED of them. */
#ifndef HPROF_BINARY_INLINE_FRAMES_H
#define HPROF_BINARY_INLINE_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "binary/dwarf_index.h"
#include "binary/frame.h"
#include "binary/modules.h"

#define INLINE_FRAMES_MAX_CACHED (256u << 10)
/* Bytes of DWARF state (dwarf_index__bytes: libdw's inflated sections and line tables, the
 * index) open at once over all binaries: past it, the DWARF of the binaries looked up least
 * recently is closed, and opened again on its next pc not cached. One binary's alone may
 * pass it (python3.11-dbg's takes 40 MiB for a 10,000-sample profile). HPROF_DWARF_BUDGET_MIB
 * sets another. */
#define INLINE_FRAMES_DWARF_BUDGET (64ull << 20)

/* What a frame is expanded into: inline frames (the registry's MODULE_INLINE ids), and the
 * frame's own location. */
struct inline_expansion {
	const struct frame *inlined; /* outermost first; valid until the next call */
	uint32_t nr_inlined;
	bool has_line;
	uint64_t line_id; /* the frame's function, file and line in inline_names */
};

struct inline_frames;

/* inlines: expand frames into their inlined calls; lines: give frames their source lines.
 * Returns 0 or -ENOMEM. */
int inline_frames__new(struct module_registry *reg, bool inlines, bool lines,
		       struct inline_frames **out);
/* The expansion of f; nothing (0 inlined, no line) where its binary has no DWARF for it. */
void inline_frames__expand(struct inline_frames *x, const struct frame *f,
			   struct inline_expansion *out);
/* Binaries whose DWARF was read, and pcs without a chain by reason (the summary). */
struct inline_frames_stats {
	uint64_t binaries_with_dwarf;
	uint64_t pcs;          /* distinct (binary, pc) looked up in binaries with DWARF */
	uint64_t pcs_no_chain; /* ... that no function of the DWARF covers */
	uint64_t pcs_bad_dwarf;  /* ... in a compile unit whose DIEs could not be read */
	uint64_t pcs_over_bounds; /* ... in a unit past the index's bounds (dwarf_index.h) */
	uint64_t pcs_uncached; /* looked up again: the cache was full */
	uint64_t dwarf_closed;   /* a binary's DWARF closed to keep within the budget */
	uint64_t dwarf_reopened; /* ... and opened again */
};
void inline_frames__stats(const struct inline_frames *x, struct inline_frames_stats *stats);
void inline_frames__free(struct inline_frames *x);

#endif
