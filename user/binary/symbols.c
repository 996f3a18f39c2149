#include "binary/symbols.h"
#include "util/grow.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <lzma.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* MiniDebugInfo is a few hundred KiB even for large libraries; these bounds only stop a
 * hostile xz stream from taking the machine's memory. */
#define DEBUGDATA_MAX_BYTES (64u << 20)
#define DEBUGDATA_MEMLIMIT (64u << 20)

struct symbol {
	uint64_t start;
	uint64_t size; /* 0: extends to the next symbol */
	uint32_t name; /* offset into names */
	uint32_t rank; /* among aliases at one address the lowest wins (see symbol_rank) */
};

struct load_segment {
	uint64_t file_offset, file_size, vaddr;
	bool exec; /* PF_X */
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
	/* DT_INIT, DT_FINI, .init and .fini: function starts without symbols or CFI needed */
	uint64_t function_entries[ELF_FUNCTION_ENTRIES_MAX];
	uint32_t nr_function_entries;
	enum elf_symbols_source source;
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
	if (grow_array((void **)&es->names, &es->names_cap, es->names_len + len, 1))
		return -ENOMEM;
	memcpy(es->names + es->names_len, name, len - 1);
	es->names[es->names_len + len - 1] = '\0';
	*at = (uint32_t)es->names_len;
	es->names_len += len;
	return 0;
}

/* Of aliases at one address prefer the sized, global, then weak symbol, and the shorter
 * name: __libc_start_main over __libc_start_main_alias_2. */
static uint32_t alias_rank(bool sized, int bind, const char *name)
{
	uint32_t rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
	size_t len = strlen(name);

	return (sized ? 0 : 4u << 24) | rank << 24 | (uint32_t)(len < 0xffffff ? len : 0xffffff);
}

static uint32_t symbol_rank(const GElf_Sym *sym, const char *name)
{
	return alias_rank(sym->st_size != 0, GELF_ST_BIND(sym->st_info), name);
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
		if (grow_array((void **)&es->syms, &cap, es->nr_syms + 1, sizeof(*es->syms)))
			return -ENOMEM;
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

/* The first section of the given type, or NULL. */
static Elf_Scn *find_section_type(Elf *elf, Elf64_Word type, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
			return scn;
	}
	return NULL;
}

/* Appends the function symbols of the first section of the type (SHT_SYMTAB or
 * SHT_DYNSYM). A stripped copy's NOBITS section has another type, so it is skipped. */
static int read_symbols_of_type(struct elf_symbols *es, Elf *elf, Elf64_Word type)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_section_type(elf, type, &shdr);

	return scn ? read_symtab_section(es, elf, scn, &shdr) : 0;
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
			.exec = (phdr.p_flags & PF_X) != 0,
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

/* vaddr lies in an executable PT_LOAD segment's file bytes. */
static bool in_exec_segment(const struct elf_symbols *es, uint64_t vaddr)
{
	for (size_t i = 0; i < es->nr_segments; i++) {
		const struct load_segment *seg = &es->segments[i];

		if (seg->exec && vaddr >= seg->vaddr && vaddr - seg->vaddr < seg->file_size)
			return true;
	}
	return false;
}

/* Keeps vaddr as a function entry if it is code and not known yet. */
static void add_function_entry(struct elf_symbols *es, uint64_t vaddr)
{
	if (!in_exec_segment(es, vaddr) || es->nr_function_entries == ELF_FUNCTION_ENTRIES_MAX)
		return;
	for (uint32_t i = 0; i < es->nr_function_entries; i++) {
		if (es->function_entries[i] == vaddr)
			return;
	}
	es->function_entries[es->nr_function_entries++] = vaddr;
}

/* DT_INIT and DT_FINI of the dynamic section, up to its DT_NULL. */
static void read_init_fini_tags(struct elf_symbols *es, Elf *elf)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_section_type(elf, SHT_DYNAMIC, &shdr);
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
			add_function_entry(es, dyn.d_un.d_ptr);
	}
}

/* Where a binary's own initialisation and finalisation functions start: crti.o's _init and
 * _fini (.init's and .fini's first bytes), which have no CFI, and whatever DT_INIT and
 * DT_FINI name. Needs the segments read. */
static void read_function_entries(struct elf_symbols *es, Elf *elf)
{
	static const char *const names[] = { ".init", ".fini" };
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx;

	read_init_fini_tags(es, elf);
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
				add_function_entry(es, shdr.sh_addr);
		}
	}
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

	if (es->nr_syms) /* a file without symbols leaves syms NULL */
		qsort(es->syms, es->nr_syms, sizeof(*es->syms), compare_symbols);
	for (size_t i = 0; i < es->nr_syms; i++) {
		if (kept && es->syms[kept - 1].start == es->syms[i].start)
			continue;
		es->syms[kept++] = es->syms[i];
	}
	es->nr_syms = kept;
}

/* Gives back what doubling left unused: the symbols stay for the run (or until their
 * binary is idle), up to half of their arrays empty otherwise. */
static void fit_to_size(struct elf_symbols *es)
{
	struct symbol *syms = es->nr_syms ? realloc(es->syms, es->nr_syms * sizeof(*syms)) : NULL;
	char *names = es->names_len ? realloc(es->names, es->names_len) : NULL;

	if (syms)
		es->syms = syms;
	if (names) {
		es->names = names;
		es->names_cap = es->names_len;
	}
}

/* The root of separate debug files: HPROF_DEBUG_DIR, else gdb's default. */
static const char *debug_dir(void)
{
	const char *dir = getenv("HPROF_DEBUG_DIR");

	return dir && dir[0] == '/' ? dir : "/usr/lib/debug";
}

/* The section named name with its bytes in *data, or NULL (also for NOBITS). */
static Elf_Scn *find_section_data(Elf *elf, const char *name, Elf_Data **data)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!n || strcmp(n, name) != 0)
			continue;
		*data = elf_getdata(scn, NULL);
		return *data && (*data)->d_buf ? scn : NULL;
	}
	return NULL;
}

/* A path a profiled process named may be a FIFO, a device or a huge file: opened without
 * blocking, read only if it is a regular file of at most ELF_SYMBOLS_FILE_MAX_BYTES.
 * Returns the descriptor or -errno (-EINVAL: not a regular file; -EFBIG). */
static int open_elf_file(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size <= ELF_SYMBOLS_FILE_MAX_BYTES)
		return fd;
	close(fd);
	return S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
}

/* The CRC-32 of a whole file: .gnu_debuglink's checksum (zlib's polynomial and
 * conditioning, as binutils computes it). Returns 0 or -errno. */
static int file_crc32(int fd, size_t size, uint32_t *crc)
{
	void *map;

	*crc = (uint32_t)crc32_z(0, Z_NULL, 0);
	if (size == 0)
		return 0;
	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	*crc = (uint32_t)crc32_z(*crc, map, size);
	munmap(map, size);
	return 0;
}

/* The .symtab of a separate debug file, used only when its CRC-32 is crc (when
 * check_crc). Returns 0 (with or without symbols) or -errno. */
static int read_debug_file(struct elf_symbols *es, const char *path, bool check_crc, uint32_t crc)
{
	uint32_t actual = 0;
	struct stat st;
	Elf *elf = NULL;
	int fd, err;

	/* a FIFO planted under a debug name must not hang the profiler */
	fd = open_elf_file(path);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto cleanup;
	}
	if (check_crc) {
		err = file_crc32(fd, (size_t)st.st_size, &actual);
		if (!err && actual != crc)
			err = -EBADMSG; /* another build's debug file: its addresses would lie */
		if (err)
			goto cleanup;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = read_symbols_of_type(es, elf, SHT_SYMTAB);
cleanup:
	elf_end(elf);
	close(fd);
	return err;
}

/* /usr/lib/debug/.build-id/xx/yyyy.debug */
static int read_build_id_file(struct elf_symbols *es)
{
	char path[PATH_MAX];
	size_t len;
	int n;

	if (es->build_id_len < 2)
		return -ENOENT;
	n = snprintf(path, sizeof(path), "%s/.build-id/%02x/", debug_dir(), es->build_id[0]);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	len = (size_t)n;
	for (size_t i = 1; i < es->build_id_len && len + 2 < sizeof(path); i++)
		len += (size_t)snprintf(path + len, sizeof(path) - len, "%02x", es->build_id[i]);
	n = snprintf(path + len, sizeof(path) - len, ".debug");
	if (n < 0 || (size_t)n >= sizeof(path) - len)
		return -ENAMETOOLONG;
	return read_debug_file(es, path, false, 0);
}

/* Reads .gnu_debuglink: a file name, NUL, padding to 4 bytes, the file's CRC-32 in the
 * ELF's byte order. Returns 0 or -errno. */
static int parse_debuglink(Elf *elf, char name[NAME_MAX + 1], uint32_t *crc)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	const uint8_t *p;
	const char *nul;
	Elf_Data *data;
	size_t len, crc_off;
	uint8_t b[4];

	if (!ident || !find_section_data(elf, ".gnu_debuglink", &data))
		return -ENOENT;
	p = data->d_buf;
	nul = memchr(p, '\0', data->d_size < NAME_MAX + 1 ? data->d_size : NAME_MAX + 1);
	if (!nul)
		return -EINVAL;
	len = (size_t)(nul - (const char *)p);
	crc_off = (len + 1 + 3) & ~(size_t)3;
	/* objcopy writes a bare file name; a path would leave the directories searched */
	if (len == 0 || memchr(p, '/', len) || strcmp((const char *)p, ".") == 0 ||
	    strcmp((const char *)p, "..") == 0 || crc_off + 4 > data->d_size)
		return -EINVAL;
	memcpy(name, p, len + 1);
	memcpy(b, p + crc_off, 4);
	*crc = ident[EI_DATA] == ELFDATA2MSB
		       ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
		       : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
	return 0;
}

/* The file .gnu_debuglink names, looked for where gdb looks: next to the binary, in .debug/
 * next to it, and under the debug directory followed by the binary's directory. */
static int read_debuglink_file(struct elf_symbols *es, Elf *elf, const char *binary)
{
	static const char *const forms[] = { "%s%.*s%s", "%s%.*s.debug/%s", "%s%.*s%s" };
	char name[NAME_MAX + 1], path[PATH_MAX];
	const char *slash = binary ? strrchr(binary, '/') : NULL;
	int dir_len, n, err;
	uint32_t crc;

	if (!slash || binary[0] != '/')
		return -ENOENT;
	err = parse_debuglink(elf, name, &crc);
	if (err)
		return err;
	dir_len = (int)(slash - binary + 1);
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		n = snprintf(path, sizeof(path), forms[i], i == 2 ? debug_dir() : "", dir_len,
			     binary, name);
		if (n < 0 || (size_t)n >= sizeof(path) || strcmp(path, binary) == 0)
			continue;
		err = read_debug_file(es, path, true, crc);
		if (err == -ENOMEM || (!err && es->nr_syms))
			return err;
		es->nr_syms = 0;
		es->names_len = 0;
	}
	return -ENOENT;
}

/* Decompresses an xz stream of at most DEBUGDATA_MAX_BYTES. Returns 0 or -errno. */
static int xz_decode(const uint8_t *in, size_t in_size, uint8_t **out, size_t *out_size)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	uint8_t *buf = NULL, *bigger;
	size_t cap = 0;
	lzma_ret ret = LZMA_OK;
	int err;

	if (lzma_stream_decoder(&strm, DEBUGDATA_MEMLIMIT, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = in;
	strm.avail_in = in_size;
	/* every pass makes progress or fails (LZMA_BUF_ERROR), and the buffer is capped */
	while (ret == LZMA_OK) {
		if (strm.avail_out == 0) {
			if (cap >= DEBUGDATA_MAX_BYTES) {
				err = -EFBIG;
				goto cleanup;
			}
			cap = cap ? cap * 2 : 64 * 1024;
			cap = cap < DEBUGDATA_MAX_BYTES ? cap : DEBUGDATA_MAX_BYTES;
			bigger = realloc(buf, cap);
			if (!bigger) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = bigger;
			strm.next_out = buf + strm.total_out;
			strm.avail_out = cap - strm.total_out;
		}
		ret = lzma_code(&strm, LZMA_FINISH);
	}
	if (ret != LZMA_STREAM_END) {
		err = ret == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL;
		goto cleanup;
	}
	*out = buf;
	*out_size = strm.total_out;
	buf = NULL;
	err = 0;
cleanup:
	lzma_end(&strm);
	free(buf);
	return err;
}

/* MiniDebugInfo: .gnu_debugdata holds an xz-compressed ELF whose .symtab has the
 * functions .dynsym lacks. Returns 0 or -errno. */
static int read_debugdata(struct elf_symbols *es, Elf *elf)
{
	Elf_Data *data;
	uint8_t *image = NULL;
	size_t size = 0;
	Elf *inner = NULL;
	int err;

	if (!find_section_data(elf, ".gnu_debugdata", &data))
		return -ENOENT;
	err = xz_decode(data->d_buf, data->d_size, &image, &size);
	if (err)
		return err;
	inner = elf_memory((char *)image, size);
	if (!inner || elf_kind(inner) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = read_symbols_of_type(es, inner, SHT_SYMTAB);
cleanup:
	elf_end(inner);
	free(image);
	return err;
}

/* Appends the symbols of one source. Returns 0 (with or without symbols) or -errno. */
static int read_source(struct elf_symbols *es, Elf *elf, const char *path,
		       enum elf_symbols_source source)
{
	int err;

	switch (source) {
	case ELF_SYMBOLS_SYMTAB:
		return read_symbols_of_type(es, elf, SHT_SYMTAB);
	case ELF_SYMBOLS_BUILD_ID:
		return read_build_id_file(es);
	case ELF_SYMBOLS_DEBUGLINK:
		return read_debuglink_file(es, elf, path);
	case ELF_SYMBOLS_DEBUGDATA:
		/* Fedora keeps only what .dynsym lacks in it, so gdb merges the two */
		err = read_debugdata(es, elf);
		return err || !es->nr_syms ? err : read_symbols_of_type(es, elf, SHT_DYNSYM);
	case ELF_SYMBOLS_DYNSYM:
		return read_symbols_of_type(es, elf, SHT_DYNSYM);
	case ELF_SYMBOLS_NONE:
		break;
	}
	return -ENOENT;
}

/* Function symbols from the first source, in gdb's order, that has any (see enum
 * elf_symbols_source). path is NULL for an image. Returns 0 or -errno. */
static int read_symbols(struct elf_symbols *es, Elf *elf, const char *path)
{
	static const enum elf_symbols_source order[] = {
		ELF_SYMBOLS_SYMTAB, ELF_SYMBOLS_BUILD_ID, ELF_SYMBOLS_DEBUGLINK,
		ELF_SYMBOLS_DEBUGDATA, ELF_SYMBOLS_DYNSYM,
	};
	int err;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		err = read_source(es, elf, path, order[i]);
		if (!err && es->nr_syms) {
			es->source = order[i];
			return 0;
		}
		/* a source that fails or has nothing leaves nothing behind */
		es->nr_syms = 0;
		es->names_len = 0;
		if (err == -ENOMEM)
			return err;
	}
	es->source = ELF_SYMBOLS_NONE;
	return 0;
}

static int load_from_elf(Elf *elf, const char *path, const char *what, struct elf_symbols **out,
			 char *err, size_t errlen)
{
	struct elf_symbols *es;
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
	read_function_entries(es, elf);
	ret = read_symbols(es, elf, path);
	if (ret) {
		set_err(err, errlen, "%s: reading symbols: %s", what, strerror(-ret));
		goto cleanup;
	}
	sort_symbols(es);
	fit_to_size(es);
	*out = es;
	return 0;
cleanup:
	elf_symbols__free(es);
	return ret;
}

int elf_symbols__load(const char *path, struct elf_symbols **out, char *err, size_t errlen)
{
	return elf_symbols__load_from(path, path, out, err, errlen);
}

int elf_symbols__load_from(const char *open_path, const char *path, struct elf_symbols **out,
			   char *err, size_t errlen)
{
	Elf *elf;
	int fd, ret;

	*out = NULL;
	elf_version(EV_CURRENT);
	fd = open_elf_file(open_path);
	if (fd < 0) {
		set_err(err, errlen, "%s: %s", path, fd == -EINVAL ? "not a regular file" : strerror(-fd));
		return fd;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		set_err(err, errlen, "%s: %s", path, elf_errmsg(-1));
		close(fd);
		return -ENOEXEC;
	}
	ret = load_from_elf(elf, path, path, out, err, errlen);
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
	ret = load_from_elf(elf, NULL, "ELF image", out, err, errlen);
	elf_end(elf);
	if (ret) {
		free(copy);
		return ret;
	}
	(*out)->image = copy;
	(*out)->image_size = size;
	return 0;
}

/* The kernel maps a segment from its p_offset rounded down to a page, so an executable
 * mapping's offset can lie before the segment's p_offset, inside the read-only segment's
 * file range (LLD, mold and gold do not page-align the executable segment in the file):
 * the mapping belongs to the executable segment whose page-rounded range holds it. */
static const struct load_segment *exec_segment(const struct elf_symbols *es, uint64_t map_offset)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < es->nr_segments; i++) {
		const struct load_segment *seg = &es->segments[i];

		if (!seg->exec || map_offset < seg->file_offset - seg->file_offset % page)
			continue;
		if (map_offset < seg->file_offset || map_offset - seg->file_offset < seg->file_size)
			return seg;
	}
	return NULL;
}

int elf_symbols__offset_to_vaddr(const struct elf_symbols *es, uint64_t map_offset,
				 uint64_t file_offset, uint64_t *vaddr)
{
	const struct load_segment *seg = exec_segment(es, map_offset);

	if (seg) {
		*vaddr = file_offset - seg->file_offset + seg->vaddr;
		return 0;
	}
	/* No executable segment backs it (code mapped executable against its flags, such as
	 * under READ_IMPLIES_EXEC): the segment holding the offset itself. */
	for (size_t i = 0; i < es->nr_segments; i++) {
		seg = &es->segments[i];
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

int elf_symbols__function(const struct elf_symbols *es, uint64_t vaddr, uint64_t *start,
			  uint64_t *size)
{
	uint64_t offset;

	if (!elf_symbols__lookup(es, vaddr, &offset))
		return -ENOENT;
	*start = vaddr - offset;
	*size = es->syms[find_floor(es->syms, es->nr_syms, vaddr)].size;
	return 0;
}

enum elf_symbols_source elf_symbols__source(const struct elf_symbols *es)
{
	return es ? es->source : ELF_SYMBOLS_NONE;
}

const char *elf_symbols_source__name(enum elf_symbols_source source)
{
	static const char *const names[] = {
		[ELF_SYMBOLS_NONE] = "none",
		[ELF_SYMBOLS_SYMTAB] = ".symtab",
		[ELF_SYMBOLS_BUILD_ID] = "build-id debug file",
		[ELF_SYMBOLS_DEBUGLINK] = ".gnu_debuglink file",
		[ELF_SYMBOLS_DEBUGDATA] = ".gnu_debugdata+.dynsym",
		[ELF_SYMBOLS_DYNSYM] = ".dynsym",
	};

	return (unsigned int)source < sizeof(names) / sizeof(names[0]) ? names[source] : "?";
}

size_t elf_symbols__build_id(const struct elf_symbols *es, const uint8_t **id)
{
	*id = es ? es->build_id : NULL;
	return es ? es->build_id_len : 0;
}

uint64_t elf_symbols__entry(const struct elf_symbols *es)
{
	return es ? es->entry : 0;
}

bool elf_symbols__is_function_entry(const struct elf_symbols *es, uint64_t vaddr)
{
	for (uint32_t i = 0; es && i < es->nr_function_entries; i++) {
		if (es->function_entries[i] == vaddr)
			return true;
	}
	return false;
}

int elf_symbols__segment(const struct elf_symbols *es, uint64_t vaddr, uint64_t *start,
			 uint64_t *end, uint64_t *file_offset)
{
	for (size_t i = 0; es && i < es->nr_segments; i++) {
		const struct load_segment *seg = &es->segments[i];

		if (vaddr >= seg->vaddr && vaddr - seg->vaddr < seg->file_size) {
			*start = seg->vaddr;
			*end = seg->vaddr + seg->file_size;
			*file_offset = seg->file_offset;
			return 0;
		}
	}
	return -ENOENT;
}

size_t elf_symbols__image_size(const struct elf_symbols *es)
{
	return es ? es->image_size : 0;
}

size_t elf_symbols__count(const struct elf_symbols *es)
{
	return es ? es->nr_syms : 0;
}

void elf_symbols__drop_functions(struct elf_symbols *es)
{
	if (!es)
		return;
	free(es->syms);
	free(es->names);
	es->syms = NULL;
	es->names = NULL;
	es->nr_syms = es->names_len = es->names_cap = 0;
}

size_t elf_symbols__bytes(const struct elf_symbols *es)
{
	if (!es)
		return 0;
	return sizeof(*es) + es->nr_syms * sizeof(*es->syms) + es->names_cap +
	       es->nr_segments * sizeof(*es->segments) + es->image_size;
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
		if (grow_array((void **)&t->syms, &cap, t->nr_syms + 1, sizeof(*t->syms))) {
			err = -ENOMEM;
			goto cleanup;
		}
		t->syms[t->nr_syms].start = addr;
		t->syms[t->nr_syms].size = 0;
		/* kallsyms types: T global, W weak, t local */
		t->syms[t->nr_syms].rank =
			alias_rank(false, type == 'T' ? STB_GLOBAL : type == 't' ? STB_LOCAL : STB_WEAK,
				   name);
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
	fit_to_size(&ks->table);
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
