#include "binary/slice_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "binary/naming.h"
#include "util/grow.h"

/* How far around an address in Go code that switches stacks its stretch is looked for:
 * those functions (systemstack, mcall, morestack) are a few hundred bytes. */
#define SWITCH_REACH 4096u

struct touched {
	uint32_t id; /* the module's */
	uint64_t *addrs;
	size_t nr_addrs, cap_addrs;
	struct code_copies *code;
};

struct slice_writer {
	struct touched *mods;
	size_t nr, cap;
};

struct slice_writer *slice_writer__new(void)
{
	return calloc(1, sizeof(struct slice_writer));
}

static struct touched *touched(struct slice_writer *w, const struct module *mod)
{
	struct touched *t;

	for (size_t i = 0; i < w->nr; i++) {
		if (w->mods[i].id == mod->id)
			return &w->mods[i];
	}
	if (grow_array((void **)&w->mods, &w->cap, w->nr + 1, sizeof(*w->mods)))
		return NULL;
	t = &w->mods[w->nr];
	memset(t, 0, sizeof(*t));
	t->id = mod->id;
	if (!(t->code = code_copies__new_unbounded()))
		return NULL;
	w->nr++;
	return t;
}

int slice_writer__address(struct slice_writer *w, const struct module *mod, uint64_t vaddr)
{
	struct touched *t = mod->anon_code ? NULL : touched(w, mod);

	if (mod->anon_code)
		return 0;
	if (!t || grow_array((void **)&t->addrs, &t->cap_addrs, t->nr_addrs + 1, sizeof(*t->addrs)))
		return -ENOMEM;
	t->addrs[t->nr_addrs++] = vaddr;
	return 0;
}

void slice_writer__code(struct slice_writer *w, const struct module *mod, uint64_t offset,
			const uint8_t *bytes, size_t len)
{
	struct touched *t = mod->anon_code ? NULL : touched(w, mod);

	if (t)
		code_copies__add(t->code, offset, bytes, len);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- what a slice keeps ---- */

/* The PT_LOAD segments, read again from the file (or the vDSO's image, ours). */
static int read_segments(const struct module *mod, struct module_slice *sl)
{
	const void *vdso = (const void *)getauxval(AT_SYSINFO_EHDR);
	bool is_vdso = strcmp(mod->path, "[vdso]") == 0;
	int fd = -1, ret = 0;
	size_t n;
	Elf *elf;

	elf_version(EV_CURRENT);
	if (is_vdso) {
		if (!vdso || !elf_symbols__image_size(mod->syms))
			return -ENOENT;
		elf = elf_memory((char *)vdso, elf_symbols__image_size(mod->syms));
	} else {
		fd = open(mod->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		elf = elf_begin(fd, ELF_C_READ, NULL);
	}
	if (!elf || elf_getphdrnum(elf, &n) != 0 ||
	    !(sl->segments = calloc(n ? n : 1, sizeof(*sl->segments)))) {
		ret = -EINVAL;
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		sl->segments[sl->nr_segments++] = (struct slice_segment){
			.file_offset = ph.p_offset, .file_size = ph.p_filesz, .vaddr = ph.p_vaddr,
			.exec = (ph.p_flags & PF_X) != 0,
		};
	}
done:
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	return ret;
}

static bool has_symbol(const struct module_slice *sl, uint64_t start)
{
	for (size_t i = 0; i < sl->nr_symbols; i++) {
		if (sl->symbols[i].start == start)
			return true;
	}
	return false;
}

static int add_symbol(struct module_slice *sl, size_t *cap, uint64_t start, uint64_t size,
		      const char *name)
{
	struct slice_symbol *s;

	if (has_symbol(sl, start))
		return 0;
	if (grow_array((void **)&sl->symbols, cap, sl->nr_symbols + 1, sizeof(*sl->symbols)))
		return -ENOMEM;
	s = &sl->symbols[sl->nr_symbols];
	s->start = start;
	s->size = size < UINT32_MAX ? (uint32_t)size : UINT32_MAX;
	if (!(s->name = strdup(name)))
		return -ENOMEM;
	sl->nr_symbols++;
	return 0;
}

/* The function holding vaddr, and where its symbol has no size, the next symbol, which
 * ends it: the first address past vaddr that the same function no longer holds. */
static int keep_symbols_at(const struct elf_symbols *syms, struct module_slice *sl, size_t *cap,
			   uint64_t vaddr)
{
	uint64_t start, size, off, seg_start, seg_end, seg_off, lo, hi, s2, z2;
	const char *name;
	int err;

	if (elf_symbols__function(syms, vaddr, &start, &size) != 0 || has_symbol(sl, start) ||
	    !(name = elf_symbols__lookup(syms, vaddr, &off)))
		return 0;
	err = add_symbol(sl, cap, start, size, name);
	if (err || size || elf_symbols__segment(syms, vaddr, &seg_start, &seg_end, &seg_off) != 0)
		return err;
	lo = vaddr + 1;
	hi = seg_end;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (elf_symbols__function(syms, mid, &s2, &z2) == 0 && s2 == start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < seg_end && elf_symbols__function(syms, lo, &s2, &z2) == 0 && s2 == lo &&
	    (name = elf_symbols__lookup(syms, lo, &off)))
		err = add_symbol(sl, cap, s2, z2, name);
	return err;
}

static int compare_symbols(const void *a, const void *b)
{
	const struct slice_symbol *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The rows of the function holding pc, copied, unless kept already. */
static int keep_function(const struct unwind_table *t, struct module_slice *sl, size_t *cap,
			 uint64_t pc)
{
	struct unwind_fn_rows f;
	struct unwind_row *rows;
	struct unwind_row_wide *wide;

	if (unwind_table__function_rows(t, pc, &f) != 0)
		return 0;
	for (size_t i = 0; i < sl->nr_fns; i++) {
		if (sl->fns[i].lo == f.lo)
			return 0;
	}
	if (grow_array((void **)&sl->fns, cap, sl->nr_fns + 1, sizeof(*sl->fns)))
		return -ENOMEM;
	rows = malloc((f.nr_rows ? f.nr_rows : 1) * sizeof(*rows));
	wide = malloc((f.nr_wide ? f.nr_wide : 1) * sizeof(*wide));
	if (!rows || !wide) {
		free(rows);
		free(wide);
		return -ENOMEM;
	}
	memcpy(rows, f.rows, f.nr_rows * sizeof(*rows));
	memcpy(wide, f.wide, f.nr_wide * sizeof(*wide));
	f.rows = rows;
	f.wide = wide;
	sl->fns[sl->nr_fns++] = f;
	return 0;
}

static int compare_fns(const void *a, const void *b)
{
	const struct unwind_fn_rows *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorted, and none starting inside the one before (a Go function's rows over an FDE's):
 * the later goes. */
static void order_functions(struct module_slice *sl)
{
	size_t kept = 0;

	qsort(sl->fns, sl->nr_fns, sizeof(*sl->fns), compare_fns);
	for (size_t i = 0; i < sl->nr_fns; i++) {
		if (kept && sl->fns[i].lo < sl->fns[kept - 1].end) {
			free((void *)sl->fns[i].rows);
			free((void *)sl->fns[i].wide);
			continue;
		}
		sl->fns[kept++] = sl->fns[i];
	}
	sl->nr_fns = kept;
}

static int keep_rows_at(const struct unwind_table *t, struct module_slice *sl, size_t *cap,
			uint64_t pc)
{
	uint64_t lo, hi;
	int err;

	if (unwind_table__function_rows(t, pc, &(struct unwind_fn_rows){ 0 }) == 0)
		return keep_function(t, sl, cap, pc);
	if (unwind_table__gap(t, pc, &lo, &hi) != 0)
		return 0;
	err = lo ? keep_function(t, sl, cap, lo - 1) : 0;
	if (!err && hi != UINT64_MAX)
		err = keep_function(t, sl, cap, hi);
	return err;
}

static int keep_switch_at(const struct unwind_table *t, struct module_slice *sl, size_t *cap,
			  uint64_t pc)
{
	uint64_t lo = pc, hi = pc + 1;

	if (!unwind_table__switches_stack(t, pc))
		return 0;
	for (size_t i = 0; i < sl->nr_switches; i++) {
		if (sl->switches[i][0] <= pc && pc < sl->switches[i][1])
			return 0;
	}
	while (lo > 0 && pc - lo < SWITCH_REACH && unwind_table__switches_stack(t, lo - 1))
		lo--;
	while (hi - pc < SWITCH_REACH && unwind_table__switches_stack(t, hi))
		hi++;
	if (grow_array((void **)&sl->switches, cap, sl->nr_switches + 1, sizeof(*sl->switches)))
		return -ENOMEM;
	sl->switches[sl->nr_switches][0] = lo;
	sl->switches[sl->nr_switches][1] = hi;
	sl->nr_switches++;
	return 0;
}

static int compare_switches(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void keep_function_entry(const struct elf_symbols *syms, struct module_slice *sl,
				uint64_t vaddr)
{
	if (!elf_symbols__is_function_entry(syms, vaddr) ||
	    sl->nr_function_entries == ELF_FUNCTION_ENTRIES_MAX)
		return;
	for (uint32_t i = 0; i < sl->nr_function_entries; i++) {
		if (sl->function_entries[i] == vaddr)
			return;
	}
	sl->function_entries[sl->nr_function_entries++] = vaddr;
}

/* Where naming finds the function holding vaddr to start, for code neither a symbol nor
 * an FDE covers (frame_name__code_start). */
static int keep_code_start(struct module_registry *reg, struct module *mod,
			   const struct unwind_table *table, struct module_slice *sl, size_t *cap,
			   uint64_t vaddr)
{
	uint64_t start, size;

	if (elf_symbols__function(mod->syms, vaddr, &start, &size) == 0 ||
	    unwind_table__function_start(table, vaddr, &start) == 0 ||
	    frame_name__code_start(reg, mod, vaddr, &start) != 0)
		return 0;
	if (sl->nr_code_starts && sl->code_starts[sl->nr_code_starts - 1].vaddr == vaddr)
		return 0;
	if (grow_array((void **)&sl->code_starts, cap, sl->nr_code_starts + 1,
		       sizeof(*sl->code_starts)))
		return -ENOMEM;
	sl->code_starts[sl->nr_code_starts++] = (struct slice_code_start){ vaddr, start };
	return 0;
}

static void copy_code(void *ctx, uint64_t offset, const uint8_t *bytes, size_t len)
{
	code_copies__add(ctx, offset, bytes, len);
}

/* Everything a replay asks at the addresses, and at the address before each (a return
 * address's call). */
static int fill_slice(struct module_registry *reg, struct module *mod, struct touched *t,
		      struct module_slice *sl)
{
	const struct unwind_table *table = module_registry__unwind_table(reg, mod);
	size_t sym_cap = 0, fn_cap = 0, switch_cap = 0, start_cap = 0;
	const uint8_t *id;
	int err = 0;

	sl->load_err = mod->load_err;
	code_copies__each(t->code, copy_code, sl->code);
	if (!mod->syms)
		return 0;
	sl->build_id_len = (uint32_t)elf_symbols__build_id(mod->syms, &id);
	memcpy(sl->build_id, id, sl->build_id_len);
	sl->entry = elf_symbols__entry(mod->syms);
	err = read_segments(mod, sl);
	sl->has_table = table != NULL;
	qsort(t->addrs, t->nr_addrs, sizeof(*t->addrs), compare_u64);
	for (size_t i = 0; !err && i < t->nr_addrs; i++) {
		if (i && t->addrs[i] == t->addrs[i - 1])
			continue;
		/* the address, and the one before it (a return address's call) */
		for (int k = t->addrs[i] ? 1 : 0; !err && k >= 0; k--) {
			uint64_t pc = t->addrs[i] - (uint64_t)k;

			keep_function_entry(mod->syms, sl, pc);
			err = keep_symbols_at(mod->syms, sl, &sym_cap, pc);
			if (!err && table)
				err = keep_rows_at(table, sl, &fn_cap, pc);
			if (!err && table)
				err = keep_switch_at(table, sl, &switch_cap, pc);
			if (!err)
				err = keep_code_start(reg, mod, table, sl, &start_cap, pc);
		}
	}
	qsort(sl->symbols, sl->nr_symbols, sizeof(*sl->symbols), compare_symbols);
	order_functions(sl);
	qsort(sl->switches, sl->nr_switches, sizeof(*sl->switches), compare_switches);
	return err;
}

int slice_writer__finish(struct slice_writer *w, struct module_registry *reg,
			 struct module_slices **out)
{
	struct module_slices *s = calloc(1, sizeof(*s));
	int err = s ? 0 : -ENOMEM;

	*out = NULL;
	/* every binary, touched or not: a replay places each mapping by its segments, and
	 * takes a file that is no ELF for JIT code (SBCL's core) by its load error */
	for (uint32_t id = MODULE_FIRST_FILE; !err && id < MODULE_FIRST_FILE + module_registry__count(reg);
	     id++) {
		struct module *mod = module_registry__by_id(reg, id);
		struct touched none = { .id = id }, *t = &none;
		struct module_slice *sl;

		if (!mod || mod->anon_code || module_slices__find(s, mod->path))
			continue;
		for (size_t i = 0; i < w->nr; i++) {
			if (w->mods[i].id == id)
				t = &w->mods[i];
		}
		module_registry__use(reg, mod);
		sl = module_slices__add(s, mod->path);
		err = sl ? fill_slice(reg, mod, t, sl) : -ENOMEM;
	}
	if (err) {
		module_slices__free(s);
		return err;
	}
	*out = s;
	return 0;
}

void slice_writer__free(struct slice_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nr; i++) {
		free(w->mods[i].addrs);
		code_copies__free(w->mods[i].code);
	}
	free(w->mods);
	free(w);
}
