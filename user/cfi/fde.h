/* Every FDE of an ELF image's call-frame sections, with the CIEs they name, in pc order. */
#ifndef HPROF_CFI_FDE_H
#define HPROF_CFI_FDE_H

#include <stddef.h>
#include <stdint.h>

#include "cfi/dwarf_cfa.h"
#include "cfi/elf_sections.h"

struct cfi_fdes {
	struct cfi_cie *cies;
	size_t nr_cies;
	struct cfi_fde *fdes;
	size_t nr_fdes;
	/* indices into fdes by start pc; FDEs starting at the same pc keep collection order
	 * (.debug_frame before .eh_frame, then section offset), so the later one wins */
	uint32_t *by_pc;
	uint64_t cfi_bytes; /* bytes of entries read (.eh_frame found through .eh_frame_hdr
			     * ends at its zero terminator) */
};

/* Parses every CIE and FDE of elf's sections. On failure returns -errno with a message in
 * e, and *out is empty. */
int cfi_fdes__collect(const struct cfi_elf *elf, struct cfi_fdes *out, struct cfi_err *e);

/* Parses the FDE at section offset off and the CIE it names, running the CIE's initial
 * instructions (fde->cie is 0: the CIE is *cie). For compiling one function's rows on
 * demand. -EINVAL with a message when off holds no FDE or either entry is malformed. */
int cfi_fde__parse_at(const struct cfi_section *sec, uint64_t off, struct cfi_cie *cie,
		      struct cfi_fde *fde, struct cfi_err *e);

/* Frees what collect returned; the struct may be released twice. */
void cfi_fdes__release(struct cfi_fdes *fdes);

#endif
