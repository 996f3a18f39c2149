/* The CFI compiler: turns an ELF file's .eh_frame and .debug_frame into a sorted table of
 * compact unwind rows (common/unwind_row.h), and looks rows up by pc.
 *
 * Every input is treated as hostile: reads are bounds-checked, every loop is bounded by
 * the bytes it consumes, and a malformed entry fails the whole compile with a one-line
 * message naming the file, the section and the offset. */
#ifndef HPROF_CFI_UNWIND_TABLE_H
#define HPROF_CFI_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi/types.h" /* enum unwind_source, struct unwind_rules, struct unwind_stats */
#include "unwind_row.h"

struct unwind_table;

/* Larger files are not compiled: input is hostile, and the largest real binaries
 * (libLLVM, with its debug sections) are well under this. */
#define UNWIND_FILE_MAX_BYTES (4ull << 30)

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

/* Compiles one .eh_frame held in memory with no ELF file around it (a JIT's unwinding info,
 * as perf's jitdump carries it), its pc-relative pointers taken as if its first byte lay at
 * section_addr; the rows' pcs are the addresses its FDEs give. A zero length entry ends it.
 * name only labels error messages. The bytes are not kept. Returns 0 or -errno as
 * unwind_table__from_file does; -ENOENT for an empty .eh_frame. */
int unwind_table__from_eh_frame(const void *eh_frame, size_t size, uint64_t section_addr,
				const char *name, struct unwind_table **out, char *err,
				size_t errlen);

#include "cfi/row_cache.h" /* the cache lazily opened tables share */

/* Opens the ELF file at path for lookups without compiling it: the file stays mapped
 * (util/file_view.h), an index of its FDE starts is kept, and a function's rows are
 * compiled into cache when a lookup first lands in it. Lookups give the same rules as
 * unwind_table__from_file's table would. A file that changes under the table (rewritten,
 * truncated) is noticed when a function is compiled; lookups then find nothing. Row
 * pointers unwind_table__find returns stay valid until the next lookup in any table on the
 * same cache. unwind_table__rows gives no rows. Errors as unwind_table__from_file.
 *
 * A Go binary's .gopclntab (cfi/go_pclntab.h) adds rows for the Go functions no FDE covers,
 * from their pcsp tables: a file with it and no CFI section opens too. */
int unwind_table__open(const char *path, struct unwind_row_cache *cache,
		       struct unwind_table **out, char *err, size_t errlen);

/* One function's rows as a table holds them: what a slice of a binary keeps of its CFI
 * (binary/slice.h), so that a replay walks the same rows without the file. */
struct unwind_fn_rows {
	uint64_t lo, end;   /* the rows cover [lo, end) */
	bool open_end;      /* the last row runs on past end, to the next function's first */
	const struct unwind_row *rows; /* ascending pcs in [lo, end], an end marker at most last */
	size_t nr_rows;
	const struct unwind_row_wide *wide; /* what the rows' side-table indexes refer to */
	size_t nr_wide;
};

/* The rows of the function holding pc, as unwind_table__find found them. The pointers stay
 * valid as unwind_table__find's do. Returns 0 or -ENOENT when no rows cover pc. */
int unwind_table__function_rows(const struct unwind_table *table, uint64_t pc,
				struct unwind_fn_rows *out);

/* A table made whole of functions' rows (fns ascending by lo, none starting before the
 * previous one's end), each with the bounds and end it had, and of stretches [lo, hi) where
 * code switches stacks (unwind_table__switches_stack: no rows there). The rows are copied.
 * Input is hostile (a slice file): -EINVAL for functions out of order, rows outside their
 * function or side-table indexes out of range. */
int unwind_table__from_functions(const struct unwind_fn_rows *fns, size_t nr_fns,
				 const uint64_t (*switches)[2], size_t nr_switches,
				 struct unwind_table **out);

/* Accepts NULL. */
void unwind_table__free(struct unwind_table *table);

/* The row whose rules cover pc (an ELF virtual address), or NULL when no FDE covers it,
 * including a pc in the gap after an end-of-function marker. */
const struct unwind_row *unwind_table__find(const struct unwind_table *table, uint64_t pc);

/* pc lies in code that moves rsp onto another stack and calls on from there: a Go
 * function its runtime flags so (systemstack, mcall, morestack, asmcgocall). It has no
 * rows; a frame that returns into it is the outermost of its stack, as Go's own traceback
 * ends there. Only lazily opened tables know (they read .gopclntab). */
bool unwind_table__switches_stack(const struct unwind_table *table, uint64_t pc);

/* The name .gopclntab gives the Go function holding pc ("runtime.systemstack"), NULL where
 * there is none. Only lazily opened tables know. */
const char *unwind_table__go_function(const struct unwind_table *table, uint64_t pc);

/* The start of the FDE covering pc (the function holding it, for code without symbols).
 * Returns 0, or -ENOENT when no FDE covers pc. Of overlapping FDEs the later one holds
 * the overlap, as for unwind_table__find. */
int unwind_table__function_start(const struct unwind_table *table, uint64_t pc,
				 uint64_t *start);

/* For a pc no FDE covers: the stretch around it that none covers, [*lo, *hi) (0 and
 * UINT64_MAX where no FDE lies below or above; a NULL table covers nothing). *lo is where
 * the FDE below ends, a function's end. Returns 0, or -EEXIST when an FDE covers pc. */
int unwind_table__gap(const struct unwind_table *table, uint64_t pc, uint64_t *lo, uint64_t *hi);

/* All rows, end-of-function markers included, sorted by pc (none for a lazy table). */
const struct unwind_row *unwind_table__rows(const struct unwind_table *table, size_t *nr_rows);

/* The rules covering pc: unwind_table__find and unwind_table__decode in one. False when no
 * FDE covers pc. */
bool unwind_table__rules_at(const struct unwind_table *table, uint64_t pc,
			    struct unwind_rules *rules);

/* Decodes row (which must come from table: for a lazy table, from its last lookup) into
 * *rules, resolving side-table arguments. */
void unwind_table__decode(const struct unwind_table *table, const struct unwind_row *row,
			  struct unwind_rules *rules);

void unwind_table__stats(const struct unwind_table *table, struct unwind_stats *stats);

/* Short names for printing ("sp-offset", "expr-plt", "cfa-register", ...), from
 * user/cfi/row_names.c. */
const char *unwind_cfa_kind__name(enum unwind_cfa_kind kind);
const char *unwind_rbp_kind__name(enum unwind_rbp_kind kind);
const char *unwind_ra_kind__name(enum unwind_ra_kind kind);
const char *unwind_rbx_kind__name(enum unwind_rbx_kind kind);
const char *unwind_reason__name(enum unwind_reason reason);

#endif
