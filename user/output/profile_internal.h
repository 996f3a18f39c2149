/* The calling-context tree's own layout, shared by output/profile.c (counting, naming) and
 * output/profile_walk.c (the stacks in a fixed order, folded text). Nothing outside them
 * includes it. */
#ifndef HPROF_OUTPUT_PROFILE_INTERNAL_H
#define HPROF_OUTPUT_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

#include "binary/frame.h"
#include "binary/ksyms.h"
#include "binary/modules.h"
#include "output/profile_labels.h"
#include "sample.h"

struct inline_frames;
struct name_cache;

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
	 * in the registry's inline_names + 1, NONE when it has none; NULL until a frame has one. */
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

static inline const struct stack_head *head_of(const struct profile *p, uint32_t node)
{
	while (p->nodes[node].parent != NONE)
		node = p->nodes[node].parent;
	return p->head_by_id[p->nodes[node].frame];
}


static inline const struct frame *node_frame(const struct profile *p, uint32_t node)
{
	return &p->frames[p->nodes[node].frame];
}


/* Frame id's line: its id in inline_names + 1; NONE when it has none. */
static inline uint64_t frame_line(const struct profile *p, uint32_t id)
{
	return p->frame_lines ? p->frame_lines[id] : NONE;
}

#endif
