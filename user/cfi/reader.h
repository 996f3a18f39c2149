/* Reading call-frame bytes, which may be hostile: a bounded cursor (fixed-size integers,
 * LEB128, DW_EH_PE pointers) and the one-line message every failure of the CFI compiler
 * ends in. The bottom of user/cfi/: every other file reads through it, and it calls none
 * of them. */
#ifndef HPROF_CFI_READER_H
#define HPROF_CFI_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One call-frame section, bytes in memory. */
struct cfi_section {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr;        /* address of data[0]: the base of pc-relative pointers */
	bool is_eh;            /* .eh_frame rules (CIE id 0, relative CIE pointers) */
	bool stop_at_zero;     /* found through .eh_frame_hdr: a zero length ends it */
	const char *name;      /* ".eh_frame" or ".debug_frame", for messages */
};

/* Where messages go. */
struct cfi_err {
	const char *file;
	char *buf;
	size_t len;
};

/* Formats "FILE: SECTION+0xOFF: message" into e (sec may be NULL) and returns -EINVAL. */
int cfi_fail(struct cfi_err *e, const struct cfi_section *sec, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Bounded little-endian reader over [p, end). */
struct cfi_cur {
	const uint8_t *p;
	const uint8_t *end;
};

/* ---- bounded reads: each returns 0, or -1 when the buffer ends first ---- */

static inline int rd_u8(struct cfi_cur *c, uint8_t *v)
{
	if (c->p >= c->end)
		return -1;
	*v = *c->p++;
	return 0;
}

static inline int rd_un(struct cfi_cur *c, size_t n, uint64_t *v)
{
	uint8_t b[8] = { 0 };

	if ((size_t)(c->end - c->p) < n)
		return -1;
	memcpy(b, c->p, n);
	c->p += n;
	/* x86-64 is little-endian, and so is every ELF hprof accepts */
	memcpy(v, b, 8);
	return 0;
}

/* The bits of a LEB128 number, the shift past its last byte, and that byte (for the
 * sign). Bounded by the cursor: an unterminated number at the end fails. */
static inline int rd_leb_bits(struct cfi_cur *c, uint64_t *bits, unsigned int *shift_out,
			      uint8_t *last)
{
	uint64_t r = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		if (c->p >= c->end)
			return -1;
		b = *c->p++;
		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*bits = r;
	*shift_out = shift;
	*last = b;
	return 0;
}

static inline int rd_uleb(struct cfi_cur *c, uint64_t *v)
{
	unsigned int shift;
	uint8_t last;

	return rd_leb_bits(c, v, &shift, &last);
}

static inline int rd_sleb(struct cfi_cur *c, int64_t *v)
{
	uint64_t r;
	unsigned int shift;
	uint8_t b;

	if (rd_leb_bits(c, &r, &shift, &b))
		return -1;
	if (shift < 64 && (b & 0x40))
		r |= ~(uint64_t)0 << shift;
	*v = (int64_t)r;
	return 0;
}

/* The cursor's offset in its section. */
static inline uint64_t cur_off(const struct cfi_section *sec, const struct cfi_cur *c)
{
	return (uint64_t)(c->p - sec->data);
}

/* DW_EH_PE pointer encodings (LSB 3.0, "DWARF Extensions"). */
enum {
	DW_EH_PE_absptr = 0x00,
	DW_EH_PE_uleb128 = 0x01,
	DW_EH_PE_udata2 = 0x02,
	DW_EH_PE_udata4 = 0x03,
	DW_EH_PE_udata8 = 0x04,
	DW_EH_PE_signed = 0x08,
	DW_EH_PE_sleb128 = 0x09,
	DW_EH_PE_sdata2 = 0x0a,
	DW_EH_PE_sdata4 = 0x0b,
	DW_EH_PE_sdata8 = 0x0c,
	DW_EH_PE_pcrel = 0x10,
	DW_EH_PE_textrel = 0x20,
	DW_EH_PE_datarel = 0x30,
	DW_EH_PE_funcrel = 0x40,
	DW_EH_PE_aligned = 0x50,
	DW_EH_PE_indirect = 0x80,
	DW_EH_PE_omit = 0xff,
};

/* Reads a DW_EH_PE-encoded pointer; field_vaddr is the address of the field (pc-relative
 * base), datarel_base the DW_EH_PE_datarel base. Indirect encodings are refused. */
int cfi_read_encoded(struct cfi_cur *c, uint8_t enc, uint8_t addr_size, uint64_t field_vaddr,
		     uint64_t datarel_base, uint64_t *out);

#endif
