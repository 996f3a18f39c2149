/* The CFI compiler: turns an ELF file's .eh_frame and .debug_frame into a sorted table of
 * compact unwind rows (common/unwind_row.h), and looks rows up by pc.
 *
 * Every input is treated as hostile: reads are bounds-checked, every loop is bounded by
 * the bytes it consumes, and a malformed entry fails the whole compile with a one-line
 * message naming the file, the section and the offset. */
#ifndef HPROF_CFI_UNWIND_TABLE_H
#define HPROF_CFI_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "unwind_row.h"

struct unwind_table;

/* Larger files are not compiled: input is hostile, and the largest real binaries
 * (libLLVM, with its debug sections) are well under this. */
#define UNWIND_FILE_MAX_BYTES (4ull << 30)

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

/* Compiles the CFI of the ELF file at path. On failure returns -errno, *out is NULL and err
 * (if errlen > 0) holds a one-line message naming the file and offset. A file without any
 * requested CFI section is -ENOENT. */
int unwind_table__from_file(const char *path, unsigned int sources, struct unwind_table **out,
			    char *err, size_t errlen);

/* Same for an ELF image already in memory, laid out as in its file (e.g. the vDSO copied
 * out of a process). name only labels error messages. The image is not kept. */
int unwind_table__from_image(const void *image, size_t size, const char *name,
			     unsigned int sources, struct unwind_table **out, char *err,
			     size_t errlen);

/* Accepts NULL. */
void unwind_table__free(struct unwind_table *table);

/* The row whose rules cover pc (an ELF virtual address), or NULL when no FDE covers it,
 * including a pc in the gap after an end-of-function marker. */
const struct unwind_row *unwind_table__find(const struct unwind_table *table, uint64_t pc);

/* The start of the FDE covering pc (the function holding it, for code without symbols).
 * Returns 0, or -ENOENT when no FDE covers pc. Of overlapping FDEs the later one holds
 * the overlap, as for unwind_table__find. */
int unwind_table__function_start(const struct unwind_table *table, uint64_t pc,
				 uint64_t *start);

/* All rows, end-of-function markers included, sorted by pc. */
const struct unwind_row *unwind_table__rows(const struct unwind_table *table, size_t *nr_rows);

/* A row's rules with their full-width arguments. */
struct unwind_rules {
	enum unwind_cfa_kind cfa;
	enum unwind_rbp_kind rbp;
	enum unwind_ra_kind ra;
	int64_t cfa_offset;        /* meaning depends on cfa (see enum unwind_cfa_kind) */
	int64_t rbp_offset;
	int64_t ra_offset;
	enum unwind_reason cfa_reason; /* set when cfa is UNWIND_CFA_UNSUPPORTED */
	enum unwind_reason rbp_reason;
	enum unwind_reason ra_reason;
};

/* Decodes row (which must come from table) into *rules, resolving side-table arguments. */
void unwind_table__decode(const struct unwind_table *table, const struct unwind_row *row,
			  struct unwind_rules *rules);

struct unwind_stats {
	uint64_t fdes;        /* FDEs compiled (those with an empty range included) */
	uint64_t rows;        /* rows with rules, end markers excluded */
	uint64_t end_markers;
	uint64_t wide_rows;   /* rows whose arguments live in the side table */
	uint64_t cfi_bytes;   /* bytes of .eh_frame and .debug_frame read */
	uint64_t cfa[UNWIND_CFA_KIND_COUNT];
	uint64_t rbp[UNWIND_RBP_KIND_COUNT];
	uint64_t ra[UNWIND_RA_KIND_COUNT];
	uint64_t cfa_reason[UNWIND_REASON_COUNT];
	uint64_t rbp_reason[UNWIND_REASON_COUNT];
	uint64_t ra_reason[UNWIND_REASON_COUNT];
	uint64_t table_bytes; /* memory held by the table: rows, side table, FDE starts, header */
};

void unwind_table__stats(const struct unwind_table *table, struct unwind_stats *stats);

/* Short names for printing ("sp-offset", "plt", "cfa-register", ...). */
const char *unwind_cfa_kind__name(enum unwind_cfa_kind kind);
const char *unwind_rbp_kind__name(enum unwind_rbp_kind kind);
const char *unwind_ra_kind__name(enum unwind_ra_kind kind);
const char *unwind_reason__name(enum unwind_reason reason);

#endif
