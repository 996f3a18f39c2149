#include "binary/inline_frames.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "binary/debug_files.h"
#include "binary/python_names.h"
#include "binary/symbols.h"
#include "util/file_view.h"
#include "util/grow.h"
#include "util/text.h"

struct expansion_key {
	uint32_t module;
	uint32_t flags;
	uint64_t addr;
};

struct cached_expansion {
	struct expansion_key key;
	struct frame *inlined;
	uint32_t nr_inlined;
	bool has_line;
	uint64_t line_id;
	UT_hash_handle hh;
};

/* A binary whose DWARF was opened: open now (its module's dwarf), or closed to keep
 * within the budget. */
struct opened_dwarf {
	uint32_t module;
	uint64_t used; /* the lookup count when a pc of it was last looked up */
};

/* Slots of the cache's direct-mapped front (a power of two): most of a sample's frames
 * were in the sample before it, and a slot is a fifth of a hash lookup's cost. */
#define RECENT_SLOTS 4096u

struct inline_frames {
	struct module_registry *reg;
	bool inlines, lines;
	uint64_t budget; /* bytes of DWARF state open at once, over all binaries */
	struct opened_dwarf *opened;
	size_t nr_opened, opened_cap;
	uint64_t lookups;
	struct cached_expansion *cache;
	size_t nr_cached;
	struct cached_expansion *recent[RECENT_SLOTS]; /* entries of cache, or NULL */
	struct inline_frames_stats stats;
	struct frame scratch[DWARF_INDEX_MAX_DEPTH]; /* an expansion not cached */
};

/* INLINE_FRAMES_DWARF_BUDGET, or HPROF_DWARF_BUDGET_MIB's (tests force a binary's DWARF
 * closed and opened again with a small one). */
static uint64_t dwarf_budget(void)
{
	const char *env = getenv("HPROF_DWARF_BUDGET_MIB");
	long long mib;

	if (env && text__parse_number(env, 0, 1 << 20, &mib))
		return (uint64_t)mib << 20;
	return INLINE_FRAMES_DWARF_BUDGET;
}

int inline_frames__new(struct module_registry *reg, bool inlines, bool lines,
		       struct inline_frames **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	**out = (struct inline_frames){ .reg = reg, .inlines = inlines, .lines = lines,
					.budget = dwarf_budget() };
	return 0;
}

static int open_index(const char *path, struct dwarf_index **ix)
{
	char msg[256];

	return dwarf_index__open(path, ix, msg, sizeof(msg));
}

/* The binary's separate debug file (debug_files__find: by build-id, then by
 * .gnu_debuglink with its CRC-32 checked: another build's debug file has addresses that
 * would lie). */
static int open_separate_file(const struct module *mod, const char *binary,
			      struct dwarf_index **ix)
{
	char path[PATH_MAX];
	const uint8_t *id = NULL;
	size_t len = mod->syms ? elf_symbols__build_id(mod->syms, &id) : 0;
	int fd = open(binary, O_RDONLY | O_CLOEXEC), err = -ENOENT;
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;

	if (elf && debug_files__find(elf, mod->path, id, len, path, sizeof(path)) == 0)
		err = open_index(path, ix);
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	return err;
}

/* The entry of module id among the binaries whose DWARF was opened, or NULL. */
static struct opened_dwarf *opened_entry(struct inline_frames *x, uint32_t id)
{
	for (size_t i = 0; i < x->nr_opened; i++) {
		if (x->opened[i].module == id)
			return &x->opened[i];
	}
	return NULL;
}

/* Notes that module id's DWARF is open and used now: a binary new to x (opened now, or by
 * an earlier profile: hprof serve's windows), or one closed for the budget and opened
 * again. Out of memory, it is not noted, and never closed for the budget. */
static void touch_opened(struct inline_frames *x, uint32_t id, bool opened_now)
{
	struct opened_dwarf *o = opened_entry(x, id);

	if (o) {
		x->stats.dwarf_reopened += opened_now;
	} else {
		x->stats.binaries_with_dwarf++;
		if (grow_array((void **)&x->opened, &x->opened_cap, x->nr_opened + 1,
			       sizeof(*x->opened)))
			return;
		o = &x->opened[x->nr_opened++];
		o->module = id;
	}
	o->used = x->lookups;
}

/* Closes the DWARF of the binaries looked up least recently, but keep's, until what is
 * open fits in the budget: each opens again on its next pc not cached. */
static void keep_within_budget(struct inline_frames *x, uint32_t keep)
{
	for (;;) {
		struct module *oldest = NULL, *mod;
		uint64_t bytes = 0, oldest_used = UINT64_MAX;

		for (size_t i = 0; i < x->nr_opened; i++) {
			mod = module_registry__by_id(x->reg, x->opened[i].module);
			if (!mod || !mod->dwarf)
				continue;
			bytes += dwarf_index__bytes(mod->dwarf);
			if (x->opened[i].module != keep && x->opened[i].used < oldest_used) {
				oldest = mod;
				oldest_used = x->opened[i].used;
			}
		}
		if (bytes <= x->budget || !oldest)
			return;
		dwarf_index__free(oldest->dwarf);
		oldest->dwarf = NULL;
		oldest->dwarf_tried = false;
		x->stats.dwarf_closed++;
	}
}

/* The module's DWARF: in its own file, else in its separate debug file (by build-id, then
 * by .gnu_debuglink, --debug-dir's first). NULL when none; looked for once while its
 * symbols are kept, and again after it was closed for the budget. */
static struct dwarf_index *module_dwarf(struct inline_frames *x, struct module *mod, uint32_t id)
{
	const char *binary = mod->load_path[0] ? mod->load_path : mod->path;

	if (mod->dwarf_tried) {
		if (mod->dwarf)
			touch_opened(x, id, false);
		return mod->dwarf;
	}
	mod->dwarf_tried = true;
	if (mod->anon_code || mod->from_slices || mod->load_err || mod->path[0] != '/')
		return NULL;
	if (open_index(binary, &mod->dwarf) == -ENOENT)
		open_separate_file(mod, binary, &mod->dwarf);
	if (mod->dwarf)
		touch_opened(x, id, true);
	return mod->dwarf;
}

static int intern(struct inline_frames *x, const struct module *mod,
		  const struct source_frame *sf, uint64_t *id)
{
	struct python_location loc = { .module = mod->name ? mod->name : "", .function = sf->function,
				       .file = sf->file, .line = (int)sf->line };

	return python_names__intern(module_registry__inline_names(x->reg), &loc, id);
}

/* f's expansion into out (its inlined frames into x->scratch). */
static void expand(struct inline_frames *x, struct module *mod, const struct frame *f,
		   struct inline_expansion *out)
{
	struct dwarf_index *ix = module_dwarf(x, mod, f->module);
	uint64_t pc = (f->flags & FRAME_CALLER) ? f->addr - 1 : f->addr, id;
	struct source_chain chain;

	*out = (struct inline_expansion){ .inlined = x->scratch };
	if (!ix)
		return;
	x->lookups++;
	x->stats.pcs++;
	switch (dwarf_index__chain(ix, pc, &chain)) {
	case 0:
		break;
	case -EBADMSG:
		x->stats.pcs_bad_dwarf++;
		return;
	case -E2BIG:
		x->stats.pcs_over_bounds++;
		return;
	default:
		x->stats.pcs_no_chain++;
		return;
	}
	if (x->lines && intern(x, mod, &chain.frames[0], &out->line_id) == 0)
		out->has_line = true;
	for (uint32_t i = 1; x->inlines && i < chain.nr; i++) {
		struct source_frame sf = chain.frames[i];

		if (!x->lines)
			sf.file = "", sf.line = 0;
		if (intern(x, mod, &sf, &id) != 0)
			break;
		x->scratch[out->nr_inlined++] = (struct frame){ .module = MODULE_INLINE, .addr = id };
	}
	/* the chain's strings are interned by now: its DWARF may go */
	keep_within_budget(x, f->module);
}

static size_t recent_slot(const struct expansion_key *k)
{
	uint64_t h = (k->addr ^ ((uint64_t)k->module << 40) ^ ((uint64_t)k->flags << 56)) *
		     0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 52) & (RECENT_SLOTS - 1);
}

void inline_frames__expand(struct inline_frames *x, const struct frame *f,
			   struct inline_expansion *out)
{
	struct expansion_key key = { f->module, f->flags, f->addr };
	struct cached_expansion *c, **slot;

	struct module *mod;

	*out = (struct inline_expansion){ .inlined = x->scratch };
	if (f->module < MODULE_FIRST_FILE || (!x->inlines && !x->lines))
		return;
	/* a binary without DWARF costs neither a lookup nor a cache entry */
	mod = module_registry__by_id(x->reg, f->module);
	if (!mod || (mod->dwarf_tried && !mod->dwarf))
		return;
	slot = &x->recent[recent_slot(&key)];
	c = *slot;
	if (!c || memcmp(&c->key, &key, sizeof(key)) != 0)
		HASH_FIND(hh, x->cache, &key, sizeof(key), c);
	if (c) {
		*slot = c;
		*out = (struct inline_expansion){ c->inlined, c->nr_inlined, c->has_line, c->line_id };
		return;
	}
	expand(x, mod, f, out);
	if (!mod->dwarf)
		return;
	if (x->nr_cached >= INLINE_FRAMES_MAX_CACHED) {
		x->stats.pcs_uncached++;
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c || (out->nr_inlined && !(c->inlined = malloc(out->nr_inlined * sizeof(*c->inlined))))) {
		free(c);
		return;
	}
	c->key = key;
	c->nr_inlined = out->nr_inlined;
	c->has_line = out->has_line;
	c->line_id = out->line_id;
	if (out->nr_inlined)
		memcpy(c->inlined, out->inlined, out->nr_inlined * sizeof(*c->inlined));
	HASH_ADD(hh, x->cache, key, sizeof(c->key), c);
	x->nr_cached++;
	*slot = c;
	out->inlined = c->inlined;
}

void inline_frames__stats(const struct inline_frames *x, struct inline_frames_stats *stats)
{
	*stats = x ? x->stats : (struct inline_frames_stats){ 0 };
}

void inline_frames__free(struct inline_frames *x)
{
	struct cached_expansion *c, *tmp;

	if (!x)
		return;
	HASH_ITER(hh, x->cache, c, tmp) {
		HASH_DEL(x->cache, c);
		free(c->inlined);
		free(c);
	}
	free(x->opened);
	free(x);
}
