/* A binary's inline chains and source lines, read through elfutils' libdw (no DWARF parser
 * of hprof's own). Opened on one ELF file that holds .debug_info (the binary, or its
 * separate debug file); libdw follows dwz's .gnu_debugaltlink and split DWARF's skeleton
 * units to their .dwo files itself.
 *
 * Built lazily, never by dwarf_getscopes (which walks a whole compile unit per call): at
 * open, the address ranges of every compile unit; on the first pc in a unit, that unit's
 * subprogram and inlined-subroutine ranges, kept in DIE order with each entry's subtree end,
 * so a pc's chain is one descent through nested entries. Chains are cached per pc.
 * Memory is bounded (DWARF_INDEX_MAX_*): past a bound, a pc gets no chain and the reason is
 * counted, never a crash or a walk without end on hostile DWARF. */
#ifndef HPROF_BINARY_DWARF_INDEX_H
#define HPROF_BINARY_DWARF_INDEX_H

#include <stddef.h>
#include <stdint.h>

/* Most frames of one chain (the outermost function and its inlined calls). */
#define DWARF_INDEX_MAX_DEPTH 32
/* Most scopes kept over all units (and DIEs one walk reads: SCOPE_TREE_MAX_DIES). */
#define DWARF_INDEX_MAX_SCOPES (4u << 20)
/* Most pcs whose chains are kept; more are looked up each time. */
#define DWARF_INDEX_MAX_CACHED (256u << 10)

/* What libdw keeps per row of a line table it read (elfutils 0.188: a Dwarf_Line, with
 * its share of the unit's sorted array and malloc's overhead), measured with massif on
 * python3.11-dbg's units. */
#define DWARF_INDEX_LINE_BYTES 48

struct dwarf_index;

/* One frame of a pc's chain. Strings last as long as the index. */
struct source_frame {
	const char *function; /* demangled linkage name, else the name; "??" when none */
	const char *file;     /* "" when unknown */
	uint32_t line;        /* 0 when unknown */
};

/* A pc's chain, outermost first: frames[0] the function that holds pc, frames[i > 0] the
 * calls inlined into frames[i - 1]. Each frame's file and line is where it is at pc: the
 * innermost's from the line table, each other's the call site of the frame inside it.
 * Code no subprogram covers but the line table does is one frame, function "??". */
struct source_chain {
	const struct source_frame *frames;
	uint32_t nr;
};

/* Why pcs got no chain. */
struct dwarf_index_stats {
	uint64_t no_unit;      /* no compile unit covers the pc */
	uint64_t no_function;  /* a unit covers it, no subprogram does (its line only) */
	uint64_t bad_dwarf;    /* the unit's DIEs could not be read */
	uint64_t over_bounds;  /* a DWARF_INDEX_MAX_* bound was reached */
	uint64_t units_indexed;
	uint64_t scopes;
	uint64_t lines; /* rows of the line tables libdw read */
};

/* Opens the DWARF of the ELF file at path. Returns 0, -ENOENT when it has no .debug_info,
 * or -errno with a one-line reason in msg. */
int dwarf_index__open(const char *path, struct dwarf_index **out, char *msg, size_t msg_len);
/* The chain of pc (an ELF virtual address). Returns 0, or why there is none: -ENOENT
 * (neither a function nor the line table covers pc), -EBADMSG (its compile unit's DIEs
 * could not be read), -E2BIG (a DWARF_INDEX_MAX_* bound was reached) or -ENOMEM; chain is
 * valid until the index is freed. */
int dwarf_index__chain(struct dwarf_index *ix, uint64_t pc, struct source_chain *chain);
void dwarf_index__stats(const struct dwarf_index *ix, struct dwarf_index_stats *stats);
/* Bytes the index holds, libdw's state included, estimated: the debug sections it reads
 * (inflated, or mapped and read), the line tables of the units it read them for
 * (DWARF_INDEX_LINE_BYTES a row), and the index's own heap. */
size_t dwarf_index__bytes(const struct dwarf_index *ix);
void dwarf_index__free(struct dwarf_index *ix);

#endif
