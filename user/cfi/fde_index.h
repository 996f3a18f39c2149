/* Where each FDE of an image starts, in pc order, without compiling any: what lets the
 * unwind table compile one function's rows when a walk first needs them.
 *
 * .eh_frame_hdr's binary-search table, in the mapped file, serves as the index where the
 * image has one that fits (sorted, distinct starts, every entry inside .eh_frame); else the
 * FDEs are collected once and their starts kept in a compact array. Either way entry i is
 * the i-th FDE in the order the whole-table compile (unwind_table.c) runs them, so rows
 * compiled from it are the same. */
#ifndef HPROF_CFI_FDE_INDEX_H
#define HPROF_CFI_FDE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi/elf_sections.h"

struct cfi_fde_index;

/* Indexes elf's FDEs; elf (and the image it points into) must outlive the index. Returns 0
 * or -errno with a message in e. */
int cfi_fde_index__build(const struct cfi_elf *elf, struct cfi_fde_index **out,
			 struct cfi_err *e);
void cfi_fde_index__free(struct cfi_fde_index *idx);

size_t cfi_fde_index__count(const struct cfi_fde_index *idx);
/* Entry i's start pc (i < count). */
uint64_t cfi_fde_index__lo(const struct cfi_fde_index *idx, size_t i);
/* Entry i's FDE: its section (index into elf->sec) and offset there. */
void cfi_fde_index__where(const struct cfi_fde_index *idx, size_t i, uint8_t *sec, uint64_t *off);
/* The last entry starting at or below pc; false when every entry starts above it. */
bool cfi_fde_index__floor(const struct cfi_fde_index *idx, uint64_t pc, size_t *i);
/* Heap bytes the index holds (none when it is .eh_frame_hdr's table). */
size_t cfi_fde_index__bytes(const struct cfi_fde_index *idx);
/* Where the index's bytes lie (.eh_frame_hdr's table in the image), for handing
 * its pages back after the check that reads them all; false for an index on the heap. */
bool cfi_fde_index__hdr_range(const struct cfi_fde_index *idx, const uint8_t **start, size_t *len);

#endif
