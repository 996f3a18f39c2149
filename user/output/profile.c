#include "output/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "sample.h"

/* A distinct stack: the key is the whole blob (header then frames). */
struct stack_key {
	char comm[HPROF_COMM_LEN];
	const char *root; /* interned: compared by pointer */
	uint32_t nr_frames;
	uint32_t pad;
};

struct stack_entry {
	uint64_t count;
	size_t key_len;
	UT_hash_handle hh;
	struct stack_key key; /* followed by struct frame[nr_frames] */
};

/* The frames stored right after the entry continue the key: hashed as one blob. */
_Static_assert(offsetof(struct stack_entry, key) + sizeof(struct stack_key) ==
		       sizeof(struct stack_entry),
	       "stack key must end the entry");

struct name_entry {
	struct frame frame; /* key */
	char *name;
	UT_hash_handle hh;
};

struct root_entry {
	char *name;
	UT_hash_handle hh;
};

struct profile {
	struct module_registry *modules;
	const struct ksyms *ksyms;
	struct stack_entry *stacks;
	struct name_entry *names;
	struct root_entry *roots;
	uint64_t nr_samples;
	uint64_t nr_stacks;
	uint64_t bytes;
	/* Scratch key for lookups, grown as needed. */
	struct stack_entry *probe;
	size_t probe_cap;
};

int profile__new(struct module_registry *modules, const struct ksyms *ksyms,
		 struct profile **out)
{
	struct profile *p = calloc(1, sizeof(*p));

	*out = p;
	if (!p)
		return -ENOMEM;
	p->modules = modules;
	p->ksyms = ksyms;
	return 0;
}

static const char *intern_root(struct profile *p, const char *root)
{
	struct root_entry *r;

	if (!root)
		return NULL;
	HASH_FIND_STR(p->roots, root, r);
	if (r)
		return r->name;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->name = strdup(root))) {
		free(r);
		return NULL;
	}
	HASH_ADD_KEYPTR(hh, p->roots, r->name, strlen(r->name), r);
	return r->name;
}

static int ensure_probe(struct profile *p, size_t frames_bytes)
{
	size_t need = sizeof(struct stack_entry) + frames_bytes;
	struct stack_entry *bigger;

	if (need <= p->probe_cap)
		return 0;
	bigger = realloc(p->probe, need);
	if (!bigger)
		return -ENOMEM;
	p->probe = bigger;
	p->probe_cap = need;
	return 0;
}

int profile__add(struct profile *p, const char *comm, const char *root,
		 const struct frame *frames, uint32_t n)
{
	size_t frames_bytes = (size_t)n * sizeof(*frames);
	size_t key_len = sizeof(struct stack_key) + frames_bytes;
	struct stack_entry *e;
	int err;

	err = ensure_probe(p, frames_bytes);
	if (err)
		return err;
	memset(&p->probe->key, 0, sizeof(p->probe->key));
	strncpy(p->probe->key.comm, comm, HPROF_COMM_LEN - 1);
	p->probe->key.root = intern_root(p, root);
	p->probe->key.nr_frames = n;
	memcpy(p->probe + 1, frames, frames_bytes);
	HASH_FIND(hh, p->stacks, &p->probe->key, key_len, e);
	if (!e) {
		e = malloc(sizeof(*e) + frames_bytes);
		if (!e)
			return -ENOMEM;
		memcpy(e, p->probe, sizeof(*e) + frames_bytes);
		e->count = 0;
		e->key_len = key_len;
		HASH_ADD(hh, p->stacks, key, key_len, e);
		p->nr_stacks++;
		p->bytes += sizeof(*e) + frames_bytes;
	}
	e->count++;
	p->nr_samples++;
	return 0;
}

uint64_t profile__nr_stacks(const struct profile *p)
{
	return p->nr_stacks;
}

uint64_t profile__nr_samples(const struct profile *p)
{
	return p->nr_samples;
}

uint64_t profile__bytes(const struct profile *p)
{
	return p->bytes + (p->stacks ? p->stacks->hh.tbl->num_buckets * sizeof(UT_hash_bucket) : 0);
}

/* From libstdc++ (the C++ ABI's demangler, the one perf and gdb agree with). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static char *symbol_name(const char *sym)
{
	int status = -1;
	char *demangled = NULL;

	if (sym[0] == '_' && sym[1] == 'Z')
		demangled = __cxa_demangle(sym, NULL, NULL, &status);
	if (demangled && status == 0)
		return demangled;
	free(demangled);
	return strdup(sym);
}

/* A frame no symbol names: after the function that holds it by CFI, so all its
 * return addresses make one frame ("MODULE+0xSTART", the start as addr2line -e takes it),
 * or "_start" at the entry point; with no CFI either, "MODULE+0xADDR". */
static char *unnamed_frame_name(struct profile *p, struct module *mod, uint64_t pc,
				uint64_t addr)
{
	const struct unwind_table *table = NULL;
	uint64_t entry = 0;
	uint64_t start = addr;
	bool has_start;
	char *name = NULL;

	if (mod) {
		table = module_registry__unwind_table(p->modules, mod);
		entry = elf_symbols__entry(mod->syms);
	}
	/* as for symbols: a return address right after a gap names the function it points at */
	has_start = unwind_table__function_start(table, pc, &start) == 0 ||
		    (pc != addr && unwind_table__function_start(table, addr, &start) == 0);
	/* entry code without CFI (ld.so's _start) is named as is_entry_code in session.c
	 * recognises it */
	if (entry && ((has_start && start == entry) ||
		      (!has_start && pc >= entry && pc - entry < ELF_ENTRY_CODE_MAX)))
		return strdup("_start");
	return asprintf(&name, "%s+0x%" PRIx64, mod ? mod->name : "?", start) < 0 ? NULL : name;
}

/* JIT code: its process's perf map entry, else its mapping's name, never an address. */
static char *anon_code_name(const struct module *mod, uint64_t pc)
{
	const char *name = perf_map__lookup(mod->perf_map, pc);

	return strdup(name ? name : mod->name);
}

static char *format_frame_name(struct profile *p, const struct frame *f)
{
	/* caller frames: look up ra-1, the call instruction, not the one after it */
	uint64_t pc = (f->flags & FRAME_CALLER) ? f->addr - 1 : f->addr;
	struct module *mod;
	const char *sym = NULL;
	uint64_t off;
	char *name = NULL;

	switch (f->module) {
	case MODULE_KERNEL:
		sym = ksyms__lookup(p->ksyms, pc, &off);
		if ((sym ? asprintf(&name, "%s_[k]", sym)
			 : asprintf(&name, "[kernel]+0x%" PRIx64 "_[k]", pc)) < 0)
			name = NULL;
		return name;
	case MODULE_UNMAPPED:
		return asprintf(&name, "[unmapped]+0x%" PRIx64, f->addr) < 0 ? NULL : name;
	case MODULE_ANON:
		return strdup("[jit]");
	}
	mod = module_registry__by_id(p->modules, f->module);
	if (mod && mod->anon_code)
		return anon_code_name(mod, pc);
	if (mod)
		sym = elf_symbols__lookup(mod->syms, pc, &off);
	/* A return address right after a gap (the kernel's signal return path lands on
	 * __restore_rt, whose CFI starts one byte early) names the function it points at. */
	if (mod && !sym && pc != f->addr)
		sym = elf_symbols__lookup(mod->syms, f->addr, &off);
	if (sym)
		return symbol_name(sym);
	return unnamed_frame_name(p, mod, pc, f->addr);
}

const char *profile__frame_name(struct profile *p, const struct frame *f)
{
	struct name_entry *e;

	HASH_FIND(hh, p->names, f, sizeof(*f), e);
	if (e)
		return e->name;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->frame = *f;
	e->name = format_frame_name(p, f);
	if (!e->name) {
		free(e);
		return NULL;
	}
	HASH_ADD(hh, p->names, frame, sizeof(e->frame), e);
	return e->name;
}

/* Appends a frame name; folded stacks separate frames with ';' and end in " COUNT",
 * so names must not carry ';' or control characters. Returns 0 or -ENOMEM. */
static int append_frame(char **buf, size_t *len, size_t *cap, const char *name)
{
	size_t n = strlen(name);

	if (*len + n + 2 > *cap) {
		size_t new_cap = (*len + n + 2) * 2;
		char *bigger = realloc(*buf, new_cap);

		if (!bigger)
			return -ENOMEM;
		*buf = bigger;
		*cap = new_cap;
	}
	if (*len > 0)
		(*buf)[(*len)++] = ';';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		(*buf)[(*len)++] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	(*buf)[*len] = '\0';
	return 0;
}

/* Builds "comm;root;outer;...;inner" for one stack. Returns NULL when out of memory. */
static char *fold_stack(struct profile *p, const struct stack_entry *e)
{
	const struct frame *frames = (const struct frame *)(e + 1);
	size_t len = 0, cap = 0;
	char *buf = NULL;
	int err;

	err = append_frame(&buf, &len, &cap, e->key.comm[0] ? e->key.comm : "?");
	if (!err && e->key.root)
		err = append_frame(&buf, &len, &cap, e->key.root);
	for (uint32_t i = e->key.nr_frames; !err && i-- > 0;) {
		const char *name = profile__frame_name(p, &frames[i]);

		err = name ? append_frame(&buf, &len, &cap, name) : -ENOMEM;
	}
	if (err) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct folded_entry {
	char *line;
	uint64_t count;
	UT_hash_handle hh;
};

static int compare_folded(const void *a, const void *b)
{
	const struct folded_entry *x = *(const struct folded_entry *const *)a;
	const struct folded_entry *y = *(const struct folded_entry *const *)b;

	return strcmp(x->line, y->line);
}

static void free_folded(struct folded_entry **head)
{
	struct folded_entry *f, *tmp;

	HASH_ITER(hh, *head, f, tmp) {
		HASH_DEL(*head, f);
		free(f->line);
		free(f);
	}
}

/* Merges stacks whose frames differ but whose names agree (two return addresses in one
 * function), keyed by the folded line. */
static int merge_by_name(struct profile *p, struct folded_entry **head)
{
	struct stack_entry *e, *tmp;

	HASH_ITER(hh, p->stacks, e, tmp) {
		struct folded_entry *f;
		char *line = fold_stack(p, e);

		if (!line)
			return -ENOMEM;
		HASH_FIND_STR(*head, line, f);
		if (f) {
			free(line);
		} else {
			f = calloc(1, sizeof(*f));
			if (!f) {
				free(line);
				return -ENOMEM;
			}
			f->line = line;
			HASH_ADD_KEYPTR(hh, *head, f->line, strlen(f->line), f);
		}
		f->count += e->count;
	}
	return 0;
}

int profile__write_folded(struct profile *p, FILE *out)
{
	struct folded_entry *head = NULL, *f, *tmp, **sorted = NULL;
	size_t n = 0;
	int err;

	err = merge_by_name(p, &head);
	if (err)
		goto cleanup;
	sorted = malloc((HASH_COUNT(head) + 1) * sizeof(*sorted));
	if (!sorted) {
		err = -ENOMEM;
		goto cleanup;
	}
	HASH_ITER(hh, head, f, tmp)
		sorted[n++] = f;
	qsort(sorted, n, sizeof(*sorted), compare_folded);
	errno = 0;
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s %" PRIu64 "\n", sorted[i]->line, sorted[i]->count);
	/* a failed write leaves its reason (ENOSPC) in errno: say that, not just "I/O error" */
	err = ferror(out) ? (errno ? -errno : -EIO) : 0;
cleanup:
	free(sorted);
	free_folded(&head);
	return err;
}

static int compare_frames(const struct frame *a, const struct frame *b)
{
	if (a->module != b->module)
		return a->module < b->module ? -1 : 1;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->flags != b->flags)
		return a->flags < b->flags ? -1 : 1;
	return 0;
}

static int compare_stacks(const void *a, const void *b)
{
	const struct stack_entry *x = *(const struct stack_entry *const *)a;
	const struct stack_entry *y = *(const struct stack_entry *const *)b;
	const struct frame *fx = (const struct frame *)(x + 1), *fy = (const struct frame *)(y + 1);
	int c = strncmp(x->key.comm, y->key.comm, HPROF_COMM_LEN);

	if (c)
		return c;
	if (x->key.root != y->key.root)
		return !x->key.root ? -1 : !y->key.root ? 1 : strcmp(x->key.root, y->key.root);
	for (uint32_t i = 0; i < x->key.nr_frames && i < y->key.nr_frames; i++) {
		c = compare_frames(&fx[i], &fy[i]);
		if (c)
			return c;
	}
	return x->key.nr_frames < y->key.nr_frames ? -1 : x->key.nr_frames > y->key.nr_frames;
}

int profile__for_each_stack(struct profile *p, profile_stack_fn fn, void *ctx)
{
	struct stack_entry **sorted, *e, *tmp;
	size_t n = 0;
	int err = 0;

	sorted = malloc((HASH_COUNT(p->stacks) + 1) * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	HASH_ITER(hh, p->stacks, e, tmp)
		sorted[n++] = e;
	qsort(sorted, n, sizeof(*sorted), compare_stacks);
	for (size_t i = 0; i < n && !err; i++) {
		struct profile_stack s = {
			.comm = sorted[i]->key.comm[0] ? sorted[i]->key.comm : "?",
			.root = sorted[i]->key.root,
			.frames = (const struct frame *)(sorted[i] + 1),
			.nr_frames = sorted[i]->key.nr_frames,
			.count = sorted[i]->count,
		};

		err = fn(ctx, &s);
	}
	free(sorted);
	return err;
}

void profile__free(struct profile *p)
{
	struct stack_entry *e, *etmp;
	struct name_entry *n, *ntmp;
	struct root_entry *r, *rtmp;

	if (!p)
		return;
	HASH_ITER(hh, p->stacks, e, etmp) {
		HASH_DEL(p->stacks, e);
		free(e);
	}
	HASH_ITER(hh, p->names, n, ntmp) {
		HASH_DEL(p->names, n);
		free(n->name);
		free(n);
	}
	HASH_ITER(hh, p->roots, r, rtmp) {
		HASH_DEL(p->roots, r);
		free(r->name);
		free(r);
	}
	free(p->probe);
	free(p);
}
