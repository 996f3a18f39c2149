/* Go's function tables (.gopclntab), read in place: see go_pclntab.h. The layout is Go's
 * runtime/symtab.go pcHeader, functab and _func, and its pcvalue encoding. */
#include "cfi/go_pclntab.h"

#include <elf.h>
#include <errno.h>
#include <string.h>

#define GO_MAGIC_118 0xfffffff0u
#define GO_MAGIC_120 0xfffffff1u
/* pcHeader: magic, two pad bytes, minLC, ptrSize, then eight 8-byte words */
#define GO_HEADER_SIZE 72
/* the flag byte's place in a function's record, and the record's size up to nfuncdata */
#define GO_FLAG_118 37
#define GO_FLAG_120 41

static bool fits(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int go_pclntab__parse(const uint8_t *b, size_t size, struct go_pclntab *out)
{
	uint64_t nfunc, text, names, pctab, pcln, cutab;
	uint32_t magic;

	memset(out, 0, sizeof(*out));
	if (size < GO_HEADER_SIZE)
		return -EINVAL;
	magic = u32_at(b);
	if (magic != GO_MAGIC_118 && magic != GO_MAGIC_120)
		return (magic & 0xfffffff0u) == 0xfffffff0u || magic == 0xfffffffbu ? -ENOTSUP : -EINVAL;
	if (b[4] != 0 || b[5] != 0 || b[6] != 1 || b[7] != 8) /* x86-64: 1-byte pc quantum */
		return -EINVAL;
	nfunc = u64_at(b + 8);
	text = u64_at(b + 24);
	names = u64_at(b + 32);
	cutab = u64_at(b + 40);
	pctab = u64_at(b + 56);
	pcln = u64_at(b + 64);
	/* the tables follow each other in this order: names, cutab, files, pctab, functab */
	if (names < GO_HEADER_SIZE || cutab < names || pctab < cutab || pcln < pctab ||
	    nfunc >= UINT32_MAX / 8 || !fits(size, pcln, (nfunc + 1) * 8))
		return -EINVAL;
	out->bytes = b;
	out->size = size;
	out->text = text;
	out->nfunc = (uint32_t)nfunc;
	out->functab = (size_t)pcln;
	out->names = (size_t)names;
	out->names_size = (size_t)(cutab - names);
	out->pctab = (size_t)pctab;
	out->pctab_size = (size_t)(pcln - pctab);
	out->flag_offset = magic == GO_MAGIC_118 ? GO_FLAG_118 : GO_FLAG_120;
	return 0;
}

/* Section header i, when it lies inside the image. */
static bool section_header(const uint8_t *img, size_t size, const Elf64_Ehdr *eh, uint64_t i,
			   Elf64_Shdr *sh)
{
	uint64_t off;

	/* a hostile e_shoff may wrap the sum: it must not reach the pointer */
	if (eh->e_shentsize != sizeof(*sh) || i > size / sizeof(*sh) ||
	    __builtin_add_overflow(eh->e_shoff, i * sizeof(*sh), &off) ||
	    !fits(size, off, sizeof(*sh)))
		return false;
	memcpy(sh, img + off, sizeof(*sh));
	return true;
}

/* The section named .gopclntab (internal linking) or ending so (.data.rel.ro.gopclntab
 * is how some linkers name it in a position-independent binary). */
static bool is_pclntab_name(const char *name)
{
	size_t len = strlen(name), want = strlen(".gopclntab");

	return len >= want && strcmp(name + len - want, ".gopclntab") == 0;
}

int go_pclntab__from_elf(const uint8_t *img, size_t size, struct go_pclntab *out)
{
	Elf64_Ehdr eh;
	Elf64_Shdr strtab, sh;
	uint64_t shnum;

	memset(out, 0, sizeof(*out));
	if (size < sizeof(eh) || memcmp(img, ELFMAG, SELFMAG) != 0 || img[EI_CLASS] != ELFCLASS64)
		return -EINVAL;
	memcpy(&eh, img, sizeof(eh));
	shnum = eh.e_shnum;
	if (eh.e_shoff == 0 || shnum == 0 || shnum > size / sizeof(sh) || eh.e_shstrndx >= shnum ||
	    !section_header(img, size, &eh, eh.e_shstrndx, &strtab) ||
	    strtab.sh_type == SHT_NOBITS || !fits(size, strtab.sh_offset, strtab.sh_size))
		return -ENOENT;
	for (uint64_t i = 1; i < shnum; i++) {
		const char *name;

		if (!section_header(img, size, &eh, i, &sh) || sh.sh_name >= strtab.sh_size)
			continue;
		name = (const char *)img + strtab.sh_offset + sh.sh_name;
		if (!memchr(name, 0, strtab.sh_size - sh.sh_name) || !is_pclntab_name(name))
			continue;
		if (sh.sh_type == SHT_NOBITS || !fits(size, sh.sh_offset, sh.sh_size))
			return -EINVAL;
		return go_pclntab__parse(img + sh.sh_offset, (size_t)sh.sh_size, out);
	}
	return -ENOENT;
}

/* Entry i's start, as an offset from the text address. */
static uint32_t entry_off(const struct go_pclntab *t, uint32_t i)
{
	return u32_at(t->bytes + t->functab + 8 * (size_t)i);
}

bool go_pclntab__func(const struct go_pclntab *t, uint32_t i, struct go_func *f)
{
	uint64_t rec;
	uint32_t lo, hi;
	int32_t name;

	if (i >= t->nfunc)
		return false;
	lo = entry_off(t, i);
	hi = entry_off(t, i + 1);
	rec = (uint64_t)t->functab + u32_at(t->bytes + t->functab + 8 * (size_t)i + 4);
	if (hi <= lo || !fits(t->size, rec, t->flag_offset + 3) || u32_at(t->bytes + rec) != lo)
		return false;
	memcpy(&name, t->bytes + rec + 4, sizeof(name));
	if (name < 0 || (size_t)name >= t->names_size)
		return false;
	*f = (struct go_func){
		.index = i,
		.entry = t->text + lo,
		.end = t->text + hi,
		.name = (uint32_t)name,
		.pcsp = u32_at(t->bytes + rec + 16),
		.flag = t->bytes[rec + t->flag_offset],
	};
	return true;
}

bool go_pclntab__func_at(const struct go_pclntab *t, uint64_t vaddr, struct go_func *f)
{
	uint64_t off;
	uint32_t lo = 0, hi;

	if (!t->bytes || t->nfunc == 0 || vaddr < t->text || vaddr - t->text >= UINT32_MAX)
		return false;
	off = vaddr - t->text;
	if (off < entry_off(t, 0) || off >= entry_off(t, t->nfunc))
		return false;
	/* the last entry at or below off (entries ascend; func() checks its neighbour) */
	hi = t->nfunc;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (entry_off(t, mid) <= off)
			lo = mid;
		else
			hi = mid;
	}
	return go_pclntab__func(t, lo, f) && vaddr < f->end;
}

const char *go_pclntab__name(const struct go_pclntab *t, const struct go_func *f)
{
	const char *name = (const char *)t->bytes + t->names + f->name;

	if (f->name >= t->names_size || !memchr(name, 0, t->names_size - f->name))
		return NULL;
	return name;
}

/* An unsigned LEB128 varint of at most 32 bits from p[*i], below end. */
static bool read_varint(const uint8_t *p, size_t end, size_t *i, uint32_t *v)
{
	uint32_t out = 0;

	for (unsigned shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*i >= end)
			return false;
		b = p[(*i)++];
		out |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = out;
			return true;
		}
	}
	return false;
}

int go_pclntab__sp_deltas(const struct go_pclntab *t, const struct go_func *f, go_sp_delta_fn fn,
			  void *arg)
{
	size_t i, end = t->pctab + t->pctab_size;
	uint64_t pc = f->entry;
	int32_t value = -1;
	bool first = true;

	if (f->pcsp == 0 || f->pcsp >= t->pctab_size)
		return -EINVAL;
	i = t->pctab + f->pcsp;
	/* each step takes two bytes at least and moves pc on: bounded by both */
	while (pc < f->end) {
		uint32_t uvdelta, pcdelta;
		uint64_t next;
		int err;

		if (!read_varint(t->bytes, end, &i, &uvdelta))
			return -EINVAL;
		if (uvdelta == 0 && !first)
			return 0; /* the table's end: the padding after the code has no value */
		if (!read_varint(t->bytes, end, &i, &pcdelta) || pcdelta == 0)
			return -EINVAL;
		first = false;
		value = (int32_t)((uint32_t)value + (-(uvdelta & 1) ^ (uvdelta >> 1)));
		next = pc + pcdelta;
		if (next > f->end)
			next = f->end;
		err = fn(arg, pc, next, value);
		if (err)
			return err;
		pc = next;
	}
	return 0;
}
