#include "binary/dwarf_index.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "binary/debug_image.h"
#include "binary/dwarf_file.h"
#include "binary/scope_tree.h"
#include "util/grow.h"

/* From libstdc++ (the C++ ABI's demangler, as binary/naming.c uses it). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Most compile units read, and .debug_aranges entries. */
#define MAX_UNITS (1u << 20)
#define MAX_ARANGES (16u << 20)

/* One top scope's inside: most of an LTO unit's functions are never sampled. */
struct inner_tree {
	struct scope_tree tree;
	bool indexed, failed, over_bounds;
};

struct unit {
	Dwarf_Die die;        /* the unit that has the code: a skeleton's split unit */
	Dwarf_Die line_die;   /* the unit whose line table covers the code: the skeleton */
	bool indexed, failed, over_bounds;
	bool lines_counted, files_counted; /* line tables libdw read for line_die, die */
	struct scope_tree tops;   /* functions, their insides not walked */
	struct inner_tree *inner; /* per top scope, walked when a pc falls in it */
};

struct cached_chain {
	uint64_t pc;
	struct source_frame *frames;
	uint32_t nr;
	int err; /* when nr is 0: make_chain's reason */
	UT_hash_handle hh;
};

struct interned {
	char *text;
	UT_hash_handle hh;
};

struct dwarf_index {
	struct dwarf_file file;
	struct debug_alt alt;
	Dwarf *dwarf;
	struct unit *units;
	size_t nr_units, units_cap;
	size_t missing_dwo; /* skeleton units whose split unit libdw did not find */
	struct addr_range *unit_ranges; /* sorted by lo */
	size_t nr_unit_ranges, unit_ranges_cap;
	struct cached_chain *cache;
	size_t nr_cached;
	struct interned *strings;
	size_t bytes;
	size_t libdw_bytes; /* libdw's state, estimated: sections read, line tables */
	uint64_t scopes_total;
	struct dwarf_index_stats stats;
	struct source_frame scratch[DWARF_INDEX_MAX_DEPTH]; /* a chain not cached */
};

static int compare_ranges(const void *a, const void *b)
{
	const struct addr_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->owner < y->owner ? -1 : x->owner > y->owner;
}

/* One .debug_aranges entry: [lo, hi) is code of the unit whose DIE is at die_off. */
struct unit_arange {
	uint64_t die_off, lo, hi;
};

static int compare_aranges(const void *a, const void *b)
{
	const struct unit_arange *x = a, *y = b;

	if (x->die_off != y->die_off)
		return x->die_off < y->die_off ? -1 : 1;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* .debug_aranges' entries, sorted by their unit's DIE offset: a unit's ranges without
 * reading its DIE's DW_AT_ranges (a third of libc6-dbg's first use: 1,900 units). None
 * when the file has no such section or libdw cannot read it. Returns 0 or -ENOMEM. */
static int read_aranges(Dwarf *dwarf, struct unit_arange **out, size_t *nr)
{
	Dwarf_Aranges *aranges;
	size_t n, kept = 0;
	struct unit_arange *arr;

	*out = NULL;
	*nr = 0;
	if (dwarf_getaranges(dwarf, &aranges, &n) != 0 || n == 0 || n > MAX_ARANGES)
		return 0;
	arr = malloc(n * sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Arange *a = dwarf_onearange(aranges, i);
		Dwarf_Addr addr;
		Dwarf_Word len;
		Dwarf_Off off;

		if (a && dwarf_getarangeinfo(a, &addr, &len, &off) == 0 && len &&
		    addr + len > addr)
			arr[kept++] = (struct unit_arange){ off, addr, addr + len };
	}
	qsort(arr, kept, sizeof(*arr), compare_aranges);
	*out = arr;
	*nr = kept;
	return 0;
}

/* The entries of the unit whose DIE is at die_off: *n of them from the returned one (NULL
 * when there are none at all). */
static const struct unit_arange *aranges_of(const struct unit_arange *arr, size_t nr,
					    uint64_t die_off, size_t *n)
{
	size_t lo = 0, hi = nr, end;

	*n = 0;
	if (!arr)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (arr[mid].die_off < die_off)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < nr && arr[end].die_off == die_off; end++)
		;
	*n = end - lo;
	return arr + lo;
}

/* Unit owner's ranges: from .debug_aranges where it lists the unit (the same ranges as
 * its DIE's: the compiler writes both from one list; bench/README.md says where this was
 * checked), else from its DIE, so that a unit missing from .debug_aranges is still found. */
static int add_unit_ranges(struct dwarf_index *ix, Dwarf_Die *cudie, uint32_t owner,
			   const struct unit_arange *arr, size_t nr)
{
	size_t n;
	const struct unit_arange *a = aranges_of(arr, nr, dwarf_dieoffset(cudie), &n);

	if (n == 0)
		return addr_ranges__add_die(cudie, &ix->unit_ranges, &ix->nr_unit_ranges,
					    &ix->unit_ranges_cap, owner);
	for (size_t i = 0; i < n; i++) {
		if (grow_array((void **)&ix->unit_ranges, &ix->unit_ranges_cap,
			       ix->nr_unit_ranges + 1, sizeof(*ix->unit_ranges)))
			return -ENOMEM;
		ix->unit_ranges[ix->nr_unit_ranges++] =
			(struct addr_range){ a[i].lo, a[i].hi, owner };
	}
	return 0;
}

/* Every compile unit and its ranges; a skeleton unit stands for its split unit. */
static int read_units(struct dwarf_index *ix)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die cudie, subdie;
	struct unit_arange *aranges;
	size_t nr_aranges;
	int err, ret;

	err = read_aranges(ix->dwarf, &aranges, &nr_aranges);
	while (!err && ix->nr_units < MAX_UNITS &&
	       (ret = dwarf_get_units(ix->dwarf, cu, &next, &version, &type, &cudie, &subdie)) == 0) {
		struct unit *u;

		cu = next;
		if (type != DW_UT_compile && type != DW_UT_skeleton && type != DW_UT_partial)
			continue;
		if (grow_array((void **)&ix->units, &ix->units_cap, ix->nr_units + 1, sizeof(*u))) {
			err = -ENOMEM;
			break;
		}
		u = &ix->units[ix->nr_units];
		memset(u, 0, sizeof(*u));
		u->line_die = cudie;
		/* a skeleton whose .dwo is missing keeps its own DIE: lines, no inline frames */
		u->die = type == DW_UT_skeleton && dwarf_tag(&subdie) == DW_TAG_compile_unit ? subdie
											   : cudie;
		ix->missing_dwo += type == DW_UT_skeleton && u->die.addr == cudie.addr;
		err = add_unit_ranges(ix, &cudie, (uint32_t)ix->nr_units, aranges, nr_aranges);
		ix->nr_units++;
	}
	free(aranges);
	if (err)
		return err;
	if (ix->nr_unit_ranges)
		qsort(ix->unit_ranges, ix->nr_unit_ranges, sizeof(*ix->unit_ranges), compare_ranges);
	ix->bytes += ix->units_cap * sizeof(*ix->units) +
		     ix->unit_ranges_cap * sizeof(*ix->unit_ranges);
	return 0;
}

static bool has_debug_info(Dwarf *dwarf)
{
	Dwarf_CU *next;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die cudie, subdie;

	return dwarf_get_units(dwarf, NULL, &next, &version, &type, &cudie, &subdie) == 0;
}

/* The rest of dwarf_index__open, on the file f (the index's from now on, as is ix). */
static int finish_open(struct dwarf_index *ix, const char *path, const struct dwarf_file *f,
		       char *msg, size_t msg_len)
{
	int err;

	ix->file = *f;
	ix->libdw_bytes += f->section_bytes;
	ix->dwarf = f->elf ? dwarf_begin_elf(f->elf, DWARF_C_READ, NULL) : NULL;
	if (!ix->dwarf || !has_debug_info(ix->dwarf)) {
		snprintf(msg, msg_len, "%s: no DWARF: %s", path, dwarf_errmsg(-1));
		return -ENOENT;
	}
	if (f->image)
		debug_image__find_alt(ix->dwarf, f->fd, &ix->alt);
	err = read_units(ix);
	if (err)
		snprintf(msg, msg_len, "%s: compile units: %s", path, strerror(-err));
	return err;
}

/* The index over the opened file f, which it owns from now on (closed when it fails). */
static int open_file(const char *path, struct dwarf_file *f, struct dwarf_index **out,
		     char *msg, size_t msg_len)
{
	struct dwarf_index *ix = calloc(1, sizeof(*ix));
	int err;

	*out = NULL;
	if (!ix) {
		dwarf_file__close(f);
		return -ENOMEM;
	}
	ix->alt.fd = -1;
	ix->file.fd = -1;
	err = finish_open(ix, path, f, msg, msg_len);
	if (err) {
		dwarf_index__free(ix);
		return err;
	}
	*out = ix;
	return 0;
}

int dwarf_index__open(const char *path, struct dwarf_index **out, char *msg, size_t msg_len)
{
	struct dwarf_file f;
	int err = dwarf_file__open(path, true, &f, msg, msg_len);

	*out = NULL;
	if (!err)
		err = open_file(path, &f, out, msg, msg_len);
	/* libdw looks for a split unit's .dwo relative to the directory of the file it read,
	 * which an image in memory has not: read from the file itself then, inflated by
	 * libdw */
	if (err || !(*out)->file.image || !(*out)->missing_dwo)
		return err;
	dwarf_index__free(*out);
	*out = NULL;
	err = dwarf_file__open(path, false, &f, msg, msg_len);
	return err ? err : open_file(path, &f, out, msg, msg_len);
}

/* The unit whose ranges hold pc, or NULL. Unit ranges may overlap (hostile or odd DWARF):
 * the last range starting at or below pc that holds it, looked back over a bounded few. */
static struct unit *unit_of(struct dwarf_index *ix, uint64_t pc)
{
	size_t lo = 0, hi = ix->nr_unit_ranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->unit_ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, looked = 0; i-- > 0 && looked < 64; looked++) {
		if (pc < ix->unit_ranges[i].hi)
			return &ix->units[ix->unit_ranges[i].owner];
	}
	return NULL;
}

static void forget_unit(struct dwarf_index *ix, struct unit *u)
{
	for (size_t i = 0; u->inner && i < u->tops.nr_scopes; i++)
		scope_tree__clear(&u->inner[i].tree, &ix->scopes_total);
	free(u->inner);
	u->inner = NULL;
	scope_tree__clear(&u->tops, &ix->scopes_total);
}

/* Counts a walk's failure; returns the reason make_chain gives. */
static int walk_failed(struct dwarf_index *ix, int err)
{
	if (err == -E2BIG)
		ix->stats.over_bounds++;
	else
		ix->stats.bad_dwarf++;
	return err == -E2BIG ? -E2BIG : -EBADMSG;
}

/* The unit's top scopes. */
static int ensure_indexed(struct dwarf_index *ix, struct unit *u)
{
	int err;

	if (u->indexed)
		return !u->failed ? 0 : u->over_bounds ? -E2BIG : -EBADMSG;
	u->indexed = true;
	err = scope_tree__index_tops(&u->tops, &u->die, &ix->scopes_total, DWARF_INDEX_MAX_SCOPES);
	if (!err && u->tops.nr_scopes && !(u->inner = calloc(u->tops.nr_scopes, sizeof(*u->inner))))
		err = -ENOMEM;
	if (err) {
		forget_unit(ix, u);
		u->failed = true;
		u->over_bounds = err == -E2BIG;
		return walk_failed(ix, err);
	}
	ix->stats.units_indexed++;
	ix->stats.scopes = ix->scopes_total;
	ix->bytes += scope_tree__bytes(&u->tops) + u->tops.nr_scopes * sizeof(*u->inner);
	return 0;
}

/* The inside of u's top scope top, walked at its first pc. */
static int ensure_inner(struct dwarf_index *ix, struct unit *u, uint32_t top,
			const struct scope_tree **out)
{
	struct inner_tree *in = &u->inner[top];
	int err;

	*out = &in->tree;
	if (in->indexed)
		return !in->failed ? 0 : in->over_bounds ? -E2BIG : -EBADMSG;
	in->indexed = true;
	err = scope_tree__index_inner(&in->tree, &u->tops.scopes[top], &ix->scopes_total,
				      DWARF_INDEX_MAX_SCOPES);
	if (err) {
		scope_tree__clear(&in->tree, &ix->scopes_total);
		in->failed = true;
		in->over_bounds = err == -E2BIG;
		return walk_failed(ix, err);
	}
	ix->stats.scopes = ix->scopes_total;
	ix->bytes += scope_tree__bytes(&in->tree);
	return 0;
}

static const char *intern(struct dwarf_index *ix, const char *text)
{
	struct interned *e;
	size_t len = strlen(text);

	HASH_FIND(hh, ix->strings, text, len, e);
	if (e)
		return e->text;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->text = strdup(text))) {
		free(e);
		return NULL;
	}
	HASH_ADD_KEYPTR(hh, ix->strings, e->text, len, e);
	ix->bytes += sizeof(*e) + len + 1;
	return e->text;
}

/* A function's name as eu-addr2line -C gives it: its linkage name demangled, else its
 * name, through DW_AT_abstract_origin and DW_AT_specification. */
static const char *function_name(struct dwarf_index *ix, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	char *demangled = NULL;
	const char *kept;
	int status = -1;

	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (name && name[0] == '_' && name[1] == 'Z')
		demangled = __cxa_demangle(name, NULL, NULL, &status);
	if (demangled && status == 0)
		name = demangled;
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	kept = intern(ix, name ? name : "??");
	free(demangled);
	return kept;
}

/* A file name as eu-addr2line prints it: a relative one after the unit's DW_AT_comp_dir
 * (Debian's packages are built with relative names: "./csu/../csu/libc-start.c"). */
static const char *source_file(struct dwarf_index *ix, struct unit *u, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir;
	char *joined = NULL;
	const char *kept;

	if (!file)
		return intern(ix, "");
	if (file[0] == '/' ||
	    !(dir = dwarf_formstring(dwarf_attr(&u->line_die, DW_AT_comp_dir, &attr))) || !dir[0])
		return intern(ix, file);
	if (asprintf(&joined, "%s/%s", dir, file) < 0)
		return NULL;
	kept = intern(ix, joined);
	free(joined);
	return kept;
}

/* Notes the line table libdw now holds for die, read whole at its first use: most of the
 * memory a unit costs (a Dwarf_Line, with its share of the sorted array, per row). */
static void count_lines(struct dwarf_index *ix, Dwarf_Die *die, bool *counted)
{
	Dwarf_Lines *lines;
	size_t n;

	if (*counted)
		return;
	*counted = true;
	if (dwarf_getsrclines(die, &lines, &n) == 0) {
		ix->libdw_bytes += n * DWARF_INDEX_LINE_BYTES;
		ix->stats.lines += n;
	}
}

/* The call site of an inlined scope: its DW_AT_call_file in the unit's file table. */
static void call_site(struct dwarf_index *ix, struct unit *u, Dwarf_Die *die,
		      struct source_frame *f)
{
	Dwarf_Attribute attr;
	Dwarf_Word file = 0, line = 0;
	Dwarf_Files *files;
	size_t nfiles;
	const char *name = NULL;

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &line) == 0)
		f->line = line > UINT32_MAX ? 0 : (uint32_t)line;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &file) == 0 &&
	    dwarf_getsrcfiles(&u->die, &files, &nfiles) == 0 && file < nfiles)
		name = dwarf_filesrc(files, file, NULL, NULL);
	/* one table when die is the line unit's own (no split unit) */
	if (u->die.cu == u->line_die.cu)
		count_lines(ix, &u->line_die, &u->lines_counted);
	else
		count_lines(ix, &u->die, &u->files_counted);
	f->file = source_file(ix, u, name);
}

/* The line table's row for pc. */
static void pc_line(struct dwarf_index *ix, struct unit *u, uint64_t pc, struct source_frame *f)
{
	Dwarf_Line *line = dwarf_getsrc_die(&u->line_die, pc);
	const char *file = line ? dwarf_linesrc(line, NULL, NULL) : NULL;
	int lineno = 0;

	count_lines(ix, &u->line_die, &u->lines_counted);
	if (line && dwarf_lineno(line, &lineno) == 0 && lineno > 0)
		f->line = (uint32_t)lineno;
	f->file = source_file(ix, u, file);
}

/* pc's chain into frames; returns how many, 0 when none, and then in *err why: -ENOENT
 * (nothing covers pc), -EBADMSG (its unit could not be read), -E2BIG (a bound was reached)
 * or -ENOMEM. */
static uint32_t make_chain(struct dwarf_index *ix, uint64_t pc, struct source_frame *frames,
			   int *err)
{
	struct unit *u = unit_of(ix, pc);
	uint32_t scopes[DWARF_INDEX_MAX_DEPTH], nr;
	const struct scope_tree *t = NULL;

	*err = -ENOENT;
	if (!u) {
		ix->stats.no_unit++;
		return 0;
	}
	*err = ensure_indexed(ix, u);
	if (*err)
		return 0;
	/* the first top scope holding pc, then the scopes inside it */
	scope_tree__at(&u->tops, pc, scopes, &nr, 1);
	if (nr && (*err = ensure_inner(ix, u, scopes[0], &t)))
		return 0;
	*err = -ENOMEM;
	if (nr)
		scope_tree__at(t, pc, scopes, &nr, DWARF_INDEX_MAX_DEPTH);
	if (nr == 0) {
		/* code no subprogram covers still has its line, as eu-addr2line gives it */
		ix->stats.no_function++;
		frames[0] = (struct source_frame){ .function = intern(ix, "??") };
		pc_line(ix, u, pc, &frames[0]);
		if (frames[0].function && frames[0].file && frames[0].line)
			return 1;
		*err = frames[0].function && frames[0].file ? -ENOENT : -ENOMEM;
		return 0;
	}
	for (uint32_t i = 0; i < nr; i++) {
		frames[i] = (struct source_frame){ .function = function_name(ix, &t->scopes[scopes[i]].die) };
		if (i + 1 < nr)
			call_site(ix, u, &t->scopes[scopes[i + 1]].die, &frames[i]);
		else
			pc_line(ix, u, pc, &frames[i]);
		if (!frames[i].function || !frames[i].file)
			return 0; /* out of memory */
	}
	return nr;
}

int dwarf_index__chain(struct dwarf_index *ix, uint64_t pc, struct source_chain *chain)
{
	struct cached_chain *c;
	uint32_t nr;

	int err;

	HASH_FIND(hh, ix->cache, &pc, sizeof(pc), c);
	if (c) {
		*chain = (struct source_chain){ c->frames, c->nr };
		return c->nr ? 0 : c->err;
	}
	nr = make_chain(ix, pc, ix->scratch, &err);
	*chain = (struct source_chain){ ix->scratch, nr };
	/* out of memory: tried again next time */
	if (ix->nr_cached >= DWARF_INDEX_MAX_CACHED || (!nr && err == -ENOMEM) ||
	    !(c = calloc(1, sizeof(*c))))
		return nr ? 0 : err;
	c->pc = pc;
	c->nr = nr;
	c->err = err;
	if (nr && !(c->frames = malloc(nr * sizeof(*c->frames)))) {
		free(c);
		return 0;
	}
	if (nr)
		memcpy(c->frames, ix->scratch, nr * sizeof(*c->frames));
	HASH_ADD(hh, ix->cache, pc, sizeof(c->pc), c);
	ix->nr_cached++;
	ix->bytes += sizeof(*c) + nr * sizeof(*c->frames);
	*chain = (struct source_chain){ c->frames, nr };
	return nr ? 0 : err;
}

void dwarf_index__stats(const struct dwarf_index *ix, struct dwarf_index_stats *stats)
{
	*stats = ix->stats;
}

size_t dwarf_index__bytes(const struct dwarf_index *ix)
{
	return ix ? ix->bytes + ix->libdw_bytes : 0;
}

void dwarf_index__free(struct dwarf_index *ix)
{
	struct cached_chain *c, *ctmp;
	struct interned *s, *stmp;

	if (!ix)
		return;
	HASH_ITER(hh, ix->cache, c, ctmp) {
		HASH_DEL(ix->cache, c);
		free(c->frames);
		free(c);
	}
	HASH_ITER(hh, ix->strings, s, stmp) {
		HASH_DEL(ix->strings, s);
		free(s->text);
		free(s);
	}
	for (size_t i = 0; i < ix->nr_units; i++)
		forget_unit(ix, &ix->units[i]);
	free(ix->units);
	free(ix->unit_ranges);
	if (ix->dwarf)
		dwarf_end(ix->dwarf);
	debug_image__close_alt(&ix->alt);
	dwarf_file__close(&ix->file);
	free(ix);
}
