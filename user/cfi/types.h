/* Types of the CFI compiler's API (unwind_table.h, which includes this) that the files
 * building the table share with its users: which sections to compile, a row's rules at
 * full width, the table's counts. Include unwind_table.h, not this. */
#ifndef HPROF_CFI_TYPES_H
#define HPROF_CFI_TYPES_H

#include <stdint.h>

#include "unwind_row.h"

/* Which call-frame sections to compile. With both, an .eh_frame FDE wins over a
 * .debug_frame FDE that starts at the same pc. */
enum unwind_source {
	UNWIND_SRC_EH_FRAME = 1 << 0,
	UNWIND_SRC_DEBUG_FRAME = 1 << 1,
	UNWIND_SRC_ALL = UNWIND_SRC_EH_FRAME | UNWIND_SRC_DEBUG_FRAME,
	/* find .eh_frame through PT_GNU_EH_FRAME and .eh_frame_hdr even when a section header
	 * names it (without section headers, as in a loaded image, that is the only way) */
	UNWIND_SRC_VIA_HDR = 1 << 8,
};

/* A row's rules with their full-width arguments. */
struct unwind_rules {
	enum unwind_cfa_kind cfa;
	enum unwind_rbp_kind rbp;
	enum unwind_ra_kind ra;
	enum unwind_rbx_kind rbx;
	int64_t cfa_offset;        /* meaning depends on cfa (see enum unwind_cfa_kind) */
	int64_t rbp_offset;
	int64_t ra_offset;
	int64_t rbx_offset;
	enum unwind_reason cfa_reason; /* set when cfa is UNWIND_CFA_UNSUPPORTED */
	enum unwind_reason rbp_reason;
	enum unwind_reason ra_reason;
};

struct unwind_stats {
	uint64_t fdes;        /* FDEs compiled (those with an empty range included) */
	uint64_t rows;        /* rows with rules, end markers excluded */
	uint64_t end_markers;
	uint64_t wide_rows;   /* rows whose arguments live in the side table */
	uint64_t cfi_bytes;   /* bytes of .eh_frame and .debug_frame read */
	uint64_t cfa[UNWIND_CFA_KIND_COUNT];
	uint64_t rbp[UNWIND_RBP_KIND_COUNT];
	uint64_t ra[UNWIND_RA_KIND_COUNT];
	uint64_t rbx[UNWIND_RBX_KIND_COUNT];
	uint64_t cfa_reason[UNWIND_REASON_COUNT];
	uint64_t rbp_reason[UNWIND_REASON_COUNT];
	uint64_t ra_reason[UNWIND_REASON_COUNT];
	uint64_t table_bytes; /* memory held by the table: rows, side table, FDE starts, header */
};

#endif
