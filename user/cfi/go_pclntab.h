/* Go's own tables of its functions (.gopclntab): where each function starts and ends, its
 * name, its flags, and at every pc how far the function has moved rsp (pcsp). Go's
 * runtime unwinds its goroutines by these alone, and they stay in binaries stripped of
 * .symtab and .debug_frame (Debian's Go programs), where nothing else describes Go code.
 *
 * The layout of Go 1.18 and later (header magic 0xfffffff0, and 0xfffffff1 from Go 1.20)
 * is read; older tables are -ENOTSUP. The bytes are hostile: every offset is checked
 * against the section, and the pcsp decoder stops at the function's end or the table's. */
#ifndef HPROF_CFI_GO_PCLNTAB_H
#define HPROF_CFI_GO_PCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* funcFlag bits of a function (runtime/symtab.go): TOPFRAME marks where a goroutine's or
 * thread's stack starts (goexit, mstart, rt0_go); SPWRITE a function that sets rsp to
 * another stack (systemstack, mcall, morestack, asmcgocall), above which Go's own
 * traceback does not go. */
#define GO_FUNC_TOPFRAME 0x1
#define GO_FUNC_SPWRITE 0x2

struct go_pclntab {
	const uint8_t *bytes; /* the section */
	size_t size;
	uint64_t text;        /* the address function entries are offsets from */
	uint32_t nfunc;
	size_t functab;       /* offsets into bytes: the function table (nfunc + 1 pairs) */
	size_t names, names_size;
	size_t pctab, pctab_size;
	uint8_t flag_offset;  /* of the flag byte in a function's record: 37 (1.18), 41 (1.20) */
};

/* One function of the table. */
struct go_func {
	uint32_t index;
	uint64_t entry, end; /* [entry, end), virtual addresses */
	uint32_t name;       /* offset into the name table */
	uint32_t pcsp;       /* offset of its pcsp table into pctab; 0: none */
	uint8_t flag;        /* GO_FUNC_* */
};

/* Finds .gopclntab in the ELF image by its section header and checks its header.
 * Returns 0, -ENOENT (no such section), -ENOTSUP (a layout before Go 1.18) or -EINVAL. */
int go_pclntab__from_elf(const uint8_t *image, size_t size, struct go_pclntab *out);

/* Checks a .gopclntab section's header (the section's own bytes). 0 or -errno as above. */
int go_pclntab__parse(const uint8_t *bytes, size_t size, struct go_pclntab *out);

/* The function holding vaddr. False when none does or its record is malformed. */
bool go_pclntab__func_at(const struct go_pclntab *t, uint64_t vaddr, struct go_func *f);

/* Function i (< nfunc). False when its record is malformed. */
bool go_pclntab__func(const struct go_pclntab *t, uint32_t i, struct go_func *f);

/* f's name, NUL-terminated inside the name table, or NULL. */
const char *go_pclntab__name(const struct go_pclntab *t, const struct go_func *f);

/* Calls fn for each stretch [lo, hi) of f's code with the bytes delta that f has pushed
 * or reserved below its return address there, in address order, up to the end of its
 * code (the padding before the next function has none) or f's end. Returns 0,
 * -EINVAL for a malformed table (fn may have been called for a part), or fn's non-zero
 * return. */
typedef int (*go_sp_delta_fn)(void *arg, uint64_t lo, uint64_t hi, int32_t delta);
int go_pclntab__sp_deltas(const struct go_pclntab *t, const struct go_func *f, go_sp_delta_fn fn,
			  void *arg);

#endif
