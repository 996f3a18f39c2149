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
#include "sample.h"
#include "util/grow.h"

/* Distinct stacks as a calling-context tree: a stack is a path from its head (comm and
 * root) down through its frames, outermost first, and stacks that share their outer frames
 * share those nodes. A new distinct stack costs only the frames where it parts from the
 * stacks seen before (three or four nodes on a system-wide run), not a copy of all of them
 * (thirty or so): memory grows with distinct code paths, however many processes run them.
 * Frames are kept once each and nodes name them by index. */

/* Node and frame index 0 is no node, no frame. */
#define NONE 0
/* Grow a hash index before it is more than 3/4 full. */
#define INDEX_LOAD_NUM 3
#define INDEX_LOAD_DEN 4

struct stack_node {
	uint32_t parent; /* NONE for a head */
	uint32_t frame;  /* index in frames; for a head, in heads */
	uint32_t hint;   /* the child last taken from here: most samples take it again */
	uint32_t stack;  /* index in counts when a stack ends here, else NONE */
};
/* Most nodes are inner ones: their size is the tree's. */
_Static_assert(sizeof(struct stack_node) == 16, "a node is four indexes");

struct head_key {
	char comm[HPROF_COMM_LEN];
	const char *root; /* interned: compared by pointer */
	bool labeled;
	struct profile_labels labels; /* strings interned as root is */
};

struct stack_head {
	struct head_key key;
	uint32_t node;
	UT_hash_handle hh;
};

/* Open addressing over ids (NONE: an empty slot), a key compared by reading its object. */
struct id_index {
	uint32_t *slots;
	size_t mask; /* slots - 1; slots a power of two */
	size_t used;
};

struct root_entry {
	char *name;
	UT_hash_handle hh;
};

struct profile {
	struct module_registry *modules;
	const struct ksyms *ksyms;
	struct name_cache *name_cache; /* NULL: none (profile__use_name_cache) */
	struct stack_node *nodes;
	size_t nr_nodes, nodes_cap;
	uint64_t *counts; /* samples of each distinct stack, index 1 on */
	size_t counts_cap;
	struct id_index children; /* (parent, frame) -> node */
	struct frame *frames;
	size_t nr_frames, frames_cap;
	struct id_index frame_ids; /* frame -> index in frames */
	/* Each frame's name, made when the frame is first counted: while its process lives
	 * (a JIT's perf map is read then) and its binary's symbols are at hand, so that
	 * neither need to be kept for the outputs. Names are kept once each. */
	uint32_t *frame_names; /* by frame index: index in strings; NONE: not named yet */
	size_t frame_names_cap;
	/* A binary's frames expanded into their inlined calls and given source lines
	 * (profile__expand_inline); NULL: neither. A frame's own line, by frame index: its id
	 * in the registry's inline_names + 1, NONE when it has none. */
	struct inline_frames *inline_frames;
	uint64_t *frame_lines;
	size_t frame_lines_cap;
	/* JIT frames named after their mapping while their process lives: a perf map or
	 * jitdump may still name them (profile__settle_names). Until then a frame keeps a
	 * node of its own, keyed by name or not, so that a later name reaches only it. */
	bool *provisional;     /* by frame index */
	size_t provisional_cap;
	uint32_t *pending;     /* the provisional frames' indexes */
	size_t nr_pending, pending_cap;
	char **strings;
	size_t nr_strings, strings_cap, strings_bytes;
	struct id_index string_ids;
	/* Keyed by name (profile__key_by_name): the tree's nodes name each function by the
	 * first frame counted with its name in its binary, so return addresses in one
	 * function share a node, and functions of one name in two binaries (every program's
	 * main) stay apart for the top table's module column. Frame ids, keyed by (name,
	 * module). */
	bool by_name;
	struct id_index name_frames;
	struct stack_head *heads;
	struct stack_head **head_by_id;
	size_t nr_heads, heads_cap;
	struct root_entry *roots;
	uint64_t nr_samples;
	uint64_t nr_stacks;
	struct frame *scratch; /* one stack's frames, for profile__for_each_stack */
	size_t scratch_cap;
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
	    (p->inline_frames && grow_array((void **)&p->frame_lines, &p->frame_lines_cap,
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

/* Frame id's line: its id in inline_names + 1; NONE when it has none. */
static uint64_t frame_line(const struct profile *p, uint32_t id)
{
	return p->frame_lines ? p->frame_lines[id] : NONE;
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

/* The child of parent for frame f, added on first sight, f's line (NONE: none) noted when
 * f is new. NONE when out of memory. */
static uint32_t child(struct profile *p, uint32_t parent, const struct frame *f, uint64_t line)
{
	uint32_t hint = p->nodes[parent].hint, fid, id;
	uint64_t h;

	if (hint != NONE && same_frame(&p->frames[p->nodes[hint].frame], f))
		return hint;
	fid = frame_id(p, f);
	if (fid != NONE && line != NONE && p->frame_lines && p->frame_lines[fid] == NONE)
		p->frame_lines[fid] = line;
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

int profile__add_labeled(struct profile *p, const char *comm, const char *root,
			 const struct profile_labels *labels, const struct frame *frames,
			 uint32_t n)
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
	p->counts[p->nodes[node].stack]++;
	p->nr_samples++;
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

static const struct stack_head *head_of(const struct profile *p, uint32_t node)
{
	while (p->nodes[node].parent != NONE)
		node = p->nodes[node].parent;
	return p->head_by_id[p->nodes[node].frame];
}

static const struct frame *node_frame(const struct profile *p, uint32_t node)
{
	return &p->frames[p->nodes[node].frame];
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

void profile__folded_name(const char *name, char *out)
{
	for (; *name; name++) {
		unsigned char c = (unsigned char)*name;

		*out++ = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	*out = '\0';
}

/* Appends a frame name as folded text carries it. Returns 0 or -ENOMEM. */
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
	profile__folded_name(name, *buf + *len);
	*len += n;
	return 0;
}

/* The frames from node up to its head into scratch, innermost first; *depth of them.
 * Returns 0 or -ENOMEM. */
static int gather_path(struct profile *p, uint32_t node, uint32_t *depth)
{
	uint32_t n = 0;

	for (; p->nodes[node].parent != NONE; node = p->nodes[node].parent) {
		if (grow_array((void **)&p->scratch, &p->scratch_cap, n + 1, sizeof(*p->scratch)))
			return -ENOMEM;
		p->scratch[n++] = *node_frame(p, node);
	}
	*depth = n;
	return 0;
}

/* Builds "comm;root;outer;...;inner" for the stack ending at node. Returns NULL when out
 * of memory. */
static char *fold_stack(struct profile *p, uint32_t node)
{
	const struct stack_head *hd = head_of(p, node);
	uint32_t depth;
	size_t len = 0, cap = 0;
	char *buf = NULL;
	int err;

	/* the path comes innermost first: gather it, then name it outermost first */
	err = gather_path(p, node, &depth);
	if (!err)
		err = append_frame(&buf, &len, &cap, hd->key.comm[0] ? hd->key.comm : "?");
	if (!err && hd->key.root)
		err = append_frame(&buf, &len, &cap, hd->key.root);
	for (uint32_t i = depth; !err && i-- > 0;) {
		const char *name = profile__frame_name(p, &p->scratch[i]);

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
	for (size_t node = 1; node < p->nr_nodes; node++) {
		struct folded_entry *f;
		char *line;

		if (p->nodes[node].stack == NONE)
			continue;
		line = fold_stack(p, (uint32_t)node);
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
		f->count += p->counts[p->nodes[node].stack];
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

/* A distinct stack to sort: the node it ends at, and its head. */
struct stack_ref {
	uint32_t node;
	const struct stack_head *head;
};

/* Frames in the order of their names, then binaries, when the profile is keyed by name
 * (which frame of a name a node holds depends on the order samples came in), Python
 * frames of one name by their file and line (their ids follow the order they were first
 * seen); else by binary and address. */
static int compare_node_frames(const struct profile *p, uint32_t x, uint32_t y)
{
	const struct frame *fx = node_frame(p, x), *fy = node_frame(p, y);
	int c;

	if (!p->by_name)
		return compare_frames(fx, fy);
	c = strcmp(p->strings[p->frame_names[p->nodes[x].frame]],
		   p->strings[p->frame_names[p->nodes[y].frame]]);
	if (!c && fx->module == MODULE_PYTHON && fy->module == MODULE_PYTHON)
		return python_names__compare(module_registry__python_names(p->modules), fx->addr,
					     fy->addr);
	if (!c && fx->module == MODULE_INLINE && fy->module == MODULE_INLINE)
		return python_names__compare(module_registry__inline_names(p->modules), fx->addr,
					     fy->addr);
	c = c ? c : fx->module < fy->module ? -1 : fx->module > fy->module;
	/* a binary's frames of one name, by their lines */
	if (!c && frame_line(p, p->nodes[x].frame) != frame_line(p, p->nodes[y].frame))
		return python_names__compare(module_registry__inline_names(p->modules),
					     frame_line(p, p->nodes[x].frame) - 1,
					     frame_line(p, p->nodes[y].frame) - 1);
	return c;
}

/* Interned strings, NULL first. */
static int compare_interned(const char *a, const char *b)
{
	if (a == b)
		return 0;
	return !a ? -1 : !b ? 1 : strcmp(a, b);
}

static int compare_labels(const struct head_key *x, const struct head_key *y)
{
	int c;

	if (x->labeled != y->labeled)
		return x->labeled ? 1 : -1;
	if (x->labels.pid != y->labels.pid)
		return x->labels.pid < y->labels.pid ? -1 : 1;
	if (x->labels.tid != y->labels.tid)
		return x->labels.tid < y->labels.tid ? -1 : 1;
	c = compare_interned(x->labels.process, y->labels.process);
	return c ? c : compare_interned(x->labels.cgroup, y->labels.cgroup);
}

/* comm, root, labels, then frames innermost first, then the shorter first. */
static int compare_stacks(const void *a, const void *b, void *ctx)
{
	const struct profile *p = ctx;
	const struct stack_ref *x = a, *y = b;
	uint32_t nx = x->node, ny = y->node;
	int c = strncmp(x->head->key.comm, y->head->key.comm, HPROF_COMM_LEN);

	if (c)
		return c;
	if (x->head->key.root != y->head->key.root)
		return !x->head->key.root ? -1
		       : !y->head->key.root ? 1
					    : strcmp(x->head->key.root, y->head->key.root);
	c = compare_labels(&x->head->key, &y->head->key);
	if (c)
		return c;
	/* up both paths together, from the innermost frame; a shared node means the rest of
	 * the paths are the same */
	while (nx != ny && p->nodes[nx].parent != NONE && p->nodes[ny].parent != NONE) {
		c = compare_node_frames(p, nx, ny);
		if (c)
			return c;
		nx = p->nodes[nx].parent;
		ny = p->nodes[ny].parent;
	}
	if (nx == ny)
		return 0;
	return p->nodes[nx].parent == NONE ? (p->nodes[ny].parent == NONE ? 0 : -1) : 1;
}

int profile__for_each_stack(struct profile *p, profile_stack_fn fn, void *ctx)
{
	struct stack_ref *sorted = malloc((p->nr_stacks + 1) * sizeof(*sorted));
	size_t n = 0;
	int err = 0;

	if (!sorted)
		return -ENOMEM;
	for (size_t node = 1; node < p->nr_nodes; node++) {
		if (p->nodes[node].stack != NONE)
			sorted[n++] = (struct stack_ref){ (uint32_t)node, head_of(p, (uint32_t)node) };
	}
	qsort_r(sorted, n, sizeof(*sorted), compare_stacks, p);
	for (size_t i = 0; i < n && !err; i++) {
		uint32_t node = sorted[i].node, depth;
		struct profile_stack s = {
			.comm = sorted[i].head->key.comm[0] ? sorted[i].head->key.comm : "?",
			.root = sorted[i].head->key.root,
			.labels = sorted[i].head->key.labeled ? &sorted[i].head->key.labels : NULL,
			.count = p->counts[p->nodes[node].stack],
		};

		err = gather_path(p, node, &depth);
		if (err)
			break;
		s.frames = p->scratch;
		s.nr_frames = depth;
		err = fn(ctx, &s);
	}
	free(sorted);
	return err;
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
