#include "symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct symbol {
	uint64_t start;
	uint64_t size; /* 0: extends to the next symbol */
	uint32_t name; /* offset into names */
	uint32_t rank; /* among aliases at one address the lowest wins (see symbol_rank) */
};

struct load_segment {
	uint64_t file_offset, file_size, vaddr;
};

struct elf_symbols {
	struct symbol *syms;
	size_t nr_syms;
	char *names;
	size_t names_len, names_cap;
	struct load_segment *segments;
	size_t nr_segments;
	uint8_t build_id[BUILD_ID_MAX];
	size_t build_id_len;
	void *image; /* owned copy for elf_symbols__load_image */
	size_t image_size;
	uint64_t entry; /* e_entry: where the program (or the dynamic loader) starts */
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Stores name without a symbol version ("__libc_start_main@@GLIBC_2.34"). */
static int add_name(struct elf_symbols *es, const char *name, uint32_t *at)
{
	const char *at_sign = strchr(name, '@');
	size_t len = (at_sign && at_sign != name ? (size_t)(at_sign - name) : strlen(name)) + 1;

	if (es->names_len + len > UINT32_MAX)
		return -E2BIG;
	if (es->names_len + len > es->names_cap) {
		size_t cap = es->names_cap ? es->names_cap * 2 : 4096;
		char *bigger;

		while (cap < es->names_len + len)
			cap *= 2;
		bigger = realloc(es->names, cap);
		if (!bigger)
			return -ENOMEM;
		es->names = bigger;
		es->names_cap = cap;
	}
	memcpy(es->names + es->names_len, name, len - 1);
	es->names[es->names_len + len - 1] = '\0';
	*at = (uint32_t)es->names_len;
	es->names_len += len;
	return 0;
}

/* Of aliases at one address prefer the sized, global, then weak symbol, and the shorter
 * name: __libc_start_main over __libc_start_main_alias_2. */
static uint32_t symbol_rank(const GElf_Sym *sym, const char *name)
{
	int bind = GELF_ST_BIND(sym->st_info);
	uint32_t rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
	size_t len = strlen(name);

	return (sym->st_size ? 0 : 4u << 24) | rank << 24 | (uint32_t)(len < 0xffffff ? len : 0xffffff);
}

static bool is_function_symbol(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) && sym->st_shndx != SHN_UNDEF &&
	       sym->st_value != 0;
}

/* Appends the function symbols of one symbol-table section. */
static int read_symtab_section(struct elf_symbols *es, Elf *elf, Elf_Scn *scn,
			       const GElf_Shdr *shdr)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count, cap = es->nr_syms;
	int err;

	if (!data || shdr->sh_entsize == 0)
		return 0;
	count = data->d_size / shdr->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		struct symbol *s;

		if (!gelf_getsym(data, (int)i, &sym) || !is_function_symbol(&sym))
			continue;
		name = elf_strptr(elf, shdr->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (es->nr_syms == cap) {
			size_t new_cap = cap ? cap * 2 : 256;
			struct symbol *bigger = realloc(es->syms, new_cap * sizeof(*bigger));

			if (!bigger)
				return -ENOMEM;
			es->syms = bigger;
			cap = new_cap;
		}
		s = &es->syms[es->nr_syms];
		s->start = sym.st_value;
		s->size = sym.st_size;
		s->rank = symbol_rank(&sym, name);
		err = add_name(es, name, &s->name);
		if (err)
			return err;
		es->nr_syms++;
	}
	return 0;
}

/* Reads .symtab when present, else .dynsym. Returns 0 or -errno. */
static int read_symbols(struct elf_symbols *es, Elf *elf, bool *had_symtab)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr shdr, chosen_shdr;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			continue;
		if (shdr.sh_type == SHT_SYMTAB && !symtab)
			symtab = scn;
		else if (shdr.sh_type == SHT_DYNSYM && !dynsym)
			dynsym = scn;
	}
	*had_symtab = symtab != NULL;
	scn = symtab ? symtab : dynsym;
	if (!scn || !gelf_getshdr(scn, &chosen_shdr))
		return 0;
	return read_symtab_section(es, elf, scn, &chosen_shdr);
}

static int read_segments(struct elf_symbols *es, Elf *elf)
{
	size_t nr_phdrs;

	if (elf_getphdrnum(elf, &nr_phdrs) != 0)
		return -EINVAL;
	es->segments = calloc(nr_phdrs ? nr_phdrs : 1, sizeof(*es->segments));
	if (!es->segments)
		return -ENOMEM;
	for (size_t i = 0; i < nr_phdrs; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, (int)i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		es->segments[es->nr_segments++] = (struct load_segment){
			.file_offset = phdr.p_offset,
			.file_size = phdr.p_filesz,
			.vaddr = phdr.p_vaddr,
		};
	}
	return 0;
}

/* Finds NT_GNU_BUILD_ID in the PT_NOTE segments or SHT_NOTE sections. */
static void read_build_id(struct elf_symbols *es, Elf *elf)
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
			es->build_id_len = nhdr.n_descsz < BUILD_ID_MAX ? nhdr.n_descsz : BUILD_ID_MAX;
			memcpy(es->build_id, (char *)data->d_buf + desc_off, es->build_id_len);
			return;
		}
	}
}

static void read_entry(struct elf_symbols *es, Elf *elf)
{
	GElf_Ehdr ehdr;

	if (gelf_getehdr(elf, &ehdr))
		es->entry = ehdr.e_entry;
}

static int compare_symbols(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Sorts and drops duplicate addresses (aliases such as memcpy/__memcpy_avx). */
static void sort_symbols(struct elf_symbols *es)
{
	size_t kept = 0;

	qsort(es->syms, es->nr_syms, sizeof(*es->syms), compare_symbols);
	for (size_t i = 0; i < es->nr_syms; i++) {
		if (kept && es->syms[kept - 1].start == es->syms[i].start)
			continue;
		es->syms[kept++] = es->syms[i];
	}
	es->nr_syms = kept;
}

/* Symbols from the separate debug file /usr/lib/debug/.build-id/xx/yyyy.debug. */
static void read_debug_file_symbols(struct elf_symbols *es)
{
	char path[128];
	int len, fd;
	Elf *elf;
	bool had_symtab;

	if (es->build_id_len < 2)
		return;
	len = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", es->build_id[0]);
	for (size_t i = 1; i < es->build_id_len; i++)
		len += snprintf(path + len, sizeof(path) - len, "%02x", es->build_id[i]);
	snprintf(path + len, sizeof(path) - len, ".debug");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		es->nr_syms = 0;
		es->names_len = 0;
		if (read_symbols(es, elf, &had_symtab) != 0)
			es->nr_syms = 0;
	}
	elf_end(elf);
	close(fd);
}

static int load_from_elf(Elf *elf, const char *what, struct elf_symbols **out, char *err,
			 size_t errlen)
{
	struct elf_symbols *es;
	bool had_symtab = false;
	int ret;

	if (elf_kind(elf) != ELF_K_ELF) {
		set_err(err, errlen, "%s: not an ELF file", what);
		return -ENOEXEC;
	}
	es = calloc(1, sizeof(*es));
	if (!es)
		return -ENOMEM;
	ret = read_segments(es, elf);
	if (ret) {
		set_err(err, errlen, "%s: unreadable program headers: %s", what, elf_errmsg(-1));
		goto cleanup;
	}
	read_build_id(es, elf);
	read_entry(es, elf);
	ret = read_symbols(es, elf, &had_symtab);
	if (ret) {
		set_err(err, errlen, "%s: reading symbols: %s", what, strerror(-ret));
		goto cleanup;
	}
	if (!had_symtab)
		read_debug_file_symbols(es);
	sort_symbols(es);
	*out = es;
	return 0;
cleanup:
	elf_symbols__free(es);
	return ret;
}

int elf_symbols__load(const char *path, struct elf_symbols **out, char *err, size_t errlen)
{
	Elf *elf;
	int fd, ret;

	*out = NULL;
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		set_err(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		set_err(err, errlen, "%s: %s", path, elf_errmsg(-1));
		close(fd);
		return -ENOEXEC;
	}
	ret = load_from_elf(elf, path, out, err, errlen);
	elf_end(elf);
	close(fd);
	return ret;
}

int elf_symbols__load_image(const void *image, size_t size, struct elf_symbols **out, char *err,
			    size_t errlen)
{
	void *copy;
	Elf *elf;
	int ret;

	*out = NULL;
	elf_version(EV_CURRENT);
	copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, image, size);
	elf = elf_memory(copy, size);
	if (!elf) {
		set_err(err, errlen, "ELF image: %s", elf_errmsg(-1));
		free(copy);
		return -ENOEXEC;
	}
	ret = load_from_elf(elf, "ELF image", out, err, errlen);
	elf_end(elf);
	if (ret) {
		free(copy);
		return ret;
	}
	(*out)->image = copy;
	(*out)->image_size = size;
	return 0;
}

int elf_symbols__offset_to_vaddr(const struct elf_symbols *es, uint64_t file_offset,
				 uint64_t *vaddr)
{
	for (size_t i = 0; i < es->nr_segments; i++) {
		const struct load_segment *seg = &es->segments[i];

		if (file_offset >= seg->file_offset &&
		    file_offset - seg->file_offset < seg->file_size) {
			*vaddr = file_offset - seg->file_offset + seg->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

/* Index of the last symbol starting at or below addr, or -1. */
static ptrdiff_t find_floor(const struct symbol *syms, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ptrdiff_t)lo - 1;
}

const char *elf_symbols__lookup(const struct elf_symbols *es, uint64_t vaddr, uint64_t *offset)
{
	ptrdiff_t i;
	const struct symbol *s;

	if (!es)
		return NULL;
	i = find_floor(es->syms, es->nr_syms, vaddr);
	if (i < 0)
		return NULL;
	s = &es->syms[i];
	if (s->size && vaddr - s->start >= s->size)
		return NULL;
	*offset = vaddr - s->start;
	return es->names + s->name;
}

size_t elf_symbols__build_id(const struct elf_symbols *es, const uint8_t **id)
{
	*id = es->build_id;
	return es->build_id_len;
}

uint64_t elf_symbols__entry(const struct elf_symbols *es)
{
	return es ? es->entry : 0;
}

size_t elf_symbols__image_size(const struct elf_symbols *es)
{
	return es ? es->image_size : 0;
}

size_t elf_symbols__count(const struct elf_symbols *es)
{
	return es ? es->nr_syms : 0;
}

void elf_symbols__free(struct elf_symbols *es)
{
	if (!es)
		return;
	free(es->syms);
	free(es->names);
	free(es->segments);
	free(es->image);
	free(es);
}

struct ksyms {
	struct elf_symbols table; /* the same sorted-table machinery; sizes unknown (0) */
};

int ksyms__load(const char *path, struct ksyms **out)
{
	struct ksyms *ks;
	char line[512];
	FILE *f;
	int err = 0;
	size_t cap = 0;

	*out = NULL;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (fgets(line, sizeof(line), f)) {
		struct elf_symbols *t = &ks->table;
		char type, name[256];
		uint64_t addr;

		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 || addr == 0)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (t->nr_syms == cap) {
			size_t new_cap = cap ? cap * 2 : 65536;
			struct symbol *bigger = realloc(t->syms, new_cap * sizeof(*bigger));

			if (!bigger) {
				err = -ENOMEM;
				goto cleanup;
			}
			t->syms = bigger;
			cap = new_cap;
		}
		t->syms[t->nr_syms].start = addr;
		t->syms[t->nr_syms].size = 0;
		err = add_name(t, name, &t->syms[t->nr_syms].name);
		if (err)
			goto cleanup;
		t->nr_syms++;
	}
	if (ks->table.nr_syms == 0) {
		err = -ENOENT; /* kallsyms shows no addresses to unprivileged readers */
		goto cleanup;
	}
	sort_symbols(&ks->table);
	*out = ks;
	ks = NULL;
cleanup:
	ksyms__free(ks);
	fclose(f);
	return err;
}

const char *ksyms__lookup(const struct ksyms *ks, uint64_t addr, uint64_t *offset)
{
	return ks ? elf_symbols__lookup(&ks->table, addr, offset) : NULL;
}

void ksyms__free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->table.syms);
	free(ks->table.names);
	free(ks);
}
