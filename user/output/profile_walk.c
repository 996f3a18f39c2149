#include "output/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "output/profile_internal.h"
#include "util/grow.h"

/* The profile's stacks in an order fixed by the stacks themselves, and as folded text. */

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

