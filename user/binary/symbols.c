/* Function symbols of ELF files and of the kernel, as an index over the file.
 *
 * Each function is one 12-byte entry (struct symbol): its address as an offset from its
 * span's base, its size and where its name is. Names are not copied: they are read where
 * they lie, in the string table of the file mapped read-only (util/file_view.h), of an
 * image's copy, or of MiniDebugInfo's decompressed ELF; only names that lose a version
 * suffix ("memcpy@@GLIBC_2.14") and kallsyms' names are copied, into the side names. A
 * name read from a file is trusted only while the file is unchanged (checked_name). */
#include "binary/symbols.h"
#include "cfi/go_pclntab.h"
#include "util/text.h"
#include "util/file_view.h"
#include "util/grow.h"

#include <errno.h>
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
#include <unistd.h>
#include <zlib.h>

/* MiniDebugInfo is a few hundred KiB even for large libraries; these bounds only stop a
 * hostile xz stream from taking the machine's memory. */
#define DEBUGDATA_MAX_BYTES (64u << 20)
#define DEBUGDATA_MEMLIMIT (64u << 20)

/* One function of the index. A symbol whose st_size does not fit 32 bits is clamped to
 * 4 GiB - 1: a lookup could only tell 4 GiB or more into one function. */
struct symbol {
	uint32_t addr; /* from its span's base */
	uint32_t size; /* 0: extends to the next symbol */
	uint32_t name; /* NAME_SIDE set: offset into side; else into the string tables */
};
_Static_assert(sizeof(struct symbol) == 12, "an index entry is 12 bytes");

/* The symbols from index first on whose addresses lie within 4 GiB of base, the first
 * one's. A file's functions fit one span unless they spread over more than 4 GiB (the large
 * code model, a hostile file): each span then starts where the last one runs out of
 * 32-bit offsets, so every address still finds its exact symbol. */
struct symbol_span {
	uint64_t base;
	size_t first;
};

/* A name offset's top bit says it is in the side names; without it, the offset runs over
 * the string tables laid end to end (2 GiB of them at most; a table that does not fit has
 * its names copied). */
#define NAME_SIDE (1u << 31)
/* .symtab or .dynsym alone use one; MiniDebugInfo's .strtab and the file's .dynstr two. */
#define NAME_TABLES_MAX 2

/* A string table whose names are read in place. */
struct name_table {
	const char *bytes;
	uint32_t start; /* the name offset of bytes[0] */
	uint32_t size;
	/* the file it lies in, whose names are only trusted while it is unchanged; NULL for
	 * bytes hprof owns (an image's copy, decompressed MiniDebugInfo) */
	struct file_view *view;
};

/* Names read from a file, kept once checked against it. A profile names each frame once
 * (about one lookup per distinct frame), but FP-only walks ask for the outermost frame's
 * function on every sample (resolver__in_start_routine: fp_demo under --no-dwarf made
 * 1765 lookups for 875 samples), and a check costs a stat of /proc/self/fd/N (4-5 us):
 * those few names, asked for again and again, are found here without one. A kept name is
 * the one the file held when it was read, so it stays right after the file changes. */
#define NAME_CACHE_SLOTS 8

struct name_cache {
	size_t sym[NAME_CACHE_SLOTS]; /* the symbol whose name is in the slot */
	char *name[NAME_CACHE_SLOTS];
	size_t bytes; /* of the names held */
	uint32_t next; /* slots are reused in turn */
};

/* A function symbol as read, until the index is built. */
struct pending_symbol {
	uint64_t start;
	uint32_t size;
	uint32_t name;
	uint32_t rank; /* among aliases at one address the lowest wins (see alias_rank) */
	uint32_t seq;  /* order read: of aliases ranked equal, the first wins */
};

/* The bytes libelf reads an ELF from. */
struct elf_bytes {
	const uint8_t *data;
	size_t size;
	struct file_view *view; /* NULL: bytes hprof owns */
};

struct load_segment {
	uint64_t file_offset, file_size, vaddr;
	bool exec; /* PF_X */
};

struct elf_symbols {
	struct symbol *syms;
	size_t nr_syms;
	size_t syms_bytes; /* allocated for syms */
	struct symbol_span *spans;
	size_t nr_spans;
	struct name_table tables[NAME_TABLES_MAX];
	uint32_t nr_tables;
	char *side; /* names copied, each NUL-terminated */
	size_t side_len, side_cap;
	struct name_cache *cache; /* when a table lies in a file */
	struct file_view *view; /* the binary, while its tables name symbols */
	struct file_view *debug_view; /* the separate debug file the symbols came from */
	uint8_t *debugdata; /* MiniDebugInfo's .strtab, what is kept of its decompressed ELF */
	size_t debugdata_size;
	/* while loading */
	struct pending_symbol *pending;
	size_t nr_pending, pending_cap;

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
	/* A file's function index is built when first asked for (ensure_index), not at load:
	 * a new binary's first sample needs only its segments to be walked. */
	bool index_pending;
	char *index_path; /* the binary's own path, where its debug files are looked for */
};

/* Copies len bytes of name into the side names. Returns 0, -E2BIG or -ENOMEM. */
static int add_side_name(struct elf_symbols *es, const char *name, size_t len, uint32_t *at)
{
	if (len >= NAME_SIDE || es->side_len > NAME_SIDE - 1 - len)
		return -E2BIG;
	if (grow_array((void **)&es->side, &es->side_cap, es->side_len + len + 1, 1))
		return -ENOMEM;
	memcpy(es->side + es->side_len, name, len);
	es->side[es->side_len + len] = '\0';
	*at = NAME_SIDE | (uint32_t)es->side_len;
	es->side_len += len + 1;
	return 0;
}

/* A pending symbol's rank bit for a code label (is_code_label): below every function. */
#define RANK_LABEL (8u << 24)

/* Of aliases at one address prefer a function to a label, then the sized, global, then
 * weak symbol, and the shorter name (its length with any version): __libc_start_main over
 * __libc_start_main_alias_2. */
static uint32_t alias_rank(bool label, bool sized, int bind, size_t len)
{
	uint32_t rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;

	return (label ? RANK_LABEL : 0) | (sized ? 0 : 4u << 24) | rank << 24 |
	       (uint32_t)(len < 0xffffff ? len : 0xffffff);
}

/* name (len bytes, no NUL among them) as table's offset, when it lies in table. */
static bool table_offset(const struct name_table *table, const char *name, uint32_t *at)
{
	uintptr_t p = (uintptr_t)name, b = (uintptr_t)table->bytes;

	if (p < b || p - b >= table->size)
		return false;
	*at = table->start + (uint32_t)(p - b);
	return true;
}

/* Adds a function symbol (or a code label) to the symbols read. Its name is read in place
 * from table when it lies there, else copied; a version suffix is dropped
 * ("__libc_start_main@@GLIBC_2.34"), which takes a copy. Returns 0 or -errno. */
static int add_pending(struct elf_symbols *es, uint64_t start, uint64_t size, int bind,
		       bool label, const char *name, size_t len, const struct name_table *table)
{
	const char *at_sign = memchr(name, '@', len);
	struct pending_symbol *p;
	uint32_t at;
	int err = 0;

	if (es->nr_pending >= UINT32_MAX)
		return -E2BIG;
	if (grow_array((void **)&es->pending, &es->pending_cap, es->nr_pending + 1,
		       sizeof(*es->pending)))
		return -ENOMEM;
	if (at_sign && at_sign != name)
		err = add_side_name(es, name, (size_t)(at_sign - name), &at);
	else if (!table || !table_offset(table, name, &at))
		err = add_side_name(es, name, len, &at);
	if (err)
		return err;
	p = &es->pending[es->nr_pending];
	p->start = start;
	p->size = size < UINT32_MAX ? (uint32_t)size : UINT32_MAX;
	p->name = at;
	p->rank = alias_rank(label, size != 0, bind, len);
	p->seq = (uint32_t)es->nr_pending++;
	return 0;
}

static bool is_function_symbol(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) && sym->st_shndx != SHN_UNDEF &&
	       sym->st_value != 0;
}

/* A global label that starts code: nasm's global labels, and gas's without .type, have no
 * type and no size (isal's, x264's and MKL's assembly export functions so), in an
 * executable section, short of its end (etext and such mark the end). Without them, a sized-0
 * function before such code would take its name, over many functions; gdb and objdump name
 * the code after these labels too. A label inside a sized function is dropped (sort_pending);
 * one inside an unsized function starts a function of its own there, as gdb takes it. */
static bool is_code_label(Elf *elf, const GElf_Sym *sym)
{
	int bind = GELF_ST_BIND(sym->st_info);
	GElf_Shdr shdr;
	Elf_Scn *scn;

	if (GELF_ST_TYPE(sym->st_info) != STT_NOTYPE || (bind != STB_GLOBAL && bind != STB_WEAK) ||
	    sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE || sym->st_value == 0)
		return false;
	scn = elf_getscn(elf, sym->st_shndx);
	return scn && gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_EXECINSTR) &&
	       sym->st_value >= shdr.sh_addr && sym->st_value - shdr.sh_addr < shdr.sh_size;
}

/* The string table at section index strndx as a table names are read from in place, or
 * -1 (its names are then copied): not in src's bytes (libelf decompressed it), no offsets
 * left, or no table slot left. */
static int add_name_table(struct elf_symbols *es, const struct elf_bytes *src, Elf *elf,
			  size_t strndx)
{
	Elf_Scn *scn = elf_getscn(elf, strndx);
	struct name_table *t;
	uint32_t start;
	GElf_Shdr shdr;

	if (es->nr_tables == NAME_TABLES_MAX || !scn || !gelf_getshdr(scn, &shdr) ||
	    shdr.sh_type != SHT_STRTAB || (shdr.sh_flags & SHF_COMPRESSED) ||
	    shdr.sh_offset > src->size || shdr.sh_size > src->size - shdr.sh_offset)
		return -1;
	t = &es->tables[es->nr_tables];
	start = es->nr_tables ? t[-1].start + t[-1].size : 0;
	if (shdr.sh_size > NAME_SIDE - start)
		return -1;
	t->bytes = (const char *)src->data + shdr.sh_offset;
	t->start = start;
	t->size = (uint32_t)shdr.sh_size;
	t->view = src->view;
	return (int)es->nr_tables++;
}

/* The length of a name libelf found NUL-terminated. In src's bytes, a file's that can
 * change under the read, it is measured only up to their end. */
static bool name_length(const struct elf_bytes *src, const char *name, size_t *len)
{
	uintptr_t p = (uintptr_t)name, b = (uintptr_t)src->data;
	const char *nul;

	if (p < b || p - b >= src->size) {
		*len = strlen(name); /* libelf's own copy of a compressed table */
		return true;
	}
	nul = memchr(name, '\0', src->size - (p - b));
	*len = nul ? (size_t)(nul - name) : 0;
	return nul != NULL;
}

/* Adds the function symbols of one symbol-table section. */
static int read_symtab_section(struct elf_symbols *es, const struct elf_bytes *src, Elf *elf,
			       Elf_Scn *scn, const GElf_Shdr *shdr)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count;
	int table, err;

	if (!data || shdr->sh_entsize == 0)
		return 0;
	table = add_name_table(es, src, elf, shdr->sh_link);
	count = data->d_size / shdr->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		size_t len;

		bool label;

		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		label = !is_function_symbol(&sym) && is_code_label(elf, &sym);
		if (!label && !is_function_symbol(&sym))
			continue;
		name = elf_strptr(elf, shdr->sh_link, sym.st_name);
		if (!name || !name_length(src, name, &len) || len == 0)
			continue;
		err = add_pending(es, sym.st_value, sym.st_size, GELF_ST_BIND(sym.st_info), label,
				  name, len, table >= 0 ? &es->tables[table] : NULL);
		if (err)
			return err;
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

/* Adds the function symbols of the first section of the type (SHT_SYMTAB or SHT_DYNSYM).
 * A stripped copy's NOBITS section has another type, so it is skipped. */
static int read_symbols_of_type(struct elf_symbols *es, const struct elf_bytes *src, Elf *elf,
				Elf64_Word type)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_section_type(elf, type, &shdr);

	return scn ? read_symtab_section(es, src, elf, scn, &shdr) : 0;
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

static int compare_pending(const void *a, const void *b)
{
	const struct pending_symbol *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts the symbols read and keeps the best-ranked of each address's aliases (memcpy over
 * __memcpy_avx_unaligned), and no code label inside a sized function (qemu's
 * safe_syscall_start, within safe_syscall_base): how many are left. */
static size_t sort_pending(struct elf_symbols *es)
{
	uint64_t covered_end = 0; /* the end of the sized functions kept so far */
	size_t kept = 0;

	qsort(es->pending, es->nr_pending, sizeof(*es->pending), compare_pending);
	for (size_t i = 0; i < es->nr_pending; i++) {
		const struct pending_symbol *p = &es->pending[i];
		uint64_t end = p->start + p->size;

		if (kept && es->pending[kept - 1].start == p->start)
			continue;
		if ((p->rank & RANK_LABEL) && p->start < covered_end)
			continue;
		if (end > covered_end || end < p->start)
			covered_end = end < p->start ? UINT64_MAX : end;
		es->pending[kept++] = *p;
	}
	return kept;
}

static size_t count_spans(const struct pending_symbol *p, size_t n)
{
	size_t spans = 0;
	uint64_t base = 0;

	for (size_t i = 0; i < n; i++) {
		if (i == 0 || p[i].start - base > UINT32_MAX) {
			base = p[i].start;
			spans++;
		}
	}
	return spans;
}

/* Builds the index from the symbols read: sorted, one per address, packed into 12-byte
 * entries in the pending array's own memory (entry i ends before pending symbol i starts,
 * and is written after that one is read). Returns 0 or -ENOMEM. */
static int build_index(struct elf_symbols *es)
{
	size_t n, nr_spans = 0, held;
	uint8_t *packed;
	void *shrunk;

	if (es->nr_pending == 0) {
		free(es->pending); /* what sources that had nothing left */
		es->pending = NULL;
		es->pending_cap = 0;
		return 0;
	}
	n = sort_pending(es);
	es->spans = malloc(count_spans(es->pending, n) * sizeof(*es->spans));
	if (!es->spans)
		return -ENOMEM;
	packed = (uint8_t *)es->pending;
	for (size_t i = 0; i < n; i++) {
		struct pending_symbol p;
		struct symbol s;

		memcpy(&p, &es->pending[i], sizeof(p));
		if (i == 0 || p.start - es->spans[nr_spans - 1].base > UINT32_MAX)
			es->spans[nr_spans++] = (struct symbol_span){ .base = p.start, .first = i };
		s.addr = (uint32_t)(p.start - es->spans[nr_spans - 1].base);
		s.size = p.size;
		s.name = p.name;
		memcpy(packed + i * sizeof(s), &s, sizeof(s));
	}
	es->nr_spans = nr_spans;
	/* what doubling left unused goes back: the index stays for the run */
	held = es->pending_cap * sizeof(*es->pending);
	shrunk = realloc(packed, n * sizeof(struct symbol));
	es->syms = shrunk ? shrunk : (struct symbol *)packed;
	es->syms_bytes = shrunk ? n * sizeof(struct symbol) : held;
	es->nr_syms = n;
	es->pending = NULL;
	es->nr_pending = es->pending_cap = 0;
	return 0;
}

/* Gives back what doubling (or a source that had nothing) left unused. */
static void fit_side_names(struct elf_symbols *es)
{
	char *side;

	if (es->side_len == 0) {
		free(es->side);
		es->side = NULL;
		es->side_cap = 0;
		return;
	}
	side = realloc(es->side, es->side_len);
	if (side) {
		es->side = side;
		es->side_cap = es->side_len;
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

/* Forgets what a source that failed or had nothing read. */
static void reset_source(struct elf_symbols *es)
{
	es->nr_pending = 0;
	es->nr_tables = 0;
	es->side_len = 0;
	free(es->debugdata);
	es->debugdata = NULL;
	es->debugdata_size = 0;
	file_view__close(es->debug_view);
	es->debug_view = NULL;
}

/* The .symtab of a separate debug file, used only when its CRC-32 is crc (when
 * check_crc). Its view is kept when it has symbols: their names are read from it. Returns
 * 0 (with or without symbols) or -errno. */
static int read_debug_file(struct elf_symbols *es, const char *path, bool check_crc, uint32_t crc)
{
	struct file_view *view = NULL;
	struct elf_bytes src;
	Elf *elf = NULL;
	int err;

	/* file_view__open reads only regular files: a FIFO planted under a debug name must not
	 * hang the profiler */
	err = file_view__open(path, ELF_SYMBOLS_FILE_MAX_BYTES, &view, NULL, 0);
	if (err)
		return err;
	src = (struct elf_bytes){ file_view__data(view), file_view__size(view), view };
	if (check_crc) {
		/* .gnu_debuglink's checksum: zlib's polynomial and conditioning, as binutils
		 * computes it */
		uint32_t actual = (uint32_t)crc32_z(crc32_z(0, Z_NULL, 0), src.data, src.size);

		/* the whole file was read for it: its pages go back */
		file_view__drop_pages(view, 0, src.size);
		if (actual != crc) {
			err = -EBADMSG; /* another build's debug file: its addresses would lie */
			goto cleanup;
		}
	}
	elf = elf_memory((char *)src.data, src.size);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = read_symbols_of_type(es, &src, elf, SHT_SYMTAB);
	if (!err && es->nr_pending) {
		es->debug_view = view;
		view = NULL;
	}
cleanup:
	elf_end(elf);
	file_view__close(view);
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
		if (err == -ENOMEM || (!err && es->nr_pending))
			return err;
		reset_source(es);
	}
	return -ENOENT;
}

/* Decompresses an xz stream of at most DEBUGDATA_MAX_BYTES into a buffer of its exact
 * size. Returns 0 or -errno. */
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
	if (ret != LZMA_STREAM_END || strm.total_out == 0) {
		err = ret == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL;
		goto cleanup;
	}
	bigger = realloc(buf, strm.total_out);
	*out = bigger ? bigger : buf;
	*out_size = bigger ? strm.total_out : cap;
	buf = NULL;
	err = 0;
cleanup:
	lzma_end(&strm);
	free(buf);
	return err;
}

/* Of MiniDebugInfo's decompressed ELF, image, only the string table its symbols name
 * stays: moved to the buffer's start, the rest (the symbol table read, the headers) given
 * back. Takes image. */
static void keep_debugdata_names(struct elf_symbols *es, uint8_t *image, size_t size)
{
	struct name_table *t = NULL;
	uint8_t *kept;

	for (uint32_t i = 0; i < es->nr_tables; i++) {
		uintptr_t p = (uintptr_t)es->tables[i].bytes;

		if (p >= (uintptr_t)image && p - (uintptr_t)image < size)
			t = &es->tables[i];
	}
	if (!t || t->size == 0) {
		if (t)
			t->bytes = ""; /* names nothing: no offset falls inside it */
		free(image);
		return;
	}
	memmove(image, t->bytes, t->size);
	kept = realloc(image, t->size);
	es->debugdata = kept ? kept : image;
	es->debugdata_size = kept ? t->size : size;
	t->bytes = (const char *)es->debugdata;
}

/* MiniDebugInfo: .gnu_debugdata holds an xz-compressed ELF whose .symtab has the
 * functions .dynsym lacks; its string table is kept (the only copy of its names).
 * Returns 0 or -errno. */
static int read_debugdata(struct elf_symbols *es, Elf *elf)
{
	Elf_Data *data;
	uint8_t *image = NULL;
	size_t size = 0;
	Elf *inner;
	int err;

	if (!find_section_data(elf, ".gnu_debugdata", &data))
		return -ENOENT;
	err = xz_decode(data->d_buf, data->d_size, &image, &size);
	if (err)
		return err;
	inner = elf_memory((char *)image, size);
	if (!inner || elf_kind(inner) != ELF_K_ELF)
		err = -ENOEXEC;
	else
		err = read_symbols_of_type(es, &(struct elf_bytes){ image, size, NULL }, inner,
					   SHT_SYMTAB);
	elf_end(inner);
	if (err)
		free(image);
	else
		keep_debugdata_names(es, image, size);
	return err;
}

/* Go's functions by its own table (.gopclntab), which Go binaries keep when stripped of
 * .symtab: each function's name read in place from the table's names. Returns 0 (with or
 * without symbols) or -errno. */
static int read_gopclntab(struct elf_symbols *es, const struct elf_bytes *src)
{
	struct name_table *table;
	struct go_pclntab go;

	if (!src->view || go_pclntab__from_elf(src->data, src->size, &go) != 0 ||
	    es->nr_tables == NAME_TABLES_MAX || go.names_size >= NAME_SIDE ||
	    go.names_size > NAME_SIDE - (es->nr_tables ? es->tables[es->nr_tables - 1].start +
						     es->tables[es->nr_tables - 1].size : 0))
		return 0;
	table = &es->tables[es->nr_tables];
	table->start = es->nr_tables ? table[-1].start + table[-1].size : 0;
	table->bytes = (const char *)go.bytes + go.names;
	table->size = (uint32_t)go.names_size;
	table->view = src->view;
	es->nr_tables++;
	for (uint32_t i = 0; i < go.nfunc; i++) {
		struct go_func f;
		const char *name;
		size_t len;
		int err;

		if (!go_pclntab__func(&go, i, &f) || !(name = go_pclntab__name(&go, &f)) ||
		    (len = strlen(name)) == 0)
			continue;
		err = add_pending(es, f.entry, f.end - f.entry, STB_GLOBAL, false, name, len, table);
		if (err)
			return err;
	}
	return 0;
}

/* Adds the symbols of one source. Returns 0 (with or without symbols) or -errno. */
static int read_source(struct elf_symbols *es, const struct elf_bytes *src, Elf *elf,
		       const char *path, enum elf_symbols_source source)
{
	int err;

	switch (source) {
	case ELF_SYMBOLS_SYMTAB:
		return read_symbols_of_type(es, src, elf, SHT_SYMTAB);
	case ELF_SYMBOLS_BUILD_ID:
		return read_build_id_file(es);
	case ELF_SYMBOLS_DEBUGLINK:
		return read_debuglink_file(es, elf, path);
	case ELF_SYMBOLS_DEBUGDATA:
		/* Fedora keeps only what .dynsym lacks in it, so gdb merges the two */
		err = read_debugdata(es, elf);
		if (err || !es->nr_pending)
			return err;
		return read_symbols_of_type(es, src, elf, SHT_DYNSYM);
	case ELF_SYMBOLS_GOPCLNTAB:
		/* a cgo program's C functions are in .dynsym only where it exports them */
		err = read_gopclntab(es, src);
		if (err || !es->nr_pending)
			return err;
		return read_symbols_of_type(es, src, elf, SHT_DYNSYM);
	case ELF_SYMBOLS_DYNSYM:
		return read_symbols_of_type(es, src, elf, SHT_DYNSYM);
	case ELF_SYMBOLS_NONE:
		break;
	}
	return -ENOENT;
}

/* Function symbols from the first source, in gdb's order, that has any (see enum
 * elf_symbols_source). path is NULL for an image. Returns 0 or -errno. */
static int read_symbols(struct elf_symbols *es, const struct elf_bytes *src, Elf *elf,
			const char *path)
{
	static const enum elf_symbols_source order[] = {
		ELF_SYMBOLS_SYMTAB, ELF_SYMBOLS_BUILD_ID, ELF_SYMBOLS_DEBUGLINK,
		ELF_SYMBOLS_DEBUGDATA, ELF_SYMBOLS_GOPCLNTAB, ELF_SYMBOLS_DYNSYM,
	};
	int err;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		err = read_source(es, src, elf, path, order[i]);
		if (!err && es->nr_pending) {
			es->source = order[i];
			return 0;
		}
		/* a source that fails or has nothing leaves nothing behind */
		reset_source(es);
		if (err == -ENOMEM)
			return err;
	}
	es->source = ELF_SYMBOLS_NONE;
	return 0;
}

/* A file that changed while it was read (a read past a truncated end found zeros, or
 * its size or mtime moved) gave no index to trust. */
static bool changed_while_read(struct elf_symbols *es)
{
	return (es->view && file_view__changed(es->view)) ||
	       (es->debug_view && file_view__changed(es->debug_view));
}

/* Whether a name table lies in view. */
static bool names_in(const struct elf_symbols *es, const struct file_view *view)
{
	for (uint32_t i = 0; view && i < es->nr_tables; i++) {
		if (es->tables[i].view == view)
			return true;
	}
	return false;
}

/* Keeps open the files names are read from, handing back every page the load read (the
 * symbol and string tables, the notes, MiniDebugInfo's compressed bytes: a lookup maps
 * its name's page again), and closes the others. Returns 0 or -ENOMEM. */
static int keep_views(struct elf_symbols *es)
{
	struct file_view **views[] = { &es->view, &es->debug_view };

	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		struct file_view *v = *views[i];

		if (!v)
			continue;
		if (!names_in(es, v)) {
			file_view__close(v);
			*views[i] = NULL;
			continue;
		}
		file_view__drop_pages(v, 0, file_view__size(v));
	}
	if ((es->view || es->debug_view) && !(es->cache = calloc(1, sizeof(*es->cache))))
		return -ENOMEM;
	return 0;
}

/* What placing the binary's mappings needs: its segments, build-id, entry point and
 * function entries. */
static int load_headers(struct elf_symbols *es, Elf *elf, const char *what, char *err,
			size_t errlen)
{
	int ret;

	if (elf_kind(elf) != ELF_K_ELF) {
		text__set_err(err, errlen, "%s: not an ELF file", what);
		return -ENOEXEC;
	}
	ret = read_segments(es, elf);
	if (ret) {
		text__set_err(err, errlen, "%s: unreadable program headers: %s", what, elf_errmsg(-1));
		return ret;
	}
	read_build_id(es, elf);
	read_entry(es, elf);
	read_function_entries(es, elf);
	return 0;
}

/* The function index from the first source that has one (es's view or image holds the
 * ELF's bytes). */
static int load_index(struct elf_symbols *es, Elf *elf, const struct elf_bytes *src,
		      const char *path, const char *what, char *err, size_t errlen)
{
	int ret = read_symbols(es, src, elf, path);

	if (!ret)
		ret = build_index(es);
	if (!ret && changed_while_read(es))
		ret = -ESTALE;
	if (!ret)
		ret = keep_views(es);
	if (ret) {
		text__set_err(err, errlen, "%s: reading symbols: %s", what,
			ret == -ESTALE ? "the file changed while it was read" : strerror(-ret));
		return ret;
	}
	fit_side_names(es);
	return 0;
}

static void free_functions(struct elf_symbols *es);

/* Builds a file's function index on first use. One that cannot be built (the file changed,
 * memory) leaves the binary without function symbols. */
static void ensure_index(const struct elf_symbols *csyms)
{
	struct elf_symbols *es = (struct elf_symbols *)csyms; /* the index is filled in once */
	struct elf_bytes src;
	Elf *elf;

	if (!es || !es->index_pending)
		return;
	es->index_pending = false;
	src = (struct elf_bytes){ file_view__data(es->view), file_view__size(es->view), es->view };
	elf = elf_memory((char *)src.data, src.size);
	if (!elf || load_index(es, elf, &src, es->index_path, es->index_path, NULL, 0) != 0)
		free_functions(es);
	elf_end(elf);
	free(es->index_path);
	es->index_path = NULL;
}

int elf_symbols__load(const char *path, struct elf_symbols **out, char *err, size_t errlen)
{
	return elf_symbols__load_from(path, path, out, err, errlen);
}

int elf_symbols__load_from(const char *open_path, const char *path, struct elf_symbols **out,
			   char *err, size_t errlen)
{
	struct elf_symbols *es;
	struct elf_bytes src;
	Elf *elf;
	int ret;

	*out = NULL;
	elf_version(EV_CURRENT);
	es = calloc(1, sizeof(*es));
	if (!es)
		return -ENOMEM;
	/* A path a profiled process named may be a FIFO, a device or a huge file: the view
	 * reads only a regular file of at most ELF_SYMBOLS_FILE_MAX_BYTES, and a read past the
	 * end of one truncated meanwhile finds zeros instead of raising SIGBUS. */
	ret = file_view__open(open_path, ELF_SYMBOLS_FILE_MAX_BYTES, &es->view, NULL, 0);
	if (ret) {
		text__set_err(err, errlen, "%s: %s", path,
			ret == -EINVAL ? "not a regular, non-empty file" : strerror(-ret));
		goto cleanup;
	}
	src = (struct elf_bytes){ file_view__data(es->view), file_view__size(es->view), es->view };
	/* libelf reads an image in memory in place and converts what it must into buffers of
	 * its own: it writes to the image only when asked to update it, so the read-only
	 * mapping serves. */
	elf = elf_memory((char *)src.data, src.size);
	if (!elf) {
		text__set_err(err, errlen, "%s: %s", path, elf_errmsg(-1));
		ret = -ENOEXEC;
		goto cleanup;
	}
	ret = load_headers(es, elf, path, err, errlen);
	elf_end(elf);
	if (!ret && !(es->index_path = strdup(path)))
		ret = -ENOMEM;
	if (!ret) {
		es->index_pending = true;
		/* the headers' pages go back; the index's reads map them again */
		file_view__drop_pages(es->view, 0, file_view__size(es->view));
	}
cleanup:
	if (ret) {
		elf_symbols__free(es);
		return ret;
	}
	*out = es;
	return 0;
}

int elf_symbols__load_image(const void *image, size_t size, struct elf_symbols **out, char *err,
			    size_t errlen)
{
	struct elf_symbols *es;
	Elf *elf;
	int ret;

	*out = NULL;
	elf_version(EV_CURRENT);
	es = calloc(1, sizeof(*es));
	if (!es || !(es->image = malloc(size ? size : 1))) {
		free(es);
		return -ENOMEM;
	}
	/* the names are read from this copy */
	memcpy(es->image, image, size);
	es->image_size = size;
	elf = elf_memory(es->image, size);
	if (!elf) {
		text__set_err(err, errlen, "ELF image: %s", elf_errmsg(-1));
		elf_symbols__free(es);
		return -ENOEXEC;
	}
	ret = load_headers(es, elf, "ELF image", err, errlen);
	if (!ret)
		ret = load_index(es, elf, &(struct elf_bytes){ es->image, size, NULL }, NULL,
				 "ELF image", err, errlen);
	elf_end(elf);
	if (ret) {
		elf_symbols__free(es);
		return ret;
	}
	*out = es;
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

/* Index of the last symbol starting at or below vaddr, with its start, or -1: the span
 * holding vaddr, then the symbol in it. */
static ptrdiff_t find_floor(const struct elf_symbols *es, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi = es->nr_spans, first;
	const struct symbol_span *span;
	uint64_t off;
	uint32_t key;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (es->spans[mid].base <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	span = &es->spans[lo - 1];
	first = span->first;
	hi = lo < es->nr_spans ? es->spans[lo].first : es->nr_syms;
	/* 4 GiB or more past the base is past every symbol of the span */
	off = vaddr - span->base;
	key = off < UINT32_MAX ? (uint32_t)off : UINT32_MAX;
	lo = first;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (es->syms[mid].addr <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == first) /* the span's first symbol is at its base: only a corrupt index */
		return -1;
	*start = span->base + es->syms[lo - 1].addr;
	return (ptrdiff_t)lo - 1;
}

/* The symbol holding vaddr (sized symbols end at their size), or -1. */
static ptrdiff_t find_symbol(const struct elf_symbols *es, uint64_t vaddr, uint64_t *start)
{
	ptrdiff_t i;

	ensure_index(es);
	i = es ? find_floor(es, vaddr, start) : -1;

	if (i < 0 || (es->syms[i].size && vaddr - *start >= es->syms[i].size))
		return -1;
	return i;
}

/* The table a name offset falls in, or NULL. */
static const struct name_table *name_table(const struct elf_symbols *es, uint32_t name)
{
	for (uint32_t i = 0; i < es->nr_tables; i++) {
		const struct name_table *t = &es->tables[i];

		if (name >= t->start && name - t->start < t->size)
			return t;
	}
	return NULL;
}


/* Symbol sym's name, at p in t, a file's table, with room bytes to the table's end: the
 * copy kept in the cache, else a copy checked against the file. The copy is taken before
 * the check, so a read that found zeros past a truncated end, or bytes of a rewrite, is
 * never returned. NULL when the file changed, or no NUL ends the name inside its table. */
static const char *checked_name(const struct elf_symbols *es, const struct name_table *t,
				size_t sym, const char *p, size_t room)
{
	struct name_cache *c = es->cache;
	const char *nul;
	uint32_t slot;
	size_t len;
	char *copy;

	if (!c)
		return NULL;
	for (uint32_t i = 0; i < NAME_CACHE_SLOTS; i++) {
		if (c->name[i] && c->sym[i] == sym)
			return c->name[i];
	}
	nul = memchr(p, '\0', room);
	len = nul ? (size_t)(nul - p) : 0;
	if (len == 0 || !(copy = malloc(len + 1)))
		return NULL;
	memcpy(copy, p, len);
	copy[len] = '\0';
	/* a profile names each frame once: the pages read go back (file_view__drop_touched) */
	file_view__touched(t->view);
	if (file_view__changed(t->view)) {
		free(copy);
		return NULL;
	}
	slot = c->next;
	c->next = (c->next + 1) % NAME_CACHE_SLOTS;
	if (c->name[slot])
		c->bytes -= strlen(c->name[slot]) + 1;
	free(c->name[slot]);
	c->name[slot] = copy;
	c->sym[slot] = sym;
	c->bytes += len + 1;
	return copy;
}

/* Symbol i's name, or NULL when its offset or its file no longer gives one. */
static const char *symbol_name(const struct elf_symbols *es, size_t i)
{
	uint32_t name = es->syms[i].name, off;
	const struct name_table *t;

	if (name & NAME_SIDE) {
		off = name & ~NAME_SIDE;
		return off < es->side_len ? es->side + off : NULL;
	}
	t = name_table(es, name);
	if (!t)
		return NULL;
	off = name - t->start;
	if (t->view)
		return checked_name(es, t, i, t->bytes + off, t->size - off);
	return memchr(t->bytes + off, '\0', t->size - off) ? t->bytes + off : NULL;
}

const char *elf_symbols__lookup(const struct elf_symbols *es, uint64_t vaddr, uint64_t *offset)
{
	uint64_t start;
	ptrdiff_t i = find_symbol(es, vaddr, &start);
	const char *name = i < 0 ? NULL : symbol_name(es, (size_t)i);

	if (name)
		*offset = vaddr - start;
	return name;
}

/* No name needed: a file that changed still has the functions it had when read. */
int elf_symbols__function(const struct elf_symbols *es, uint64_t vaddr, uint64_t *start,
			  uint64_t *size)
{
	ptrdiff_t i = find_symbol(es, vaddr, start);

	if (i < 0)
		return -ENOENT;
	*size = es->syms[i].size;
	return 0;
}

enum elf_symbols_source elf_symbols__source(const struct elf_symbols *es)
{
	ensure_index(es);
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
		[ELF_SYMBOLS_GOPCLNTAB] = ".gopclntab+.dynsym",
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
	ensure_index(es);
	return es ? es->nr_syms : 0;
}

bool elf_symbols__holds_functions(const struct elf_symbols *es)
{
	return es && (es->index_pending || es->nr_syms);
}

static void free_name_cache(struct name_cache *c)
{
	for (uint32_t i = 0; c && i < NAME_CACHE_SLOTS; i++)
		free(c->name[i]);
	free(c);
}

/* Frees the index and its names, and closes the files they were read from. */
static void free_functions(struct elf_symbols *es)
{
	free(es->syms);
	free(es->spans);
	free(es->pending);
	free(es->side);
	free(es->debugdata);
	free_name_cache(es->cache);
	file_view__close(es->view);
	file_view__close(es->debug_view);
	es->syms = NULL;
	es->spans = NULL;
	es->pending = NULL;
	es->side = NULL;
	es->debugdata = NULL;
	es->cache = NULL;
	es->view = es->debug_view = NULL;
	es->nr_syms = es->syms_bytes = es->nr_spans = 0;
	es->nr_pending = es->pending_cap = 0;
	es->side_len = es->side_cap = es->debugdata_size = 0;
	es->nr_tables = 0;
	es->index_pending = false;
	free(es->index_path);
	es->index_path = NULL;
}

void elf_symbols__drop_functions(struct elf_symbols *es)
{
	if (es)
		free_functions(es);
}

/* The heap the symbols hold. The file pages names are read from are not heap: the page
 * cache holds them, and those a load or a lookup mapped are handed back at once. */
size_t elf_symbols__bytes(const struct elf_symbols *es)
{
	if (!es)
		return 0;
	return sizeof(*es) + es->syms_bytes + es->nr_spans * sizeof(*es->spans) + es->side_cap +
	       es->debugdata_size + (es->cache ? sizeof(*es->cache) + es->cache->bytes : 0) +
	       es->nr_segments * sizeof(*es->segments) + es->image_size;
}

void elf_symbols__free(struct elf_symbols *es)
{
	if (!es)
		return;
	free_functions(es);
	free(es->segments);
	free(es->image);
	free(es);
}

struct ksyms {
	struct elf_symbols table; /* the same index; sizes unknown (0), every name copied */
};

int ksyms__load(const char *path, struct ksyms **out)
{
	struct ksyms *ks;
	char line[512];
	FILE *f;
	int err = 0;

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
		char type, name[256];
		uint64_t addr;
		int bind;

		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 || addr == 0)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		/* kallsyms types: T global, W weak, t local */
		bind = type == 'T' ? STB_GLOBAL : type == 't' ? STB_LOCAL : STB_WEAK;
		err = add_pending(&ks->table, addr, 0, bind, false, name, strlen(name), NULL);
		if (err)
			goto cleanup;
	}
	if (ks->table.nr_pending == 0) {
		err = -ENOENT; /* kallsyms shows no addresses to unprivileged readers */
		goto cleanup;
	}
	err = build_index(&ks->table);
	if (err)
		goto cleanup;
	fit_side_names(&ks->table);
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
	free_functions(&ks->table);
	free(ks);
}
