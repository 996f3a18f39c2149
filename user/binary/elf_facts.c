#include "binary/elf_facts.h"
#include "binary/libelf_sections.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct load_segment {
	uint64_t file_offset, file_size, vaddr;
	bool exec; /* PF_X */
};

struct elf_facts {
	struct load_segment *segments;
	size_t nr_segments;
	uint8_t build_id[BUILD_ID_MAX];
	size_t build_id_len;
	uint64_t entry; /* e_entry: where the program (or the dynamic loader) starts */
	/* DT_INIT, DT_FINI, .init and .fini: function starts without symbols or CFI needed */
	uint64_t function_entries[ELF_FUNCTION_ENTRIES_MAX];
	uint32_t nr_function_entries;
};

static int read_segments(struct elf_facts *ef, Elf *elf)
{
	size_t nr_phdrs;

	if (elf_getphdrnum(elf, &nr_phdrs) != 0)
		return -EINVAL;
	ef->segments = calloc(nr_phdrs ? nr_phdrs : 1, sizeof(*ef->segments));
	if (!ef->segments)
		return -ENOMEM;
	for (size_t i = 0; i < nr_phdrs; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, (int)i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		ef->segments[ef->nr_segments++] = (struct load_segment){
			.file_offset = phdr.p_offset,
			.file_size = phdr.p_filesz,
			.vaddr = phdr.p_vaddr,
			.exec = (phdr.p_flags & PF_X) != 0,
		};
	}
	return 0;
}

/* Finds NT_GNU_BUILD_ID in the SHT_NOTE sections. */
static void read_build_id(struct elf_facts *ef, Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nhdr;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
			if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 ||
			    memcmp((char *)data->d_buf + name_off, "GNU", 4) != 0)
				continue;
			ef->build_id_len = nhdr.n_descsz < BUILD_ID_MAX ? nhdr.n_descsz : BUILD_ID_MAX;
			memcpy(ef->build_id, (char *)data->d_buf + desc_off, ef->build_id_len);
			return;
		}
	}
}

static void read_entry(struct elf_facts *ef, Elf *elf)
{
	GElf_Ehdr ehdr;

	if (gelf_getehdr(elf, &ehdr))
		ef->entry = ehdr.e_entry;
}

/* vaddr lies in an executable PT_LOAD segment's file bytes. */
static bool in_exec_segment(const struct elf_facts *ef, uint64_t vaddr)
{
	for (size_t i = 0; i < ef->nr_segments; i++) {
		const struct load_segment *seg = &ef->segments[i];

		if (seg->exec && vaddr >= seg->vaddr && vaddr - seg->vaddr < seg->file_size)
			return true;
	}
	return false;
}

/* Keeps vaddr as a function entry if it is code and not known yet. */
static void add_function_entry(struct elf_facts *ef, uint64_t vaddr)
{
	if (!in_exec_segment(ef, vaddr) || ef->nr_function_entries == ELF_FUNCTION_ENTRIES_MAX)
		return;
	for (uint32_t i = 0; i < ef->nr_function_entries; i++) {
		if (ef->function_entries[i] == vaddr)
			return;
	}
	ef->function_entries[ef->nr_function_entries++] = vaddr;
}

/* DT_INIT and DT_FINI of the dynamic section, up to its DT_NULL. */
static void read_init_fini_tags(struct elf_facts *ef, Elf *elf)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = libelf_sections__of_type(elf, SHT_DYNAMIC, &shdr);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	size_t count;

	if (!data || shdr.sh_entsize == 0)
		return;
	count = data->d_size / shdr.sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Dyn dyn;

		if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			return;
		if (dyn.d_tag == DT_INIT || dyn.d_tag == DT_FINI)
			add_function_entry(ef, dyn.d_un.d_ptr);
	}
}

/* Where a binary's own initialisation and finalisation functions start: crti.o's _init and
 * _fini (.init's and .fini's first bytes), which have no CFI, and whatever DT_INIT and
 * DT_FINI name. Needs the segments read. */
static void read_function_entries(struct elf_facts *ef, Elf *elf)
{
	static const char *const names[] = { ".init", ".fini" };
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx;

	read_init_fini_tags(ef, elf);
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS ||
		    !(shdr.sh_flags & SHF_EXECINSTR) || shdr.sh_size == 0 ||
		    !(n = elf_strptr(elf, shstrndx, shdr.sh_name)))
			continue;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			if (strcmp(n, names[i]) == 0)
				add_function_entry(ef, shdr.sh_addr);
		}
	}
}

int elf_facts__read(Elf *elf, struct elf_facts **out)
{
	struct elf_facts *ef = calloc(1, sizeof(*ef));
	int err;

	*out = NULL;
	if (!ef)
		return -ENOMEM;
	err = read_segments(ef, elf);
	if (err) {
		elf_facts__free(ef);
		return err;
	}
	read_build_id(ef, elf);
	read_entry(ef, elf);
	read_function_entries(ef, elf);
	*out = ef;
	return 0;
}

/* The kernel maps a segment from its p_offset rounded down to a page, so an executable
 * mapping's offset can lie before the segment's p_offset, inside the read-only segment's
 * file range (LLD, mold and gold do not page-align the executable segment in the file):
 * the mapping belongs to the executable segment whose page-rounded range holds it. */
static const struct load_segment *exec_segment(const struct elf_facts *ef, uint64_t map_offset)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; ef && i < ef->nr_segments; i++) {
		const struct load_segment *seg = &ef->segments[i];

		if (!seg->exec || map_offset < seg->file_offset - seg->file_offset % page)
			continue;
		if (map_offset < seg->file_offset || map_offset - seg->file_offset < seg->file_size)
			return seg;
	}
	return NULL;
}

int elf_facts__offset_to_vaddr(const struct elf_facts *ef, uint64_t map_offset,
			       uint64_t file_offset, uint64_t *vaddr)
{
	const struct load_segment *seg = exec_segment(ef, map_offset);

	if (seg) {
		*vaddr = file_offset - seg->file_offset + seg->vaddr;
		return 0;
	}
	/* No executable segment backs it (code mapped executable against its flags, such as
	 * under READ_IMPLIES_EXEC): the segment holding the offset itself. */
	for (size_t i = 0; ef && i < ef->nr_segments; i++) {
		seg = &ef->segments[i];
		if (file_offset >= seg->file_offset &&
		    file_offset - seg->file_offset < seg->file_size) {
			*vaddr = file_offset - seg->file_offset + seg->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

size_t elf_facts__build_id(const struct elf_facts *ef, const uint8_t **id)
{
	*id = ef ? ef->build_id : NULL;
	return ef ? ef->build_id_len : 0;
}

uint64_t elf_facts__entry(const struct elf_facts *ef)
{
	return ef ? ef->entry : 0;
}

bool elf_facts__is_function_entry(const struct elf_facts *ef, uint64_t vaddr)
{
	for (uint32_t i = 0; ef && i < ef->nr_function_entries; i++) {
		if (ef->function_entries[i] == vaddr)
			return true;
	}
	return false;
}

int elf_facts__segment(const struct elf_facts *ef, uint64_t vaddr, uint64_t *start,
		       uint64_t *end, uint64_t *file_offset)
{
	for (size_t i = 0; ef && i < ef->nr_segments; i++) {
		const struct load_segment *seg = &ef->segments[i];

		if (vaddr >= seg->vaddr && vaddr - seg->vaddr < seg->file_size) {
			*start = seg->vaddr;
			*end = seg->vaddr + seg->file_size;
			*file_offset = seg->file_offset;
			return 0;
		}
	}
	return -ENOENT;
}

size_t elf_facts__bytes(const struct elf_facts *ef)
{
	return ef ? sizeof(*ef) + ef->nr_segments * sizeof(*ef->segments) : 0;
}

void elf_facts__free(struct elf_facts *ef)
{
	if (!ef)
		return;
	free(ef->segments);
	free(ef);
}
