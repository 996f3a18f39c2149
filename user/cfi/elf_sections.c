/* Finds an ELF image's call-frame sections: .eh_frame and .debug_frame by section name
 * (decompressing SHF_COMPRESSED ones), or .eh_frame through PT_GNU_EH_FRAME and
 * .eh_frame_hdr when there are no section headers (the vDSO, stripped images). Every
 * header field is checked against the image's size before it is used. */
#include "cfi/elf_sections.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cfi/types.h"

/* Largest decompressed .debug_frame accepted; a hostile ch_size must not drive malloc. */
#define CFI_MAX_DECOMPRESSED (1ull << 30)

static bool in_image(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

static int check_header(const uint8_t *img, size_t size, Elf64_Ehdr *eh, struct cfi_err *e)
{
	if (size < EI_NIDENT || memcmp(img, ELFMAG, SELFMAG) != 0)
		return cfi_fail(e, NULL, 0, "not an ELF file");
	if (img[EI_CLASS] != ELFCLASS64)
		return cfi_fail(e, NULL, 0, "not a 64-bit ELF file (EI_CLASS %u)", img[EI_CLASS]);
	if (img[EI_DATA] != ELFDATA2LSB)
		return cfi_fail(e, NULL, 0, "not a little-endian ELF file");
	if (size < sizeof(*eh))
		return cfi_fail(e, NULL, 0, "ELF header truncated at %zu bytes", size);
	memcpy(eh, img, sizeof(*eh));
	if (eh->e_machine != EM_X86_64)
		return cfi_fail(e, NULL, 0, "not an x86-64 ELF file (e_machine %u)", eh->e_machine);
	if (eh->e_type == ET_REL)
		return cfi_fail(e, NULL, 0,
				"relocatable object: its CFI addresses are unrelocated (link it first)");
	return 0;
}

/* Section header i, bounds-checked. */
static int section_header(const uint8_t *img, size_t size, const Elf64_Ehdr *eh, uint64_t i,
			  Elf64_Shdr *sh, struct cfi_err *e)
{
	uint64_t off = eh->e_shoff + i * sizeof(*sh);

	if (eh->e_shentsize != sizeof(*sh) || i > (size / sizeof(*sh)) ||
	    !in_image(size, off, sizeof(*sh)))
		return cfi_fail(e, NULL, 0, "section header %llu at 0x%llx is outside the file",
				(unsigned long long)i, (unsigned long long)off);
	memcpy(sh, img + off, sizeof(*sh));
	return 0;
}

static int decompress(const uint8_t *img, size_t size, const Elf64_Shdr *sh, const char *name,
		      struct cfi_section *sec, void **owned, struct cfi_err *e)
{
	Elf64_Chdr ch;
	uLongf out_len;
	uint8_t *buf;

	if (sh->sh_size < sizeof(ch))
		return cfi_fail(e, NULL, 0, "%s: compression header truncated", name);
	memcpy(&ch, img + sh->sh_offset, sizeof(ch));
	if (ch.ch_type != ELFCOMPRESS_ZLIB)
		return cfi_fail(e, NULL, 0, "%s: unsupported compression type %u", name, ch.ch_type);
	if (ch.ch_size == 0 || ch.ch_size > CFI_MAX_DECOMPRESSED)
		return cfi_fail(e, NULL, 0, "%s: implausible decompressed size %llu", name,
				(unsigned long long)ch.ch_size);
	buf = malloc(ch.ch_size);
	if (!buf)
		return -ENOMEM;
	out_len = ch.ch_size;
	if (uncompress(buf, &out_len, img + sh->sh_offset + sizeof(ch), sh->sh_size - sizeof(ch)) != Z_OK ||
	    out_len != ch.ch_size) {
		free(buf);
		return cfi_fail(e, NULL, 0, "%s: corrupt zlib data", name);
	}
	(void)size;
	sec->data = buf;
	sec->size = ch.ch_size;
	*owned = buf;
	return 0;
}

static int add_section(const uint8_t *img, size_t size, const Elf64_Shdr *sh, const char *name,
		       bool is_eh, struct cfi_elf *out, struct cfi_err *e)
{
	struct cfi_section *sec = &out->sec[out->nr_sec];
	int err;

	if (sh->sh_type == SHT_NOBITS || sh->sh_size == 0)
		return 0; /* a separate debug file keeps the header but not the bytes */
	if (!in_image(size, sh->sh_offset, sh->sh_size))
		return cfi_fail(e, NULL, 0, "%s at 0x%llx+0x%llx runs past the end of the file", name,
				(unsigned long long)sh->sh_offset, (unsigned long long)sh->sh_size);
	memset(sec, 0, sizeof(*sec));
	sec->is_eh = is_eh;
	sec->name = is_eh ? ".eh_frame" : ".debug_frame";
	sec->vaddr = sh->sh_addr;
	if (sh->sh_flags & SHF_COMPRESSED) {
		err = decompress(img, size, sh, name, sec, &out->owned[out->nr_sec], e);
		if (err)
			return err;
	} else {
		sec->data = img + sh->sh_offset;
		sec->size = sh->sh_size;
	}
	out->nr_sec++;
	return 0;
}

/* Walks the section headers for .eh_frame and .debug_frame. */
static int by_section_name(const uint8_t *img, size_t size, const Elf64_Ehdr *eh,
			   unsigned int sources, struct cfi_elf *out, struct cfi_err *e)
{
	Elf64_Shdr sh0, strtab, sh;
	uint64_t shnum = eh->e_shnum, shstrndx = eh->e_shstrndx;
	bool want_eh = (sources & UNWIND_SRC_EH_FRAME) && !(sources & UNWIND_SRC_VIA_HDR);
	const uint8_t *eh_sh = NULL, *debug_sh = NULL;
	int err;

	if (eh->e_shoff == 0)
		return 0;
	err = section_header(img, size, eh, 0, &sh0, e);
	if (err)
		return err;
	if (shnum == 0)
		shnum = sh0.sh_size; /* more than SHN_LORESERVE sections */
	if (shstrndx == SHN_XINDEX)
		shstrndx = sh0.sh_link;
	if (shnum > size / sizeof(sh) || shstrndx >= shnum)
		return cfi_fail(e, NULL, 0, "bad section count %llu or name table index %llu",
				(unsigned long long)shnum, (unsigned long long)shstrndx);
	err = section_header(img, size, eh, shstrndx, &strtab, e);
	if (err)
		return err;
	if (strtab.sh_type == SHT_NOBITS || !in_image(size, strtab.sh_offset, strtab.sh_size))
		return cfi_fail(e, NULL, 0, "section name table runs past the end of the file");
	for (uint64_t i = 1; i < shnum; i++) {
		const char *name;

		err = section_header(img, size, eh, i, &sh, e);
		if (err)
			return err;
		if (sh.sh_name >= strtab.sh_size)
			continue;
		name = (const char *)img + strtab.sh_offset + sh.sh_name;
		if (!memchr(name, 0, strtab.sh_size - sh.sh_name))
			continue;
		if (want_eh && !eh_sh && strcmp(name, ".eh_frame") == 0)
			eh_sh = img + eh->e_shoff + i * sizeof(sh);
		else if ((sources & UNWIND_SRC_DEBUG_FRAME) && !debug_sh &&
			 strcmp(name, ".debug_frame") == 0)
			debug_sh = img + eh->e_shoff + i * sizeof(sh);
	}
	/* .eh_frame first: on equal starts the table keeps the later section's FDE, and
	 * .eh_frame is what the running code's own unwinder trusts */
	if (debug_sh) {
		memcpy(&sh, debug_sh, sizeof(sh));
		err = add_section(img, size, &sh, ".debug_frame", false, out, e);
		if (err)
			return err;
	}
	if (eh_sh) {
		memcpy(&sh, eh_sh, sizeof(sh));
		err = add_section(img, size, &sh, ".eh_frame", true, out, e);
		if (err)
			return err;
	}
	return 0;
}

/* The file extent of the PT_LOAD holding vaddr: [*off, *off + *len). */
static int vaddr_to_file(const uint8_t *img, size_t size, const Elf64_Ehdr *eh, uint64_t vaddr,
			 uint64_t *off, uint64_t *len)
{
	Elf64_Phdr ph;

	for (uint64_t i = 0; i < eh->e_phnum; i++) {
		memcpy(&ph, img + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz)
			continue;
		*off = ph.p_offset + (vaddr - ph.p_vaddr);
		*len = ph.p_filesz - (vaddr - ph.p_vaddr);
		if (!in_image(size, *off, 0))
			return -1;
		if (*len > size - *off)
			*len = size - *off;
		return 0;
	}
	return -1;
}

/* .eh_frame_hdr through PT_GNU_EH_FRAME, and the .eh_frame address its eh_frame_ptr
 * gives. 0 with out->hdr NULL when the image has none. */
static int find_eh_frame_hdr(const uint8_t *img, size_t size, const Elf64_Ehdr *eh,
			     struct cfi_elf *out, struct cfi_err *e)
{
	Elf64_Phdr ph;
	struct cfi_cur c;
	bool found = false;
	uint8_t enc;

	if (eh->e_phnum == 0)
		return 0;
	if (eh->e_phentsize != sizeof(ph) || !in_image(size, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(ph)))
		return cfi_fail(e, NULL, 0, "program headers run past the end of the file");
	for (uint64_t i = 0; i < eh->e_phnum && !found; i++) {
		memcpy(&ph, img + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		found = ph.p_type == PT_GNU_EH_FRAME;
	}
	if (!found)
		return 0;
	if (ph.p_filesz < 4 || !in_image(size, ph.p_offset, ph.p_filesz))
		return cfi_fail(e, NULL, 0, ".eh_frame_hdr at 0x%llx runs past the end of the file",
				(unsigned long long)ph.p_offset);
	c.p = img + ph.p_offset;
	c.end = c.p + ph.p_filesz;
	if (c.p[0] != 1)
		return cfi_fail(e, NULL, 0, ".eh_frame_hdr at 0x%llx: unsupported version %u",
				(unsigned long long)ph.p_offset, c.p[0]);
	enc = c.p[1];
	c.p += 4;
	if (cfi_read_encoded(&c, enc, 8, ph.p_vaddr + 4, ph.p_vaddr, &out->hdr_eh_frame))
		return cfi_fail(e, NULL, 0, ".eh_frame_hdr at 0x%llx: bad eh_frame_ptr",
				(unsigned long long)ph.p_offset);
	out->hdr = img + ph.p_offset;
	out->hdr_size = ph.p_filesz;
	out->hdr_vaddr = ph.p_vaddr;
	return 0;
}

/* .eh_frame through .eh_frame_hdr (found already): its end is unknown, so it runs to the
 * end of its segment or to a zero terminator. */
static int by_eh_frame_hdr(const uint8_t *img, size_t size, const Elf64_Ehdr *eh,
			   struct cfi_elf *out, struct cfi_err *e)
{
	struct cfi_section *sec = &out->sec[out->nr_sec];
	uint64_t off, len;

	if (!out->hdr)
		return 0;
	if (vaddr_to_file(img, size, eh, out->hdr_eh_frame, &off, &len))
		return cfi_fail(e, NULL, 0, ".eh_frame_hdr: eh_frame_ptr 0x%llx is in no loaded segment",
				(unsigned long long)out->hdr_eh_frame);
	memset(sec, 0, sizeof(*sec));
	sec->data = img + off;
	sec->size = len;
	sec->vaddr = out->hdr_eh_frame;
	sec->is_eh = true;
	sec->stop_at_zero = true;
	sec->name = ".eh_frame";
	out->nr_sec++;
	return 0;
}

int cfi_elf__locate(const uint8_t *img, size_t size, unsigned int sources, struct cfi_elf *out,
		    struct cfi_err *e)
{
	Elf64_Ehdr eh;
	bool have_eh = false;
	int err;

	memset(out, 0, sizeof(*out));
	err = check_header(img, size, &eh, e);
	if (err)
		return err;
	err = by_section_name(img, size, &eh, sources, out, e);
	if (err)
		goto cleanup;
	for (int i = 0; i < out->nr_sec; i++)
		have_eh |= out->sec[i].is_eh;
	if (sources & UNWIND_SRC_EH_FRAME) {
		err = find_eh_frame_hdr(img, size, &eh, out, e);
		if (err && have_eh) {
			/* the sections were found by name: only an index is lost */
			out->hdr = NULL;
			err = 0;
			if (e->len)
				e->buf[0] = '\0';
		}
		if (err)
			goto cleanup;
	}
	if ((sources & UNWIND_SRC_EH_FRAME) && !have_eh) {
		err = by_eh_frame_hdr(img, size, &eh, out, e);
		if (err)
			goto cleanup;
	}
	if (out->nr_sec == 0) {
		cfi_fail(e, NULL, 0, "no %s section",
			 (sources & UNWIND_SRC_ALL) == UNWIND_SRC_ALL ? ".eh_frame or .debug_frame" :
			 (sources & UNWIND_SRC_EH_FRAME) ? ".eh_frame" : ".debug_frame");
		err = -ENOENT;
		goto cleanup;
	}
	return 0;
cleanup:
	cfi_elf__release(out);
	return err;
}

void cfi_elf__release(struct cfi_elf *elf)
{
	if (!elf)
		return;
	for (int i = 0; i < 2; i++) {
		free(elf->owned[i]);
		elf->owned[i] = NULL;
	}
	elf->nr_sec = 0;
}
