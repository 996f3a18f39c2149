/* Unit tests for the CFI compiler (user/cfi/unwind_table.h): hand-assembled CIEs and FDEs inside
 * hand-built ELF images, one per opcode, encoding and augmentation, the row format's limits,
 * and corrupt or truncated input. The expected rules are worked out by hand from the DWARF
 * written here. Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cfi/unwind_table.h"
#include "check.h"
#include "lazy_compare.h"

#include <unistd.h>

#include <stdarg.h>
/* ---- byte buffers ---- */

struct buf {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 256;
		b->b = realloc(b->b, b->cap);
		if (!b->b)
			abort();
	}
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void u8(struct buf *b, uint8_t v) { put(b, &v, 1); }
static void u16(struct buf *b, uint16_t v) { put(b, &v, 2); }
static void u32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(struct buf *b, uint64_t v) { put(b, &v, 8); }

static void uleb(struct buf *b, uint64_t v)
{
	do {
		uint8_t x = v & 0x7f;

		v >>= 7;
		u8(b, x | (v ? 0x80 : 0));
	} while (v);
}

static void sleb(struct buf *b, int64_t v)
{
	bool more = true;

	while (more) {
		uint8_t x = v & 0x7f;

		v >>= 7;
		more = !((v == 0 && !(x & 0x40)) || (v == -1 && (x & 0x40)));
		u8(b, x | (more ? 0x80 : 0));
	}
}

static void patch32(struct buf *b, size_t at, uint32_t v) { memcpy(b->b + at, &v, 4); }

/* ---- CFI assembly ---- */

#define SEC_VADDR 0x1000ull /* where the test .eh_frame "is loaded" */

struct cie_spec {
	const char *aug;     /* "zR" etc. */
	uint8_t version;
	int64_t daf;
	uint64_t caf;
	uint64_t ra;
	uint8_t fde_enc;
	const uint8_t *init; /* initial instructions */
	size_t init_len;
	bool debug_frame;
	bool dwarf64;
};

/* Starts an entry with a length field to patch (end_entry); returns the field's offset. */
static size_t begin_entry(struct buf *b, bool dwarf64)
{
	size_t len_at;

	if (dwarf64)
		u32(b, 0xffffffff);
	len_at = b->n;
	if (dwarf64)
		u64(b, 0);
	else
		u32(b, 0);
	return len_at;
}

/* A field as wide as the entry's length (a CIE id or an FDE's CIE pointer). */
static void entry_word(struct buf *b, bool dwarf64, uint64_t v)
{
	if (dwarf64)
		u64(b, v);
	else
		u32(b, (uint32_t)v);
}

/* Pads the entry that starts at start to 8 bytes with DW_CFA_nop and patches its length. */
static void end_entry(struct buf *b, size_t start, size_t len_at, bool dwarf64)
{
	while ((b->n - start) % 8)
		u8(b, 0);
	if (dwarf64) {
		uint64_t l = b->n - len_at - 8;

		memcpy(b->b + len_at, &l, 8);
	} else {
		patch32(b, len_at, (uint32_t)(b->n - len_at - 4));
	}
}

/* The usual x86-64 CIE program: CFA = rsp + 8, return address at CFA - 8. */
static const uint8_t x86_init[] = { 0x0c, 7, 8, 0x90, 1 };

/* Appends a CIE; returns its offset. */
static size_t cie(struct buf *b, const struct cie_spec *s)
{
	size_t start = b->n, len_at = begin_entry(b, s->dwarf64);

	entry_word(b, s->dwarf64, s->debug_frame ? ~0ull : 0); /* the CIE id */
	u8(b, s->version ? s->version : 1);
	put(b, s->aug, strlen(s->aug) + 1);
	if (s->version == 4) {
		u8(b, 8);
		u8(b, 0);
	}
	uleb(b, s->caf ? s->caf : 1);
	sleb(b, s->daf ? s->daf : -8);
	if ((s->version ? s->version : 1) == 1)
		u8(b, (uint8_t)(s->ra ? s->ra : 16));
	else
		uleb(b, s->ra ? s->ra : 16);
	if (s->aug[0] == 'z') {
		struct buf a = { 0 };

		for (const char *p = s->aug + 1; *p; p++) {
			if (*p == 'R')
				u8(&a, s->fde_enc);
			else if (*p == 'L')
				u8(&a, 0x1b);
			else if (*p == 'P') {
				u8(&a, 0x9b); /* indirect pcrel sdata4: fine to skip, never followed */
				u32(&a, 0x1234);
			}
		}
		uleb(b, a.n);
		put(b, a.b, a.n);
		free(a.b);
	}
	put(b, s->init, s->init_len);
	end_entry(b, start, len_at, s->dwarf64);
	return start;
}

struct fde_spec {
	size_t cie_off;
	uint64_t lo, range;
	uint8_t enc;         /* the CIE's FDE encoding */
	bool has_z;
	const uint8_t *insn;
	size_t insn_len;
	bool debug_frame;
	bool dwarf64;
};

/* Writes pc_begin in encoding enc at the end of b (section at SEC_VADDR). */
static void encoded(struct buf *b, uint8_t enc, uint64_t v)
{
	uint64_t field = SEC_VADDR + b->n;

	if ((enc & 0x70) == 0x10)
		v -= field;
	if ((enc & 0x70) == 0x50) { /* aligned */
		while ((SEC_VADDR + b->n) % 8)
			u8(b, 0);
		u64(b, v);
		return;
	}
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: case 0x08: u64(b, v); break;
	case 0x01: uleb(b, v); break;
	case 0x09: sleb(b, (int64_t)v); break;
	case 0x02: case 0x0a: u16(b, (uint16_t)v); break;
	case 0x03: case 0x0b: u32(b, (uint32_t)v); break;
	}
}

static size_t fde(struct buf *b, const struct fde_spec *s)
{
	size_t start = b->n, len_at = begin_entry(b, s->dwarf64), id_at = b->n;

	entry_word(b, s->dwarf64, s->debug_frame ? s->cie_off : id_at - s->cie_off);
	encoded(b, s->enc, s->lo);
	if ((s->enc & 0x70) == 0x50)
		u64(b, s->range);
	else
		encoded(b, s->enc & 0x0f, s->range);
	if (s->has_z) {
		uleb(b, 0);
	}
	put(b, s->insn, s->insn_len);
	end_entry(b, start, len_at, s->dwarf64);
	return start;
}

/* ---- ELF images ---- */

struct elf_opts {
	bool debug_frame;      /* name the section .debug_frame */
	bool nobits;
	bool compress;         /* SHF_COMPRESSED (zlib) */
	bool with_hdr;         /* add .eh_frame_hdr, PT_GNU_EH_FRAME, PT_LOAD; hide the name */
	uint16_t machine;
	uint16_t type;
	uint8_t class;
};

/* Lays out: ELF header, program headers, section bytes at 0x1000 (== SEC_VADDR, so file
 * offset equals address), .eh_frame_hdr, .shstrtab, section headers. */
static struct buf make_elf(const struct buf *frame, const struct elf_opts *o)
{
	static const char names[] = "\0.eh_frame\0.debug_frame\0.shstrtab\0.eh_frame_hdr\0.text";
	struct buf img = { 0 }, data = { 0 };
	Elf64_Ehdr eh = { 0 };
	Elf64_Shdr sh[4] = { 0 };
	Elf64_Phdr ph[2] = { 0 };
	uint64_t data_off = SEC_VADDR, hdr_off = 0, str_off, sh_off;
	uint32_t chflags = 0;

	if (o->compress) {
		Elf64_Chdr ch = { .ch_type = ELFCOMPRESS_ZLIB, .ch_size = frame->n, .ch_addralign = 8 };
		uLongf zlen = compressBound(frame->n);
		uint8_t *z = malloc(zlen);

		compress(z, &zlen, frame->b, frame->n);
		put(&data, &ch, sizeof(ch));
		put(&data, z, zlen);
		free(z);
		chflags = SHF_COMPRESSED;
	} else {
		put(&data, frame->b, frame->n);
	}
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = o->class ? o->class : ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = o->type ? o->type : ET_DYN;
	eh.e_machine = o->machine ? o->machine : EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_shentsize = sizeof(Elf64_Shdr);

	/* padding up to the section bytes */
	img.n = 0;
	put(&img, &eh, sizeof(eh));
	while (img.n < data_off)
		u8(&img, 0);
	put(&img, data.b, data.n);
	u32(&img, 0); /* zero terminator after .eh_frame, as linkers write */
	while (img.n % 8)
		u8(&img, 0);
	if (o->with_hdr) {
		hdr_off = img.n;
		u8(&img, 1);    /* version */
		u8(&img, 0x1b); /* eh_frame_ptr: pcrel sdata4 */
		u8(&img, 0xff); /* no fde count */
		u8(&img, 0xff); /* no table */
		u32(&img, (uint32_t)(data_off - (hdr_off + 4)));
		ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_offset = 0, .p_vaddr = 0,
				      .p_filesz = img.n, .p_memsz = img.n, .p_flags = PF_R };
		ph[1] = (Elf64_Phdr){ .p_type = PT_GNU_EH_FRAME, .p_offset = hdr_off,
				      .p_vaddr = hdr_off, .p_filesz = 8, .p_memsz = 8 };
	}
	str_off = img.n;
	put(&img, names, sizeof(names));
	while (img.n % 8)
		u8(&img, 0);
	sh_off = img.n;
	sh[1] = (Elf64_Shdr){
		.sh_name = o->with_hdr ? 48 : o->debug_frame ? 11 : 1,
		.sh_type = o->nobits ? SHT_NOBITS : SHT_PROGBITS,
		.sh_flags = (o->debug_frame ? 0 : SHF_ALLOC) | chflags,
		.sh_addr = o->debug_frame ? 0 : SEC_VADDR,
		.sh_offset = data_off,
		.sh_size = data.n,
	};
	sh[2] = (Elf64_Shdr){ .sh_name = 24, .sh_type = SHT_STRTAB, .sh_offset = str_off,
			      .sh_size = sizeof(names) };
	put(&img, sh, 3 * sizeof(sh[0]));
	eh.e_shoff = sh_off;
	eh.e_shnum = 3;
	eh.e_shstrndx = 2;
	if (o->with_hdr) {
		eh.e_phoff = img.n;
		eh.e_phnum = 2;
		put(&img, ph, sizeof(ph));
	}
	memcpy(img.b, &eh, sizeof(eh));
	free(data.b);
	return img;
}

struct result {
	int ret;
	struct unwind_table *t;
	char err[512];
};

/* Every image compiled whole from all its sections is also opened lazily from a file, and
 * must look up the same (reported once, by test_lazy_agrees). */
static struct {
	size_t tables, pcs;
	char first_difference[512];
} lazy;

static void compare_lazily(const struct buf *img, const struct unwind_table *whole)
{
	char path[] = "/tmp/hprof-test-cfi-XXXXXX", err[256], why[256];
	struct unwind_row_cache *cache = NULL;
	struct unwind_table *t = NULL;
	int fd = mkstemp(path);
	size_t pcs;

	if (fd < 0 || write(fd, img->b, img->n) != (ssize_t)img->n ||
	    unwind_row_cache__new(1 << 20, &cache) != 0 ||
	    unwind_table__open(path, cache, &t, err, sizeof(err)) != 0) {
		if (!lazy.first_difference[0])
			snprintf(lazy.first_difference, sizeof(lazy.first_difference),
				 "lazy open failed: %s", fd < 0 ? "mkstemp" : err);
	} else if (!(pcs = lazy_compare(whole, t, why, sizeof(why)))) {
		if (!lazy.first_difference[0])
			snprintf(lazy.first_difference, sizeof(lazy.first_difference), "%s", why);
	} else {
		lazy.tables++;
		lazy.pcs += pcs;
	}
	unwind_table__free(t);
	unwind_row_cache__free(cache);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
}

static struct result compile_img(const struct buf *img, unsigned int sources)
{
	struct result r = { 0 };

	r.ret = unwind_table__from_image(img->b, img->n, "test.so", sources, &r.t, r.err, sizeof(r.err));
	if (r.ret == 0 && sources == UNWIND_SRC_ALL)
		compare_lazily(img, r.t);
	return r;
}

static void test_lazy_agrees(void)
{
	check(!lazy.first_difference[0] && lazy.tables > 20,
	      "every image compiled whole here looks up the same opened lazily (%zu tables, %zu pcs)%s%s",
	      lazy.tables, lazy.pcs, lazy.first_difference[0] ? ": " : "", lazy.first_difference);
}

/* Compiles one FDE over the standard CIE (zR, pcrel sdata4) with the given program. */
static struct result compile_fde(const uint8_t *insn, size_t len, uint64_t lo, uint64_t range)
{
	const struct elf_opts eo = { 0 };
	struct cie_spec cs = { .aug = "zR", .fde_enc = 0x1b, .init = x86_init, .init_len = sizeof(x86_init) };
	struct buf f = { 0 }, img;
	struct result r;
	size_t c = cie(&f, &cs);

	fde(&f, &(struct fde_spec){ .cie_off = c, .lo = lo, .range = range, .enc = 0x1b,
				    .has_z = true, .insn = insn, .insn_len = len });
	img = make_elf(&f, &eo);
	r = compile_img(&img, UNWIND_SRC_ALL);
	free(f.b);
	free(img.b);
	return r;
}

/* The rules at pc, or cfa == UNWIND_CFA_END when no row covers it. */
static struct unwind_rules at(const struct unwind_table *t, uint64_t pc)
{
	struct unwind_rules r = { .cfa = UNWIND_CFA_END };
	const struct unwind_row *row = unwind_table__find(t, pc);

	if (row)
		unwind_table__decode(t, row, &r);
	return r;
}

static bool is_sp(struct unwind_rules r, int64_t off) { return r.cfa == UNWIND_CFA_SP_OFFSET && r.cfa_offset == off; }
static bool is_bp(struct unwind_rules r, int64_t off) { return r.cfa == UNWIND_CFA_BP_OFFSET && r.cfa_offset == off; }
static bool ra_default(struct unwind_rules r) { return r.ra == UNWIND_RA_AT_CFA && r.ra_offset == -8; }
static bool rbp_at(struct unwind_rules r, int64_t off) { return r.rbp == UNWIND_RBP_AT_CFA && r.rbp_offset == off; }

/* ---- tests ---- */

static void test_prologue(void)
{
	/* push %rbp; mov %rsp,%rbp; ...; pop %rbp; ret */
	static const uint8_t p[] = {
		0x41,             /* advance_loc 1 */
		0x0e, 16,         /* def_cfa_offset 16 */
		0x86, 2,          /* offset r6 at cfa-16 */
		0x43,             /* advance_loc 3 */
		0x0d, 6,          /* def_cfa_register rbp */
		0x4a,             /* advance_loc 10 */
		0x0c, 7, 8,       /* def_cfa rsp+8 */
	};
	struct result r = compile_fde(p, sizeof(p), 0x2000, 0x20);
	struct unwind_stats st;

	check(r.ret == 0, "prologue: compiles (%s)", r.err);
	if (r.ret)
		return;
	check(is_sp(at(r.t, 0x2000), 8) && ra_default(at(r.t, 0x2000)) &&
	      at(r.t, 0x2000).rbp == UNWIND_RBP_UNCHANGED, "prologue: entry is rsp+8, rbp unchanged, ra c-8");
	check(is_sp(at(r.t, 0x2001), 16) && rbp_at(at(r.t, 0x2003), -16), "prologue: after push rsp+16, rbp at c-16");
	check(is_bp(at(r.t, 0x2004), 16) && is_bp(at(r.t, 0x200d), 16), "prologue: after mov CFA is rbp+16");
	check(is_sp(at(r.t, 0x200e), 8) && rbp_at(at(r.t, 0x201f), -16), "prologue: epilogue back to rsp+8");
	check(at(r.t, 0x2020).cfa == UNWIND_CFA_END && at(r.t, 0x1fff).cfa == UNWIND_CFA_END,
	      "prologue: no rule before the FDE or at its end");
	unwind_table__stats(r.t, &st);
	check(st.fdes == 1 && st.rows == 4 && st.end_markers == 1 && st.cfa[UNWIND_CFA_BP_OFFSET] == 1,
	      "prologue: stats count 1 FDE, 4 rows, 1 end marker");
	unwind_table__free(r.t);
}

static void test_advances(void)
{
	/* each advance form, each followed by a distinct CFA offset */
	struct buf q = { 0 };
	struct result r;

	u8(&q, 0x40 | 2); u8(&q, 0x0e); uleb(&q, 16);                 /* 0x2002 */
	u8(&q, 0x02); u8(&q, 0x10); u8(&q, 0x0e); uleb(&q, 24);        /* +16: 0x2012 */
	u8(&q, 0x03); u16(&q, 0x100); u8(&q, 0x0e); uleb(&q, 32);      /* 0x2112 */
	u8(&q, 0x04); u32(&q, 0x1000); u8(&q, 0x0e); uleb(&q, 40);     /* 0x3112 */
	u8(&q, 0x1d); u64(&q, 0x10); u8(&q, 0x0e); uleb(&q, 48);       /* 0x3122 */
	u8(&q, 0x40 | 0); u8(&q, 0x0e); uleb(&q, 56); /* zero advance: the later rule wins */
	r = compile_fde(q.b, q.n, 0x2000, 0x2000);
	free(q.b);
	check(r.ret == 0, "advance: all forms compile (%s)", r.err);
	if (r.ret)
		return;
	check(is_sp(at(r.t, 0x2001), 8) && is_sp(at(r.t, 0x2002), 16) && is_sp(at(r.t, 0x2011), 16),
	      "advance: DW_CFA_advance_loc");
	check(is_sp(at(r.t, 0x2012), 24), "advance: DW_CFA_advance_loc1");
	check(is_sp(at(r.t, 0x2112), 32), "advance: DW_CFA_advance_loc2");
	check(is_sp(at(r.t, 0x3112), 40), "advance: DW_CFA_advance_loc4");
	check(is_sp(at(r.t, 0x3122), 56) && is_sp(at(r.t, 0x3fff), 56),
	      "advance: DW_CFA_MIPS_advance_loc8, and a zero advance lets the later rule win");
	unwind_table__free(r.t);
}

static void test_set_loc(void)
{
	/* set_loc with the CIE's pcrel sdata4 encoding: the operand is relative to itself */
	struct cie_spec cs = { .aug = "zR", .fde_enc = 0x1b, .init = x86_init, .init_len = sizeof(x86_init) };
	struct buf f = { 0 }, img;
	const struct elf_opts eo = { 0 };
	size_t c = cie(&f, &cs), start = f.n, len_at;
	struct result r;

	len_at = f.n;
	u32(&f, 0);
	u32(&f, (uint32_t)(f.n - c));
	encoded(&f, 0x1b, 0x5000);
	encoded(&f, 0x03, 0x100);
	uleb(&f, 0);
	u8(&f, 0x01);
	encoded(&f, 0x1b, 0x5040); /* set_loc 0x5040 */
	u8(&f, 0x0e); uleb(&f, 32);
	while ((f.n - start) % 8)
		u8(&f, 0);
	patch32(&f, len_at, (uint32_t)(f.n - len_at - 4));
	img = make_elf(&f, &eo);
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == 0 && is_sp(at(r.t, 0x503f), 8) && is_sp(at(r.t, 0x5040), 32) &&
	      at(r.t, 0x5100).cfa == UNWIND_CFA_END, "advance: DW_CFA_set_loc (pcrel sdata4) (%s)", r.err);
	unwind_table__free(r.t);
	free(f.b);
	free(img.b);
}

static void test_state_ops(void)
{
	struct buf p = { 0 };
	struct result r;

	u8(&p, 0x41); u8(&p, 0x0e); uleb(&p, 16); u8(&p, 0x86); uleb(&p, 2);  /* 1: rsp+16, rbp c-16 */
	u8(&p, 0x0a);                                                        /* remember */
	u8(&p, 0x41); u8(&p, 0x0e); uleb(&p, 8); u8(&p, 0xc6);              /* 2: rsp+8, restore rbp */
	u8(&p, 0x41); u8(&p, 0x0b);                                          /* 3: restore_state */
	u8(&p, 0x41); u8(&p, 0x06); uleb(&p, 6);                             /* 4: restore_extended rbp */
	u8(&p, 0x41); u8(&p, 0x05); uleb(&p, 6); uleb(&p, 3);                /* 5: offset_extended c-24 */
	u8(&p, 0x41); u8(&p, 0x11); uleb(&p, 6); sleb(&p, 4);               /* 6: offset_extended_sf c-32 */
	u8(&p, 0x41); u8(&p, 0x2f); uleb(&p, 6); uleb(&p, 5);                /* 7: GNU_negative_offset_ext c+40 */
	u8(&p, 0x41); u8(&p, 0x14); uleb(&p, 6); uleb(&p, 2);                /* 8: val_offset v-16 */
	u8(&p, 0x41); u8(&p, 0x15); uleb(&p, 6); sleb(&p, -1);              /* 9: val_offset_sf v+8 */
	u8(&p, 0x41); u8(&p, 0x07); uleb(&p, 6);                             /* 10: undefined */
	u8(&p, 0x41); u8(&p, 0x08); uleb(&p, 6);                             /* 11: same_value */
	u8(&p, 0x41); u8(&p, 0x09); uleb(&p, 6); uleb(&p, 3);                /* 12: register rbx */
	u8(&p, 0x41); u8(&p, 0x12); uleb(&p, 6); sleb(&p, -2);              /* 13: def_cfa_sf rbp+16 */
	u8(&p, 0x41); u8(&p, 0x13); sleb(&p, -3);                            /* 14: def_cfa_offset_sf 24 */
	u8(&p, 0x41); u8(&p, 0x0c); uleb(&p, 11); uleb(&p, 0);               /* 15: def_cfa r11+0 */
	u8(&p, 0x41); u8(&p, 0x2e); uleb(&p, 64); u8(&p, 0x00); u8(&p, 0x2d); /* 16: args_size, nop, window_save */
	u8(&p, 0x41); u8(&p, 0x07); uleb(&p, 16);                            /* 17: ra undefined */
	r = compile_fde(p.b, p.n, 0x2000, 0x40);
	free(p.b);
	check(r.ret == 0, "opcodes: program compiles (%s)", r.err);
	if (r.ret)
		return;
	check(is_sp(at(r.t, 0x2001), 16) && rbp_at(at(r.t, 0x2001), -16), "opcodes: DW_CFA_offset");
	check(is_sp(at(r.t, 0x2002), 8) && at(r.t, 0x2002).rbp == UNWIND_RBP_UNCHANGED,
	      "opcodes: DW_CFA_restore returns rbp to the CIE's rule");
	check(is_sp(at(r.t, 0x2003), 16) && rbp_at(at(r.t, 0x2003), -16),
	      "opcodes: DW_CFA_remember_state / restore_state bring back CFA and rbp");
	check(at(r.t, 0x2004).rbp == UNWIND_RBP_UNCHANGED, "opcodes: DW_CFA_restore_extended");
	check(rbp_at(at(r.t, 0x2005), -24), "opcodes: DW_CFA_offset_extended");
	check(rbp_at(at(r.t, 0x2006), -32), "opcodes: DW_CFA_offset_extended_sf");
	check(rbp_at(at(r.t, 0x2007), 40), "opcodes: DW_CFA_GNU_negative_offset_extended");
	check(at(r.t, 0x2008).rbp == UNWIND_RBP_VAL_CFA && at(r.t, 0x2008).rbp_offset == -16,
	      "opcodes: DW_CFA_val_offset");
	check(at(r.t, 0x2009).rbp == UNWIND_RBP_VAL_CFA && at(r.t, 0x2009).rbp_offset == 8,
	      "opcodes: DW_CFA_val_offset_sf");
	check(at(r.t, 0x200a).rbp == UNWIND_RBP_UNDEFINED, "opcodes: DW_CFA_undefined");
	check(at(r.t, 0x200b).rbp == UNWIND_RBP_UNCHANGED, "opcodes: DW_CFA_same_value");
	check(at(r.t, 0x200c).rbp == UNWIND_RBP_UNSUPPORTED && at(r.t, 0x200c).rbp_reason == UNWIND_REASON_REGISTER,
	      "opcodes: DW_CFA_register is unsupported (register)");
	check(is_bp(at(r.t, 0x200d), 16), "opcodes: DW_CFA_def_cfa_sf (factored, negative)");
	check(is_bp(at(r.t, 0x200e), 24), "opcodes: DW_CFA_def_cfa_offset_sf");
	check(at(r.t, 0x200f).cfa == UNWIND_CFA_UNSUPPORTED && at(r.t, 0x200f).cfa_reason == UNWIND_REASON_CFA_REGISTER,
	      "opcodes: CFA in r11 is unsupported (cfa-register)");
	check(at(r.t, 0x2010).cfa == UNWIND_CFA_UNSUPPORTED && ra_default(at(r.t, 0x2010)),
	      "opcodes: GNU_args_size, nop and GNU_window_save change nothing");
	check(at(r.t, 0x2011).ra == UNWIND_RA_UNDEFINED, "opcodes: return address undefined (outermost frame)");
	unwind_table__free(r.t);
}

static void test_expressions(void)
{
	static const uint8_t plt[] = { 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 };
	struct buf p = { 0 };
	struct result r;

	u8(&p, 0x41); u8(&p, 0x0f); uleb(&p, sizeof(plt)); put(&p, plt, sizeof(plt));
	u8(&p, 0x41); u8(&p, 0x0f); uleb(&p, sizeof(plt)); put(&p, plt, 6); u8(&p, 0x3a); put(&p, plt + 7, 4);
	u8(&p, 0x41); u8(&p, 0x0f); uleb(&p, 4); u8(&p, 0x77); sleb(&p, 160); u8(&p, 0x06);  /* *(rsp+160) */
	u8(&p, 0x41); u8(&p, 0x0f); uleb(&p, 3); u8(&p, 0x76); sleb(&p, -8); u8(&p, 0x06);   /* *(rbp-8) */
	u8(&p, 0x41); u8(&p, 0x0f); uleb(&p, 2); u8(&p, 0x30); u8(&p, 0x06);                 /* other */
	u8(&p, 0x41); u8(&p, 0x10); uleb(&p, 6); uleb(&p, 3); u8(&p, 0x77); sleb(&p, 120);  /* rbp at rsp+120 */
	u8(&p, 0x10); uleb(&p, 16); uleb(&p, 3); u8(&p, 0x77); sleb(&p, 168);               /* ra at rsp+168 */
	u8(&p, 0x41); u8(&p, 0x10); uleb(&p, 6); uleb(&p, 2); u8(&p, 0x76); sleb(&p, 0);    /* rbp at rbp+0 */
	u8(&p, 0x10); uleb(&p, 16); uleb(&p, 1); u8(&p, 0x30);                              /* ra: other */
	u8(&p, 0x41); u8(&p, 0x16); uleb(&p, 6); uleb(&p, 1); u8(&p, 0x30);                 /* val_expression */
	u8(&p, 0x0e); uleb(&p, 99);  /* def_cfa_offset after an expression leaves the expression */
	u8(&p, 0x41); u8(&p, 0x0d); uleb(&p, 7); /* def_cfa_register: back to rsp + the last offset */
	r = compile_fde(p.b, p.n, 0x2000, 0x10);
	free(p.b);
	check(r.ret == 0, "expressions: program compiles (%s)", r.err);
	if (r.ret)
		return;
	check(at(r.t, 0x2001).cfa == UNWIND_CFA_EXPR_PLT && at(r.t, 0x2001).cfa_offset == 11,
	      "expressions: .plt CFA (DW_OP_lit11)");
	check(at(r.t, 0x2002).cfa == UNWIND_CFA_EXPR_PLT && at(r.t, 0x2002).cfa_offset == 10,
	      "expressions: IBT .plt CFA (DW_OP_lit10)");
	check(at(r.t, 0x2003).cfa == UNWIND_CFA_EXPR_DEREF_SP && at(r.t, 0x2003).cfa_offset == 160,
	      "expressions: CFA = *(rsp+160) (signal frame)");
	check(at(r.t, 0x2004).cfa == UNWIND_CFA_EXPR_DEREF_BP && at(r.t, 0x2004).cfa_offset == -8,
	      "expressions: CFA = *(rbp-8) (DRAP)");
	check(at(r.t, 0x2005).cfa == UNWIND_CFA_UNSUPPORTED && at(r.t, 0x2005).cfa_reason == UNWIND_REASON_EXPRESSION,
	      "expressions: an unknown CFA expression is unsupported (expression)");
	check(at(r.t, 0x2006).rbp == UNWIND_RBP_AT_SP && at(r.t, 0x2006).rbp_offset == 120 &&
	      at(r.t, 0x2006).ra == UNWIND_RA_AT_SP && at(r.t, 0x2006).ra_offset == 168,
	      "expressions: rbp and ra saved at rsp+N (DW_CFA_expression DW_OP_breg7)");
	check(at(r.t, 0x2007).rbp == UNWIND_RBP_AT_BP && at(r.t, 0x2007).rbp_offset == 0 &&
	      at(r.t, 0x2007).ra == UNWIND_RA_UNSUPPORTED && at(r.t, 0x2007).ra_reason == UNWIND_REASON_EXPRESSION,
	      "expressions: rbp at rbp+0; an unknown ra expression is unsupported");
	check(at(r.t, 0x2008).rbp == UNWIND_RBP_UNSUPPORTED && at(r.t, 0x2008).rbp_reason == UNWIND_REASON_VAL_EXPRESSION &&
	      at(r.t, 0x2008).cfa == UNWIND_CFA_UNSUPPORTED,
	      "expressions: DW_CFA_val_expression is unsupported; def_cfa_offset keeps an expression CFA");
	check(is_sp(at(r.t, 0x2009), 99), "expressions: def_cfa_register after an expression uses the offset");
	unwind_table__free(r.t);
}

/* GCC's realigned frames: the CFA in the DRAP register (r10, or r12-r15) in the prologue
 * and epilogue, then *(rbp - 8) in the body. */
static void test_drap_registers(void)
{
	struct buf p = { 0 };
	struct result r;

	u8(&p, 0x41); u8(&p, 0x0c); uleb(&p, 10); uleb(&p, 0);               /* 1: def_cfa r10+0 */
	u8(&p, 0x41); u8(&p, 0x0c); uleb(&p, 13); uleb(&p, 8);               /* 2: def_cfa r13+8 */
	u8(&p, 0x41); u8(&p, 0x0c); uleb(&p, 15); uleb(&p, 0);               /* 3: def_cfa r15+0 */
	u8(&p, 0x41); u8(&p, 0x0c); uleb(&p, 9); uleb(&p, 0);                /* 4: def_cfa r9+0 */
	r = compile_fde(p.b, p.n, 0x2000, 0x10);
	free(p.b);
	check(r.ret == 0, "DRAP registers: program compiles (%s)", r.err);
	if (r.ret)
		return;
	check(at(r.t, 0x2001).cfa == UNWIND_CFA_R10_OFFSET && at(r.t, 0x2001).cfa_offset == 0,
	      "DRAP registers: CFA = r10 + 0");
	check(at(r.t, 0x2002).cfa == UNWIND_CFA_R13_OFFSET && at(r.t, 0x2002).cfa_offset == 8,
	      "DRAP registers: CFA = r13 + 8");
	check(at(r.t, 0x2003).cfa == UNWIND_CFA_R15_OFFSET, "DRAP registers: CFA = r15 + 0");
	check(at(r.t, 0x2004).cfa == UNWIND_CFA_UNSUPPORTED &&
	      at(r.t, 0x2004).cfa_reason == UNWIND_REASON_CFA_REGISTER,
	      "DRAP registers: a CFA in r9, which the sample does not carry, is unsupported");
	unwind_table__free(r.t);
}

/* rbx's rules in the row's byte, a CFA based on rbx, and a return address in a register. */
static void test_rbx(void)
{
	struct buf p = { 0 };
	struct result r;

	u8(&p, 0x41); u8(&p, 0x0e); uleb(&p, 16); u8(&p, 0x83); uleb(&p, 2);  /* 1: rsp+16, rbx c-16 */
	u8(&p, 0x41); u8(&p, 0x0d); uleb(&p, 3);                             /* 2: CFA rbx+16 */
	u8(&p, 0x41); u8(&p, 0x83); uleb(&p, 253);                           /* 3: rbx c-2024 */
	u8(&p, 0x41); u8(&p, 0x83); uleb(&p, 254);                           /* 4: rbx c-2032 */
	u8(&p, 0x41); u8(&p, 0x11); uleb(&p, 3); sleb(&p, -1);              /* 5: rbx c+8 */
	u8(&p, 0x41); u8(&p, 0x07); uleb(&p, 3);                             /* 6: rbx undefined */
	u8(&p, 0x41); u8(&p, 0x08); uleb(&p, 3);                             /* 7: rbx same_value */
	u8(&p, 0x41); u8(&p, 0x09); uleb(&p, 3); uleb(&p, 12);               /* 8: rbx in r12 */
	u8(&p, 0x41); u8(&p, 0x09); uleb(&p, 16); uleb(&p, 5);               /* 9: ra in rdi */
	u8(&p, 0x41); u8(&p, 0x09); uleb(&p, 16); uleb(&p, 200);             /* 10: ra in r200 */
	u8(&p, 0x41); u8(&p, 0xc3); u8(&p, 0x0e); uleb(&p, 8);               /* 11: restore rbx, rbx+8 */
	r = compile_fde(p.b, p.n, 0x2000, 0x10);
	free(p.b);
	check(r.ret == 0, "rbx: program compiles (%s)", r.err);
	if (r.ret)
		return;
	check(at(r.t, 0x2000).rbx == UNWIND_RBX_UNCHANGED, "rbx: unchanged where no rule names it");
	check(is_sp(at(r.t, 0x2001), 16) && at(r.t, 0x2001).rbx == UNWIND_RBX_AT_CFA &&
	      at(r.t, 0x2001).rbx_offset == -16, "rbx: DW_CFA_offset c-16");
	check(at(r.t, 0x2002).cfa == UNWIND_CFA_BX_OFFSET && at(r.t, 0x2002).cfa_offset == 16,
	      "rbx: DW_CFA_def_cfa_register rbx gives CFA = rbx + 16");
	check(at(r.t, 0x2003).rbx == UNWIND_RBX_AT_CFA && at(r.t, 0x2003).rbx_offset == -2024,
	      "rbx: c-2024, the farthest save a row holds");
	check(at(r.t, 0x2004).rbx == UNWIND_RBX_UNSUPPORTED && at(r.t, 0x2005).rbx == UNWIND_RBX_UNSUPPORTED,
	      "rbx: c-2032 and c+8 are unsupported");
	check(at(r.t, 0x2006).rbx == UNWIND_RBX_UNDEFINED, "rbx: DW_CFA_undefined");
	check(at(r.t, 0x2007).rbx == UNWIND_RBX_UNCHANGED, "rbx: DW_CFA_same_value is unchanged");
	check(at(r.t, 0x2008).rbx == UNWIND_RBX_UNSUPPORTED, "rbx: in another register is unsupported");
	check(at(r.t, 0x2009).ra == UNWIND_RA_REGISTER && at(r.t, 0x2009).ra_offset == UNWIND_DWARF_RDI,
	      "rbx: a return address in rdi (DW_CFA_register rip, rdi)");
	check(at(r.t, 0x200a).ra == UNWIND_RA_UNSUPPORTED && at(r.t, 0x200a).ra_reason == UNWIND_REASON_REGISTER,
	      "rbx: a return address in a register a row cannot name is unsupported (register)");
	check(at(r.t, 0x200b).rbx == UNWIND_RBX_UNCHANGED && at(r.t, 0x200b).cfa == UNWIND_CFA_BX_OFFSET &&
	      at(r.t, 0x200b).cfa_offset == 8, "rbx: DW_CFA_restore returns rbx to the CIE's rule");
	unwind_table__free(r.t);
}

static void test_wide(void)
{
	struct buf p = { 0 };
	struct result r;
	const struct unwind_row *row;

	u8(&p, 0x41); u8(&p, 0x0c); uleb(&p, 7); uleb(&p, 100000);      /* rsp+100000 */
	u8(&p, 0x41); u8(&p, 0x86); uleb(&p, 5000);                       /* rbp c-40000 */
	u8(&p, 0x41); u8(&p, 0x90); uleb(&p, 2);                          /* ra c-16 */
	u8(&p, 0x41); u8(&p, 0x90); uleb(&p, 16);                         /* ra c-128: still wide */
	u8(&p, 0x41); u8(&p, 0x0c); uleb(&p, 7); uleb(&p, 32767);        /* largest inline */
	u8(&p, 0x86); uleb(&p, 4096); u8(&p, 0x90); uleb(&p, 15);         /* rbp c-32768, ra c-120 */
	u8(&p, 0x41); u8(&p, 0x12); uleb(&p, 7); sleb(&p, 1ll << 40);    /* rsp - 8<<40 */
	r = compile_fde(p.b, p.n, 0x2000, 0x10);
	free(p.b);
	check(r.ret == 0, "wide: compiles (%s)", r.err);
	if (r.ret)
		return;
	check(is_sp(at(r.t, 0x2001), 100000), "wide: CFA offset 100000 survives");
	check(rbp_at(at(r.t, 0x2002), -40000), "wide: rbp offset -40000 survives");
	check(at(r.t, 0x2003).ra_offset == -16 && at(r.t, 0x2004).ra_offset == -128,
	      "wide: return address at CFA-16 and CFA-128");
	row = unwind_table__find(r.t, 0x2005);
	check(row && row->ra_arg != UNWIND_ROW_WIDE && is_sp(at(r.t, 0x2005), 32767) &&
	      rbp_at(at(r.t, 0x2005), -32768) && at(r.t, 0x2005).ra_offset == -120,
	      "wide: 32767 / -32768 / -120 stay inline");
	check(is_sp(at(r.t, 0x2006), -(8ll << 40)), "wide: a 44-bit negative CFA offset survives");
	row = unwind_table__find(r.t, 0x2001);
	check(row && row->ra_arg == UNWIND_ROW_WIDE, "wide: the big row uses the side table");
	unwind_table__free(r.t);
}

static void test_many_rows(void)
{
	/* 1,000,000 rows in one FDE: more than parca-agent's 750k limit */
	const size_t n = 1000000;
	struct buf p = { 0 };
	struct result r;
	struct unwind_stats st;
	bool ok = true;

	for (size_t i = 0; i < n; i++) {
		u8(&p, 0x0e);
		uleb(&p, 8 + 8 * (i % 2));
		u8(&p, 0x41);
	}
	r = compile_fde(p.b, p.n, 0x100000, n);
	free(p.b);
	check(r.ret == 0, "big table: 1M-row FDE compiles (%s)", r.err);
	if (r.ret)
		return;
	unwind_table__stats(r.t, &st);
	for (size_t i = 0; i < n && ok; i += 9973)
		ok = is_sp(at(r.t, 0x100000 + i), 8 + 8 * (i % 2));
	check(st.rows == n && ok && is_sp(at(r.t, 0x100000 + n - 1), 8 + 8 * ((n - 1) % 2)),
	      "big table: 1M rows, lookups anywhere (rows %llu)", (unsigned long long)st.rows);
	check(st.table_bytes <= st.rows * 16 + 16 + 4096, "big table: <= 16 bytes a row (%llu bytes)",
	      (unsigned long long)st.table_bytes);
	unwind_table__free(r.t);
}

/* pc_begin in every DW_EH_PE format and application. */
static void test_encodings(void)
{
	static const struct { uint8_t enc; const char *name; } encs[] = {
		{ 0x00, "absptr" }, { 0x01, "uleb128" }, { 0x02, "udata2" }, { 0x03, "udata4" },
		{ 0x04, "udata8" }, { 0x08, "signed absptr" }, { 0x09, "sleb128" }, { 0x0a, "sdata2" },
		{ 0x0b, "sdata4" }, { 0x0c, "sdata8" }, { 0x1b, "pcrel sdata4" }, { 0x10, "pcrel absptr" },
		{ 0x11, "pcrel uleb128" }, { 0x1c, "pcrel sdata8" }, { 0x12, "pcrel udata2" },
		{ 0x33, "datarel udata4" }, { 0x23, "textrel udata4" }, { 0x50, "aligned" },
	};
	static const uint8_t prog[] = { 0x41, 0x0e, 24 };

	for (size_t i = 0; i < sizeof(encs) / sizeof(encs[0]); i++) {
		struct cie_spec cs = { .aug = "zR", .fde_enc = encs[i].enc, .init = x86_init,
				       .init_len = sizeof(x86_init) };
		struct buf f = { 0 }, img;
		const struct elf_opts eo = { 0 };
		struct result r;
		size_t c = cie(&f, &cs);

		fde(&f, &(struct fde_spec){ .cie_off = c, .lo = 0x3000, .range = 0x20,
					    .enc = encs[i].enc, .has_z = true, .insn = prog,
					    .insn_len = sizeof(prog) });
		img = make_elf(&f, &eo);
		r = compile_img(&img, UNWIND_SRC_ALL);
		check(r.ret == 0 && is_sp(at(r.t, 0x3000), 8) && is_sp(at(r.t, 0x3001), 24) &&
		      at(r.t, 0x3020).cfa == UNWIND_CFA_END && at(r.t, 0x2fff).cfa == UNWIND_CFA_END,
		      "encoding: FDE pc in DW_EH_PE %s (%s)", encs[i].name, r.err);
		unwind_table__free(r.t);
		free(f.b);
		free(img.b);
	}
	/* indirect, funcrel and omit cannot locate a function */
	static const uint8_t bad[] = { 0x9b, 0x43, 0xff, 0x73 };
	for (size_t i = 0; i < sizeof(bad); i++) {
		struct cie_spec cs = { .aug = "zR", .fde_enc = bad[i], .init = x86_init, .init_len = sizeof(x86_init) };
		struct buf f = { 0 }, img;
		const struct elf_opts eo = { 0 };
		struct result r;
		size_t c = cie(&f, &cs);

		fde(&f, &(struct fde_spec){ .cie_off = c, .lo = 0x3000, .range = 0x20, .enc = 0x03,
					    .has_z = true, .insn = prog, .insn_len = sizeof(prog) });
		img = make_elf(&f, &eo);
		r = compile_img(&img, UNWIND_SRC_ALL);
		check(r.ret == -EINVAL && strstr(r.err, "test.so: .eh_frame offset 0x") && strstr(r.err, "pc_begin"),
		      "encoding: FDE pointer encoding 0x%02x is refused: %s", bad[i], r.err);
		unwind_table__free(r.t);
		free(f.b);
		free(img.b);
	}
}

static void test_augmentations(void)
{
	static const char *const augs[] = { "zR", "zPLR", "zRS", "zLR", "zRX" /* unknown after z */ };
	static const uint8_t prog[] = { 0x41, 0x0e, 24 };

	for (size_t i = 0; i < sizeof(augs) / sizeof(augs[0]); i++) {
		struct cie_spec cs = { .aug = augs[i], .fde_enc = 0x1b, .init = x86_init,
				       .init_len = sizeof(x86_init), .version = i == 1 ? 3 : 1 };
		struct buf f = { 0 }, img;
		const struct elf_opts eo = { 0 };
		struct result r;
		size_t c = cie(&f, &cs);

		fde(&f, &(struct fde_spec){ .cie_off = c, .lo = 0x3000, .range = 0x20, .enc = 0x1b,
					    .has_z = true, .insn = prog, .insn_len = sizeof(prog) });
		img = make_elf(&f, &eo);
		r = compile_img(&img, UNWIND_SRC_ALL);
		check(r.ret == 0 && is_sp(at(r.t, 0x3001), 24), "augmentation \"%s\" (%s)", augs[i], r.err);
		unwind_table__free(r.t);
		free(f.b);
		free(img.b);
	}
	{
		struct cie_spec cs = { .aug = "Q", .init = x86_init, .init_len = sizeof(x86_init) };
		struct buf f = { 0 }, img;
		const struct elf_opts eo = { 0 };
		struct result r;

		cie(&f, &cs);
		img = make_elf(&f, &eo);
		r = compile_img(&img, UNWIND_SRC_ALL);
		check(r.ret == -EINVAL && strstr(r.err, "offset 0x0") && strstr(r.err, "augmentation"),
		      "augmentation: unknown without 'z' is refused: %s", r.err);
		unwind_table__free(r.t);
		free(f.b);
		free(img.b);
	}
}

static void test_debug_frame(void)
{
	static const uint8_t prog[] = { 0x41, 0x0e, 24 };

	for (int v = 0; v < 4; v++) {
		/* versions 1, 3, 4, and 64-bit DWARF */
		uint8_t version = v == 0 ? 1 : v == 1 ? 3 : 4;
		struct cie_spec cs = { .aug = "", .version = version, .init = x86_init,
				       .init_len = sizeof(x86_init), .debug_frame = true, .dwarf64 = v == 3 };
		struct elf_opts eo = { .debug_frame = true };
		struct buf f = { 0 }, img;
		struct result r;
		size_t c = cie(&f, &cs);

		fde(&f, &(struct fde_spec){ .cie_off = c, .lo = 0x4000, .range = 0x10, .enc = 0,
					    .insn = prog, .insn_len = sizeof(prog), .debug_frame = true,
					    .dwarf64 = v == 3 });
		img = make_elf(&f, &eo);
		r = compile_img(&img, UNWIND_SRC_DEBUG_FRAME);
		check(r.ret == 0 && is_sp(at(r.t, 0x4000), 8) && is_sp(at(r.t, 0x4001), 24) &&
		      at(r.t, 0x4010).cfa == UNWIND_CFA_END,
		      ".debug_frame: CIE version %u%s (%s)", version, v == 3 ? ", 64-bit DWARF" : "", r.err);
		unwind_table__free(r.t);
		r = compile_img(&img, UNWIND_SRC_EH_FRAME);
		check(r.ret == -ENOENT && strstr(r.err, "no .eh_frame"),
		      ".debug_frame: asking only for .eh_frame finds nothing: %s", r.err);
		unwind_table__free(r.t);
		if (v == 0) {
			free(img.b);
			eo.compress = true;
			img = make_elf(&f, &eo);
			r = compile_img(&img, UNWIND_SRC_ALL);
			check(r.ret == 0 && is_sp(at(r.t, 0x4001), 24),
			      ".debug_frame: SHF_COMPRESSED (zlib) (%s)", r.err);
			unwind_table__free(r.t);
			free(img.b);
			eo.compress = false;
			eo.nobits = true;
			img = make_elf(&f, &eo);
			r = compile_img(&img, UNWIND_SRC_ALL);
			check(r.ret == -ENOENT, ".debug_frame: SHT_NOBITS (a stripped copy) is no CFI: %s", r.err);
			unwind_table__free(r.t);
		}
		free(f.b);
		free(img.b);
	}
}

static void test_layout(void)
{
	/* FDEs out of order, one overlapping the next, two starting together, a gap */
	struct cie_spec cs = { .aug = "zR", .fde_enc = 0x1b, .init = x86_init, .init_len = sizeof(x86_init) };
	static const uint8_t p16[] = { 0x0e, 16 }, p24[] = { 0x0e, 24 }, p32[] = { 0x0e, 32 }, p40[] = { 0x0e, 40 };
	struct buf f = { 0 }, img;
	const struct elf_opts eo = { 0 };
	struct result r;
	size_t c = cie(&f, &cs);

	fde(&f, &(struct fde_spec){ .cie_off = c, .lo = 0x6000, .range = 0x10, .enc = 0x1b, .has_z = true, .insn = p24, .insn_len = 2 });
	fde(&f, &(struct fde_spec){ .cie_off = c, .lo = 0x5000, .range = 0x100, .enc = 0x1b, .has_z = true, .insn = p16, .insn_len = 2 });
	fde(&f, &(struct fde_spec){ .cie_off = c, .lo = 0x5080, .range = 0x10, .enc = 0x1b, .has_z = true, .insn = p32, .insn_len = 2 });
	fde(&f, &(struct fde_spec){ .cie_off = c, .lo = 0x6000, .range = 0x20, .enc = 0x1b, .has_z = true, .insn = p40, .insn_len = 2 });
	img = make_elf(&f, &eo);
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == 0, "layout: compiles (%s)", r.err);
	if (r.ret == 0) {
		check(is_sp(at(r.t, 0x5000), 16) && is_sp(at(r.t, 0x507f), 16), "layout: unsorted FDEs are sorted");
		check(is_sp(at(r.t, 0x5080), 32) && at(r.t, 0x5090).cfa == UNWIND_CFA_END,
		      "layout: an overlapping FDE ends the earlier one where it starts");
		check(at(r.t, 0x5fff).cfa == UNWIND_CFA_END, "layout: a pc between functions finds no rule");
		check(is_sp(at(r.t, 0x6000), 40) && is_sp(at(r.t, 0x601f), 40) && at(r.t, 0x6020).cfa == UNWIND_CFA_END,
		      "layout: of two FDEs at one pc the later wins");
	}
	unwind_table__free(r.t);
	free(f.b);
	free(img.b);
}

/* Start of the FDE holding pc, or ~0 when none does. */
static uint64_t start_of(const struct unwind_table *t, uint64_t pc)
{
	uint64_t start = ~0ull;

	return unwind_table__function_start(t, pc, &start) == 0 ? start : ~0ull;
}

static void test_function_start(void)
{
	/* two adjacent FDEs with equal rules (one row covers both), one more after them,
	 * a gap, an FDE overlapped by a later one, two FDEs at one pc */
	struct cie_spec cs = { .aug = "zR", .fde_enc = 0x1b, .init = x86_init, .init_len = sizeof(x86_init) };
	static const uint8_t p16[] = { 0x0e, 16 };
	static const struct { uint64_t lo, range; bool p16; } fdes[] = {
		{ 0x5040, 0x40, false }, { 0x5000, 0x40, false }, { 0x5080, 0x10, true },
		{ 0x7000, 0x100, false }, { 0x7080, 0x10, true }, { 0x8000, 0x10, false },
		{ 0x8000, 0x20, true },
	};
	struct buf f = { 0 }, img;
	const struct elf_opts eo = { 0 };
	const struct unwind_row *row;
	struct result r;
	size_t c = cie(&f, &cs);

	for (size_t i = 0; i < sizeof(fdes) / sizeof(fdes[0]); i++)
		fde(&f, &(struct fde_spec){ .cie_off = c, .lo = fdes[i].lo, .range = fdes[i].range,
					    .enc = 0x1b, .has_z = true, .insn = fdes[i].p16 ? p16 : NULL,
					    .insn_len = fdes[i].p16 ? 2 : 0 });
	img = make_elf(&f, &eo);
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == 0, "function start: compiles (%s)", r.err);
	if (r.ret == 0) {
		row = unwind_table__find(r.t, 0x5040);
		check(row && row->pc == 0x5000, "function start: adjacent equal FDEs share one row");
		check(start_of(r.t, 0x5000) == 0x5000 && start_of(r.t, 0x503f) == 0x5000 &&
		      start_of(r.t, 0x5040) == 0x5040 && start_of(r.t, 0x507f) == 0x5040 &&
		      start_of(r.t, 0x508f) == 0x5080,
		      "function start: each adjacent FDE keeps its own start");
		check(start_of(r.t, 0x4fff) == ~0ull && start_of(r.t, 0x5090) == ~0ull &&
		      start_of(r.t, 0x6fff) == ~0ull && start_of(r.t, 0x9000) == ~0ull,
		      "function start: none before, between or after the FDEs");
		check(start_of(r.t, 0x707f) == 0x7000 && start_of(r.t, 0x7085) == 0x7080 &&
		      start_of(r.t, 0x7090) == ~0ull,
		      "function start: an overlapping FDE takes the overlap, as its rows do");
		check(start_of(r.t, 0x801f) == 0x8000, "function start: two FDEs at one pc");
	}
	unwind_table__free(r.t);
	check(unwind_table__function_start(NULL, 0x5000, &(uint64_t){ 0 }) == -ENOENT,
	      "function start: no table, no start");
	free(f.b);
	free(img.b);
}

static void test_via_hdr(void)
{
	struct cie_spec cs = { .aug = "zR", .fde_enc = 0x1b, .init = x86_init, .init_len = sizeof(x86_init) };
	static const uint8_t prog[] = { 0x41, 0x0e, 24 };
	struct buf f = { 0 }, img;
	struct elf_opts eo = { .with_hdr = true };
	struct result r;
	size_t c = cie(&f, &cs);

	fde(&f, &(struct fde_spec){ .cie_off = c, .lo = 0x3000, .range = 0x20, .enc = 0x1b,
				    .has_z = true, .insn = prog, .insn_len = sizeof(prog) });
	img = make_elf(&f, &eo);
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == 0 && is_sp(at(r.t, 0x3001), 24) && at(r.t, 0x3020).cfa == UNWIND_CFA_END,
	      ".eh_frame_hdr: .eh_frame found through PT_GNU_EH_FRAME without its name (%s)", r.err);
	unwind_table__free(r.t);
	/* the hdr's eh_frame_ptr pointing outside every segment */
	{
		Elf64_Ehdr eh;
		Elf64_Phdr ph;

		memcpy(&eh, img.b, sizeof(eh));
		memcpy(&ph, img.b + eh.e_phoff + sizeof(ph), sizeof(ph));
		patch32(&img, ph.p_offset + 4, 0x7fffff00);
		r = compile_img(&img, UNWIND_SRC_ALL);
		check(r.ret == -EINVAL && strstr(r.err, "eh_frame_ptr"),
		      ".eh_frame_hdr: a pointer outside the image is refused: %s", r.err);
		unwind_table__free(r.t);
	}
	free(f.b);
	free(img.b);
}

static void test_elf_errors(void)
{
	struct cie_spec cs = { .aug = "zR", .fde_enc = 0x1b, .init = x86_init, .init_len = sizeof(x86_init) };
	struct buf f = { 0 }, img;
	struct result r;
	struct unwind_table *t = NULL;
	char err[256];
	int ret;

	cie(&f, &cs);
	img = make_elf(&f, &(struct elf_opts){ .machine = EM_AARCH64 });
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == -EINVAL && strstr(r.err, "x86-64"), "elf: another machine is refused: %s", r.err);
	free(img.b);
	img = make_elf(&f, &(struct elf_opts){ .type = ET_REL });
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == -EINVAL && strstr(r.err, "relocatable"), "elf: ET_REL is refused: %s", r.err);
	free(img.b);
	img = make_elf(&f, &(struct elf_opts){ .class = ELFCLASS32 });
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == -EINVAL && strstr(r.err, "64-bit"), "elf: ELFCLASS32 is refused: %s", r.err);
	free(img.b);
	img = make_elf(&f, &(struct elf_opts){ 0 });
	{
		Elf64_Ehdr eh;

		memcpy(&eh, img.b, sizeof(eh));
		eh.e_shoff = img.n - 10;
		memcpy(img.b, &eh, sizeof(eh));
		r = compile_img(&img, UNWIND_SRC_ALL);
		check(r.ret == -EINVAL && strstr(r.err, "outside the file"),
		      "elf: section headers past the end are refused: %s", r.err);
	}
	for (size_t n = 0; n < 64; n += 7) {
		r = (struct result){ 0 };
		r.ret = unwind_table__from_image(img.b, n, "short.so", UNWIND_SRC_ALL, &r.t, r.err, sizeof(r.err));
		if (r.ret != -EINVAL || !strstr(r.err, "short.so")) {
			check(false, "elf: a %zu-byte image is refused: %s", n, r.err);
			break;
		}
		if (n + 7 >= 64)
			check(true, "elf: truncated ELF headers are refused with the name");
	}
	free(img.b);
	free(f.b);
	ret = unwind_table__from_file("/nonexistent/lib.so", UNWIND_SRC_ALL, &t, err, sizeof(err));
	check(ret == -ENOENT && !t && strstr(err, "/nonexistent/lib.so"), "file: a missing file is -ENOENT: %s", err);
	unwind_table__free(NULL);
	check(unwind_table__find(NULL, 0x1000) == NULL, "api: free(NULL) and find(NULL) are fine");
}

/* One malformed program or header per case; each must fail with the file and offset. */
static void test_corrupt_programs(void)
{
	static const struct {
		const char *name;
		uint8_t prog[16];
		size_t len;
		const char *want;
	} cases[] = {
		{ "unknown opcode", { 0x41, 0x3e }, 2, "unknown DW_CFA opcode 0x3e" },
		/* 7 bytes: the FDE then needs no DW_CFA_nop padding that would complete them */
		{ "truncated ULEB", { 0x41, 0x41, 0x41, 0x41, 0x0e, 0x80, 0x80 }, 7, "truncated" },
		{ "truncated advance_loc4", { 0x41, 0x41, 0x41, 0x41, 0x04, 1, 2 }, 7, "truncated" },
		{ "restore_state first", { 0x0b }, 1, "without DW_CFA_remember_state" },
		{ "expression past end", { 0x0f, 0x20, 0x77 }, 3, "truncated" },
		{ "truncated MIPS_advance_loc8", { 0x1d, 1, 2, 3 }, 4, "truncated" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct result r = compile_fde(cases[i].prog, cases[i].len, 0x2000, 0x100);

		check(r.ret == -EINVAL && strstr(r.err, "test.so: .eh_frame offset 0x") && strstr(r.err, cases[i].want),
		      "corrupt: %s: %s", cases[i].name, r.err);
		unwind_table__free(r.t);
	}
	{
		struct buf p = { 0 };
		struct result r;

		for (int i = 0; i < 65; i++)
			u8(&p, 0x0a);
		r = compile_fde(p.b, p.n, 0x2000, 0x100);
		check(r.ret == -EINVAL && strstr(r.err, "nested deeper"), "corrupt: 65 nested remember_state: %s", r.err);
		unwind_table__free(r.t);
		free(p.b);
	}
}

static void test_corrupt_entries(void)
{
	struct cie_spec cs = { .aug = "zR", .fde_enc = 0x1b, .init = x86_init, .init_len = sizeof(x86_init) };
	static const uint8_t prog[] = { 0x41, 0x0e, 24 };
	struct buf f = { 0 }, img;
	const struct elf_opts eo = { 0 };
	struct result r;
	size_t c = cie(&f, &cs), fd, n0;

	fd = fde(&f, &(struct fde_spec){ .cie_off = c, .lo = 0x3000, .range = 0x20, .enc = 0x1b,
					 .has_z = true, .insn = prog, .insn_len = sizeof(prog) });
	n0 = f.n;
	/* length past the end */
	patch32(&f, fd, 0x1000);
	img = make_elf(&f, &eo);
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == -EINVAL && strstr(r.err, "offset 0x18") && strstr(r.err, "past the end"),
	      "corrupt: FDE length past the section: %s", r.err);
	free(img.b);
	unwind_table__free(r.t);
	patch32(&f, fd, (uint32_t)(n0 - fd - 4));
	/* CIE pointer at the FDE itself, then outside the section */
	patch32(&f, fd + 4, 4);
	img = make_elf(&f, &eo);
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == -EINVAL && strstr(r.err, "not a CIE"), "corrupt: CIE pointer to an FDE: %s", r.err);
	free(img.b);
	unwind_table__free(r.t);
	patch32(&f, fd + 4, 0x100000);
	img = make_elf(&f, &eo);
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == -EINVAL && strstr(r.err, "offset 0x18") && strstr(r.err, "points before"),
	      "corrupt: CIE pointer before the section: %s", r.err);
	free(img.b);
	unwind_table__free(r.t);
	patch32(&f, fd + 4, (uint32_t)(fd + 4 - c));
	/* unsupported version */
	f.b[c + 8] = 9;
	img = make_elf(&f, &eo);
	r = compile_img(&img, UNWIND_SRC_ALL);
	check(r.ret == -EINVAL && strstr(r.err, "offset 0x0") && strstr(r.err, "version 9"),
	      "corrupt: CIE version 9: %s", r.err);
	free(img.b);
	unwind_table__free(r.t);
	f.b[c + 8] = 1;
	/* a range that wraps */
	{
		struct buf g = { 0 };
		size_t cc = cie(&g, &(struct cie_spec){ .aug = "zR", .fde_enc = 0x04, .init = x86_init, .init_len = sizeof(x86_init) });

		fde(&g, &(struct fde_spec){ .cie_off = cc, .lo = ~0ull - 4, .range = 0x20, .enc = 0x04,
					    .has_z = true, .insn = prog, .insn_len = sizeof(prog) });
		img = make_elf(&g, &eo);
		r = compile_img(&img, UNWIND_SRC_ALL);
		check(r.ret == -EINVAL && strstr(r.err, "wraps"), "corrupt: FDE range wrapping: %s", r.err);
		free(img.b);
		unwind_table__free(r.t);
		free(g.b);
	}
	/* every truncation of the section, and many random byte flips: an error naming the
	 * file or a table, never a crash (run under ASan by `make` CFLAGS=-fsanitize=address) */
	{
		bool ok = true;
		uint32_t seed = 12345;

		for (size_t n = 0; n < f.n && ok; n++) {
			struct buf t = { 0 };

			put(&t, f.b, n);
			img = make_elf(&t, &eo);
			r = compile_img(&img, UNWIND_SRC_ALL);
			ok = r.ret == 0 || r.ret == -ENOENT || (r.ret == -EINVAL && strstr(r.err, "test.so"));
			unwind_table__free(r.t);
			free(img.b);
			free(t.b);
		}
		check(ok, "corrupt: every truncation fails cleanly or compiles");
		for (int i = 0; i < 20000 && ok; i++) {
			struct buf t = { 0 };

			put(&t, f.b, f.n);
			for (int k = 0; k < 3; k++) {
				seed = seed * 1103515245 + 12345;
				t.b[(seed >> 8) % t.n] = (uint8_t)(seed >> 20);
			}
			img = make_elf(&t, &eo);
			r = compile_img(&img, UNWIND_SRC_ALL);
			ok = r.ret == 0 || r.ret == -ENOENT || (r.ret == -EINVAL && strstr(r.err, "test.so"));
			unwind_table__free(r.t);
			free(img.b);
			free(t.b);
		}
		check(ok, "corrupt: 20000 random 3-byte corruptions fail cleanly or compile");
	}
	free(f.b);
}

/* The same library from its file and from a copy in memory gives the same rows. */
static void test_file_vs_image(void)
{
	const char *path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	struct unwind_table *a = NULL, *b = NULL;
	const struct unwind_row *ra, *rb;
	size_t na, nb, len = 0;
	char err[256];
	FILE *fp = fopen(path, "rb");
	uint8_t *data = NULL;

	if (!fp) {
		printf("skip - file vs image: no %s\n", path);
		return;
	}
	fseek(fp, 0, SEEK_END);
	len = (size_t)ftell(fp);
	fseek(fp, 0, SEEK_SET);
	data = malloc(len);
	if (!data || fread(data, 1, len, fp) != len)
		len = 0;
	fclose(fp);
	unwind_table__from_file(path, UNWIND_SRC_ALL, &a, err, sizeof(err));
	unwind_table__from_image(data, len, path, UNWIND_SRC_ALL | UNWIND_SRC_VIA_HDR, &b, err, sizeof(err));
	ra = unwind_table__rows(a, &na);
	rb = unwind_table__rows(b, &nb);
	check(a && b && na > 1000 && na == nb && memcmp(ra, rb, na * sizeof(*ra)) == 0,
	      "libc: file (by section name) and memory image (via .eh_frame_hdr) give the same %zu rows", na);
	unwind_table__free(a);
	unwind_table__free(b);
	free(data);
}

int main(void)
{
	test_prologue();
	test_advances();
	test_set_loc();
	test_state_ops();
	test_expressions();
	test_rbx();
	test_drap_registers();
	test_wide();
	test_many_rows();
	test_encodings();
	test_augmentations();
	test_debug_frame();
	test_layout();
	test_function_start();
	test_via_hdr();
	test_elf_errors();
	test_corrupt_programs();
	test_corrupt_entries();
	test_file_vs_image();
	test_lazy_agrees();
	return failures ? 1 : 0;
}
