#include "output/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "binary/inline_frames.h"
#include "binary/name_cache.h"
#include "binary/naming.h"
#include "output/profile_internal.h"
#include "sample.h"
#include "util/grow.h"

int profile__new(struct module_registry *modules, const struct ksyms *ksyms,
		 struct profile **out)
{
	struct profile *p = calloc(1, sizeof(*p));

	*out = p;
	if (!p)
		return -ENOMEM;
	p->modules = modules;
	p->ksyms = ksyms;
	/* index 0 of nodes and frames stands for none */
	p->nr_nodes = p->nr_frames = p->nr_strings = 1;
	if (grow_array((void **)&p->nodes, &p->nodes_cap, 1, sizeof(*p->nodes)) ||
	    grow_array((void **)&p->frames, &p->frames_cap, 1, sizeof(*p->frames))) {
		profile__free(p);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

void profile__use_name_cache(struct profile *p, struct name_cache *cache)
{
	p->name_cache = cache;
}

int profile__expand_inline(struct profile *p, bool inlines, bool lines)
{
	if (p->nr_samples > 0 || p->inline_frames)
		return -EBUSY;
	return inline_frames__new(p->modules, inlines, lines, &p->inline_frames);
}

int profile__key_by_name(struct profile *p)
{
	if (p->nr_samples > 0 || p->nr_strings > 1)
		return -EBUSY;
	p->by_name = true;
	return 0;
}

static const char *intern_root(struct profile *p, const char *root)
{
	struct root_entry *r;

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

/* splitmix64's finalizer: every input bit reaches every output bit. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t frame_hash(const struct frame *f)
{
	return mix64(f->addr ^ mix64((uint64_t)f->module << 32 | f->flags));
}

static inline uint64_t child_hash(uint32_t parent, uint32_t frame)
{
	return mix64((uint64_t)parent << 32 | frame);
}

static inline bool same_frame(const struct frame *a, const struct frame *b)
{
	return a->addr == b->addr && a->module == b->module && a->flags == b->flags;
}

static uint64_t string_hash(const char *str)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (; *str; str++)
		h = (h ^ (unsigned char)*str) * 0x100000001b3ull;
	return mix64(h);
}

static uint64_t string_id_hash(const struct profile *p, uint32_t id)
{
	return string_hash(p->strings[id]);
}

static uint64_t frame_id_hash(const struct profile *p, uint32_t id)
{
	return frame_hash(&p->frames[id]);
}

static uint64_t node_hash(const struct profile *p, uint32_t id)
{
	return child_hash(p->nodes[id].parent, p->nodes[id].frame);
}

/* Makes room for one more id, rehashing every id (hash_of gives its hash) into twice the
 * slots when the index would be too full. Returns 0 or -ENOMEM. */
static int index_reserve(const struct profile *p, struct id_index *ix,
			 uint64_t (*hash_of)(const struct profile *, uint32_t))
{
	size_t nslots = ix->slots ? ix->mask + 1 : 0, bigger = nslots ? nslots * 2 : 1024;
	uint32_t *slots;

	if ((ix->used + 1) * INDEX_LOAD_DEN <= nslots * INDEX_LOAD_NUM)
		return 0;
	if (bigger > SIZE_MAX / sizeof(*slots) || !(slots = calloc(bigger, sizeof(*slots))))
		return -ENOMEM;
	for (size_t i = 0; i < nslots; i++) {
		uint32_t id = ix->slots[i];
		size_t at;

		if (id == NONE)
			continue;
		for (at = hash_of(p, id) & (bigger - 1); slots[at] != NONE; at = (at + 1) & (bigger - 1))
			;
		slots[at] = id;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->mask = bigger - 1;
	return 0;
}

/* The first empty slot for hash h (the index has room). */
static void index_put(struct id_index *ix, uint64_t h, uint32_t id)
{
	size_t at;

	for (at = h & ix->mask; ix->slots[at] != NONE; at = (at + 1) & ix->mask)
		;
	ix->slots[at] = id;
	ix->used++;
}

/* The index of f in frames, added on first sight. NONE when out of memory. */
static uint32_t frame_id(struct profile *p, const struct frame *f)
{
	uint64_t h = frame_hash(f);
	uint32_t id;

	if (p->frame_ids.slots) {
		for (size_t at = h & p->frame_ids.mask; (id = p->frame_ids.slots[at]) != NONE;
		     at = (at + 1) & p->frame_ids.mask) {
			if (same_frame(&p->frames[id], f))
				return id;
		}
	}
	if (p->nr_frames >= UINT32_MAX ||
	    grow_array((void **)&p->frames, &p->frames_cap, p->nr_frames + 1, sizeof(*p->frames)) ||
	    grow_array((void **)&p->frame_names, &p->frame_names_cap, p->nr_frames + 1,
		       sizeof(*p->frame_names)) ||
	    grow_array((void **)&p->provisional, &p->provisional_cap, p->nr_frames + 1,
		       sizeof(*p->provisional)) ||
	    (p->frame_lines && grow_array((void **)&p->frame_lines, &p->frame_lines_cap,
					  p->nr_frames + 1, sizeof(*p->frame_lines))) ||
	    index_reserve(p, &p->frame_ids, frame_id_hash))
		return NONE;
	id = (uint32_t)p->nr_frames++;
	p->frames[id] = *f;
	p->frame_names[id] = NONE;
	p->provisional[id] = false;
	if (p->frame_lines)
		p->frame_lines[id] = NONE;
	index_put(&p->frame_ids, h, id);
	return id;
}

/* The index in strings of the one copy of str, which it takes (and frees when there is one
 * already). NONE when out of memory. */
static uint32_t intern(struct profile *p, char *str)
{
	uint64_t h = string_hash(str);
	uint32_t id;

	if (p->string_ids.slots) {
		for (size_t at = h & p->string_ids.mask; (id = p->string_ids.slots[at]) != NONE;
		     at = (at + 1) & p->string_ids.mask) {
			if (strcmp(p->strings[id], str) == 0) {
				free(str);
				return id;
			}
		}
	}
	if (p->nr_strings >= UINT32_MAX ||
	    grow_array((void **)&p->strings, &p->strings_cap, p->nr_strings + 1,
		       sizeof(*p->strings)) ||
	    index_reserve(p, &p->string_ids, string_id_hash)) {
		free(str);
		return NONE;
	}
	id = (uint32_t)p->nr_strings++;
	p->strings[id] = str;
	p->strings_bytes += strlen(str) + 1;
	index_put(&p->string_ids, h, id);
	return id;
}

/* Whether f's name stays what it is while its module id lives: the kernel's and a
 * binary's do, made from its symbols; not one made while they are dropped (an idle
 * binary's, until a process uses it again) or could not be read, nor a JIT's, which may
 * come later (its perf map). Pseudo-modules' cost nothing to make again, and are not
 * kept: a Python frame's (MODULE_PYTHON) lasts as the registry does, its id interned by
 * content, but is one formatting of its location, and would take the room of names that
 * cost a symbol lookup. */
static bool name_is_lasting(const struct profile *p, const struct frame *f)
{
	const struct module *mod;

	if (f->module == MODULE_KERNEL)
		return true;
	mod = module_registry__by_id(p->modules, f->module);
	return mod && !mod->anon_code && !mod->dropped && mod->load_err == 0;
}

/* f's name (malloc'd), from the name cache when it holds it. NULL when out of memory. */
static char *format_frame_name(struct profile *p, const struct frame *f, bool *provisional)
{
	bool lasting = p->name_cache && name_is_lasting(p, f);
	const char *kept = lasting ? name_cache__get(p->name_cache, f) : NULL;
	char *name;

	*provisional = false;
	if (kept)
		return strdup(kept);
	name = frame_name__format_provisional(p->modules, p->ksyms, f, provisional);
	if (name && lasting && !*provisional)
		name_cache__put(p->name_cache, f, name);
	return name;
}

/* The index in strings of frame id's name, made on first use. NONE when out of memory. */
static uint32_t frame_name_id(struct profile *p, uint32_t id)
{
	char *name;

	bool provisional;

	if (p->frame_names[id] != NONE)
		return p->frame_names[id];
	name = format_frame_name(p, &p->frames[id], &provisional);
	if (!name)
		return NONE;
	if (provisional &&
	    !grow_array((void **)&p->pending, &p->pending_cap, p->nr_pending + 1, sizeof(*p->pending))) {
		p->pending[p->nr_pending++] = id;
		p->provisional[id] = true;
	}
	p->frame_names[id] = intern(p, name);
	return p->frame_names[id];
}

/* The name of frame id, made on first use. NULL when out of memory. */
static const char *frame_name(struct profile *p, uint32_t id)
{
	uint32_t name = frame_name_id(p, id);

	return name == NONE ? NULL : p->strings[name];
}

/* A frame's name and line, as keyed by name. */
static uint64_t name_line_key(const struct profile *p, uint32_t id)
{
	return p->frame_names[id] ^ (p->frame_lines ? mix64(p->frame_lines[id]) : 0);
}

static uint64_t name_frame_hash(const struct profile *p, uint32_t id)
{
	return child_hash((uint32_t)name_line_key(p, id), p->frames[id].module);
}

/* The frame the tree's nodes use for frame id: itself, or keyed by name, the first frame
 * counted with its name and line in its module. A Python or inline frame stays itself: its
 * id is already its function at one line, few per function, and the flamegraph's tooltip tells a
 * function that ran on one line from one that ran on several; so, through their lines, do
 * a binary's frames that have them. NONE when out of memory. */
static uint32_t node_frame_id(struct profile *p, uint32_t id)
{
	uint32_t name = frame_name_id(p, id), module = p->frames[id].module, fid;
	uint64_t h;

	if (name == NONE || !p->by_name || p->provisional[id] || module == MODULE_PYTHON ||
	    module == MODULE_INLINE)
		return name == NONE ? NONE : id;
	h = name_frame_hash(p, id);
	if (p->name_frames.slots) {
		for (size_t at = h & p->name_frames.mask; (fid = p->name_frames.slots[at]) != NONE;
		     at = (at + 1) & p->name_frames.mask) {
			if (p->frame_names[fid] == name && p->frames[fid].module == module &&
			    frame_line(p, fid) == frame_line(p, id))
				return fid;
		}
	}
	if (index_reserve(p, &p->name_frames, name_frame_hash))
		return NONE;
	index_put(&p->name_frames, h, id);
	return id;
}

/* A new node; NONE when out of memory. */
static uint32_t new_node(struct profile *p, uint32_t parent, uint32_t frame)
{
	uint32_t id;

	if (p->nr_nodes >= UINT32_MAX ||
	    grow_array((void **)&p->nodes, &p->nodes_cap, p->nr_nodes + 1, sizeof(*p->nodes)) ||
	    index_reserve(p, &p->children, node_hash))
		return NONE;
	id = (uint32_t)p->nr_nodes++;
	p->nodes[id] = (struct stack_node){ .parent = parent, .frame = frame };
	index_put(&p->children, child_hash(parent, frame), id);
	return id;
}

/* Notes frame id's line, unless it has one. Lines are kept from the first frame that has
 * one on: a profile of binaries without DWARF holds none. Returns 0 or -ENOMEM. */
static int note_line(struct profile *p, uint32_t id, uint64_t line)
{
	if (!p->frame_lines) {
		/* NONE is 0: every frame counted so far has no line */
		p->frame_lines = calloc(p->frames_cap, sizeof(*p->frame_lines));
		if (!p->frame_lines)
			return -ENOMEM;
		p->frame_lines_cap = p->frames_cap;
	}
	if (p->frame_lines[id] == NONE)
		p->frame_lines[id] = line;
	return 0;
}

/* The child of parent for frame f, added on first sight, f's line (NONE: none) noted when
 * f is new. NONE when out of memory. */
static uint32_t child(struct profile *p, uint32_t parent, const struct frame *f, uint64_t line)
{
	uint32_t hint = p->nodes[parent].hint, fid, id;
	uint64_t h;

	if (hint != NONE && same_frame(&p->frames[p->nodes[hint].frame], f))
		return hint;
	fid = frame_id(p, f);
	if (fid != NONE && line != NONE && note_line(p, fid, line) != 0)
		return NONE;
	if (fid != NONE)
		fid = node_frame_id(p, fid);
	if (fid == NONE)
		return NONE;
	h = child_hash(parent, fid);
	for (size_t at = h & p->children.mask; (id = p->children.slots[at]) != NONE;
	     at = (at + 1) & p->children.mask) {
		if (p->nodes[id].parent == parent && p->nodes[id].frame == fid)
			break;
	}
	if (id == NONE)
		id = new_node(p, parent, fid);
	if (id != NONE)
		p->nodes[parent].hint = id;
	return id;
}

/* The head node of (comm, root, labels), added on first sight. NONE when out of memory. */
static uint32_t head_node(struct profile *p, const char *comm, const char *root,
			  const struct profile_labels *labels)
{
	struct head_key key;
	struct stack_head *hd;

	memset(&key, 0, sizeof(key));
	strncpy(key.comm, comm, HPROF_COMM_LEN - 1);
	if (root && !(key.root = intern_root(p, root)))
		return NONE;
	if (labels) {
		key.labeled = true;
		key.labels.pid = labels->pid;
		key.labels.tid = labels->tid;
		if ((labels->process && !(key.labels.process = intern_root(p, labels->process))) ||
		    (labels->cgroup && !(key.labels.cgroup = intern_root(p, labels->cgroup))))
			return NONE;
	}
	HASH_FIND(hh, p->heads, &key, sizeof(key), hd);
	if (hd)
		return hd->node;
	if (p->nr_heads >= UINT32_MAX ||
	    grow_array((void **)&p->head_by_id, &p->heads_cap, p->nr_heads + 1,
		       sizeof(*p->head_by_id)))
		return NONE;
	hd = calloc(1, sizeof(*hd));
	if (!hd)
		return NONE;
	/* heads are told apart from other nodes by their parent, NONE */
	hd->node = new_node(p, NONE, (uint32_t)p->nr_heads);
	if (hd->node == NONE) {
		free(hd);
		return NONE;
	}
	hd->key = key;
	p->head_by_id[p->nr_heads++] = hd;
	HASH_ADD(hh, p->heads, key, sizeof(hd->key), hd);
	return hd->node;
}

int profile__add(struct profile *p, const char *comm, const char *root,
		 const struct frame *frames, uint32_t n)
{
	return profile__add_labeled(p, comm, root, NULL, frames, n);
}

/* profile__add_labeled, for count samples. */
static int add_counted(struct profile *p, const char *comm, const char *root,
		       const struct profile_labels *labels, const struct frame *frames,
		       uint32_t n, uint64_t count)
{
	uint32_t node = head_node(p, comm, root, labels);
	struct inline_expansion x = { 0 };

	for (uint32_t i = n; node != NONE && i-- > 0;) {
		if (p->inline_frames)
			inline_frames__expand(p->inline_frames, &frames[i], &x);
		node = child(p, node, &frames[i], x.has_line ? x.line_id + 1 : NONE);
		/* the calls inlined at this frame's pc, inside it */
		for (uint32_t k = 0; node != NONE && k < x.nr_inlined; k++)
			node = child(p, node, &x.inlined[k], NONE);
	}
	if (node == NONE)
		return -ENOMEM;
	if (p->nodes[node].stack == NONE) {
		if (p->nr_stacks + 1 >= UINT32_MAX ||
		    grow_array((void **)&p->counts, &p->counts_cap, p->nr_stacks + 2,
			       sizeof(*p->counts)))
			return -ENOMEM;
		p->nodes[node].stack = (uint32_t)++p->nr_stacks;
		p->counts[p->nr_stacks] = 0;
	}
	p->counts[p->nodes[node].stack] += count;
	p->nr_samples += count;
	return 0;
}

int profile__add_labeled(struct profile *p, const char *comm, const char *root,
			 const struct profile_labels *labels, const struct frame *frames,
			 uint32_t n)
{
	return add_counted(p, comm, root, labels, frames, n, 1);
}

/* The index of f in frames, or NONE when it was never counted. */
static uint32_t find_frame(const struct profile *p, const struct frame *f);

/* Gives f in to the name from gave it, unless that name was provisional: named again, it
 * may now come from a fetched debug file. Names are kept because a binary's symbols, or a
 * process's perf map, may be gone by now. Returns 0 or -ENOMEM. */
static int carry_name(struct profile *to, const struct profile *from, const struct frame *f)
{
	uint32_t old = find_frame(from, f), id;
	char *name;

	if (old == NONE || from->provisional[old] || from->frame_names[old] == NONE)
		return 0;
	id = frame_id(to, f);
	if (id == NONE)
		return -ENOMEM;
	if (to->frame_names[id] != NONE)
		return 0;
	name = strdup(from->strings[from->frame_names[old]]);
	if (!name || (to->frame_names[id] = intern(to, name)) == NONE)
		return -ENOMEM;
	return 0;
}

/* Counts again in to the stack of from that ends at node, without its inline frames:
 * they are expanded anew. Returns 0 or -ENOMEM. */
static int recount_stack(struct profile *to, struct profile *from, uint32_t node)
{
	const struct stack_head *hd = head_of(from, node);
	uint64_t count = from->counts[from->nodes[node].stack];
	uint32_t n = 0;
	int err = 0;

	for (; from->nodes[node].parent != NONE; node = from->nodes[node].parent) {
		const struct frame *f = node_frame(from, node);

		if (f->module == MODULE_INLINE)
			continue;
		if (grow_array((void **)&from->scratch, &from->scratch_cap, n + 1,
			       sizeof(*from->scratch)))
			return -ENOMEM;
		from->scratch[n++] = *f;
		err = carry_name(to, from, f);
		if (err)
			return err;
	}
	return add_counted(to, hd->key.comm, hd->key.root,
			   hd->key.labeled ? &hd->key.labels : NULL, from->scratch, n, count);
}

int profile__recount_inline(struct profile *p)
{
	struct profile *to, swap;
	int err = 0;

	if (!p->inline_frames)
		return 0;
	err = profile__new(p->modules, p->ksyms, &to);
	if (err)
		return err;
	to->name_cache = p->name_cache;
	to->by_name = p->by_name;
	to->inline_frames = p->inline_frames;
	for (uint32_t node = 1; node < p->nr_nodes && !err; node++) {
		if (p->nodes[node].stack != NONE)
			err = recount_stack(to, p, node);
	}
	if (err) {
		to->inline_frames = NULL;
		profile__free(to);
		return err;
	}
	p->inline_frames = NULL;
	swap = *p;
	*p = *to;
	*to = swap;
	profile__free(to);
	return 0;
}

void profile__settle_names(struct profile *p, uint32_t pid)
{
	size_t kept = 0;

	for (size_t i = 0; i < p->nr_pending; i++) {
		uint32_t id = p->pending[i], name;
		const struct module *mod = module_registry__by_id(p->modules, p->frames[id].module);
		bool provisional;
		char *text;

		if (pid && (!mod || mod->anon_pid != pid)) {
			p->pending[kept++] = id;
			continue;
		}
		/* named now as it will be: its process is gone, or the run over */
		p->provisional[id] = false;
		text = frame_name__format_provisional(p->modules, p->ksyms, &p->frames[id],
						      &provisional);
		if (text && (name = intern(p, text)) != NONE)
			p->frame_names[id] = name;
	}
	p->nr_pending = kept;
}

uint64_t profile__nr_stacks(const struct profile *p)
{
	return p->nr_stacks;
}

uint64_t profile__nr_samples(const struct profile *p)
{
	return p->nr_samples;
}

void profile__memory(const struct profile *p, struct profile_memory *m)
{
	const struct id_index *indexes[] = { &p->children, &p->frame_ids, &p->string_ids,
					     &p->name_frames };
	/* arrays as far as they are filled (the rest of a doubled array is not touched yet),
	 * hash indexes whole (their slots are spread over all of it) */
	uint64_t bytes = p->nr_nodes * sizeof(*p->nodes) + (p->nr_stacks + 1) * sizeof(*p->counts) +
			 p->nr_frames * (sizeof(*p->frames) + sizeof(*p->frame_names) +
					 sizeof(*p->provisional) +
					 (p->frame_lines ? sizeof(*p->frame_lines) : 0)) +
			 p->nr_strings * sizeof(*p->strings) + p->strings_bytes +
			 p->nr_heads * (sizeof(*p->head_by_id) + sizeof(struct stack_head));

	for (size_t i = 0; i < sizeof(indexes) / sizeof(indexes[0]); i++) {
		if (indexes[i]->slots)
			bytes += (indexes[i]->mask + 1) * sizeof(*indexes[i]->slots);
	}
	*m = (struct profile_memory){
		.stacks = p->nr_stacks,
		.nodes = p->nr_nodes - 1,
		.frames = p->nr_frames - 1,
		.names = p->nr_strings - 1,
		.bytes = bytes,
	};
}

/* The index of f in frames, or NONE when it was never counted. */
static uint32_t find_frame(const struct profile *p, const struct frame *f)
{
	uint32_t id;

	if (!p->frame_ids.slots)
		return NONE;
	for (size_t at = frame_hash(f) & p->frame_ids.mask; (id = p->frame_ids.slots[at]) != NONE;
	     at = (at + 1) & p->frame_ids.mask) {
		if (same_frame(&p->frames[id], f))
			return id;
	}
	return NONE;
}

const struct python_location *profile__frame_location(const struct profile *p,
						       const struct frame *f)
{
	uint32_t id;

	if (f->module == MODULE_PYTHON)
		return python_names__get(module_registry__python_names(p->modules), f->addr);
	if (f->module == MODULE_INLINE)
		return python_names__get(module_registry__inline_names(p->modules), f->addr);
	id = f->module >= MODULE_FIRST_FILE ? find_frame(p, f) : NONE;
	if (id == NONE || frame_line(p, id) == NONE)
		return NULL;
	return python_names__get(module_registry__inline_names(p->modules), frame_line(p, id) - 1);
}

void profile__inline_frames(struct profile *p, const struct frame *f, const struct frame **inlined,
			    uint32_t *nr)
{
	struct inline_expansion x = { 0 };

	if (p->inline_frames)
		inline_frames__expand(p->inline_frames, f, &x);
	*inlined = x.inlined;
	*nr = x.nr_inlined;
}

void profile__inline_stats(const struct profile *p, struct inline_frames_stats *stats)
{
	inline_frames__stats(p->inline_frames, stats);
}

const char *profile__frame_name(struct profile *p, const struct frame *f)
{
	uint32_t id = frame_id(p, f);

	return id == NONE ? NULL : frame_name(p, id);
}

void profile__free(struct profile *p)
{
	struct stack_head *hd, *htmp;
	struct root_entry *r, *rtmp;

	if (!p)
		return;
	HASH_ITER(hh, p->heads, hd, htmp) {
		HASH_DEL(p->heads, hd);
		free(hd);
	}
	for (size_t i = 1; i < p->nr_strings; i++)
		free(p->strings[i]);
	free(p->strings);
	free(p->string_ids.slots);
	free(p->frame_names);
	free(p->frame_lines);
	inline_frames__free(p->inline_frames);
	free(p->provisional);
	free(p->pending);
	free(p->name_frames.slots);
	HASH_ITER(hh, p->roots, r, rtmp) {
		HASH_DEL(p->roots, r);
		free(r->name);
		free(r);
	}
	free(p->head_by_id);
	free(p->nodes);
	free(p->counts);
	free(p->children.slots);
	free(p->frames);
	free(p->frame_ids.slots);
	free(p->scratch);
	free(p);
}
