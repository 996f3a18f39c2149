#include "binary/slice.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util/grow.h"
#include "util/text.h"

/* ---- writing ---- */

struct out {
	gzFile gz;
	bool failed;
};

static void put(struct out *o, const void *p, size_t len)
{
	if (!o->failed && len && gzwrite(o->gz, p, (unsigned)len) != (int)len)
		o->failed = true;
}

static void put_u32(struct out *o, uint32_t v)
{
	put(o, &v, sizeof(v)); /* x86-64: little-endian already */
}

static void put_u64(struct out *o, uint64_t v)
{
	put(o, &v, sizeof(v));
}

static void put_str(struct out *o, const char *s)
{
	put_u32(o, (uint32_t)strlen(s));
	put(o, s, strlen(s));
}

static void put_code(void *ctx, uint64_t offset, const uint8_t *bytes, size_t len)
{
	struct out *o = ctx;

	put_u64(o, offset);
	put_u64(o, len);
	put(o, bytes, len);
}

static void put_slice(struct out *o, const struct module_slice *sl)
{
	put_str(o, sl->path);
	put_u32(o, (uint32_t)sl->load_err);
	put_u32(o, sl->build_id_len);
	put(o, sl->build_id, sl->build_id_len);
	put_u64(o, sl->entry);
	put_u32(o, sl->nr_function_entries);
	for (uint32_t i = 0; i < sl->nr_function_entries; i++)
		put_u64(o, sl->function_entries[i]);
	put_u32(o, (uint32_t)sl->nr_segments);
	for (size_t i = 0; i < sl->nr_segments; i++) {
		put_u64(o, sl->segments[i].file_offset);
		put_u64(o, sl->segments[i].file_size);
		put_u64(o, sl->segments[i].vaddr);
		put_u32(o, sl->segments[i].exec);
	}
	put_u32(o, (uint32_t)sl->nr_symbols);
	for (size_t i = 0; i < sl->nr_symbols; i++) {
		put_u64(o, sl->symbols[i].start);
		put_u32(o, sl->symbols[i].size);
		put_str(o, sl->symbols[i].name);
	}
	put_u32(o, sl->has_table);
	put_u32(o, (uint32_t)sl->nr_fns);
	for (size_t i = 0; i < sl->nr_fns; i++) {
		const struct unwind_fn_rows *f = &sl->fns[i];

		put_u64(o, f->lo);
		put_u64(o, f->end);
		put_u32(o, f->open_end);
		put_u32(o, (uint32_t)f->nr_rows);
		put(o, f->rows, f->nr_rows * sizeof(*f->rows));
		put_u32(o, (uint32_t)f->nr_wide);
		put(o, f->wide, f->nr_wide * sizeof(*f->wide));
	}
	put_u32(o, (uint32_t)sl->nr_switches);
	put(o, sl->switches, sl->nr_switches * sizeof(*sl->switches));
	put_u32(o, (uint32_t)sl->nr_code_starts);
	put(o, sl->code_starts, sl->nr_code_starts * sizeof(*sl->code_starts));
	put_u64(o, code_copies__count(sl->code));
	code_copies__each(sl->code, put_code, o);
}

int module_slices__write(const char *path, const struct module_slices *s, char *err,
			 size_t errlen)
{
	struct out o = { .gz = gzopen(path, "wb9") };

	if (!o.gz) {
		text__set_err(err, errlen, "%s: cannot create", path);
		return -EIO;
	}
	put(&o, SLICE_MAGIC, 8);
	put_u32(&o, SLICE_VERSION);
	put_u32(&o, (uint32_t)s->nr);
	for (size_t i = 0; i < s->nr; i++)
		put_slice(&o, &s->slices[i]);
	if (gzclose(o.gz) != Z_OK || o.failed) {
		text__set_err(err, errlen, "%s: write failed", path);
		return -EIO;
	}
	return 0;
}

/* ---- reading ---- */

struct in {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static const void *take(struct in *in, size_t len)
{
	const void *p = in->p;

	if (in->bad || len > in->left) {
		in->bad = true;
		return NULL;
	}
	in->p += len;
	in->left -= len;
	return p;
}

static uint32_t get_u32(struct in *in)
{
	const void *p = take(in, 4);
	uint32_t v = 0;

	if (p)
		memcpy(&v, p, 4);
	return v;
}

static uint64_t get_u64(struct in *in)
{
	const void *p = take(in, 8);
	uint64_t v = 0;

	if (p)
		memcpy(&v, p, 8);
	return v;
}

/* A count of items of at least min_bytes each: never more than the bytes left allow. */
static size_t get_count(struct in *in, size_t min_bytes)
{
	uint32_t n = get_u32(in);

	if (n > in->left / min_bytes) {
		in->bad = true;
		return 0;
	}
	return n;
}

static char *get_str(struct in *in)
{
	size_t len = get_count(in, 1);
	const char *p = take(in, len);
	char *s;

	if (!p || memchr(p, '\0', len) || !(s = malloc(len + 1))) {
		in->bad = true;
		return NULL;
	}
	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

/* calloc of n items (at least one), as the count says. */
static void *alloc(struct in *in, size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		in->bad = true;
	return p;
}

static void get_fns(struct in *in, struct module_slice *sl)
{
	sl->nr_fns = get_count(in, 28);
	sl->fns = alloc(in, sl->nr_fns, sizeof(*sl->fns));
	for (size_t i = 0; !in->bad && i < sl->nr_fns; i++) {
		struct unwind_fn_rows *f = &sl->fns[i];
		struct unwind_row *rows;
		struct unwind_row_wide *wide;
		const void *p;

		f->lo = get_u64(in);
		f->end = get_u64(in);
		f->open_end = get_u32(in) != 0;
		f->nr_rows = get_count(in, sizeof(*rows));
		p = take(in, f->nr_rows * sizeof(*rows));
		if (!p || !(rows = alloc(in, f->nr_rows, sizeof(*rows))))
			return;
		memcpy(rows, p, f->nr_rows * sizeof(*rows));
		f->rows = rows;
		f->nr_wide = get_count(in, sizeof(*wide));
		p = take(in, f->nr_wide * sizeof(*wide));
		if (!p || !(wide = alloc(in, f->nr_wide, sizeof(*wide))))
			return;
		memcpy(wide, p, f->nr_wide * sizeof(*wide));
		f->wide = wide;
	}
}

static void get_code(struct in *in, struct module_slice *sl)
{
	uint64_t n = get_u64(in);

	if (n > in->left / 16) {
		in->bad = true;
		return;
	}
	for (uint64_t i = 0; !in->bad && i < n; i++) {
		uint64_t offset = get_u64(in), len = get_u64(in);
		const uint8_t *p = len <= in->left ? take(in, len) : NULL;

		if (!p || offset + len < offset) {
			in->bad = true;
			return;
		}
		code_copies__add(sl->code, offset, p, len);
	}
}

static void get_slice(struct in *in, struct module_slice *sl)
{
	const void *p;

	sl->load_err = (int32_t)get_u32(in);
	sl->build_id_len = get_u32(in);
	if (sl->build_id_len > BUILD_ID_MAX || !(p = take(in, sl->build_id_len))) {
		in->bad = true;
		return;
	}
	memcpy(sl->build_id, p, sl->build_id_len);
	sl->entry = get_u64(in);
	sl->nr_function_entries = get_u32(in);
	if (sl->nr_function_entries > ELF_FUNCTION_ENTRIES_MAX) {
		in->bad = true;
		return;
	}
	for (uint32_t i = 0; i < sl->nr_function_entries; i++)
		sl->function_entries[i] = get_u64(in);
	sl->nr_segments = get_count(in, 28);
	sl->segments = alloc(in, sl->nr_segments, sizeof(*sl->segments));
	for (size_t i = 0; !in->bad && i < sl->nr_segments; i++) {
		sl->segments[i].file_offset = get_u64(in);
		sl->segments[i].file_size = get_u64(in);
		sl->segments[i].vaddr = get_u64(in);
		sl->segments[i].exec = get_u32(in) != 0;
	}
	sl->nr_symbols = get_count(in, 16);
	sl->symbols = alloc(in, sl->nr_symbols, sizeof(*sl->symbols));
	for (size_t i = 0; !in->bad && i < sl->nr_symbols; i++) {
		sl->symbols[i].start = get_u64(in);
		sl->symbols[i].size = get_u32(in);
		sl->symbols[i].name = get_str(in);
	}
	sl->has_table = get_u32(in) != 0;
	get_fns(in, sl);
	sl->nr_switches = in->bad ? 0 : get_count(in, sizeof(*sl->switches));
	p = take(in, sl->nr_switches * sizeof(*sl->switches));
	sl->switches = alloc(in, sl->nr_switches, sizeof(*sl->switches));
	if (p && sl->switches)
		memcpy(sl->switches, p, sl->nr_switches * sizeof(*sl->switches));
	sl->nr_code_starts = in->bad ? 0 : get_count(in, sizeof(*sl->code_starts));
	p = take(in, sl->nr_code_starts * sizeof(*sl->code_starts));
	sl->code_starts = alloc(in, sl->nr_code_starts, sizeof(*sl->code_starts));
	if (p && sl->code_starts)
		memcpy(sl->code_starts, p, sl->nr_code_starts * sizeof(*sl->code_starts));
	get_code(in, sl);
}

/* The whole decompressed file, at most SLICE_FILE_MAX_BYTES. */
static int read_all(const char *path, uint8_t **out, size_t *size, char *err, size_t errlen)
{
	gzFile gz = gzopen(path, "rb");
	size_t cap = 1 << 20, len = 0;
	uint8_t *buf = NULL;
	int n = 1;

	if (!gz) {
		text__set_err(err, errlen, "%s: cannot open", path);
		return -ENOENT;
	}
	while (n > 0) {
		uint8_t *more;

		if (!buf || len == cap) {
			if (buf)
				cap *= 2;
			if (cap > SLICE_FILE_MAX_BYTES || !(more = realloc(buf, cap))) {
				n = -1;
				break;
			}
			buf = more;
		}
		n = gzread(gz, buf + len, (unsigned)(cap - len));
		if (n > 0)
			len += (size_t)n;
	}
	gzclose(gz);
	if (n < 0) {
		free(buf);
		text__set_err(err, errlen, "%s: unreadable, or over %u bytes", path,
			      SLICE_FILE_MAX_BYTES);
		return -EINVAL;
	}
	*out = buf;
	*size = len;
	return 0;
}

int module_slices__read(const char *path, struct module_slices **out, char *err, size_t errlen)
{
	struct module_slices *s;
	uint8_t *data;
	size_t size, n;
	struct in in;
	int ret;

	*out = NULL;
	ret = read_all(path, &data, &size, err, errlen);
	if (ret)
		return ret;
	in = (struct in){ .p = data, .left = size };
	s = calloc(1, sizeof(*s));
	if (!s || size < 16 || memcmp(data, SLICE_MAGIC, 8) != 0) {
		ret = s ? -EINVAL : -ENOMEM;
		goto done;
	}
	take(&in, 8);
	if (get_u32(&in) != SLICE_VERSION) {
		ret = -EINVAL;
		goto done;
	}
	n = get_count(&in, 4);
	for (size_t i = 0; !in.bad && i < n; i++) {
		char *name = get_str(&in);
		struct module_slice *sl = name ? module_slices__add(s, name) : NULL;

		free(name);
		if (!sl)
			in.bad = true;
		else
			get_slice(&in, sl);
	}
	ret = in.bad || in.left ? -EINVAL : 0;
done:
	free(data);
	if (ret) {
		text__set_err(err, errlen, "%s: %s", path,
			      ret == -ENOMEM ? "out of memory" : "not a slice file, or a damaged one");
		module_slices__free(s);
		return ret;
	}
	*out = s;
	return 0;
}

const struct module_slice *module_slices__find(const struct module_slices *s, const char *path)
{
	for (size_t i = 0; s && i < s->nr; i++) {
		if (strcmp(s->slices[i].path, path) == 0)
			return &s->slices[i];
	}
	return NULL;
}

struct module_slice *module_slices__add(struct module_slices *s, const char *path)
{
	struct module_slice *sl;

	if (grow_array((void **)&s->slices, &s->cap, s->nr + 1, sizeof(*s->slices)))
		return NULL;
	sl = &s->slices[s->nr];
	memset(sl, 0, sizeof(*sl));
	if (!(sl->path = strdup(path)) || !(sl->code = code_copies__new_unbounded())) {
		free(sl->path);
		return NULL;
	}
	s->nr++;
	return sl;
}

static void slice_free(struct module_slice *sl)
{
	free(sl->path);
	free(sl->segments);
	for (size_t i = 0; i < sl->nr_symbols; i++)
		free(sl->symbols[i].name);
	free(sl->symbols);
	for (size_t i = 0; i < sl->nr_fns; i++) {
		free((void *)sl->fns[i].rows);
		free((void *)sl->fns[i].wide);
	}
	free(sl->fns);
	free(sl->switches);
	free(sl->code_starts);
	code_copies__free(sl->code);
}

void module_slices__free(struct module_slices *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr; i++)
		slice_free(&s->slices[i]);
	free(s->slices);
	free(s);
}

int module_slice__table(const struct module_slice *sl, struct unwind_table **out)
{
	*out = NULL;
	if (!sl->has_table)
		return -ENOENT;
	return unwind_table__from_functions(sl->fns, sl->nr_fns,
					    (const uint64_t (*)[2])sl->switches, sl->nr_switches,
					    out);
}

int module_slice__code_start(const struct module_slice *sl, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi = sl->nr_code_starts;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sl->code_starts[mid].vaddr < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == sl->nr_code_starts || sl->code_starts[lo].vaddr != vaddr)
		return -ENOENT;
	*start = sl->code_starts[lo].start;
	return 0;
}

ssize_t module_slice__read(const struct module_slice *sl, uint64_t offset, uint8_t *buf,
			   size_t len)
{
	return code_copies__read(sl->code, offset, buf, len);
}

/* ---- the slice as an ELF image, for elf_symbols__load_image ---- */

/* An image that says what the binary's own ELF said of its placing and symbols: its
 * PT_LOAD headers as they were (their file offsets point past the image, and only the
 * headers are read), .symtab, the build-id note, and DT_INIT entries for its function
 * entries (elf_symbols takes DT_INIT and DT_FINI alike). */
struct image {
	uint8_t *bytes;
	size_t len, cap;
	bool failed;
};

static size_t image_put(struct image *img, const void *p, size_t len)
{
	size_t at = (img->len + 7) & ~(size_t)7;

	if (img->failed || grow_array((void **)&img->bytes, &img->cap, at + len + 1, 1)) {
		img->failed = true;
		return 0;
	}
	memset(img->bytes + img->len, 0, at - img->len);
	if (len)
		memcpy(img->bytes + at, p, len);
	img->len = at + len;
	return at;
}

enum { SEC_NULL, SEC_SYMTAB, SEC_STRTAB, SEC_NOTE, SEC_DYNAMIC, SEC_SHSTRTAB, SEC_COUNT };

/* The symbols a slice's image holds. With none, elf_symbols would look further (a debug
 * file by build-id, on the machine replaying): a named symbol at address 1, where no code
 * lies, keeps it to .symtab. */
struct image_symbols {
	const struct slice_symbol *syms;
	size_t nr;
};

static struct image_symbols image_symbols(const struct module_slice *sl)
{
	static const struct slice_symbol none = { .start = 1, .size = 1, .name = (char *)"-" };

	return sl->nr_symbols ? (struct image_symbols){ sl->symbols, sl->nr_symbols }
			      : (struct image_symbols){ &none, 1 };
}

static size_t put_strtab(struct image *img, struct image_symbols is, uint32_t *names,
			 size_t *len)
{
	size_t total = 1, at;
	char *tab;

	*len = 0;
	for (size_t i = 0; i < is.nr; i++)
		total += strlen(is.syms[i].name) + 1;
	tab = calloc(1, total);
	if (!tab) {
		img->failed = true;
		return 0;
	}
	*len = 1;
	for (size_t i = 0; i < is.nr; i++) {
		size_t n = strlen(is.syms[i].name) + 1;

		names[i] = (uint32_t)*len;
		memcpy(tab + *len, is.syms[i].name, n);
		*len += n;
	}
	at = image_put(img, tab, total);
	free(tab);
	return at;
}

static size_t put_symtab(struct image *img, struct image_symbols is, const uint32_t *names,
			 size_t *len)
{
	Elf64_Sym *syms = calloc(is.nr + 1, sizeof(*syms));
	size_t at;

	*len = 0;
	if (!syms) {
		img->failed = true;
		return 0;
	}
	for (size_t i = 0; i < is.nr; i++) {
		Elf64_Sym *s = &syms[i + 1];

		s->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		s->st_shndx = SHN_ABS;
		s->st_name = names[i];
		s->st_value = is.syms[i].start;
		s->st_size = is.syms[i].size;
	}
	*len = (is.nr + 1) * sizeof(*syms);
	at = image_put(img, syms, *len);
	free(syms);
	return at;
}

static size_t put_note(struct image *img, const struct module_slice *sl, size_t *len)
{
	uint8_t note[12 + 4 + BUILD_ID_MAX + 4] = { 0 };
	uint32_t head[3] = { 4, sl->build_id_len, NT_GNU_BUILD_ID };

	memcpy(note, head, sizeof(head));
	memcpy(note + 12, "GNU", 4);
	memcpy(note + 16, sl->build_id, sl->build_id_len);
	*len = 16 + ((sl->build_id_len + 3) & ~3u);
	return image_put(img, note, *len);
}

static size_t put_dynamic(struct image *img, const struct module_slice *sl, size_t *len)
{
	Elf64_Dyn dyn[ELF_FUNCTION_ENTRIES_MAX + 1] = { 0 };

	for (uint32_t i = 0; i < sl->nr_function_entries; i++)
		dyn[i] = (Elf64_Dyn){ .d_tag = DT_INIT, .d_un.d_ptr = sl->function_entries[i] };
	*len = (sl->nr_function_entries + 1) * sizeof(*dyn);
	return image_put(img, dyn, *len);
}

int module_slice__symbols(const struct module_slice *sl, struct elf_symbols **out, char *err,
			  size_t errlen)
{
	static const char shstr[] = "\0.symtab\0.strtab\0.note\0.dynamic\0.shstrtab";
	static const uint32_t shname[SEC_COUNT] = { 0, 1, 9, 17, 23, 32 };
	Elf64_Ehdr eh = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
				       ELFDATA2LSB, EV_CURRENT } };
	Elf64_Shdr sh[SEC_COUNT] = { 0 };
	struct image img = { 0 };
	struct image_symbols is = image_symbols(sl);
	uint32_t *names = calloc(is.nr, sizeof(*names));
	size_t len = 0;
	int ret;

	if (!names)
		return -ENOMEM;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_entry = sl->entry;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	image_put(&img, &eh, sizeof(eh));
	eh.e_phoff = img.len;
	for (size_t i = 0; i < sl->nr_segments && eh.e_phnum < PN_XNUM - 1; i++, eh.e_phnum++) {
		const struct slice_segment *s = &sl->segments[i];
		Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | (s->exec ? PF_X : 0),
				  .p_offset = s->file_offset, .p_vaddr = s->vaddr,
				  .p_paddr = s->vaddr, .p_filesz = s->file_size,
				  .p_memsz = s->file_size, .p_align = 4096 };

		image_put(&img, &ph, sizeof(ph));
	}
	sh[SEC_STRTAB] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_addralign = 1 };
	sh[SEC_STRTAB].sh_offset = put_strtab(&img, is, names, &len);
	sh[SEC_STRTAB].sh_size = len;
	sh[SEC_SYMTAB] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_link = SEC_STRTAB, .sh_info = 1,
				       .sh_entsize = sizeof(Elf64_Sym), .sh_addralign = 8 };
	sh[SEC_SYMTAB].sh_offset = put_symtab(&img, is, names, &len);
	sh[SEC_SYMTAB].sh_size = len;
	sh[SEC_NOTE] = (Elf64_Shdr){ .sh_type = SHT_NOTE, .sh_addralign = 4 };
	sh[SEC_NOTE].sh_offset = put_note(&img, sl, &len);
	sh[SEC_NOTE].sh_size = sl->build_id_len ? len : 0;
	sh[SEC_DYNAMIC] = (Elf64_Shdr){ .sh_type = SHT_DYNAMIC, .sh_entsize = sizeof(Elf64_Dyn),
					.sh_addralign = 8 };
	sh[SEC_DYNAMIC].sh_offset = put_dynamic(&img, sl, &len);
	sh[SEC_DYNAMIC].sh_size = len;
	sh[SEC_SHSTRTAB] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_addralign = 1 };
	sh[SEC_SHSTRTAB].sh_offset = image_put(&img, shstr, sizeof(shstr));
	sh[SEC_SHSTRTAB].sh_size = sizeof(shstr);
	for (int i = 0; i < SEC_COUNT; i++)
		sh[i].sh_name = shname[i];
	eh.e_shoff = image_put(&img, sh, sizeof(sh));
	eh.e_shnum = SEC_COUNT;
	eh.e_shstrndx = SEC_SHSTRTAB;
	free(names);
	if (img.failed) {
		free(img.bytes);
		return -ENOMEM;
	}
	memcpy(img.bytes, &eh, sizeof(eh));
	ret = elf_symbols__load_image(img.bytes, img.len, out, err, errlen);
	free(img.bytes);
	return ret;
}
