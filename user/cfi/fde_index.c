#include "cfi/fde_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/fde.h"

/* .eh_frame_hdr's table encoding that the index reads in place: pairs of 32-bit signed
 * offsets from the header's start (what GNU ld, gold, LLD and mold write). */
#define HDR_TABLE_ENC (DW_EH_PE_datarel | DW_EH_PE_sdata4)

/* An entry of the heap index. */
struct fde_start {
	uint64_t lo;
	uint32_t off;
	uint8_t sec;
};

struct cfi_fde_index {
	size_t n;
	/* .eh_frame_hdr's table: n pairs (start, FDE address), each an int32 from hdr_vaddr */
	const uint8_t *table;
	uint64_t hdr_vaddr;
	uint64_t eh_frame_vaddr;
	/* else the heap index */
	struct fde_start *starts;
};

static int32_t table_word(const struct cfi_fde_index *idx, size_t i, int which)
{
	int32_t v;

	memcpy(&v, idx->table + 8 * i + 4 * which, sizeof(v));
	return v;
}

uint64_t cfi_fde_index__lo(const struct cfi_fde_index *idx, size_t i)
{
	if (idx->starts)
		return idx->starts[i].lo;
	return idx->hdr_vaddr + (uint64_t)(int64_t)table_word(idx, i, 0);
}

void cfi_fde_index__where(const struct cfi_fde_index *idx, size_t i, uint8_t *sec, uint64_t *off)
{
	if (idx->starts) {
		*sec = idx->starts[i].sec;
		*off = idx->starts[i].off;
		return;
	}
	*sec = 0;
	*off = idx->hdr_vaddr + (uint64_t)(int64_t)table_word(idx, i, 1) - idx->eh_frame_vaddr;
}

/* The table of elf's .eh_frame_hdr when it can serve as the index: one .eh_frame, the one
 * the header points at; the table's encoding the one read in place; starts strictly
 * ascending (FDEs with equal starts are left to the heap index, which keeps the whole-table
 * compile's order among them); every FDE address inside .eh_frame. One pass over the
 * table, which a build reads anyway. */
static bool use_hdr_table(const struct cfi_elf *elf, struct cfi_fde_index *idx)
{
	struct cfi_cur c;
	uint8_t count_enc, table_enc;
	uint64_t count, ptr;
	const struct cfi_section *sec = &elf->sec[0];

	if (!elf->hdr || elf->nr_sec != 1 || !sec->is_eh || sec->vaddr != elf->hdr_eh_frame ||
	    elf->hdr_size < 4)
		return false;
	count_enc = elf->hdr[2];
	table_enc = elf->hdr[3];
	if (count_enc == DW_EH_PE_omit || table_enc != HDR_TABLE_ENC)
		return false;
	c.p = elf->hdr + 4;
	c.end = elf->hdr + elf->hdr_size;
	/* eh_frame_ptr again, to find where the count starts */
	if (cfi_read_encoded(&c, elf->hdr[1], 8, elf->hdr_vaddr + 4, elf->hdr_vaddr, &ptr) ||
	    cfi_read_encoded(&c, count_enc, 8, elf->hdr_vaddr + (uint64_t)(c.p - elf->hdr),
			     elf->hdr_vaddr, &count))
		return false;
	if (count == 0 || count > (uint64_t)(c.end - c.p) / 8)
		return false;
	idx->table = c.p;
	idx->n = (size_t)count;
	idx->hdr_vaddr = elf->hdr_vaddr;
	idx->eh_frame_vaddr = sec->vaddr;
	for (size_t i = 0; i < idx->n; i++) {
		uint64_t lo = cfi_fde_index__lo(idx, i), off;
		uint8_t si;

		cfi_fde_index__where(idx, i, &si, &off);
		if ((i > 0 && lo <= cfi_fde_index__lo(idx, i - 1)) || off >= sec->size) {
			idx->table = NULL;
			idx->n = 0;
			return false;
		}
	}
	return true;
}

/* Collects every FDE (as the whole-table compile does) and keeps their starts. */
static int build_heap_index(const struct cfi_elf *elf, struct cfi_fde_index *idx,
			    struct cfi_err *e)
{
	struct cfi_fdes fdes;
	int err;

	err = cfi_fdes__collect(elf, &fdes, e);
	if (err)
		return err;
	idx->starts = malloc((fdes.nr_fdes ? fdes.nr_fdes : 1) * sizeof(*idx->starts));
	if (!idx->starts) {
		cfi_fdes__release(&fdes);
		return -ENOMEM;
	}
	for (size_t i = 0; i < fdes.nr_fdes; i++) {
		const struct cfi_fde *f = &fdes.fdes[fdes.by_pc[i]];
		uint8_t si = fdes.cies[f->cie].sec;

		if (f->off > UINT32_MAX) {
			cfi_fdes__release(&fdes);
			return cfi_fail(e, &elf->sec[si], f->off, "FDE beyond 4 GiB into its section");
		}
		idx->starts[i] = (struct fde_start){ .lo = f->lo, .off = (uint32_t)f->off, .sec = si };
	}
	idx->n = fdes.nr_fdes;
	cfi_fdes__release(&fdes);
	return 0;
}

int cfi_fde_index__build(const struct cfi_elf *elf, struct cfi_fde_index **out,
			 struct cfi_err *e)
{
	struct cfi_fde_index *idx = calloc(1, sizeof(*idx));
	int err = 0;

	*out = NULL;
	if (!idx)
		return -ENOMEM;
	if (!use_hdr_table(elf, idx))
		err = build_heap_index(elf, idx, e);
	if (err) {
		cfi_fde_index__free(idx);
		return err;
	}
	*out = idx;
	return 0;
}

void cfi_fde_index__free(struct cfi_fde_index *idx)
{
	if (!idx)
		return;
	free(idx->starts);
	free(idx);
}

size_t cfi_fde_index__count(const struct cfi_fde_index *idx)
{
	return idx->n;
}

bool cfi_fde_index__floor(const struct cfi_fde_index *idx, uint64_t pc, size_t *i)
{
	size_t lo = 0, hi = idx->n;

	/* the first entry starting above pc; the one before it is the floor */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cfi_fde_index__lo(idx, mid) <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	*i = lo - 1;
	return true;
}

size_t cfi_fde_index__bytes(const struct cfi_fde_index *idx)
{
	return sizeof(*idx) + (idx->starts ? idx->n * sizeof(*idx->starts) : 0);
}

bool cfi_fde_index__hdr_range(const struct cfi_fde_index *idx, const uint8_t **start, size_t *len)
{
	if (!idx->table)
		return false;
	*start = idx->table;
	*len = idx->n * 8;
	return true;
}
