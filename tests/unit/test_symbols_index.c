/* Unit tests for the symbol index (user/binary/symbol_index.c, filled by symbols.c): names
 * read in place from the file, not copied. On a hand-built ELF, as an image and as a file:
 * functions more than 4 GiB apart, a size past 32 bits, a version suffix dropped, aliases
 * ranked, hostile name offsets. On a copy of this test's own binary changed under its
 * loaded symbols (rewritten in place, truncated, truncated and rewritten): no lookup
 * crashes, and each gives the name the original file gave or none, never a name of the new
 * bytes. Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binary/symbols.h"
#include "check.h"

#define N(array) (sizeof(array) / sizeof((array)[0]))

/* ---- a hand-built ELF ---- */

struct sym_spec {
	const char *name; /* NULL: st_name past the string table's end */
	uint64_t value, size;
	int type, bind;
	uint16_t shndx;
};

#define TEXT_SHNDX 1 /* any defined section: the index reads only st_shndx != SHN_UNDEF */
#define CODE_SHNDX 4 /* an executable section, [CODE_START, CODE_END): where labels count */
#define CODE_START 0x3000
#define CODE_END 0x4000
#define GIB4 (1ull << 32)

static const struct sym_spec SYMS[] = {
	{ "low", 0x1000, 0x10, STT_FUNC, STB_GLOBAL, TEXT_SHNDX },
	/* aliases at 0x2000: the global one wins, without its version */
	{ "mid_local_alias", 0x2000, 0x20, STT_FUNC, STB_LOCAL, TEXT_SHNDX },
	{ "mid@@VER_1", 0x2000, 0x20, STT_FUNC, STB_GLOBAL, TEXT_SHNDX },
	/* st_size past 32 bits: clamped, still covering what any lookup can reach */
	{ "huge", 0x8000, GIB4 + 5, STT_FUNC, STB_GLOBAL, TEXT_SHNDX },
	{ "@lead", 0x2800, 0x8, STT_GNU_IFUNC, STB_WEAK, TEXT_SHNDX },
	{ "data", 0x5000, 0x8, STT_OBJECT, STB_GLOBAL, TEXT_SHNDX },
	{ "undefined", 0x6000, 0x8, STT_FUNC, STB_GLOBAL, SHN_UNDEF },
	{ NULL, 0x7000, 0x8, STT_FUNC, STB_GLOBAL, TEXT_SHNDX },
	/* more than 4 GiB past the first: a second span */
	{ "high", GIB4 + 0x2000, 0x30, STT_FUNC, STB_GLOBAL, TEXT_SHNDX },
	{ "far", 7 * GIB4, 0, STT_FUNC, STB_LOCAL, TEXT_SHNDX },
	/* code labels (nasm's global labels: no type, no size) start functions, in code only */
	{ "asm_entry", 0x3000, 0, STT_FUNC, STB_GLOBAL, CODE_SHNDX },
	{ "label_alias", 0x3000, 0, STT_NOTYPE, STB_GLOBAL, CODE_SHNDX }, /* the function wins */
	{ "asm_label_fn", 0x3100, 0, STT_NOTYPE, STB_GLOBAL, CODE_SHNDX },
	{ "sized_fn", 0x3200, 0x100, STT_FUNC, STB_GLOBAL, CODE_SHNDX },
	{ "inside_sized", 0x3280, 0, STT_NOTYPE, STB_GLOBAL, CODE_SHNDX }, /* dropped */
	{ "local_label", 0x3400, 0, STT_NOTYPE, STB_LOCAL, CODE_SHNDX },   /* not a function */
	{ "weak_label", 0x3500, 0, STT_NOTYPE, STB_WEAK, CODE_SHNDX },
	{ "after_weak", 0x3800, 0x10, STT_FUNC, STB_GLOBAL, CODE_SHNDX },
	{ "code_end", CODE_END, 0, STT_NOTYPE, STB_GLOBAL, CODE_SHNDX },  /* etext: not code */
	{ "data_label", 0x5800, 0, STT_NOTYPE, STB_GLOBAL, TEXT_SHNDX },  /* not code */
};

struct lookup_want {
	uint64_t addr;
	const char *name; /* NULL: none */
	uint64_t offset;
};

static const struct lookup_want LOOKUPS[] = {
	{ 0xfff, NULL, 0 },
	{ 0x1000, "low", 0 },
	{ 0x100f, "low", 0xf },
	{ 0x1010, NULL, 0 },
	{ 0x2000, "mid", 0 },
	{ 0x201f, "mid", 0x1f },
	{ 0x2800, "@lead", 0 },
	{ 0x2808, NULL, 0 },
	{ 0x8010, "huge", 0x10 },
	{ 0x5000, NULL, 0 }, /* an object's address: no function */
	{ GIB4 + 0x1fff, "huge", GIB4 + 0x1fff - 0x8000 },
	{ GIB4 + 0x2000, "high", 0 },
	{ GIB4 + 0x202f, "high", 0x2f },
	{ GIB4 + 0x2030, NULL, 0 },
	{ 0x30ff, "asm_entry", 0xff },
	{ 0x3100, "asm_label_fn", 0 },
	{ 0x31ff, "asm_label_fn", 0xff },
	{ 0x3290, "sized_fn", 0x90 },
	{ 0x3400, NULL, 0 },
	{ 0x3510, "weak_label", 0x10 },
	{ 0x37ff, "weak_label", 0x2ff },
	{ 0x4000, NULL, 0 },
	{ 0x5800, NULL, 0 },
	{ 7 * GIB4, "far", 0 },
	{ UINT64_MAX, "far", UINT64_MAX - 7 * GIB4 },
};

struct built_elf {
	uint8_t bytes[4096];
	size_t len;
};

static size_t put(struct built_elf *b, const void *p, size_t len)
{
	size_t at = (b->len + 7) & ~(size_t)7;

	if (at + len > sizeof(b->bytes))
		abort();
	memcpy(b->bytes + at, p, len);
	b->len = at + len;
	return at;
}

/* An ELF of section headers only: null, .symtab, .strtab, .shstrtab, .text (NOBITS). */
static void build_elf(struct built_elf *b)
{
	static const char shstr[] = "\0.symtab\0.strtab\0.shstrtab\0.text";
	Elf64_Sym syms[N(SYMS) + 1];
	char strtab[512] = "";
	size_t strlen_used = 1, sym_off, str_off, shstr_off, sh_off;
	Elf64_Shdr sh[5];
	Elf64_Ehdr eh;

	memset(b, 0, sizeof(*b));
	memset(syms, 0, sizeof(syms));
	for (size_t i = 0; i < N(SYMS); i++) {
		const struct sym_spec *s = &SYMS[i];
		size_t len = s->name ? strlen(s->name) + 1 : 0;

		syms[i + 1] = (Elf64_Sym){
			.st_name = s->name ? (Elf64_Word)strlen_used : 100000,
			.st_info = (unsigned char)ELF64_ST_INFO(s->bind, s->type),
			.st_shndx = s->shndx,
			.st_value = s->value,
			.st_size = s->size,
		};
		memcpy(strtab + strlen_used, s->name ? s->name : "", len);
		strlen_used += len;
	}
	b->len = sizeof(eh);
	sym_off = put(b, syms, sizeof(syms));
	str_off = put(b, strtab, strlen_used);
	shstr_off = put(b, shstr, sizeof(shstr));
	memset(sh, 0, sizeof(sh));
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
			      .sh_size = sizeof(syms), .sh_link = 2, .sh_info = 1,
			      .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) };
	sh[2] = (Elf64_Shdr){ .sh_name = 9, .sh_type = SHT_STRTAB, .sh_offset = str_off,
			      .sh_size = strlen_used, .sh_addralign = 1 };
	sh[3] = (Elf64_Shdr){ .sh_name = 17, .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
			      .sh_size = sizeof(shstr), .sh_addralign = 1 };
	sh[CODE_SHNDX] = (Elf64_Shdr){ .sh_name = 27, .sh_type = SHT_NOBITS,
				       .sh_flags = SHF_ALLOC | SHF_EXECINSTR, .sh_addr = CODE_START,
				       .sh_size = CODE_END - CODE_START, .sh_addralign = 16 };
	sh_off = put(b, sh, sizeof(sh));
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_shoff = sh_off;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 5;
	eh.e_shstrndx = 3;
	memcpy(b->bytes, &eh, sizeof(eh));
}

static bool looks_up(const struct elf_symbols *syms, const struct lookup_want *w)
{
	uint64_t offset = ~0ull;
	const char *name = elf_symbols__lookup(syms, w->addr, &offset);

	if (!w->name ? name == NULL : name && strcmp(name, w->name) == 0 && offset == w->offset)
		return true;
	printf("# at %#llx: %s+%#llx, want %s+%#llx\n", (unsigned long long)w->addr,
	       name ? name : "(none)", (unsigned long long)offset, w->name ? w->name : "(none)",
	       (unsigned long long)w->offset);
	return false;
}

static void check_built(const struct elf_symbols *syms, const char *how)
{
	uint64_t start = 0, size = 0;
	bool all = true, found;

	for (size_t i = 0; i < N(LOOKUPS); i++)
		all &= looks_up(syms, &LOOKUPS[i]);
	check(elf_symbols__count(syms) == 11 && elf_symbols__source(syms) == ELF_SYMBOLS_SYMTAB,
	      "%s: 11 functions of 20 symbols (two aliases, an object, an undefined one, a bad "
	      "name offset, and labels inside a sized function, local, at the code's end or "
	      "outside code left out; %zu)", how, elf_symbols__count(syms));
	check(all, "%s: every lookup as expected, across 4 GiB spans", how);
	found = elf_symbols__function(syms, GIB4 + 0x1000, &start, &size) == 0;
	check(found && start == 0x8000 && size == UINT32_MAX,
	      "%s: a size past 32 bits is clamped to 4 GiB - 1 (%#llx)", how,
	      (unsigned long long)size);
	check(elf_symbols__function(syms, 7 * GIB4 + 5, &start, &size) == 0 &&
		      start == 7 * GIB4 && size == 0,
	      "%s: an unsized last symbol extends to the end", how);
}

/* The same ELF as an image, then as a file (names then read from its mapping). */
static void test_built_elf(void)
{
	static struct built_elf b;
	char path[] = "/tmp/hprof-test-symidx-XXXXXX", err[256] = "";
	struct elf_symbols *syms = NULL;
	int fd;

	build_elf(&b);
	if (elf_symbols__load_image(b.bytes, b.len, &syms, err, sizeof(err)) != 0)
		check(false, "hand-built ELF: loads as an image (%s)", err);
	else
		check_built(syms, "hand-built image");
	elf_symbols__free(syms);
	syms = NULL;

	fd = mkstemp(path);
	if (fd < 0 || write(fd, b.bytes, b.len) != (ssize_t)b.len ||
	    elf_symbols__load(path, &syms, err, sizeof(err)) != 0) {
		check(false, "hand-built ELF: loads as a file (%s)", err);
	} else {
		check_built(syms, "hand-built file");
		check(elf_symbols__bytes(syms) < 1024,
		      "hand-built file: %zu bytes held (12 per function, one name copied)",
		      elf_symbols__bytes(syms));
	}
	elf_symbols__free(syms);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
}

/* ---- a file changed under its symbols ---- */

enum change { REWRITTEN, TRUNCATED, TRUNCATED_REWRITTEN };

static int read_whole(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	int err = 0;

	*out = NULL;
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) != 0 || !(*out = malloc((size_t)st.st_size)) ||
	    fread(*out, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		err = -EIO;
	*len = (size_t)st.st_size;
	fclose(f);
	return err;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	return pwrite(fd, p, len, 0) == (ssize_t)len ? 0 : -EIO;
}

/* Other bytes of the same shape: every lower-case letter moved on by one, so that each
 * name the file held becomes another name. */
static void rotate_letters(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] >= 'a' && p[i] <= 'z')
			p[i] = (uint8_t)('a' + (p[i] - 'a' + 1) % 26);
	}
}

static int change_file(int fd, enum change how, const uint8_t *bytes, size_t len)
{
	uint8_t *other = malloc(len);
	int err = other ? 0 : -ENOMEM;

	if (!err) {
		memcpy(other, bytes, len);
		rotate_letters(other, len);
	}
	if (!err && how != REWRITTEN && ftruncate(fd, 4096) != 0)
		err = -errno;
	if (!err && how != TRUNCATED)
		err = write_all(fd, other, len);
	free(other);
	return err;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

/* Function starts of the executable segment holding vaddr, by the symbols. */
static size_t function_starts(const struct elf_symbols *syms, uint64_t vaddr, uint64_t **out)
{
	uint64_t seg_start, seg_end, file_offset, start, size;
	size_t n = 0, cap = 0;

	*out = NULL;
	if (elf_symbols__segment(syms, vaddr, &seg_start, &seg_end, &file_offset) != 0)
		return 0;
	for (uint64_t v = seg_start; v < seg_end; v += 16) {
		if (elf_symbols__function(syms, v, &start, &size) != 0 ||
		    (n && (*out)[n - 1] == start))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			*out = realloc(*out, cap * sizeof(**out));
			if (!*out)
				abort();
		}
		(*out)[n++] = start;
	}
	return n;
}

static void test_changed_file(enum change how)
{
	static const char *const what[] = { "rewritten in place", "truncated",
					    "truncated and rewritten" };
	char path[] = "/tmp/hprof-test-symidx-XXXXXX", err[256] = "";
	struct timespec long_ago[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	struct elf_symbols *orig = NULL, *syms = NULL;
	size_t n = 0, len = 0, found_before = 0, found_after = 0, wrong = 0, moved = 0;
	uintptr_t bias = 0;
	uint64_t *starts = NULL;
	uint8_t *bytes = NULL;
	int fd = mkstemp(path);

	dl_iterate_phdr(first_object, &bias);
	/* a time the change surely moves: the rewrite may come within the clock's tick */
	if (fd < 0 || read_whole("/proc/self/exe", &bytes, &len) != 0 ||
	    write_all(fd, bytes, len) != 0 || futimens(fd, long_ago) != 0 ||
	    elf_symbols__load("/proc/self/exe", &orig, err, sizeof(err)) != 0 ||
	    elf_symbols__load(path, &syms, err, sizeof(err)) != 0 ||
	    (n = function_starts(orig, (uintptr_t)test_changed_file - bias, &starts)) < 100) {
		check(false, "file %s: set-up failed (%s, %zu functions)", what[how], err, n);
		goto cleanup;
	}
	for (size_t i = 0; i < n / 2; i++) {
		uint64_t off;
		const char *a = elf_symbols__lookup(syms, starts[i], &off);
		const char *b = elf_symbols__lookup(orig, starts[i], &off);

		found_before += a && b && strcmp(a, b) == 0;
	}
	if (change_file(fd, how, bytes, len) != 0)
		check(false, "file %s: %s", what[how], strerror(errno));
	for (size_t i = 0; i < n; i++) {
		uint64_t off, start, size;
		const char *a = elf_symbols__lookup(syms, starts[i], &off);
		const char *b = elf_symbols__lookup(orig, starts[i], &off);

		moved += elf_symbols__function(syms, starts[i], &start, &size) != 0 ||
			 start != starts[i];
		if (!a)
			continue;
		found_after++;
		wrong += !b || strcmp(a, b) != 0;
	}
	check(found_before == n / 2 && wrong == 0 && found_after < found_before && moved == 0,
	      "file %s under its symbols: %zu of %zu named before, %zu of %zu after (names kept "
	      "from before), %zu other names, %zu functions lost", what[how], found_before, n / 2,
	      found_after, n, wrong, moved);
cleanup:
	elf_symbols__free(orig);
	elf_symbols__free(syms);
	free(starts);
	free(bytes);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
}

/* Names are not copied: the index holds about 12 bytes a function. */
static void test_bytes(void)
{
	struct elf_symbols *syms = NULL;
	char err[256] = "";
	size_t count, bytes;

	if (elf_symbols__load("/proc/self/exe", &syms, err, sizeof(err)) != 0) {
		check(false, "this test's binary loads (%s)", err);
		return;
	}
	count = elf_symbols__count(syms);
	bytes = elf_symbols__bytes(syms);
	check(count > 100 && bytes < count * 12 + 4096,
	      "this test's binary: %zu functions in %zu bytes of heap", count, bytes);
	elf_symbols__drop_functions(syms);
	bytes = elf_symbols__bytes(syms);
	check(elf_symbols__count(syms) == 0 && bytes < 1024,
	      "dropped: the index and its names are gone (%zu bytes left)", bytes);
	elf_symbols__free(syms);
}

int main(void)
{
	test_built_elf();
	test_bytes();
	test_changed_file(REWRITTEN);
	test_changed_file(TRUNCATED);
	test_changed_file(TRUNCATED_REWRITTEN);
	return failures ? 1 : 0;
}
