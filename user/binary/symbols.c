/* An ELF file's function symbols: read from the first of its sources that has any (enum
 * elf_symbols_source) into a symbol index (binary/symbol_index.h), whose names are read
 * where they lie, in the file mapped read-only (util/file_view.h), an image's copy or
 * MiniDebugInfo's decompressed string table. The file's headers are read at load
 * (binary/elf_facts.h); its index is built on the first lookup, and can be dropped while
 * the facts stay. */
#include "binary/symbols.h"
#include "binary/debug_files.h"
#include "binary/libelf_sections.h"
#include "binary/symbol_index.h"
#include "cfi/go_pclntab.h"
#include "util/text.h"
#include "util/file_view.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* MiniDebugInfo is a few hundred KiB even for large libraries; these bounds only stop a
 * hostile xz stream from taking the machine's memory. */
#define DEBUGDATA_MAX_BYTES (64u << 20)
#define DEBUGDATA_MEMLIMIT (64u << 20)

/* The bytes libelf reads an ELF from. */
struct elf_bytes {
	const uint8_t *data;
	size_t size;
	struct file_view *view; /* NULL: bytes hprof owns */
};

struct elf_symbols {
	struct elf_facts *facts;
	/* NULL until built, and once dropped */
	struct symbol_index *index;
	struct file_view *view; /* the binary, while its tables name symbols */
	struct file_view *debug_view; /* the separate debug file the symbols came from */
	void *image; /* owned copy for elf_symbols__load_image */
	size_t image_size;
	enum elf_symbols_source source;
	/* A file's function index is built when first asked for (ensure_index), not at load:
	 * a new binary's first sample needs only its segments to be walked. */
	bool index_pending;
	char *index_path; /* the binary's own path, where its debug files are looked for */
};

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
 * the code after these labels too. A label inside a sized function is dropped (symbol_index__build);
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
	GElf_Shdr shdr;

	if (!scn || !gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_STRTAB ||
	    (shdr.sh_flags & SHF_COMPRESSED) || shdr.sh_offset > src->size ||
	    shdr.sh_size > src->size - shdr.sh_offset)
		return -1;
	return symbol_index__add_table(es->index, (const char *)src->data + shdr.sh_offset,
				       shdr.sh_size, src->view);
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
		err = symbol_index__add(es->index, sym.st_value, sym.st_size,
					GELF_ST_BIND(sym.st_info), label, name, len, table);
		if (err)
			return err;
	}
	return 0;
}

/* Adds the function symbols of the first section of the type (SHT_SYMTAB or SHT_DYNSYM).
 * A stripped copy's NOBITS section has another type, so it is skipped. */
static int read_symbols_of_type(struct elf_symbols *es, const struct elf_bytes *src, Elf *elf,
				Elf64_Word type)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = libelf_sections__of_type(elf, type, &shdr);

	return scn ? read_symtab_section(es, src, elf, scn, &shdr) : 0;
}

/* Forgets what a source that failed or had nothing read. */
static void reset_source(struct elf_symbols *es)
{
	symbol_index__reset(es->index);
	file_view__close(es->debug_view);
	es->debug_view = NULL;
}

/* The .symtab of a separate debug file, used only when it is the file link names (when
 * link is not NULL). Its view is kept when it has symbols: their names are read from it.
 * Returns 0 (with or without symbols) or -errno. */
static int read_debug_file(struct elf_symbols *es, const char *path,
			   const struct debuglink *link)
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
	if (link && !debug_files__debuglink_matches(link, view)) {
		err = -EBADMSG; /* another build's debug file: its addresses would lie */
		goto cleanup;
	}
	elf = elf_memory((char *)src.data, src.size);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = read_symbols_of_type(es, &src, elf, SHT_SYMTAB);
	if (!err && symbol_index__pending(es->index)) {
		es->debug_view = view;
		view = NULL;
	}
cleanup:
	elf_end(elf);
	file_view__close(view);
	return err;
}

/* The debug file the binary's build-id names, at the first of its places that has it with
 * symbols. */
static int read_build_id_file(struct elf_symbols *es)
{
	char path[PATH_MAX];
	const uint8_t *id;
	size_t len = elf_facts__build_id(es->facts, &id);
	int err;

	for (size_t i = 0; i < debug_files__build_id_places(); i++) {
		if (debug_files__build_id_path(id, len, i, path, sizeof(path)) != 0)
			continue;
		err = read_debug_file(es, path, NULL);
		if (err == -ENOMEM || (!err && symbol_index__pending(es->index)))
			return err;
		reset_source(es);
	}
	return -ENOENT;
}

/* The file .gnu_debuglink names, at the first of its places that has it with symbols. */
static int read_debuglink_file(struct elf_symbols *es, Elf *elf, const char *binary)
{
	struct debuglink link;
	char path[PATH_MAX];
	int err = debug_files__debuglink(elf, binary, &link);

	if (err)
		return err;
	for (size_t i = 0; i < debug_files__debuglink_places(); i++) {
		if (debug_files__debuglink_path(&link, binary, i, path, sizeof(path)) != 0)
			continue;
		err = read_debug_file(es, path, &link);
		if (err == -ENOMEM || (!err && symbol_index__pending(es->index)))
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

	if (!libelf_sections__named(elf, ".gnu_debugdata", &data))
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
		symbol_index__own_names(es->index, image, size);
	return err;
}

/* Go's functions by its own table (.gopclntab), which Go binaries keep when stripped of
 * .symtab: each function's name read in place from the table's names. Returns 0 (with or
 * without symbols) or -errno. */
static int read_gopclntab(struct elf_symbols *es, const struct elf_bytes *src)
{
	struct go_pclntab go;
	int table;

	if (!src->view || go_pclntab__from_elf(src->data, src->size, &go) != 0)
		return 0;
	table = symbol_index__add_table(es->index, (const char *)go.bytes + go.names,
					go.names_size, src->view);
	if (table < 0)
		return 0;
	for (uint32_t i = 0; i < go.nfunc; i++) {
		struct go_func f;
		const char *name;
		size_t len;
		int err;

		if (!go_pclntab__func(&go, i, &f) || !(name = go_pclntab__name(&go, &f)) ||
		    (len = strlen(name)) == 0)
			continue;
		err = symbol_index__add(es->index, f.entry, f.end - f.entry, STB_GLOBAL, false,
					name, len, table);
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
		if (err || !symbol_index__pending(es->index))
			return err;
		return read_symbols_of_type(es, src, elf, SHT_DYNSYM);
	case ELF_SYMBOLS_GOPCLNTAB:
		/* a cgo program's C functions are in .dynsym only where it exports them */
		err = read_gopclntab(es, src);
		if (err || !symbol_index__pending(es->index))
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
		if (!err && symbol_index__pending(es->index)) {
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

/* Keeps open the files names are read from, handing back every page the load read (the
 * symbol and string tables, the notes, MiniDebugInfo's compressed bytes: a lookup maps
 * its name's page again), and closes the others. */
static void keep_views(struct elf_symbols *es)
{
	struct file_view **views[] = { &es->view, &es->debug_view };

	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		struct file_view *v = *views[i];

		if (!v)
			continue;
		if (!symbol_index__reads_from(es->index, v)) {
			file_view__close(v);
			*views[i] = NULL;
			continue;
		}
		file_view__drop_pages(v, 0, file_view__size(v));
	}
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
	ret = elf_facts__read(elf, &es->facts);
	if (ret) {
		text__set_err(err, errlen, "%s: unreadable program headers: %s", what, elf_errmsg(-1));
		return ret;
	}
	return 0;
}

/* The function index from the first source that has one (es's view or image holds the
 * ELF's bytes). */
static int load_index(struct elf_symbols *es, Elf *elf, const struct elf_bytes *src,
		      const char *path, const char *what, char *err, size_t errlen)
{
	int ret = symbol_index__new(&es->index);

	if (!ret)
		ret = read_symbols(es, src, elf, path);
	if (!ret)
		ret = symbol_index__build(es->index);
	if (!ret && changed_while_read(es))
		ret = -ESTALE;
	if (ret) {
		text__set_err(err, errlen, "%s: reading symbols: %s", what,
			ret == -ESTALE ? "the file changed while it was read" : strerror(-ret));
		return ret;
	}
	keep_views(es);
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

/* The index is built on first use (ensure_index); a NULL es or a dropped index finds
 * nothing. */
const char *elf_symbols__lookup(const struct elf_symbols *es, uint64_t vaddr, uint64_t *offset)
{
	ensure_index(es);
	return es ? symbol_index__lookup(es->index, vaddr, offset) : NULL;
}

int elf_symbols__function(const struct elf_symbols *es, uint64_t vaddr, uint64_t *start,
			  uint64_t *size)
{
	ensure_index(es);
	return es ? symbol_index__function(es->index, vaddr, start, size) : -ENOENT;
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

size_t elf_symbols__count(const struct elf_symbols *es)
{
	ensure_index(es);
	return es ? symbol_index__count(es->index) : 0;
}

bool elf_symbols__holds_functions(const struct elf_symbols *es)
{
	return es && (es->index_pending || symbol_index__count(es->index));
}

/* The facts outlive the index (elf_symbols__drop_functions). */
int elf_symbols__offset_to_vaddr(const struct elf_symbols *es, uint64_t map_offset,
				 uint64_t file_offset, uint64_t *vaddr)
{
	return elf_facts__offset_to_vaddr(es ? es->facts : NULL, map_offset, file_offset, vaddr);
}

size_t elf_symbols__build_id(const struct elf_symbols *es, const uint8_t **id)
{
	return elf_facts__build_id(es ? es->facts : NULL, id);
}

uint64_t elf_symbols__entry(const struct elf_symbols *es)
{
	return elf_facts__entry(es ? es->facts : NULL);
}

bool elf_symbols__is_function_entry(const struct elf_symbols *es, uint64_t vaddr)
{
	return elf_facts__is_function_entry(es ? es->facts : NULL, vaddr);
}

int elf_symbols__segment(const struct elf_symbols *es, uint64_t vaddr, uint64_t *start,
			 uint64_t *end, uint64_t *file_offset)
{
	return elf_facts__segment(es ? es->facts : NULL, vaddr, start, end, file_offset);
}

size_t elf_symbols__image_size(const struct elf_symbols *es)
{
	return es ? es->image_size : 0;
}

/* Frees the index and its names, and closes the files they were read from. */
static void free_functions(struct elf_symbols *es)
{
	symbol_index__free(es->index);
	es->index = NULL;
	file_view__close(es->view);
	file_view__close(es->debug_view);
	es->view = es->debug_view = NULL;
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
	return sizeof(*es) + symbol_index__bytes(es->index) + elf_facts__bytes(es->facts) +
	       es->image_size;
}

void elf_symbols__free(struct elf_symbols *es)
{
	if (!es)
		return;
	free_functions(es);
	elf_facts__free(es->facts);
	free(es->image);
	free(es);
}
