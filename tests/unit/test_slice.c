/* Unit tests for slices of binaries (user/binary/slice.h): a slice written and read back
 * whole; its symbols and placing as elf_symbols give them (sized and unsized symbols, the
 * entry, function entries, build-id, segments); its rows as a table (wide rows, end
 * markers, a function whose last row runs on, gaps, stretches that switch stacks); its
 * code bytes and recorded function starts; and damaged files refused. Prints one
 * "ok - NAME" / "not ok - NAME" line per check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binary/slice.h"
#include "check.h"

#define TEXT 0x1000ull

static struct module_slices *make_slices(void)
{
	static const struct unwind_row f1[] = {
		{ .pc = TEXT, .cfa_kind = UNWIND_CFA_SP_OFFSET, .cfa_arg = 8, .ra_arg = -8 },
		{ .pc = TEXT + 4, .cfa_kind = UNWIND_CFA_SP_OFFSET, .cfa_arg = 0, .rbp_arg = 0,
		  .ra_arg = UNWIND_ROW_WIDE },
		{ .pc = TEXT + 0x20, .cfa_kind = UNWIND_CFA_END },
	};
	static const struct unwind_row_wide w1[] = { { .cfa_arg = 100000, .ra_arg = -8 } };
	static const struct unwind_row f2[] = {
		{ .pc = TEXT + 0x40, .cfa_kind = UNWIND_CFA_SP_OFFSET, .cfa_arg = 16, .ra_arg = -8 },
	};
	struct module_slices *s = calloc(1, sizeof(*s));
	struct module_slice *sl = s ? module_slices__add(s, "/bin/x") : NULL;
	struct unwind_row *r1 = malloc(sizeof(f1)), *r2 = malloc(sizeof(f2));
	struct unwind_row_wide *wide = malloc(sizeof(w1));
	static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0xc3 };

	if (!sl || !r1 || !r2 || !wide)
		abort();
	memcpy(r1, f1, sizeof(f1));
	memcpy(r2, f2, sizeof(f2));
	memcpy(wide, w1, sizeof(w1));
	sl->build_id_len = 4;
	memcpy(sl->build_id, "\x01\x02\x03\x04", 4);
	sl->entry = TEXT + 0x40;
	sl->nr_function_entries = 1;
	sl->function_entries[0] = TEXT + 0x80;
	sl->segments = calloc(2, sizeof(*sl->segments));
	sl->segments[0] = (struct slice_segment){ .file_offset = 0, .file_size = 0x800, .vaddr = 0 };
	sl->segments[1] = (struct slice_segment){ .file_offset = TEXT, .file_size = 0x1000,
						  .vaddr = TEXT, .exec = true };
	sl->nr_segments = 2;
	sl->symbols = calloc(3, sizeof(*sl->symbols));
	sl->symbols[0] = (struct slice_symbol){ TEXT, 0x20, strdup("sized") };
	sl->symbols[1] = (struct slice_symbol){ TEXT + 0x40, 0, strdup("unsized") };
	sl->symbols[2] = (struct slice_symbol){ TEXT + 0x60, 0x10, strdup("next") };
	sl->nr_symbols = 3;
	sl->has_table = true;
	sl->fns = calloc(2, sizeof(*sl->fns));
	sl->fns[0] = (struct unwind_fn_rows){ .lo = TEXT, .end = TEXT + 0x20, .rows = r1,
					      .nr_rows = 3, .wide = wide, .nr_wide = 1 };
	sl->fns[1] = (struct unwind_fn_rows){ .lo = TEXT + 0x40, .end = TEXT + 0x50,
					      .rows = r2, .nr_rows = 1 };
	sl->nr_fns = 2;
	sl->switches = calloc(1, sizeof(*sl->switches));
	sl->switches[0][0] = TEXT + 0x100;
	sl->switches[0][1] = TEXT + 0x180;
	sl->nr_switches = 1;
	sl->code_starts = calloc(1, sizeof(*sl->code_starts));
	sl->code_starts[0] = (struct slice_code_start){ TEXT + 0x210, TEXT + 0x200 };
	sl->nr_code_starts = 1;
	code_copies__add(sl->code, TEXT + 0x40, code, sizeof(code));
	if (!module_slices__add(s, "/lib/no-elf"))
		abort();
	s->slices[1].load_err = -ENOEXEC;
	return s;
}

static void test_round_trip(const char *path)
{
	struct module_slices *s = make_slices(), *back = NULL;
	const struct module_slice *sl;
	char err[256] = "";
	uint8_t buf[16];

	check(module_slices__write(path, s, err, sizeof(err)) == 0, "write: a slice file%s%s", err[0] ? ": " : "", err);
	check(module_slices__read(path, &back, err, sizeof(err)) == 0 && back->nr == 2,
	      "read: the file back, both slices%s%s", err[0] ? ": " : "", err);
	sl = back ? module_slices__find(back, "/bin/x") : NULL;
	check(sl && sl->nr_symbols == 3 && strcmp(sl->symbols[1].name, "unsized") == 0 &&
		      sl->nr_fns == 2 && sl->fns[0].nr_wide == 1 && sl->nr_switches == 1 &&
		      sl->nr_code_starts == 1 && sl->entry == TEXT + 0x40,
	      "read: what was written");
	check(back && module_slices__find(back, "/lib/no-elf")->load_err == -ENOEXEC &&
		      !module_slices__find(back, "/lib/other"),
	      "read: a binary's load error kept; a binary never sliced has no slice");
	check(sl && module_slice__read(sl, TEXT + 0x41, buf, sizeof(buf)) == 4 && buf[0] == 0x48 &&
		      module_slice__read(sl, TEXT + 0x45, buf, 1) == -ENOENT,
	      "read: code bytes as far as they were kept");
	module_slices__free(s);
	module_slices__free(back);
}

static void test_symbols(const char *path)
{
	struct module_slices *s = NULL;
	struct elf_symbols *syms = NULL;
	const uint8_t *id;
	uint64_t start, size, off, vaddr;
	char err[256] = "";

	module_slices__read(path, &s, err, sizeof(err));
	check(s && module_slice__symbols(&s->slices[0], &syms, err, sizeof(err)) == 0,
	      "symbols: the slice's image loads%s%s", err[0] ? ": " : "", err);
	if (!syms)
		return;
	check(elf_symbols__function(syms, TEXT + 0x10, &start, &size) == 0 && start == TEXT &&
		      size == 0x20 && elf_symbols__function(syms, TEXT + 0x30, &start, &size) != 0,
	      "symbols: a sized symbol holds its range alone");
	check(elf_symbols__lookup(syms, TEXT + 0x5f, &off) &&
		      strcmp(elf_symbols__lookup(syms, TEXT + 0x5f, &off), "unsized") == 0 &&
		      strcmp(elf_symbols__lookup(syms, TEXT + 0x60, &off), "next") == 0,
	      "symbols: an unsized symbol runs to the next");
	check(elf_symbols__entry(syms) == TEXT + 0x40 &&
		      elf_symbols__is_function_entry(syms, TEXT + 0x80) &&
		      !elf_symbols__is_function_entry(syms, TEXT + 0x40) &&
		      elf_symbols__build_id(syms, &id) == 4 && memcmp(id, "\x01\x02\x03\x04", 4) == 0,
	      "symbols: entry, function entries and build-id");
	check(elf_symbols__offset_to_vaddr(syms, TEXT, TEXT + 0x44, &vaddr) == 0 &&
		      vaddr == TEXT + 0x44,
	      "symbols: a mapping of the executable segment placed by the segments");
	elf_symbols__free(syms);
	check(module_slice__symbols(&s->slices[1], &syms, err, sizeof(err)) == 0 &&
		      elf_symbols__function(syms, TEXT, &start, &size) != 0,
	      "symbols: a slice without symbols names nothing, and loads");
	elf_symbols__free(syms);
	module_slices__free(s);
}

static void test_table(const char *path)
{
	struct module_slices *s = NULL;
	struct unwind_table *t = NULL;
	struct unwind_rules rules;
	uint64_t start, lo, hi;
	char err[256] = "";

	module_slices__read(path, &s, err, sizeof(err));
	check(s && module_slice__table(&s->slices[0], &t) == 0 &&
		      module_slice__table(&s->slices[1], &(struct unwind_table *){ NULL }) == -ENOENT,
	      "table: made of the slice's functions; none for a binary without");
	if (!t)
		return;
	check(unwind_table__rules_at(t, TEXT + 8, &rules) && rules.cfa == UNWIND_CFA_SP_OFFSET &&
		      rules.cfa_offset == 100000,
	      "table: a wide row's arguments, its side-table index moved with it");
	check(!unwind_table__find(t, TEXT + 0x20) && !unwind_table__find(t, TEXT + 0x3f) &&
		      unwind_table__gap(t, TEXT + 0x30, &lo, &hi) == 0 && lo == TEXT + 0x20 &&
		      hi == TEXT + 0x40,
	      "table: no rows past an end marker, the gap up to the next function");
	check(unwind_table__function_start(t, TEXT + 0x48, &start) == 0 && start == TEXT + 0x40 &&
		      !unwind_table__find(t, TEXT + 0x50),
	      "table: a function's start, and its end where the slice ends it");
	check(unwind_table__switches_stack(t, TEXT + 0x100) &&
		      unwind_table__switches_stack(t, TEXT + 0x17f) &&
		      !unwind_table__switches_stack(t, TEXT + 0x180) &&
		      !unwind_table__switches_stack(t, TEXT + 0x48),
	      "table: stretches that switch stacks");
	check(module_slice__code_start(&s->slices[0], TEXT + 0x210, &start) == 0 &&
		      start == TEXT + 0x200 &&
		      module_slice__code_start(&s->slices[0], TEXT + 0x211, &start) == -ENOENT,
	      "code starts: as recorded, by address");
	unwind_table__free(t);
	module_slices__free(s);
}

/* The file cut at every length, and with a count that claims more than it holds. */
static void test_damaged(const char *path, const char *cut)
{
	struct module_slices *s = make_slices(), *back;
	char err[256] = "";
	bool refused = true;
	FILE *f;
	uint8_t whole[65536];
	size_t len;

	module_slices__write(path, s, err, sizeof(err));
	module_slices__free(s);
	/* uncompressed, as gzip's reader takes it too */
	snprintf(err, sizeof(err), "gzip -dc < %s", path);
	f = popen(err, "r");
	len = f ? fread(whole, 1, sizeof(whole), f) : 0;
	if (f)
		pclose(f);
	for (size_t n = 0; n < len; n += n < 64 ? 1 : 17) {
		f = fopen(cut, "we");
		fwrite(whole, 1, n, f);
		fclose(f);
		if (module_slices__read(cut, &back, err, sizeof(err)) == 0) {
			refused = false;
			module_slices__free(back);
		}
	}
	check(len > 0 && refused, "damaged: every file cut short is refused (%zu bytes)", len);
	memset(whole + 12, 0xff, 4);
	f = fopen(cut, "we");
	fwrite(whole, 1, len, f);
	fclose(f);
	check(module_slices__read(cut, &back, err, sizeof(err)) == -EINVAL && strstr(err, cut),
	      "damaged: a count past the file's end is refused, the file named");
}

int main(void)
{
	char path[] = "/tmp/hprof-slice.XXXXXX", cut[] = "/tmp/hprof-slice-cut.XXXXXX";
	int fd = mkstemp(path), fd2 = mkstemp(cut);

	if (fd < 0 || fd2 < 0)
		return 1;
	close(fd);
	close(fd2);
	test_round_trip(path);
	test_symbols(path);
	test_table(path);
	test_damaged(path, cut);
	unlink(path);
	unlink(cut);
	return failures ? 1 : 0;
}
