/* The entries of a call-frame section: CIE and FDE headers parsed, then every FDE of an
 * image collected with the CIE it names and put in pc order.
 *
 * Every read goes through a bounded cursor, and every entry is at least 4 bytes long, so no
 * input can make a loop spin. */
#include "cfi/fde.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

/* Bytes a value of this encoding's format takes, for pc_range (never pc-relative). */
static int rd_encoded_value(struct cfi_cur *c, uint8_t enc, uint8_t addr_size, uint64_t *out)
{
	return cfi_read_encoded(c, enc & 0x0f, addr_size, 0, 0, out);
}

/* Skips an encoded pointer that hprof does not use (personality): indirect is fine here. */
static int skip_encoded(struct cfi_cur *c, uint8_t enc, uint8_t addr_size, uint64_t vaddr)
{
	uint64_t v;

	if (enc == DW_EH_PE_omit)
		return 0;
	return cfi_read_encoded(c, enc & 0x7f, addr_size, vaddr, 0, &v);
}

/* The kind of entry at a section offset. */
enum cfi_entry_kind { CFI_ENTRY_ZERO, CFI_ENTRY_CIE, CFI_ENTRY_FDE };

/* Reads the header of the entry at *off: on return *off is the next entry's offset,
 * *kind is a terminator, a CIE or an FDE (then *cie_off names its CIE and body/body_end
 * bound the rest of the entry). */
static int next_entry(const struct cfi_section *sec, uint64_t *off, enum cfi_entry_kind *kind,
		      uint64_t *cie_off, uint64_t *body, uint64_t *body_end, struct cfi_err *e)
{
	struct cfi_cur c = { sec->data + *off, sec->data + sec->size };
	uint64_t start = *off, len, id, id_pos;
	bool dwarf64 = false;

	if (rd_un(&c, 4, &len))
		return cfi_fail(e, sec, start, "truncated entry length");
	if (len == 0) {
		*kind = CFI_ENTRY_ZERO;
		*off = start + 4;
		return 0;
	}
	if (len == 0xffffffff) {
		dwarf64 = true;
		if (rd_un(&c, 8, &len))
			return cfi_fail(e, sec, start, "truncated 64-bit entry length");
	}
	if (len > (uint64_t)(c.end - c.p))
		return cfi_fail(e, sec, start, "entry length 0x%llx runs past the end of the section",
				(unsigned long long)len);
	*body_end = cur_off(sec, &c) + len;
	id_pos = cur_off(sec, &c);
	if (rd_un(&c, dwarf64 ? 8 : 4, &id))
		return cfi_fail(e, sec, start, "entry too short for its CIE pointer");
	*body = cur_off(sec, &c);
	*off = *body_end;
	if (sec->is_eh ? id == 0 : id == (dwarf64 ? ~(uint64_t)0 : 0xffffffffu)) {
		*kind = CFI_ENTRY_CIE;
		*cie_off = start;
		return 0;
	}
	*kind = CFI_ENTRY_FDE;
	if (sec->is_eh) {
		/* .eh_frame: the pointer counts back from its own position */
		if (id > id_pos)
			return cfi_fail(e, sec, start, "CIE pointer 0x%llx points before the section",
					(unsigned long long)id);
		*cie_off = id_pos - id;
	} else {
		*cie_off = id;
	}
	if (*cie_off >= sec->size)
		return cfi_fail(e, sec, start, "CIE pointer 0x%llx is outside the section",
				(unsigned long long)*cie_off);
	return 0;
}

static int parse_cie_augmentation(const struct cfi_section *sec, struct cfi_cur *c,
				  const char *aug, struct cfi_cie *cie, struct cfi_err *e)
{
	uint64_t aug_len;
	struct cfi_cur a;

	if (aug[0] != 'z') {
		/* without 'z' nothing says how long unknown data is */
		if (aug[0] && strcmp(aug, "eh") != 0)
			return cfi_fail(e, sec, cie->off, "unknown CIE augmentation \"%s\"", aug);
		return 0;
	}
	cie->has_z = true;
	if (rd_uleb(c, &aug_len) || aug_len > (uint64_t)(c->end - c->p))
		return cfi_fail(e, sec, cie->off, "CIE augmentation data runs past the CIE");
	a.p = c->p;
	a.end = c->p + aug_len;
	c->p += aug_len;
	for (const char *s = aug + 1; *s; s++) {
		uint8_t enc;

		switch (*s) {
		case 'L':
			if (rd_u8(&a, &enc))
				return cfi_fail(e, sec, cie->off, "truncated 'L' augmentation");
			break;
		case 'R':
			if (rd_u8(&a, &cie->fde_enc))
				return cfi_fail(e, sec, cie->off, "truncated 'R' augmentation");
			break;
		case 'P':
			if (rd_u8(&a, &enc) ||
			    skip_encoded(&a, enc, cie->addr_size, sec->vaddr + (uint64_t)(a.p - sec->data)))
				return cfi_fail(e, sec, cie->off, "bad 'P' (personality) augmentation");
			break;
		case 'S': /* signal frame: the pc is not after a call; nothing to read */
		case 'B': /* AArch64 BTI, 'G' MTE: no data */
		case 'G':
			break;
		default:
			/* 'z' gave the length, so the rest can be skipped safely */
			return 0;
		}
	}
	return 0;
}

/* Parses the CIE at section offset off (its length field) and runs its initial
 * instructions. */
static int parse_cie(const struct cfi_section *sec, uint64_t off, struct cfi_cie *cie,
		     struct cfi_err *e)
{
	uint64_t next = off, body, body_end, cie_off, ra;
	enum cfi_entry_kind kind;
	struct cfi_cur c;
	const char *aug;
	uint8_t version, b;
	int err;

	err = next_entry(sec, &next, &kind, &cie_off, &body, &body_end, e);
	if (err)
		return err;
	if (kind != CFI_ENTRY_CIE)
		return cfi_fail(e, sec, off, "CIE pointer leads to a%s, not a CIE",
				kind == CFI_ENTRY_FDE ? "n FDE" : " zero terminator");
	memset(cie, 0, sizeof(*cie));
	cie->off = off;
	cie->addr_size = 8;
	cie->fde_enc = DW_EH_PE_absptr;
	c.p = sec->data + body;
	c.end = sec->data + body_end;
	if (rd_u8(&c, &version))
		return cfi_fail(e, sec, off, "truncated CIE");
	if (version != 1 && version != 3 && version != 4)
		return cfi_fail(e, sec, off, "unsupported CIE version %u", version);
	aug = (const char *)c.p;
	if (!memchr(c.p, 0, (size_t)(c.end - c.p)))
		return cfi_fail(e, sec, off, "CIE augmentation string is not terminated");
	c.p += strlen(aug) + 1;
	if (strcmp(aug, "eh") == 0 && rd_un(&c, cie->addr_size, &cie_off))
		return cfi_fail(e, sec, off, "truncated \"eh\" augmentation");
	if (version >= 4) {
		if (rd_u8(&c, &cie->addr_size) || rd_u8(&c, &b))
			return cfi_fail(e, sec, off, "truncated CIE address size");
		if (cie->addr_size != 4 && cie->addr_size != 8)
			return cfi_fail(e, sec, off, "unsupported address size %u", cie->addr_size);
		if (b != 0)
			return cfi_fail(e, sec, off, "segment selectors are not supported");
	}
	if (rd_uleb(&c, &cie->code_align) || rd_sleb(&c, &cie->data_align))
		return cfi_fail(e, sec, off, "truncated CIE alignment factors");
	if (version == 1) {
		if (rd_u8(&c, &b))
			return cfi_fail(e, sec, off, "truncated CIE return-address column");
		ra = b;
	} else if (rd_uleb(&c, &ra)) {
		return cfi_fail(e, sec, off, "truncated CIE return-address column");
	}
	cie->ra_reg = ra;
	err = parse_cie_augmentation(sec, &c, aug, cie, e);
	if (err)
		return err;
	cie->insn_off = cur_off(sec, &c);
	cie->insn_end = body_end;
	return cfi_run_cie(sec, cie, e);
}

/* Parses an FDE body (after its CIE pointer) for the given CIE. */
static int parse_fde(const struct cfi_section *sec, const struct cfi_cie *cie, uint64_t entry_off,
		     uint64_t body, uint64_t body_end, struct cfi_fde *fde, struct cfi_err *e)
{
	struct cfi_cur c = { sec->data + body, sec->data + body_end };
	uint64_t range, aug_len;

	if (cfi_read_encoded(&c, cie->fde_enc, cie->addr_size, sec->vaddr + body, 0, &fde->lo))
		return cfi_fail(e, sec, entry_off, "bad FDE pc_begin (encoding 0x%02x)", cie->fde_enc);
	if (rd_encoded_value(&c, cie->fde_enc, cie->addr_size, &range))
		return cfi_fail(e, sec, entry_off, "bad FDE pc_range");
	if (cie->addr_size == 4) {
		fde->lo &= 0xffffffffu;
		range &= 0xffffffffu;
	}
	if (fde->lo + range < fde->lo)
		return cfi_fail(e, sec, entry_off, "FDE pc range wraps around the address space");
	fde->hi = fde->lo + range;
	if (cie->has_z) {
		if (rd_uleb(&c, &aug_len) || aug_len > (uint64_t)(c.end - c.p))
			return cfi_fail(e, sec, entry_off, "FDE augmentation data runs past the FDE");
		c.p += aug_len;
	}
	if ((uint64_t)(c.end - c.p) > UINT32_MAX)
		return cfi_fail(e, sec, entry_off, "FDE program too long");
	fde->off = entry_off;
	fde->insn_off = cur_off(sec, &c);
	fde->insn_len = (uint32_t)(c.end - c.p);
	return 0;
}

int cfi_fde__parse_at(const struct cfi_section *sec, uint64_t off, struct cfi_cie *cie,
		      struct cfi_fde *fde, struct cfi_err *e)
{
	uint64_t next = off, cie_off, body, body_end;
	enum cfi_entry_kind kind;
	int err;

	if (off >= sec->size)
		return cfi_fail(e, sec, off, "FDE offset is outside the section");
	err = next_entry(sec, &next, &kind, &cie_off, &body, &body_end, e);
	if (err)
		return err;
	if (kind != CFI_ENTRY_FDE)
		return cfi_fail(e, sec, off, "index entry leads to a%s, not an FDE",
				kind == CFI_ENTRY_CIE ? " CIE" : " zero terminator");
	err = parse_cie(sec, cie_off, cie, e);
	if (err)
		return err;
	err = parse_fde(sec, cie, off, body, body_end, fde, e);
	fde->cie = 0;
	return err;
}

/* ---- collecting FDEs ---- */

struct collect {
	struct cfi_fdes f;        /* f.cies is append-only: FDEs keep indices into it */
	size_t cap_cies, cap_fdes;
	uint32_t *order;          /* CIE indices sorted by (section, offset) */
	size_t cap_order;
	uint32_t last_cie;        /* most FDEs use the CIE the previous one used */
	const struct cfi_elf *elf;
	struct cfi_err *e;
};

static bool cie_before(const struct cfi_cie *c, uint8_t si, uint64_t off)
{
	return c->sec < si || (c->sec == si && c->off < off);
}

/* Index of the CIE at off in section si, parsing it on first use. */
static int cie_index(struct collect *co, uint8_t si, uint64_t off, uint32_t *out)
{
	struct cfi_fdes *f = &co->f;
	size_t lo = 0, hi = f->nr_cies;
	struct cfi_cie *c;
	int err;

	if (f->nr_cies && f->cies[co->last_cie].off == off && f->cies[co->last_cie].sec == si) {
		*out = co->last_cie;
		return 0;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cie_before(&f->cies[co->order[mid]], si, off))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < f->nr_cies) {
		c = &f->cies[co->order[lo]];
		if (c->sec == si && c->off == off) {
			co->last_cie = co->order[lo];
			*out = co->last_cie;
			return 0;
		}
	}
	if (f->nr_cies >= UINT32_MAX)
		return -E2BIG;
	if (f->nr_cies == co->cap_cies &&
	    grow_array((void **)&f->cies, &co->cap_cies, f->nr_cies + 1, sizeof(*f->cies)))
		return -ENOMEM;
	if (f->nr_cies == co->cap_order &&
	    grow_array((void **)&co->order, &co->cap_order, f->nr_cies + 1, sizeof(*co->order)))
		return -ENOMEM;
	err = parse_cie(&co->elf->sec[si], off, &f->cies[f->nr_cies], co->e);
	if (err)
		return err;
	f->cies[f->nr_cies].sec = si;
	/* CIEs usually come in section order, so this moves nothing */
	memmove(&co->order[lo + 1], &co->order[lo], (f->nr_cies - lo) * sizeof(*co->order));
	co->order[lo] = (uint32_t)f->nr_cies;
	co->last_cie = (uint32_t)f->nr_cies++;
	*out = co->last_cie;
	return 0;
}

/* Appends the FDE whose body is [body, body_end) and whose CIE is cies[ci]. */
static int add_fde(struct collect *co, const struct cfi_section *sec, uint32_t ci, uint64_t off,
		   uint64_t body, uint64_t body_end)
{
	struct cfi_fdes *f = &co->f;
	int err;

	if (f->nr_fdes == co->cap_fdes &&
	    grow_array((void **)&f->fdes, &co->cap_fdes, f->nr_fdes + 1, sizeof(*f->fdes)))
		return -ENOMEM;
	err = parse_fde(sec, &f->cies[ci], off, body, body_end, &f->fdes[f->nr_fdes], co->e);
	if (err)
		return err;
	f->fdes[f->nr_fdes++].cie = ci;
	return 0;
}

/* Collects the section's FDEs; *used is how far the entries went (for .eh_frame found
 * through .eh_frame_hdr, up to the zero terminator rather than the segment's end). */
static int collect_section(struct collect *co, uint8_t si, uint64_t *used)
{
	const struct cfi_section *sec = &co->elf->sec[si];
	uint64_t off = 0, next, cie_off, body, body_end;
	enum cfi_entry_kind kind;
	uint32_t ci;
	int err;

	/* each entry is at least 4 bytes long, so this ends */
	while (off < sec->size) {
		next = off;
		err = next_entry(sec, &next, &kind, &cie_off, &body, &body_end, co->e);
		if (err)
			return err;
		if (kind == CFI_ENTRY_ZERO && sec->stop_at_zero) {
			*used = next;
			return 0;
		}
		if (kind == CFI_ENTRY_CIE) {
			err = cie_index(co, si, off, &ci);
		} else if (kind == CFI_ENTRY_FDE) {
			err = cie_index(co, si, cie_off, &ci);
			if (!err)
				err = add_fde(co, sec, ci, off, body, body_end);
		}
		if (err)
			return err;
		off = next;
	}
	*used = off;
	return 0;
}

struct sort_key {
	uint64_t lo;
	uint32_t idx;
};

/* FDE indices ordered by start pc. A stable LSD radix sort, so FDEs starting at the same pc
 * keep collection order. Byte positions where every start agrees are skipped. */
static int sort_fdes(const struct cfi_fdes *f, uint32_t **order)
{
	size_t n = f->nr_fdes, cnt[256];
	struct sort_key *a, *b, *t;
	uint64_t all_or = 0, all_and = ~0ull;
	bool sorted = true;
	int err = 0;

	*order = malloc((n ? n : 1) * sizeof(**order));
	a = malloc((n ? n : 1) * sizeof(*a));
	b = malloc((n ? n : 1) * sizeof(*b));
	if (!*order || !a || !b) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		a[i] = (struct sort_key){ f->fdes[i].lo, (uint32_t)i };
		all_or |= a[i].lo;
		all_and &= a[i].lo;
		sorted &= i == 0 || a[i - 1].lo <= a[i].lo;
	}
	for (unsigned int shift = 0; shift < 64 && !sorted; shift += 8) {
		size_t sum = 0;

		if ((((all_or ^ all_and) >> shift) & 0xff) == 0)
			continue;
		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(a[i].lo >> shift) & 0xff]++;
		for (int d = 0; d < 256; d++) {
			size_t c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			b[cnt[(a[i].lo >> shift) & 0xff]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	for (size_t i = 0; i < n; i++)
		(*order)[i] = a[i].idx;
cleanup:
	free(a);
	free(b);
	if (err) {
		free(*order);
		*order = NULL;
	}
	return err;
}

int cfi_fdes__collect(const struct cfi_elf *elf, struct cfi_fdes *out, struct cfi_err *e)
{
	struct collect co = { .elf = elf, .e = e };
	int err;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < elf->nr_sec; i++) {
		uint64_t used = 0;

		err = collect_section(&co, (uint8_t)i, &used);
		if (err)
			goto cleanup;
		co.f.cfi_bytes += used;
	}
	err = sort_fdes(&co.f, &co.f.by_pc);
	if (err)
		goto cleanup;
	*out = co.f;
	co.f = (struct cfi_fdes){ 0 };
cleanup:
	cfi_fdes__release(&co.f);
	free(co.order);
	return err;
}

void cfi_fdes__release(struct cfi_fdes *f)
{
	free(f->cies);
	free(f->fdes);
	free(f->by_pc);
	*f = (struct cfi_fdes){ 0 };
}
