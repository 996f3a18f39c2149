/* Bounded reads of call-frame bytes and the CFI compiler's one-line errors (reader.h). */
#include "cfi/reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int cfi_fail(struct cfi_err *e, const struct cfi_section *sec, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (!e || !e->buf || e->len == 0)
		return -EINVAL;
	if (sec)
		n = snprintf(e->buf, e->len, "%s: %s offset 0x%llx: ", e->file, sec->name,
			     (unsigned long long)off);
	else
		n = snprintf(e->buf, e->len, "%s: ", e->file);
	if (n < 0 || (size_t)n >= e->len)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(e->buf + n, e->len - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int cfi_read_encoded(struct cfi_cur *c, uint8_t enc, uint8_t addr_size, uint64_t field_vaddr,
		     uint64_t datarel_base, uint64_t *out)
{
	uint64_t v = 0, base = 0;
	int64_t s;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return -1;
	if ((enc & 0x70) == DW_EH_PE_aligned) {
		/* the value is an absolute pointer at the next address-size boundary */
		uint64_t pad = (addr_size - (field_vaddr % addr_size)) % addr_size;

		if ((uint64_t)(c->end - c->p) < pad)
			return -1;
		c->p += pad;
		if (rd_un(c, addr_size, &v))
			return -1;
		*out = v;
		return 0;
	}
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		if (rd_un(c, addr_size, &v))
			return -1;
		break;
	case DW_EH_PE_signed:
		if (rd_un(c, addr_size, &v))
			return -1;
		if (addr_size < 8 && (v >> (addr_size * 8 - 1)) & 1)
			v |= ~(uint64_t)0 << (addr_size * 8);
		break;
	case DW_EH_PE_uleb128:
		if (rd_uleb(c, &v))
			return -1;
		break;
	case DW_EH_PE_udata2:
		if (rd_un(c, 2, &v))
			return -1;
		break;
	case DW_EH_PE_udata4:
		if (rd_un(c, 4, &v))
			return -1;
		break;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		if (rd_un(c, 8, &v))
			return -1;
		break;
	case DW_EH_PE_sleb128:
		if (rd_sleb(c, &s))
			return -1;
		v = (uint64_t)s;
		break;
	case DW_EH_PE_sdata2:
		if (rd_un(c, 2, &v))
			return -1;
		v = (uint64_t)(int64_t)(int16_t)v;
		break;
	case DW_EH_PE_sdata4:
		if (rd_un(c, 4, &v))
			return -1;
		v = (uint64_t)(int64_t)(int32_t)v;
		break;
	default:
		return -1;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		base = field_vaddr;
		break;
	case DW_EH_PE_datarel:
		base = datarel_base;
		break;
	case DW_EH_PE_textrel:
		/* x86-64 libgcc and readelf both use a zero text base */
		break;
	default: /* funcrel has no meaning for an FDE's own address */
		return -1;
	}
	*out = v + base;
	return 0;
}
