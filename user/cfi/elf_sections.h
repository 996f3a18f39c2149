/* An ELF image's call-frame sections: .eh_frame and .debug_frame by section name
 * (decompressed when SHF_COMPRESSED), or .eh_frame through PT_GNU_EH_FRAME when there are
 * no section headers. */
#ifndef HPROF_CFI_ELF_SECTIONS_H
#define HPROF_CFI_ELF_SECTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "cfi/reader.h"

/* The sections of one ELF image. Decompressed copies are owned and freed by release. */
struct cfi_elf {
	struct cfi_section sec[2];
	int nr_sec;
	void *owned[2];
	/* .eh_frame_hdr (PT_GNU_EH_FRAME) when the image has one: its bytes, its address,
	 * and the address of the .eh_frame it indexes (eh_frame_ptr) */
	const uint8_t *hdr;
	size_t hdr_size;
	uint64_t hdr_vaddr;
	uint64_t hdr_eh_frame;
};

/* Finds the sections sources (enum unwind_source) asks for. -ENOENT (with a message) when
 * there are none. */
int cfi_elf__locate(const uint8_t *image, size_t size, unsigned int sources, struct cfi_elf *out,
		    struct cfi_err *e);
void cfi_elf__release(struct cfi_elf *elf);

#endif
