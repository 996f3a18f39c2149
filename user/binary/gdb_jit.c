#include "binary/gdb_jit.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "binary/symbols.h"
#include "util/grow.h"
#include "util/process_memory.h"

/* The interface's structures, as gdb defines them (version 1). */
struct raw_descriptor {
	uint32_t version;
	uint32_t action_flag;
	uint64_t relevant_entry;
	uint64_t first_entry;
};

struct raw_entry {
	uint64_t next_entry;
	uint64_t prev_entry;
	uint64_t symfile_addr;
	uint64_t symfile_size;
};

/* One registered object, as read. */
struct object {
	uint64_t symfile_addr, symfile_size;
	uint64_t start, end;         /* what its rows cover; start == end: nothing */
	struct unwind_table *table;  /* NULL: no CFI */
	struct elf_symbols *syms;    /* NULL: no symbols */
	bool seen;                   /* in the list as last read */
};

struct object_key {
	uint64_t symfile_addr, symfile_size;
	size_t index;
};

struct gdb_jit {
	uint32_t pid;
	uint64_t descriptor;
	struct object *objects; /* sorted by start */
	size_t nr, cap;
	uint64_t held;          /* symfile bytes of the objects held */
	/* Objects the list no longer names, kept until the list is read again (at least
	 * GDB_JIT_RECHECK_MS later): a walk may still hold their tables. */
	struct object *retired;
	size_t nr_retired, retired_cap;
	/* the descriptor and its head entry as last read: the list is walked again only when
	 * either changed (a new entry may reuse a freed one's address) */
	struct raw_descriptor last;
	struct raw_entry last_head;
	bool have_last;
	struct object_key *keys; /* while a list is read: the objects held, by symfile_addr */
	size_t nr_keys;
	bool tried;
	uint64_t checked_ns;
	bool fixed; /* a replay's: objects come from gdb_jit__add_object, no list is read */
	struct gdb_jit_stats stats;
};

static gdb_jit_object_hook_fn object_hook;
static gdb_jit_drop_hook_fn drop_hook;
static void *hook_ctx;

void gdb_jit__set_hooks(gdb_jit_object_hook_fn on_object, gdb_jit_drop_hook_fn on_drop,
			void *ctx)
{
	object_hook = on_object;
	drop_hook = on_drop;
	hook_ctx = ctx;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct gdb_jit *gdb_jit__new(uint32_t pid, uint64_t descriptor)
{
	struct gdb_jit *gj = calloc(1, sizeof(*gj));

	if (!gj)
		return NULL;
	gj->pid = pid;
	gj->descriptor = descriptor;
	gj->stats.registrations = 1;
	return gj;
}

struct gdb_jit *gdb_jit__new_fixed(void)
{
	struct gdb_jit *gj = gdb_jit__new(0, 0);

	if (gj)
		gj->fixed = gj->tried = true;
	return gj;
}

static void free_object(struct object *o)
{
	unwind_table__free(o->table);
	elf_symbols__free(o->syms);
}

/* The range an object's rows cover: from its first row to its last end marker. */
static void set_range(struct object *o)
{
	size_t nr = 0;
	const struct unwind_row *rows = unwind_table__rows(o->table, &nr);

	o->start = o->end = 0;
	if (nr > 0) {
		o->start = rows[0].pc;
		o->end = rows[nr - 1].pc > o->start ? rows[nr - 1].pc : o->start;
	}
}

/* A section header of the image, bounds-checked. */
static bool section(const uint8_t *img, size_t size, const Elf64_Ehdr *eh, size_t i, Elf64_Shdr *sh)
{
	if (i >= eh->e_shnum)
		return false;
	memcpy(sh, img + eh->e_shoff + i * sizeof(*sh), sizeof(*sh));
	return sh->sh_type == SHT_NOBITS ||
	       (sh->sh_offset <= size && sh->sh_size <= size - sh->sh_offset);
}

/* Where symbol index sym of the table symtab resolves: its section's load address (the
 * sh_addr the JIT set) plus its value. */
static bool symbol_address(const uint8_t *img, size_t size, const Elf64_Ehdr *eh,
			   const Elf64_Shdr *symtab, uint64_t sym, uint64_t *addr)
{
	Elf64_Shdr owner;
	Elf64_Sym st;

	if (sym >= symtab->sh_size / sizeof(st))
		return false;
	memcpy(&st, img + symtab->sh_offset + sym * sizeof(st), sizeof(st));
	if (st.st_shndx == SHN_ABS) {
		*addr = st.st_value;
		return true;
	}
	if (st.st_shndx == SHN_UNDEF || !section(img, size, eh, st.st_shndx, &owner))
		return false;
	*addr = owner.sh_addr + st.st_value;
	return true;
}

/* Applies the relocations of rela to its target (.eh_frame: pc-relative and absolute
 * pointers to the code), writing into img. false when one is of another kind or does not
 * fit. */
static bool apply_relocations(uint8_t *img, size_t size, const Elf64_Ehdr *eh, const Elf64_Shdr *rela)
{
	Elf64_Shdr target, symtab;

	if (!section(img, size, eh, rela->sh_info, &target) || target.sh_type == SHT_NOBITS ||
	    !section(img, size, eh, rela->sh_link, &symtab) || symtab.sh_type != SHT_SYMTAB)
		return false;
	for (uint64_t at = 0; at + sizeof(Elf64_Rela) <= rela->sh_size; at += sizeof(Elf64_Rela)) {
		Elf64_Rela r;
		uint64_t s, p, width;
		uint8_t *where;
		int64_t pcrel;


		memcpy(&r, img + rela->sh_offset + at, sizeof(r));
		width = ELF64_R_TYPE(r.r_info) == R_X86_64_PC32 ? 4 : 8;
		if (!symbol_address(img, size, eh, &symtab, ELF64_R_SYM(r.r_info), &s) ||
		    r.r_offset > target.sh_size || target.sh_size - r.r_offset < width)
			return false;
		where = img + target.sh_offset + r.r_offset;
		p = target.sh_addr + r.r_offset;
		switch (ELF64_R_TYPE(r.r_info)) {
		case R_X86_64_PC32:
			pcrel = (int64_t)(s + (uint64_t)r.r_addend - p);
			if (pcrel < INT32_MIN || pcrel > INT32_MAX)
				return false;
			memcpy(where, &(int32_t){ (int32_t)pcrel }, 4);
			break;
		case R_X86_64_64:
			memcpy(where, &(uint64_t){ s + (uint64_t)r.r_addend }, 8);
			break;
		case R_X86_64_PC64:
			memcpy(where, &(uint64_t){ s + (uint64_t)r.r_addend - p }, 8);
			break;
		default:
			return false;
		}
	}
	return true;
}

/* LLVM's JITs register relocatable objects: their sections' sh_addr say where the code was
 * loaded, but the relocations of .eh_frame are not applied and symbols are section-
 * relative (gdb relocates them as it reads them). Applies the relocations of the
 * X86_64_UNWIND sections, makes symbols absolute and marks the image ET_EXEC, in place.
 * false (the image then left to fail as it is) when img is not such an object or a
 * relocation does not fit. */
static bool relocate_object(uint8_t *img, size_t size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh;

	if (size < sizeof(eh))
		return false;
	memcpy(&eh, img, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_type != ET_REL || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
	    eh.e_shnum > (size - eh.e_shoff) / sizeof(Elf64_Shdr))
		return false;
	for (size_t i = 1; i < eh.e_shnum; i++) {
		Elf64_Shdr target;

		if (!section(img, size, &eh, i, &sh))
			return false;
		if (sh.sh_type == SHT_RELA && section(img, size, &eh, sh.sh_info, &target) &&
		    target.sh_type == SHT_X86_64_UNWIND && !apply_relocations(img, size, &eh, &sh))
			return false;
	}
	for (size_t i = 1; i < eh.e_shnum; i++) {
		if (!section(img, size, &eh, i, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= sh.sh_size; at += sizeof(Elf64_Sym)) {
			Elf64_Shdr owner;
			Elf64_Sym st;

			memcpy(&st, img + sh.sh_offset + at, sizeof(st));
			if (st.st_shndx == SHN_UNDEF || st.st_shndx >= SHN_LORESERVE ||
			    !section(img, size, &eh, st.st_shndx, &owner))
				continue;
			st.st_value += owner.sh_addr;
			memcpy(img + sh.sh_offset + at, &st, sizeof(st));
		}
	}
	eh.e_type = ET_EXEC;
	memcpy(img, &eh, sizeof(eh));
	return true;
}

/* Compiles the object read into image (its bytes, relocated in place). */
static void compile_object(struct gdb_jit *gj, uint8_t *image, uint64_t size, struct object *o)
{
	char err[160];

	if (relocate_object(image, size))
		gj->stats.relocated++;
	if (unwind_table__from_image(image, size, "gdb JIT object", UNWIND_SRC_ALL, &o->table,
				     err, sizeof(err)) != 0)
		o->table = NULL;
	if (elf_symbols__load_image(image, size, &o->syms, err, sizeof(err)) != 0)
		o->syms = NULL;
	if (o->table)
		set_range(o);
	gj->held += size;
}

/* Reads and compiles the object at [addr, addr + size). false when refused. */
static bool read_object(struct gdb_jit *gj, uint64_t addr, uint64_t size, struct object *o)
{
	uint8_t ident[SELFMAG];
	uint8_t *image;

	*o = (struct object){ .symfile_addr = addr, .symfile_size = size, .seen = true };
	/* the magic first: a bogus entry costs a small read, not an allocation of its size */
	if (size < sizeof(Elf64_Ehdr) || size > GDB_JIT_MAX_OBJECT_BYTES ||
	    gj->held + size > GDB_JIT_MAX_BYTES ||
	    !process_memory__read(gj->pid, addr, ident, sizeof(ident)) ||
	    memcmp(ident, ELFMAG, SELFMAG) != 0 || !(image = malloc(size)))
		return false;
	if (!process_memory__read(gj->pid, addr, image, size)) {
		free(image);
		return false;
	}
	if (object_hook)
		object_hook(hook_ctx, gj->pid, addr, image, size);
	compile_object(gj, image, size, o);
	free(image);
	return true;
}

static int compare_key(const void *a, const void *b)
{
	const struct object_key *x = a, *y = b;

	if (x->symfile_addr != y->symfile_addr)
		return x->symfile_addr < y->symfile_addr ? -1 : 1;
	return x->symfile_size < y->symfile_size ? -1 : x->symfile_size > y->symfile_size;
}

/* The objects held, by symfile address, for the list being read (NULL keys when out of
 * memory: every entry is then read anew). */
static void index_objects(struct gdb_jit *gj)
{
	gj->nr_keys = 0;
	gj->keys = gj->nr ? malloc(gj->nr * sizeof(*gj->keys)) : NULL;
	if (!gj->keys)
		return;
	for (size_t i = 0; i < gj->nr; i++)
		gj->keys[i] = (struct object_key){ gj->objects[i].symfile_addr,
						   gj->objects[i].symfile_size, i };
	gj->nr_keys = gj->nr;
	qsort(gj->keys, gj->nr_keys, sizeof(*gj->keys), compare_key);
}

static struct object *find_registered(struct gdb_jit *gj, uint64_t addr, uint64_t size)
{
	const struct object_key want = { addr, size, 0 };
	const struct object_key *k = gj->nr_keys ? bsearch(&want, gj->keys, gj->nr_keys,
							   sizeof(*gj->keys), compare_key)
						 : NULL;

	return k ? &gj->objects[k->index] : NULL;
}

/* An entry of the list: known already, or read now. */
static void take_entry(struct gdb_jit *gj, const struct raw_entry *e)
{
	struct object *known = find_registered(gj, e->symfile_addr, e->symfile_size), o;

	if (known) {
		known->seen = true;
		return;
	}
	if (!read_object(gj, e->symfile_addr, e->symfile_size, &o)) {
		gj->stats.refused++;
		return;
	}
	if (grow_array((void **)&gj->objects, &gj->cap, gj->nr + 1, sizeof(*gj->objects))) {
		gj->held -= o.symfile_size;
		free_object(&o);
		return;
	}
	gj->objects[gj->nr++] = o;
	if (o.table)
		gj->stats.objects++;
	else
		gj->stats.no_cfi++;
}

/* Objects no longer in the list go (the JIT freed their code). */
static void drop_unseen(struct gdb_jit *gj)
{
	size_t kept = 0;

	for (size_t i = 0; i < gj->nr; i++) {
		if (gj->objects[i].seen) {
			gj->objects[kept++] = gj->objects[i];
			continue;
		}
		if (grow_array((void **)&gj->retired, &gj->retired_cap, gj->nr_retired + 1,
			       sizeof(*gj->retired)) == 0) {
			gj->held -= gj->objects[i].symfile_size;
			gj->retired[gj->nr_retired++] = gj->objects[i];
			if (drop_hook && !gj->fixed)
				drop_hook(hook_ctx, gj->pid, gj->objects[i].symfile_addr,
					  gj->objects[i].symfile_size);
		} else {
			gj->objects[kept++] = gj->objects[i]; /* kept, rather than freed under a walk */
		}
	}
	gj->nr = kept;
}

/* Frees the objects retired by the read before this one. */
static void free_retired(struct gdb_jit *gj)
{
	for (size_t i = 0; i < gj->nr_retired; i++)
		free_object(&gj->retired[i]);
	gj->nr_retired = 0;
}

static int compare_start(const void *a, const void *b)
{
	const struct object *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int compare_entry(const void *a, const void *b)
{
	const struct raw_entry *x = a, *y = b;

	if (x->symfile_addr != y->symfile_addr)
		return x->symfile_addr < y->symfile_addr ? -1 : 1;
	return x->symfile_size < y->symfile_size ? -1 : x->symfile_size > y->symfile_size;
}

/* The list's entries, at most GDB_JIT_MAX_ENTRIES (a longer list, or a cycle, is cut
 * there; an unreadable entry ends it), sorted by object with duplicates gone. */
static struct raw_entry *read_entries(struct gdb_jit *gj, uint64_t first, size_t *nr,
				      bool *unreadable)
{
	struct raw_entry *entries = NULL, e;
	size_t n = 0, cap = 0, kept = 0;
	uint64_t at;

	*unreadable = false;
	for (at = first; at && n < GDB_JIT_MAX_ENTRIES; at = e.next_entry) {
		if (!process_memory__read(gj->pid, at, &e, sizeof(e)) ||
		    grow_array((void **)&entries, &cap, n + 1, sizeof(*entries))) {
			*unreadable = true;
			break;
		}
		entries[n++] = e;
	}
	if (at)
		gj->stats.cut_short++;
	if (n > 1)
		qsort(entries, n, sizeof(*entries), compare_entry);
	for (size_t i = 0; i < n; i++)
		if (kept == 0 || compare_entry(&entries[kept - 1], &entries[i]) != 0)
			entries[kept++] = entries[i];
	*nr = kept;
	return entries;
}

/* Reads the descriptor and its list, keeping what was read before. */
static void read_list(struct gdb_jit *gj)
{
	struct raw_descriptor d;
	struct raw_entry *entries, head;
	bool unreadable;
	size_t n = 0;

	gj->tried = true;
	gj->checked_ns = now_ns();
	free_retired(gj);
	if (!process_memory__read(gj->pid, gj->descriptor, &d, sizeof(d)) || d.version != 1) {
		gj->stats.bad_lists++;
		return;
	}
	/* a registration changes the head (new entries go first), an unregistration the
	 * action and the relevant entry; a new head may reuse a freed entry's address */
	memset(&head, 0, sizeof(head));
	if (d.first_entry && !process_memory__read(gj->pid, d.first_entry, &head, sizeof(head)))
		return;
	if (gj->have_last && memcmp(&d, &gj->last, sizeof(d)) == 0 &&
	    memcmp(&head, &gj->last_head, sizeof(head)) == 0)
		return;
	gj->stats.list_reads++;
	entries = read_entries(gj, d.first_entry, &n, &unreadable);
	for (size_t i = 0; i < gj->nr; i++)
		gj->objects[i].seen = false;
	index_objects(gj);
	for (size_t i = 0; i < n; i++)
		take_entry(gj, &entries[i]);
	free(entries);
	free(gj->keys);
	gj->keys = NULL;
	gj->nr_keys = 0;
	/* a list cut by an entry that could not be read (the JIT changing it as it was read)
	 * is read again next time, and drops nothing */
	gj->have_last = !unreadable;
	gj->last = d;
	gj->last_head = head;
	if (!unreadable)
		drop_unseen(gj);
	if (gj->nr > 1)
		qsort(gj->objects, gj->nr, sizeof(*gj->objects), compare_start);
}

/* The object whose rows cover addr (of overlapping ones, the one starting last). */
static struct object *object_at(struct gdb_jit *gj, uint64_t addr)
{
	size_t lo = 0, hi = gj->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (gj->objects[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;) {
		if (addr < gj->objects[i].end)
			return &gj->objects[i];
		if (lo - i >= 8)
			break; /* overlaps are rare: a few back at most */
	}
	return NULL;
}

/* The object at addr, reading the list again on a miss when it is due. */
static struct object *lookup(struct gdb_jit *gj, uint64_t addr)
{
	struct object *o;

	if (!gj)
		return NULL;
	/* due or not yet read: the descriptor again (cheap when it did not change), also on a
	 * hit, so that code unregistered and reused is not named after what it was */
	if (!gj->fixed && (!gj->tried || now_ns() - gj->checked_ns >= GDB_JIT_RECHECK_MS * 1000000ull))
		read_list(gj);
	o = object_at(gj, addr);
	return o;
}

int gdb_jit__add_object(struct gdb_jit *gj, uint64_t addr, const uint8_t *bytes, size_t size)
{
	struct object o = { .symfile_addr = addr, .symfile_size = size, .seen = true };
	uint8_t *image;

	if (!gj->fixed || size < sizeof(Elf64_Ehdr) || size > GDB_JIT_MAX_OBJECT_BYTES ||
	    gj->held + size > GDB_JIT_MAX_BYTES || memcmp(bytes, ELFMAG, SELFMAG) != 0) {
		gj->stats.refused++;
		return 0;
	}
	if (!(image = malloc(size)) ||
	    grow_array((void **)&gj->objects, &gj->cap, gj->nr + 1, sizeof(*gj->objects))) {
		free(image);
		return -ENOMEM;
	}
	memcpy(image, bytes, size);
	compile_object(gj, image, size, &o);
	free(image);
	gj->objects[gj->nr++] = o;
	if (o.table)
		gj->stats.objects++;
	else
		gj->stats.no_cfi++;
	if (gj->nr > 1)
		qsort(gj->objects, gj->nr, sizeof(*gj->objects), compare_start);
	return 0;
}

void gdb_jit__drop_object(struct gdb_jit *gj, uint64_t addr, uint64_t size)
{
	/* the walk of the sample being handled holds no table of it: freed now, as a live
	 * table's retired objects are at its next read */
	free_retired(gj);
	for (size_t i = 0; i < gj->nr; i++)
		gj->objects[i].seen = gj->objects[i].symfile_addr != addr ||
				      gj->objects[i].symfile_size != size;
	drop_unseen(gj);
}

int gdb_jit__find(struct gdb_jit *gj, uint64_t addr, const struct unwind_table **table,
		  uint64_t *start, uint64_t *end)
{
	struct object *o = lookup(gj, addr);

	if (!o || !o->table)
		return -ENOENT;
	*table = o->table;
	*start = o->start;
	*end = o->end;
	return 0;
}

const char *gdb_jit__lookup(struct gdb_jit *gj, uint64_t addr)
{
	struct object *o = lookup(gj, addr);
	uint64_t offset;

	return o && o->syms ? elf_symbols__lookup(o->syms, addr, &offset) : NULL;
}

void gdb_jit__stats(const struct gdb_jit *gj, struct gdb_jit_stats *acc)
{
	acc->registrations += gj->stats.registrations;
	acc->list_reads += gj->stats.list_reads;
	acc->bad_lists += gj->stats.bad_lists;
	acc->cut_short += gj->stats.cut_short;
	acc->objects += gj->stats.objects;
	acc->no_cfi += gj->stats.no_cfi;
	acc->refused += gj->stats.refused;
	acc->relocated += gj->stats.relocated;
}

uint64_t gdb_jit__bytes(const struct gdb_jit *gj)
{
	uint64_t bytes = 0;

	if (!gj)
		return 0;
	for (size_t i = 0; i < gj->nr; i++) {
		struct unwind_stats st = { 0 };

		if (gj->objects[i].table) {
			unwind_table__stats(gj->objects[i].table, &st);
			bytes += st.table_bytes;
		}
		bytes += elf_symbols__bytes(gj->objects[i].syms);
	}
	return bytes + gj->cap * sizeof(*gj->objects);
}

void gdb_jit__free(struct gdb_jit *gj)
{
	if (!gj)
		return;
	for (size_t i = 0; i < gj->nr; i++)
		free_object(&gj->objects[i]);
	free_retired(gj);
	free(gj->objects);
	free(gj->retired);
	free(gj);
}
