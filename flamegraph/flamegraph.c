/* Folded stacks to an interactive SVG flamegraph.
 *
 * Stacks merge into a call tree: names are interned once, nodes live in one array and are
 * found by (parent, name) in an open-addressing table, so 100k stacks cost a few tens of
 * bytes per distinct frame. Every pass over the tree is a loop, never recursion: a stack
 * thousands of frames deep must not exhaust the C stack. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "flamegraph_js.h"

#define NONE UINT32_MAX
/* Node and name ids are u32 indices; NONE is reserved, and tables store id + 1. */
#define MAX_IDS (UINT32_MAX - 2)

/* Geometry in px. Labels are sized with an average glyph width, as no font metrics exist. */
#define XPAD 10
#define FRAME_H 16
#define FONT_SIZE 12
#define CHAR_W (FONT_SIZE * 0.59)
#define TOP_PAD 40
#define SUBTITLE_H 16
#define BOTTOM_PAD 28
#define MIN_IMAGE_WIDTH 100
#define MAX_IMAGE_WIDTH 1000000

#define REPLACEMENT_CHAR 0xFFFD

struct fg_name {
	uint64_t off; /* into strs, NUL-terminated */
	uint32_t len;
	uint32_t rank; /* position in byte order of all names: sorts children cheaply */
};

struct fg_node {
	uint32_t parent, name; /* the root has parent NONE and name NONE ("all") */
	uint32_t first_child, next_sibling;
	uint64_t total; /* samples in this frame and below */
	uint64_t x;     /* samples left of this frame */
	uint32_t depth;
	bool shown;
};

/* Open addressing over ids. A slot keeps its id's hash, so probes and resizes rarely touch
 * the (cache-cold) entries themselves. id + 1 is stored: 0 marks an empty slot. Load <= 1/2. */
struct islot {
	uint32_t hash;
	uint32_t id1;
};

struct itab {
	struct islot *slots;
	size_t cap;
	size_t used;
};

struct flamegraph {
	char *strs;
	size_t strs_len, strs_cap;
	struct fg_name *names;
	size_t nnames, names_cap;
	struct itab name_tab;
	struct fg_node *nodes;
	size_t nnodes, nodes_cap;
	struct itab node_tab;
	uint32_t max_depth; /* of shown frames, after layout */
};

struct name_key {
	const char *s;
	size_t len;
};

struct node_key {
	uint32_t parent, name;
};

typedef bool (*itab_eq_fn)(const struct flamegraph *fg, uint32_t id, const void *key);

static uint64_t fnv1a(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* splitmix64's finalizer: (parent, name) pairs are small dense integers, which linear
 * probing handles badly without mixing. */
static uint32_t node_hash(uint32_t parent, uint32_t name)
{
	uint64_t z = ((uint64_t)parent << 32 | name) + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)(z ^ (z >> 31));
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 64;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

static struct islot *itab_probe(const struct itab *t, uint32_t hash, itab_eq_fn eq,
				const struct flamegraph *fg, const void *key)
{
	size_t i = hash & (t->cap - 1);

	while (t->slots[i].id1 &&
	       (t->slots[i].hash != hash || !eq(fg, t->slots[i].id1 - 1, key)))
		i = (i + 1) & (t->cap - 1);
	return &t->slots[i];
}

/* Makes room for one more id; call before itab_probe so the slot it returns stays valid. */
static int itab_reserve(struct itab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024;
	struct islot *ns;

	if ((t->used + 1) * 2 <= t->cap)
		return 0;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->slots[i].id1)
			continue;
		j = t->slots[i].hash & (ncap - 1);
		while (ns[j].id1)
			j = (j + 1) & (ncap - 1);
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

/* Fills the empty slot itab_probe returned. */
static void itab_set(struct itab *t, struct islot *slot, uint32_t hash, uint32_t id)
{
	slot->hash = hash;
	slot->id1 = id + 1;
	t->used++;
}

static const char *name_str(const struct flamegraph *fg, uint32_t name)
{
	return name == NONE ? "all" : fg->strs + fg->names[name].off;
}

static bool name_eq(const struct flamegraph *fg, uint32_t id, const void *key)
{
	const struct name_key *k = key;

	return fg->names[id].len == k->len && memcmp(fg->strs + fg->names[id].off, k->s, k->len) == 0;
}

static bool node_eq(const struct flamegraph *fg, uint32_t id, const void *key)
{
	const struct node_key *k = key;

	return fg->nodes[id].parent == k->parent && fg->nodes[id].name == k->name;
}

static int intern(struct flamegraph *fg, const char *s, size_t len, uint32_t *out)
{
	struct name_key key = { s, len };
	uint32_t hash = (uint32_t)fnv1a(s, len);
	struct islot *slot;
	struct fg_name *n;
	int err;

	if (len > UINT32_MAX || fg->nnames >= MAX_IDS)
		return -E2BIG;
	err = itab_reserve(&fg->name_tab);
	if (err)
		return err;
	slot = itab_probe(&fg->name_tab, hash, name_eq, fg, &key);
	if (slot->id1) {
		*out = slot->id1 - 1;
		return 0;
	}
	err = grow((void **)&fg->names, &fg->names_cap, fg->nnames + 1, sizeof(*fg->names));
	if (!err)
		err = grow((void **)&fg->strs, &fg->strs_cap, fg->strs_len + len + 1, 1);
	if (err)
		return err;
	n = &fg->names[fg->nnames];
	n->off = fg->strs_len;
	n->len = (uint32_t)len;
	memcpy(fg->strs + fg->strs_len, s, len);
	fg->strs[fg->strs_len + len] = '\0';
	fg->strs_len += len + 1;
	*out = (uint32_t)fg->nnames++;
	itab_set(&fg->name_tab, slot, hash, *out);
	return 0;
}

static int new_node(struct flamegraph *fg, uint32_t parent, uint32_t name, uint32_t *out)
{
	int err;

	if (fg->nnodes >= MAX_IDS)
		return -E2BIG;
	err = grow((void **)&fg->nodes, &fg->nodes_cap, fg->nnodes + 1, sizeof(*fg->nodes));
	if (err)
		return err;
	fg->nodes[fg->nnodes] = (struct fg_node){
		.parent = parent, .name = name, .first_child = NONE, .next_sibling = NONE,
	};
	*out = (uint32_t)fg->nnodes++;
	return 0;
}

/* Moves *cur to its child called s, creating it on first sight. */
static int descend(struct flamegraph *fg, uint32_t *cur, const char *s, size_t len)
{
	struct node_key key = { *cur, 0 };
	struct islot *slot;
	uint32_t hash;
	int err;

	err = intern(fg, s, len, &key.name);
	if (!err)
		err = itab_reserve(&fg->node_tab);
	if (err)
		return err;
	hash = node_hash(key.parent, key.name);
	slot = itab_probe(&fg->node_tab, hash, node_eq, fg, &key);
	if (slot->id1) {
		*cur = slot->id1 - 1;
		return 0;
	}
	err = new_node(fg, key.parent, key.name, cur);
	if (err)
		return err;
	itab_set(&fg->node_tab, slot, hash, *cur);
	return 0;
}

/* Adds count to the leaf and every ancestor; the caller checked the root cannot overflow,
 * and no node holds more than the root. */
static void credit(struct flamegraph *fg, uint32_t leaf, uint64_t count)
{
	for (uint32_t n = leaf; n != NONE; n = fg->nodes[n].parent)
		fg->nodes[n].total += count;
}

int flamegraph__new(struct flamegraph **out)
{
	struct flamegraph *fg;
	uint32_t root;
	int err;

	*out = NULL;
	fg = calloc(1, sizeof(*fg));
	if (!fg)
		return -ENOMEM;
	err = new_node(fg, NONE, NONE, &root);
	if (err)
		goto cleanup;
	*out = fg;
	fg = NULL;
cleanup:
	flamegraph__free(fg);
	return err;
}

void flamegraph__free(struct flamegraph *fg)
{
	if (!fg)
		return;
	free(fg->strs);
	free(fg->names);
	free(fg->name_tab.slots);
	free(fg->nodes);
	free(fg->node_tab.slots);
	free(fg);
}

uint64_t flamegraph__total(const struct flamegraph *fg)
{
	return fg->nodes[0].total;
}

size_t flamegraph__nr_nodes(const struct flamegraph *fg)
{
	return fg->nnodes;
}

/* Looks up without interning: a name this graph never saw has no node. */
int flamegraph__child(const struct flamegraph *fg, uint32_t parent, const char *name,
		      uint32_t *id)
{
	struct name_key nk = { name, strlen(name) };
	struct node_key key = { parent, 0 };
	const struct islot *slot;

	if (parent >= fg->nnodes || !fg->name_tab.cap || !fg->node_tab.cap)
		return -ENOENT;
	slot = itab_probe(&fg->name_tab, (uint32_t)fnv1a(name, nk.len), name_eq, fg, &nk);
	if (!slot->id1)
		return -ENOENT;
	key.name = slot->id1 - 1;
	slot = itab_probe(&fg->node_tab, node_hash(key.parent, key.name), node_eq, fg, &key);
	if (!slot->id1)
		return -ENOENT;
	*id = slot->id1 - 1;
	return 0;
}

uint64_t flamegraph__samples(const struct flamegraph *fg, uint32_t id)
{
	return id < fg->nnodes ? fg->nodes[id].total : 0;
}

int flamegraph__add(struct flamegraph *fg, const char *const *frames, size_t n, uint64_t count)
{
	uint32_t cur = 0;
	int err;

	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!frames[i] || !frames[i][0])
			return -EINVAL;
	}
	if (count == 0)
		return 0;
	if (fg->nodes[0].total > UINT64_MAX - count)
		return -EOVERFLOW;
	for (size_t i = 0; i < n; i++) {
		err = descend(fg, &cur, frames[i], strlen(frames[i]));
		if (err)
			return err;
	}
	credit(fg, cur, count);
	return 0;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Parses a decimal u64 that fills [s, s + len). Returns 0, -EINVAL or -ERANGE. */
static int parse_count(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9)
			return -EINVAL;
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int fail(char *err, size_t errlen, int ret, const char *msg)
{
	if (errlen)
		snprintf(err, errlen, "%s", msg);
	return ret;
}

/* Checks the stack part of a line: frames separated by ';', none empty. */
static bool frames_valid(const char *s, size_t len)
{
	if (len == 0 || s[0] == ';' || s[len - 1] == ';')
		return false;
	for (size_t i = 1; i < len; i++) {
		if (s[i] == ';' && s[i - 1] == ';')
			return false;
	}
	return true;
}

int flamegraph__add_folded(struct flamegraph *fg, const char *line, size_t len,
			   char *err, size_t errlen)
{
	const char *p, *end;
	size_t sep, stack_len;
	uint64_t count;
	uint32_t cur = 0;
	int ret;

	while (len && is_blank(line[len - 1]))
		len--;
	if (len == 0)
		return 0;
	if (memchr(line, '\0', len))
		return fail(err, errlen, -EINVAL, "NUL byte in line");
	for (sep = len; sep > 0 && line[sep - 1] != ' ' && line[sep - 1] != '\t'; sep--)
		;
	if (sep == 0)
		return fail(err, errlen, -EINVAL, "missing sample count");
	ret = parse_count(line + sep, len - sep, &count);
	if (ret == -EINVAL)
		return fail(err, errlen, ret, "invalid sample count (want a decimal integer)");
	if (ret)
		return fail(err, errlen, ret, "sample count out of range");
	stack_len = sep;
	while (stack_len && is_blank(line[stack_len - 1]))
		stack_len--;
	if (stack_len == 0)
		return fail(err, errlen, -EINVAL, "missing stack");
	if (!frames_valid(line, stack_len))
		return fail(err, errlen, -EINVAL, "empty frame name");
	if (count == 0)
		return 0;
	if (fg->nodes[0].total > UINT64_MAX - count)
		return fail(err, errlen, -EOVERFLOW, "sample total exceeds 2^64-1");
	end = line + stack_len;
	for (p = line; p < end;) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *fe = semi ? semi : end;

		ret = descend(fg, &cur, p, (size_t)(fe - p));
		if (ret)
			return fail(err, errlen, ret, ret == -E2BIG ? "too many distinct frames"
								     : strerror(-ret));
		p = fe + 1;
	}
	credit(fg, cur, count);
	return 0;
}

/* ---- child order ---- */

static int cmp_name_ids(const void *a, const void *b, void *ctx)
{
	const struct flamegraph *fg = ctx;

	return strcmp(name_str(fg, *(const uint32_t *)a), name_str(fg, *(const uint32_t *)b));
}

static int cmp_nodes(const void *a, const void *b, void *ctx)
{
	const struct flamegraph *fg = ctx;
	const struct fg_node *x = &fg->nodes[*(const uint32_t *)a];
	const struct fg_node *y = &fg->nodes[*(const uint32_t *)b];

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	if (fg->names[x->name].rank != fg->names[y->name].rank)
		return fg->names[x->name].rank < fg->names[y->name].rank ? -1 : 1;
	return 0;
}

/* Links every node's children in byte order of their names, which is what makes the
 * output independent of the input's line order. */
static int sort_children(struct flamegraph *fg)
{
	size_t nn = fg->nnames, n = fg->nnodes;
	uint32_t *order = malloc((nn > n ? nn : n) * sizeof(*order) + 1);

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < nn; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, nn, sizeof(*order), cmp_name_ids, fg);
	for (size_t i = 0; i < nn; i++)
		fg->names[order[i]].rank = (uint32_t)i;

	for (size_t i = 1; i < n; i++)
		order[i - 1] = (uint32_t)i;
	qsort_r(order, n - 1, sizeof(*order), cmp_nodes, fg);
	for (size_t i = 0; i < n; i++)
		fg->nodes[i].first_child = NONE;
	/* pushing in reverse leaves each list in ascending order */
	for (size_t i = n - 1; i-- > 0;) {
		struct fg_node *c = &fg->nodes[order[i]];

		c->next_sibling = fg->nodes[c->parent].first_child;
		fg->nodes[c->parent].first_child = order[i];
	}
	free(order);
	return 0;
}

/* Places children left to right inside their parent and decides what is wide enough to
 * draw. A parent's id is always below its children's, so one pass in id order sees every
 * parent placed before its children. */
static void layout(struct flamegraph *fg, double px_per_sample, double min_width)
{
	fg->max_depth = 0;
	fg->nodes[0].x = 0;
	fg->nodes[0].depth = 0;
	fg->nodes[0].shown = fg->nodes[0].total > 0;
	for (size_t p = 0; p < fg->nnodes; p++) {
		const struct fg_node *parent = &fg->nodes[p];
		uint64_t x = parent->x;

		if (!parent->shown)
			continue;
		for (uint32_t c = parent->first_child; c != NONE; c = fg->nodes[c].next_sibling) {
			struct fg_node *child = &fg->nodes[c];

			child->x = x;
			x += child->total;
			child->depth = parent->depth + 1;
			child->shown = (double)child->total * px_per_sample >= min_width;
			if (child->shown && child->depth > fg->max_depth)
				fg->max_depth = child->depth;
		}
	}
}

/* ---- SVG text ---- */

/* Decodes one UTF-8 sequence; anything invalid (overlong, surrogate, truncated, stray
 * continuation byte) consumes one byte and yields U+FFFD. */
static size_t utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
	unsigned char c = s[0];
	uint32_t v, min;
	size_t n;

	*cp = REPLACEMENT_CHAR;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2, v = c & 0x1F, min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		n = 3, v = c & 0x0F, min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 1;
	}
	if (n > len)
		return 1;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 1;
		v = v << 6 | (s[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 1;
	*cp = v;
	return n;
}

static size_t utf8_count(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), n = 0;
	uint32_t cp;

	for (size_t i = 0; i < len; n++)
		i += utf8_next(p + i, len - i, &cp);
	return n;
}

static void put_codepoint(FILE *out, uint32_t cp)
{
	/* XML 1.0 forbids C0 controls and U+FFFE/U+FFFF even as character references */
	if (cp < 0x20 || cp == 0xFFFE || cp == 0xFFFF)
		cp = REPLACEMENT_CHAR;
	switch (cp) {
	case '&': fputs("&amp;", out); return;
	case '<': fputs("&lt;", out); return;
	case '>': fputs("&gt;", out); return;
	case '"': fputs("&quot;", out); return;
	case '\'': fputs("&apos;", out); return;
	}
	if (cp < 0x80) {
		putc_unlocked((int)cp, out);
	} else if (cp < 0x800) {
		putc_unlocked((int)(0xC0 | cp >> 6), out);
		putc_unlocked((int)(0x80 | (cp & 0x3F)), out);
	} else if (cp < 0x10000) {
		putc_unlocked((int)(0xE0 | cp >> 12), out);
		putc_unlocked((int)(0x80 | (cp >> 6 & 0x3F)), out);
		putc_unlocked((int)(0x80 | (cp & 0x3F)), out);
	} else {
		putc_unlocked((int)(0xF0 | cp >> 18), out);
		putc_unlocked((int)(0x80 | (cp >> 12 & 0x3F)), out);
		putc_unlocked((int)(0x80 | (cp >> 6 & 0x3F)), out);
		putc_unlocked((int)(0x80 | (cp & 0x3F)), out);
	}
}

/* Writes at most max_chars code points of s as escaped, valid UTF-8 XML text. */
static void put_text(FILE *out, const char *s, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	uint32_t cp;

	for (size_t i = 0, n = 0; i < len && n < max_chars; n++) {
		i += utf8_next(p + i, len - i, &cp);
		put_codepoint(out, cp);
	}
}

/* The label that fits in w px: the whole name, a prefix ending in "..", or nothing.
 * The script in the SVG applies the same rule after a zoom. */
static void put_label(FILE *out, const char *name, double w)
{
	double fit = (w - 3) / CHAR_W;
	size_t chars = fit < 0 ? 0 : (size_t)fit;
	size_t len;

	if (chars < 3)
		return;
	len = utf8_count(name);
	if (len <= chars) {
		put_text(out, name, SIZE_MAX);
		return;
	}
	put_text(out, name, chars - 2);
	fputs("..", out);
}

/* ---- colours ---- */

static enum flamegraph_family frame_family(uint32_t name, const char *s)
{
	size_t len = strlen(s);

	/* checked before the kernel suffix: "[unknown]_[k]" is still an unknown frame */
	if (name == NONE || (s[0] == '[' && s[len - 1] == ']'))
		return FLAMEGRAPH_FAMILY_SPECIAL;
	if (len > 4 && strcmp(s + len - 4, "_[k]") == 0)
		return FLAMEGRAPH_FAMILY_KERNEL;
	return FLAMEGRAPH_FAMILY_USER;
}

struct rgb {
	unsigned r, g, b;
};

/* Colours come from a hash of the name, so a function keeps its colour across profiles;
 * the family (warm for user code, blue for the kernel, grey for synthetic frames, green
 * for interpreted code) comes from the kind. */
static struct rgb family_colour(enum flamegraph_family family, const char *s)
{
	uint64_t h = fnv1a(s, strlen(s));
	double v1 = (double)(h & 0xFFFF) / 0xFFFF;
	double v2 = (double)(h >> 16 & 0xFFFF) / 0xFFFF;
	double v3 = (double)(h >> 32 & 0xFFFF) / 0xFFFF;

	switch (family) {
	case FLAMEGRAPH_FAMILY_KERNEL:
		return (struct rgb){ 40 + (unsigned)(60 * v1), 120 + (unsigned)(80 * v2),
				     200 + (unsigned)(55 * v3) };
	case FLAMEGRAPH_FAMILY_SPECIAL: {
		unsigned grey = 165 + (unsigned)(40 * v1);

		return (struct rgb){ grey, grey, grey };
	}
	case FLAMEGRAPH_FAMILY_INTERPRETED:
		/* green always above red and blue: greens to teals, clear of the kernel's blues */
		return (struct rgb){ 50 + (unsigned)(60 * v1), 180 + (unsigned)(55 * v2),
				     80 + (unsigned)(80 * v3) };
	case FLAMEGRAPH_FAMILY_USER:
	default:
		/* green stays below red: reds to oranges, never yellow-green */
		return (struct rgb){ 205 + (unsigned)(50 * v1), 50 + (unsigned)(150 * v2),
				     (unsigned)(50 * v3) };
	}
}

static struct rgb frame_colour(uint32_t name, const char *s)
{
	return family_colour(frame_family(name, s), s);
}

struct flamegraph_rgb flamegraph__colour(enum flamegraph_family family, const char *name)
{
	struct rgb c = family_colour(family, name);

	return (struct flamegraph_rgb){ (uint8_t)c.r, (uint8_t)c.g, (uint8_t)c.b };
}

/* ---- document ---- */

struct svg_geom {
	unsigned width, height;
	unsigned frames_bottom; /* y below the root frame */
	double px_per_sample;
	uint64_t total;
	const struct flamegraph_style *style;
};

/* The style hook's colour, if it gives one. */
static struct rgb styled_colour(const struct flamegraph_style *style,
				const struct flamegraph_frame *f, struct rgb c)
{
	struct flamegraph_rgb fill;

	if (style && style->fill && style->fill(style->ctx, f, &fill))
		return (struct rgb){ fill.r, fill.g, fill.b };
	return c;
}

/* The tooltip after the name: the style hook's text, parentheses made brackets. */
static void put_tip(FILE *out, const struct flamegraph_style *style,
		    const struct flamegraph_frame *f)
{
	char buf[512];

	if (style && style->tip && style->tip(style->ctx, f, buf, sizeof(buf))) {
		for (char *p = buf; *p; p++)
			*p = *p == '(' ? '[' : *p == ')' ? ']' : *p;
		fputs(" (", out);
		put_text(out, buf, SIZE_MAX);
		fputs(")", out);
		return;
	}
	fprintf(out, " (%" PRIu64 " sample%s, %.2f%%)", f->samples, f->samples == 1 ? "" : "s",
		100.0 * (double)f->samples / (double)f->total);
}

static void write_frame(FILE *out, const struct flamegraph *fg, uint32_t id,
			const struct svg_geom *g)
{
	const struct fg_node *n = &fg->nodes[id];
	const char *name = name_str(fg, n->name);
	const struct flamegraph_frame f = {
		.id = id, .parent = n->parent, .name = name, .depth = n->depth,
		.samples = n->total, .total = g->total,
	};
	struct rgb c = styled_colour(g->style, &f, frame_colour(n->name, name));
	double x = XPAD + (double)n->x * g->px_per_sample;
	double w = (double)n->total * g->px_per_sample;
	unsigned y = g->frames_bottom - (n->depth + 1) * FRAME_H;

	fprintf(out, "<g data-s=\"%" PRIu64 "\" data-n=\"%" PRIu64 "\" data-d=\"%u\"><title>",
		n->x, n->total, n->depth);
	put_text(out, name, SIZE_MAX);
	put_tip(out, g->style, &f);
	fputs("</title>", out);
	fprintf(out, "<rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" fill=\"rgb(%u,%u,%u)\"/>",
		x, y, w, FRAME_H - 1, c.r, c.g, c.b);
	fprintf(out, "<text x=\"%.2f\" y=\"%u\">", x + 3, y + FRAME_H - 4);
	put_label(out, name, w);
	fputs("</text></g>\n", out);
}

static uint32_t next_shown(const struct flamegraph *fg, uint32_t id)
{
	while (id != NONE && !fg->nodes[id].shown)
		id = fg->nodes[id].next_sibling;
	return id;
}

/* Pre-order walk over shown frames following the child/sibling/parent links, so the
 * output order depends only on the tree and needs no stack. */
static void write_frames(FILE *out, const struct flamegraph *fg, const struct svg_geom *g)
{
	uint32_t id = fg->nodes[0].shown ? 0 : NONE;

	while (id != NONE) {
		uint32_t next;

		write_frame(out, fg, id, g);
		next = next_shown(fg, fg->nodes[id].first_child);
		while (next == NONE && id != NONE) {
			next = next_shown(fg, fg->nodes[id].next_sibling);
			if (next == NONE)
				id = fg->nodes[id].parent;
		}
		id = next;
	}
}

static const char svg_style[] =
	"<style>\n"
	"text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
	"#title { font-size: 17px; }\n"
	"#subtitle { fill: #555; }\n"
	"#frames > g { cursor: pointer; }\n"
	"#frames > g:hover > rect { stroke: #000; stroke-width: 0.5; }\n"
	"#frames text { pointer-events: none; }\n"
	"#frames > g.anc { opacity: 0.55; }\n"
	".ctl { cursor: pointer; fill: #2a4d8f; }\n"
	".ctl:hover { text-decoration: underline; }\n"
	".hide { display: none; }\n"
	"</style>\n";

static void write_header(FILE *out, const struct flamegraph_opts *opts, const struct svg_geom *g)
{
	unsigned mid = g->width / 2;
	bool sub = opts->subtitle && opts->subtitle[0];

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%u\" "
		     "height=\"%u\" viewBox=\"0 0 %u %u\">\n",
		g->width, g->height, g->width, g->height);
	fputs(svg_style, out);
	fputs("<rect width=\"100%\" height=\"100%\" fill=\"#f6f6f1\"/>\n", out);
	fprintf(out, "<text id=\"title\" x=\"%u\" y=\"24\" text-anchor=\"middle\">", mid);
	put_text(out, opts->title ? opts->title : "Flame Graph", SIZE_MAX);
	fputs("</text>\n", out);
	if (sub) {
		fprintf(out, "<text id=\"subtitle\" x=\"%u\" y=\"%u\" text-anchor=\"middle\">", mid,
			24 + SUBTITLE_H);
		put_text(out, opts->subtitle, SIZE_MAX);
		fputs("</text>\n", out);
	}
	fprintf(out, "<text id=\"reset\" class=\"ctl hide\" x=\"%u\" y=\"24\">Reset Zoom</text>\n"
		     "<text id=\"search\" class=\"ctl\" x=\"%u\" y=\"24\" text-anchor=\"end\">Search</text>\n"
		     "<text id=\"details\" x=\"%u\" y=\"%u\"> </text>\n"
		     "<text id=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\"> </text>\n",
		XPAD, g->width - XPAD, XPAD, g->height - 10, g->width - XPAD, g->height - 10);
}

/* Conservative: layout() draws a frame when total * px_per_sample >= min_width, and
 * px_per_sample is (width - 2 * XPAD) / total, less than width / total. */
uint64_t flamegraph__min_drawn(uint64_t total, const struct flamegraph_opts *opts)
{
	unsigned width = opts && opts->width ? opts->width : FLAMEGRAPH_DEFAULT_WIDTH;
	double min_width = opts && opts->min_width > 0 ? opts->min_width : FLAMEGRAPH_DEFAULT_MIN_WIDTH;

	return (uint64_t)floor((double)total * min_width / (double)width);
}

int flamegraph__write_svg(struct flamegraph *fg, FILE *out, const struct flamegraph_opts *opts)
{
	static const struct flamegraph_opts defaults;
	struct svg_geom g = { 0 };
	unsigned top;
	int err;

	if (!opts)
		opts = &defaults;
	g.width = opts->width ? opts->width : FLAMEGRAPH_DEFAULT_WIDTH;
	if (g.width < MIN_IMAGE_WIDTH || g.width > MAX_IMAGE_WIDTH)
		return -EINVAL;
	g.total = fg->nodes[0].total;
	g.style = opts->style;
	g.px_per_sample = g.total ? (double)(g.width - 2 * XPAD) / (double)g.total : 0;
	err = sort_children(fg);
	if (err)
		return err;
	layout(fg, g.px_per_sample, opts->min_width > 0 ? opts->min_width : FLAMEGRAPH_DEFAULT_MIN_WIDTH);
	if ((uint64_t)fg->max_depth + 1 > (UINT32_MAX - 1000) / FRAME_H)
		return -E2BIG;
	top = TOP_PAD + (opts->subtitle && opts->subtitle[0] ? SUBTITLE_H : 0);
	g.frames_bottom = top + (fg->max_depth + 1) * FRAME_H;
	g.height = g.frames_bottom + BOTTOM_PAD;

	errno = 0;
	write_header(out, opts, &g);
	fputs("<g id=\"frames\">\n", out);
	write_frames(out, fg, &g);
	fputs("</g>\n", out);
	if (!g.total)
		fprintf(out, "<text x=\"%u\" y=\"%u\" text-anchor=\"middle\">No samples</text>\n",
			g.width / 2, g.frames_bottom - 4);
	fprintf(out, "<script><![CDATA[\n%s]]></script>\n</svg>\n", flamegraph_js);
	if (fflush(out) == EOF || ferror(out))
		return errno ? -errno : -EIO;
	return 0;
}

/* ---- folded text in ---- */

/* Reads one line without its newline into *buf. Returns 1 for a line, 0 at end of input,
 * -E2BIG for a line over FLAMEGRAPH_MAX_LINE, -errno on a read error. */
static int read_line(FILE *in, char **buf, size_t *cap, size_t *len)
{
	int c, err;

	*len = 0;
	while ((c = getc_unlocked(in)) != EOF && c != '\n') {
		if (*len >= FLAMEGRAPH_MAX_LINE)
			return -E2BIG;
		err = grow((void **)buf, cap, *len + 1, 1);
		if (err)
			return err;
		(*buf)[(*len)++] = (char)c;
	}
	if (ferror(in))
		return errno ? -errno : -EIO;
	return c == EOF && *len == 0 ? 0 : 1;
}

int flamegraph__render(FILE *in, FILE *out, const struct flamegraph_opts *opts,
		       char *err, size_t errlen)
{
	struct flamegraph *fg = NULL;
	char *buf = NULL, msg[128];
	size_t cap = 0, len, lineno = 0;
	int ret;

	ret = flamegraph__new(&fg);
	if (ret) {
		fail(err, errlen, ret, strerror(-ret));
		goto cleanup;
	}
	for (;;) {
		lineno++;
		ret = read_line(in, &buf, &cap, &len);
		if (ret == 0)
			break;
		if (ret == -E2BIG) {
			snprintf(err, errlen, "line %zu: longer than %u bytes", lineno, FLAMEGRAPH_MAX_LINE);
			goto cleanup;
		}
		if (ret < 0) {
			snprintf(err, errlen, "read error: %s", strerror(-ret));
			goto cleanup;
		}
		ret = flamegraph__add_folded(fg, buf, len, msg, sizeof(msg));
		if (ret) {
			snprintf(err, errlen, "line %zu: %s", lineno, msg);
			goto cleanup;
		}
	}
	ret = flamegraph__write_svg(fg, out, opts);
	if (ret)
		snprintf(err, errlen, "%s", ret == -EINVAL ? "image width out of range"
			 : ret == -E2BIG ? "stack too deep to draw" : strerror(-ret));
cleanup:
	free(buf);
	flamegraph__free(fg);
	return ret;
}
