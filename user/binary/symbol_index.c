/* Each entry's address is an offset from its span's base (struct symbol_span), so 32 bits
 * hold it; a name read from a file is checked against the file before it is handed out
 * (checked_name). */
#include "binary/symbol_index.h"
#include "util/file_view.h"
#include "util/grow.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

struct symbol_index {
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
	uint8_t *owned; /* the table symbol_index__own_names kept */
	size_t owned_size;
	/* while adding */
	struct pending_symbol *pending;
	size_t nr_pending, pending_cap;
};

int symbol_index__new(struct symbol_index **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

/* Copies len bytes of name into the side names. Returns 0, -E2BIG or -ENOMEM. */
static int add_side_name(struct symbol_index *idx, const char *name, size_t len, uint32_t *at)
{
	if (len >= NAME_SIDE || idx->side_len > NAME_SIDE - 1 - len)
		return -E2BIG;
	if (grow_array((void **)&idx->side, &idx->side_cap, idx->side_len + len + 1, 1))
		return -ENOMEM;
	memcpy(idx->side + idx->side_len, name, len);
	idx->side[idx->side_len + len] = '\0';
	*at = NAME_SIDE | (uint32_t)idx->side_len;
	idx->side_len += len + 1;
	return 0;
}

/* A pending symbol's rank bit for a code label: below every function. */
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

int symbol_index__add(struct symbol_index *idx, uint64_t start, uint64_t size, int bind,
		      bool label, const char *name, size_t len, int table_nr)
{
	const struct name_table *table =
		table_nr >= 0 && (uint32_t)table_nr < idx->nr_tables ? &idx->tables[table_nr] : NULL;
	const char *at_sign = memchr(name, '@', len);
	struct pending_symbol *p;
	uint32_t at;
	int err = 0;

	if (idx->nr_pending >= UINT32_MAX)
		return -E2BIG;
	if (grow_array((void **)&idx->pending, &idx->pending_cap, idx->nr_pending + 1,
		       sizeof(*idx->pending)))
		return -ENOMEM;
	if (at_sign && at_sign != name)
		err = add_side_name(idx, name, (size_t)(at_sign - name), &at);
	else if (!table || !table_offset(table, name, &at))
		err = add_side_name(idx, name, len, &at);
	if (err)
		return err;
	p = &idx->pending[idx->nr_pending];
	p->start = start;
	p->size = size < UINT32_MAX ? (uint32_t)size : UINT32_MAX;
	p->name = at;
	p->rank = alias_rank(label, size != 0, bind, len);
	p->seq = (uint32_t)idx->nr_pending++;
	return 0;
}

int symbol_index__add_table(struct symbol_index *idx, const char *bytes, size_t size,
			    struct file_view *view)
{
	struct name_table *t;
	uint32_t start;

	if (idx->nr_tables == NAME_TABLES_MAX)
		return -1;
	t = &idx->tables[idx->nr_tables];
	start = idx->nr_tables ? t[-1].start + t[-1].size : 0;
	if (size > NAME_SIDE - start)
		return -1;
	t->bytes = bytes;
	t->start = start;
	t->size = (uint32_t)size;
	t->view = view;
	return (int)idx->nr_tables++;
}

size_t symbol_index__pending(const struct symbol_index *idx)
{
	return idx ? idx->nr_pending : 0;
}

/* Of the buffer image (MiniDebugInfo's decompressed ELF) only the string table the
 * symbols name stays: moved to the buffer's start, the rest (the symbol table read, the
 * headers) given back. */
void symbol_index__own_names(struct symbol_index *idx, uint8_t *image, size_t size)
{
	struct name_table *t = NULL;
	uint8_t *kept;

	for (uint32_t i = 0; i < idx->nr_tables; i++) {
		uintptr_t p = (uintptr_t)idx->tables[i].bytes;

		if (p >= (uintptr_t)image && p - (uintptr_t)image < size)
			t = &idx->tables[i];
	}
	if (!t || t->size == 0) {
		if (t)
			t->bytes = ""; /* names nothing: no offset falls inside it */
		free(image);
		return;
	}
	memmove(image, t->bytes, t->size);
	kept = realloc(image, t->size);
	idx->owned = kept ? kept : image;
	idx->owned_size = kept ? t->size : size;
	t->bytes = (const char *)idx->owned;
}

void symbol_index__reset(struct symbol_index *idx)
{
	idx->nr_pending = 0;
	idx->nr_tables = 0;
	idx->side_len = 0;
	free(idx->owned);
	idx->owned = NULL;
	idx->owned_size = 0;
}

bool symbol_index__reads_from(const struct symbol_index *idx, const struct file_view *view)
{
	for (uint32_t i = 0; idx && view && i < idx->nr_tables; i++) {
		if (idx->tables[i].view == view)
			return true;
	}
	return false;
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
static size_t sort_pending(struct symbol_index *idx)
{
	uint64_t covered_end = 0; /* the end of the sized functions kept so far */
	size_t kept = 0;

	qsort(idx->pending, idx->nr_pending, sizeof(*idx->pending), compare_pending);
	for (size_t i = 0; i < idx->nr_pending; i++) {
		const struct pending_symbol *p = &idx->pending[i];
		uint64_t end = p->start + p->size;

		if (kept && idx->pending[kept - 1].start == p->start)
			continue;
		if ((p->rank & RANK_LABEL) && p->start < covered_end)
			continue;
		if (end > covered_end || end < p->start)
			covered_end = end < p->start ? UINT64_MAX : end;
		idx->pending[kept++] = *p;
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
static int build_index(struct symbol_index *idx)
{
	size_t n, nr_spans = 0, held;
	uint8_t *packed;
	void *shrunk;

	if (idx->nr_pending == 0) {
		free(idx->pending); /* what sources that had nothing left */
		idx->pending = NULL;
		idx->pending_cap = 0;
		return 0;
	}
	n = sort_pending(idx);
	idx->spans = malloc(count_spans(idx->pending, n) * sizeof(*idx->spans));
	if (!idx->spans)
		return -ENOMEM;
	packed = (uint8_t *)idx->pending;
	for (size_t i = 0; i < n; i++) {
		struct pending_symbol p;
		struct symbol s;

		memcpy(&p, &idx->pending[i], sizeof(p));
		if (i == 0 || p.start - idx->spans[nr_spans - 1].base > UINT32_MAX)
			idx->spans[nr_spans++] = (struct symbol_span){ .base = p.start, .first = i };
		s.addr = (uint32_t)(p.start - idx->spans[nr_spans - 1].base);
		s.size = p.size;
		s.name = p.name;
		memcpy(packed + i * sizeof(s), &s, sizeof(s));
	}
	idx->nr_spans = nr_spans;
	/* what doubling left unused goes back: the index stays for the run */
	held = idx->pending_cap * sizeof(*idx->pending);
	shrunk = realloc(packed, n * sizeof(struct symbol));
	idx->syms = shrunk ? shrunk : (struct symbol *)packed;
	idx->syms_bytes = shrunk ? n * sizeof(struct symbol) : held;
	idx->nr_syms = n;
	idx->pending = NULL;
	idx->nr_pending = idx->pending_cap = 0;
	return 0;
}

/* Gives back what doubling (or a source that had nothing) left unused. */
static void fit_side_names(struct symbol_index *idx)
{
	char *side;

	if (idx->side_len == 0) {
		free(idx->side);
		idx->side = NULL;
		idx->side_cap = 0;
		return;
	}
	side = realloc(idx->side, idx->side_len);
	if (side) {
		idx->side = side;
		idx->side_cap = idx->side_len;
	}
}

/* A file's table needs its names checked, and the checked ones kept (struct name_cache). */
static bool reads_a_file(const struct symbol_index *idx)
{
	for (uint32_t i = 0; i < idx->nr_tables; i++) {
		if (idx->tables[i].view)
			return true;
	}
	return false;
}

int symbol_index__build(struct symbol_index *idx)
{
	int err = build_index(idx);

	if (err)
		return err;
	if (reads_a_file(idx) && !(idx->cache = calloc(1, sizeof(*idx->cache))))
		return -ENOMEM;
	fit_side_names(idx);
	return 0;
}

/* Index of the last symbol starting at or below vaddr, with its start, or -1: the span
 * holding vaddr, then the symbol in it. */
static ptrdiff_t find_floor(const struct symbol_index *idx, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi = idx->nr_spans, first;
	const struct symbol_span *span;
	uint64_t off;
	uint32_t key;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (idx->spans[mid].base <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	span = &idx->spans[lo - 1];
	first = span->first;
	hi = lo < idx->nr_spans ? idx->spans[lo].first : idx->nr_syms;
	/* 4 GiB or more past the base is past every symbol of the span */
	off = vaddr - span->base;
	key = off < UINT32_MAX ? (uint32_t)off : UINT32_MAX;
	lo = first;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (idx->syms[mid].addr <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == first) /* the span's first symbol is at its base: only a corrupt index */
		return -1;
	*start = span->base + idx->syms[lo - 1].addr;
	return (ptrdiff_t)lo - 1;
}

/* The symbol holding vaddr (sized symbols end at their size), or -1. */
static ptrdiff_t find_symbol(const struct symbol_index *idx, uint64_t vaddr, uint64_t *start)
{
	ptrdiff_t i = idx ? find_floor(idx, vaddr, start) : -1;

	if (i < 0 || (idx->syms[i].size && vaddr - *start >= idx->syms[i].size))
		return -1;
	return i;
}

/* The table a name offset falls in, or NULL. */
static const struct name_table *name_table(const struct symbol_index *idx, uint32_t name)
{
	for (uint32_t i = 0; i < idx->nr_tables; i++) {
		const struct name_table *t = &idx->tables[i];

		if (name >= t->start && name - t->start < t->size)
			return t;
	}
	return NULL;
}

/* Symbol sym's name, at p in t, a file's table, with room bytes to the table's end: the
 * copy kept in the cache, else a copy checked against the file. The copy is taken before
 * the check, so a read that found zeros past a truncated end, or bytes of a rewrite, is
 * never returned. NULL when the file changed, or no NUL ends the name inside its table. */
static const char *checked_name(const struct symbol_index *idx, const struct name_table *t,
				size_t sym, const char *p, size_t room)
{
	struct name_cache *c = idx->cache;
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
static const char *symbol_name(const struct symbol_index *idx, size_t i)
{
	uint32_t name = idx->syms[i].name, off;
	const struct name_table *t;

	if (name & NAME_SIDE) {
		off = name & ~NAME_SIDE;
		return off < idx->side_len ? idx->side + off : NULL;
	}
	t = name_table(idx, name);
	if (!t)
		return NULL;
	off = name - t->start;
	if (t->view)
		return checked_name(idx, t, i, t->bytes + off, t->size - off);
	return memchr(t->bytes + off, '\0', t->size - off) ? t->bytes + off : NULL;
}

const char *symbol_index__lookup(const struct symbol_index *idx, uint64_t vaddr,
				 uint64_t *offset)
{
	uint64_t start;
	ptrdiff_t i = find_symbol(idx, vaddr, &start);
	const char *name = i < 0 ? NULL : symbol_name(idx, (size_t)i);

	if (name)
		*offset = vaddr - start;
	return name;
}

/* No name needed: a file that changed still has the functions it had when read. */
int symbol_index__function(const struct symbol_index *idx, uint64_t vaddr, uint64_t *start,
			   uint64_t *size)
{
	ptrdiff_t i = find_symbol(idx, vaddr, start);

	if (i < 0)
		return -ENOENT;
	*size = idx->syms[i].size;
	return 0;
}

size_t symbol_index__count(const struct symbol_index *idx)
{
	return idx ? idx->nr_syms : 0;
}

static void free_name_cache(struct name_cache *c)
{
	for (uint32_t i = 0; c && i < NAME_CACHE_SLOTS; i++)
		free(c->name[i]);
	free(c);
}

/* The heap the index holds. The file pages names are read from are not heap: the page
 * cache holds them, and those a lookup mapped are handed back at once. */
size_t symbol_index__bytes(const struct symbol_index *idx)
{
	if (!idx)
		return 0;
	return sizeof(*idx) + idx->syms_bytes + idx->nr_spans * sizeof(*idx->spans) +
	       idx->side_cap + idx->owned_size +
	       (idx->cache ? sizeof(*idx->cache) + idx->cache->bytes : 0);
}

void symbol_index__free(struct symbol_index *idx)
{
	if (!idx)
		return;
	free(idx->syms);
	free(idx->spans);
	free(idx->pending);
	free(idx->side);
	free(idx->owned);
	free_name_cache(idx->cache);
	free(idx);
}
