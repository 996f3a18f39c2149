#include "output/outputs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "output/pprof.h"
#include "output/top.h"
#include "util/atomic_file.h"
#include "util/grow.h"

static int write_folded_file(struct profile *p, const char *path)
{
	struct atomic_file *f;
	int err;

	if (strcmp(path, "-") == 0) {
		err = profile__write_folded(p, stdout);
		if (!err && fflush(stdout))
			err = -errno;
		/* the reader has all it wanted (hprof | head) */
		return err == -EPIPE || (err && errno == EPIPE) ? 0 : err;
	}
	err = atomic_file__open(path, 0644, &f);
	if (err)
		return err;
	err = profile__write_folded(p, atomic_file__stream(f));
	if (err) {
		atomic_file__abort(f);
		return err;
	}
	return atomic_file__commit(f);
}

/* What the SVG knows of a flamegraph node that frames with a source location were counted
 * in (Python frames, inline frames, a binary's frames with DWARF lines): Python's drawn in
 * the interpreted family, inline ones in a lighter shade, their tooltip with the code's
 * place. Which place does not depend on the order stacks come in: one location, one file's
 * several lines, or several files. */
enum python_place {
	PLACE_NONE,  /* no frame with a location here */
	PLACE_ONE,   /* one file and line: "file:line" */
	PLACE_LINES, /* one file, several lines: "file" */
	PLACE_FILES, /* several files (one module name in two packages): none */
};

struct python_node {
	const struct python_location *loc; /* the one, or one of the file's */
	enum python_place place;
	uint32_t module; /* MODULE_PYTHON, MODULE_INLINE, or a binary's */
};

/* Building the flamegraph's tree from the profile's stacks, named as the folded text
 * names them, so the SVG is the one flamegraph.pl-style tools draw from that text. */
struct graph_build {
	struct profile *p;
	struct flamegraph *fg;
	struct python_node *py;     /* by flamegraph node id; NULL until a Python frame */
	size_t nr_py, py_cap;
	const char **names; /* one stack's frame names, outermost first */
	size_t names_cap;
	size_t *offsets;    /* where each is in text */
	size_t offsets_cap;
	char *text;         /* their folded forms, one after the other */
	size_t text_cap;
};

/* The folded text's reader drops blanks that end a stack: the innermost name loses them
 * here too. */
static void trim_trailing_blanks(char *name)
{
	size_t len = strlen(name);

	while (len > 1 && (name[len - 1] == ' ' || name[len - 1] == '\t'))
		name[--len] = '\0';
}

/* The i-th name of a stack, outermost first: comm, root, frames. */
static const char *stack_name(struct graph_build *g, const struct profile_stack *st, size_t i,
			      size_t n)
{
	if (i == 0)
		return st->comm;
	if (i == 1 && st->root)
		return st->root;
	return profile__frame_name(g->p, &st->frames[n - 1 - i]);
}

/* A frame at location loc (interned: one pointer per location) was counted in node. */
static void note_python(struct python_node *node, const struct python_location *loc,
			uint32_t module)
{
	const struct python_location *a = node->loc;

	if (node->place == PLACE_NONE) {
		*node = (struct python_node){ loc, PLACE_ONE, module };
		return;
	}
	if (node->place == PLACE_FILES || a == loc)
		return;
	if (strcmp(a->file, loc->file) != 0)
		node->place = PLACE_FILES;
	else if (a->line != loc->line)
		node->place = PLACE_LINES;
}

/* The flamegraph nodes of the stack's Python frames, names[0..n) as added, noted. */
static int note_python_frames(struct graph_build *g, const struct profile_stack *st, size_t n)
{
	size_t first = 1 + (st->root != NULL);
	uint32_t node = 0; /* the root, "all" */
	bool any = false;

	for (uint32_t i = 0; i < st->nr_frames && !any; i++)
		any = profile__frame_location(g->p, &st->frames[i]) != NULL;
	if (!any)
		return 0;
	if (grow_array((void **)&g->py, &g->py_cap, flamegraph__nr_nodes(g->fg), sizeof(*g->py)))
		return -ENOMEM;
	memset(g->py + g->nr_py, 0, (g->py_cap - g->nr_py) * sizeof(*g->py));
	g->nr_py = g->py_cap;
	for (size_t i = 0; i < n; i++) {
		const struct frame *f = i >= first ? &st->frames[n - 1 - i] : NULL;
		const struct python_location *loc = f ? profile__frame_location(g->p, f) : NULL;

		if (flamegraph__child(g->fg, node, g->names[i], &node) != 0)
			return -ENOENT; /* the stack was just added */
		if (loc)
			note_python(&g->py[node], loc, f->module);
	}
	return 0;
}

static int add_stack(void *ctx, const struct profile_stack *st)
{
	struct graph_build *g = ctx;
	size_t n = 1 + (st->root != NULL) + st->nr_frames, len = 0;
	int err;

	if (grow_array((void **)&g->names, &g->names_cap, n, sizeof(*g->names)) ||
	    grow_array((void **)&g->offsets, &g->offsets_cap, n, sizeof(*g->offsets)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *name = stack_name(g, st, i, n);
		size_t name_len = name ? strlen(name) : 0;

		if (!name || grow_array((void **)&g->text, &g->text_cap, len + name_len + 1, 1))
			return -ENOMEM;
		profile__folded_name(name, g->text + len);
		g->offsets[i] = len;
		len += name_len + 1;
	}
	/* text has stopped moving: point at its names */
	for (size_t i = 0; i < n; i++)
		g->names[i] = g->text + g->offsets[i];
	trim_trailing_blanks(g->text + g->offsets[n - 1]);
	err = flamegraph__add(g->fg, g->names, n, st->count);
	return err ? err : note_python_frames(g, st, n);
}

static const struct python_node *python_node(const struct graph_build *g, uint32_t id)
{
	return g->py && id < g->py_cap && g->py[id].place != PLACE_NONE ? &g->py[id] : NULL;
}

/* Python frames in the interpreted family, as flamegraph.pl's java palette draws Java's;
 * inline frames in their family's colour, lighter (halfway to white). */
static bool python_fill(void *ctx, const struct flamegraph_frame *f, struct flamegraph_rgb *fill)
{
	const struct python_node *node = python_node(ctx, f->id);

	if (!node || (node->module != MODULE_PYTHON && node->module != MODULE_INLINE))
		return false;
	if (node->module == MODULE_PYTHON) {
		*fill = flamegraph__colour(FLAMEGRAPH_FAMILY_INTERPRETED, f->name);
		return true;
	}
	*fill = flamegraph__colour(FLAMEGRAPH_FAMILY_USER, f->name);
	fill->r = (uint8_t)((fill->r + 255) / 2);
	fill->g = (uint8_t)((fill->g + 255) / 2);
	fill->b = (uint8_t)((fill->b + 255) / 2);
	return true;
}

/* A Python frame's tooltip: the samples, then where its code is, "file:line" when it ran
 * one line, the file when it ran several. */
static bool python_tip(void *ctx, const struct flamegraph_frame *f, char *buf, size_t len)
{
	const struct graph_build *g = ctx;
	const struct python_node *node = python_node(g, f->id);
	const struct python_location *loc = node ? node->loc : NULL;
	int at;

	if (!node || node->place == PLACE_FILES || !loc->file[0])
		return false;
	at = snprintf(buf, len, "%" PRIu64 " sample%s, %.2f%%, %s", f->samples,
		      f->samples == 1 ? "" : "s", 100.0 * (double)f->samples / (double)f->total,
		      loc->file);
	if (node->place == PLACE_ONE && loc->line > 0 && at >= 0 && (size_t)at < len)
		snprintf(buf + at, len - (size_t)at, ":%d", loc->line);
	return true;
}

static int write_svg_file(struct profile *p,
			  const struct output_opts *opts)
{
	struct graph_build g = { .p = p };
	struct flamegraph_style style = { python_fill, python_tip, &g };
	struct flamegraph_opts fg_opts = { .title = opts->title, .subtitle = opts->subtitle,
					   .style = &style };
	struct atomic_file *f = NULL;
	int err;

	err = flamegraph__new(&g.fg);
	if (!err)
		err = profile__for_each_stack(p, add_stack, &g);
	if (!err)
		err = atomic_file__open(opts->svg_path, 0644, &f);
	if (!err) {
		err = flamegraph__write_svg(g.fg, atomic_file__stream(f), &fg_opts);
		err = err ? (atomic_file__abort(f), err) : atomic_file__commit(f);
	}
	flamegraph__free(g.fg);
	free(g.py);
	free(g.names);
	free(g.offsets);
	free(g.text);
	return err;
}

/* The top table goes where the user reads: stdout, unless folded stacks already fill it. */
static int write_top_table(struct profile *p, struct module_registry *modules,
			   const struct output_opts *opts)
{
	bool folded_on_stdout = opts->folded_path && strcmp(opts->folded_path, "-") == 0;
	int err = top__write(p, modules, opts->top, folded_on_stdout ? stderr : stdout);

	/* the reader has all it wanted (hprof --top 50 | head) */
	return err == -EPIPE ? 0 : err;
}

int outputs__write(struct profile *p, struct module_registry *modules,
		   const struct output_opts *opts)
{
	int err;

	if (opts->folded_path) {
		err = write_folded_file(p, opts->folded_path);
		if (err) {
			fprintf(stderr, "hprof: cannot write %s: %s\n", opts->folded_path,
				strerror(-err));
			return err;
		}
	}
	if (opts->svg_path) {
		err = write_svg_file(p, opts);
		if (err) {
			fprintf(stderr, "hprof: cannot write %s: %s\n", opts->svg_path,
				strerror(-err));
			return err;
		}
	}
	if (opts->pprof_path) {
		struct pprof_opts po = { opts->frequency, opts->duration_ns };

		err = pprof__write_file(opts->pprof_path, p, modules, &po);
		if (err) {
			fprintf(stderr, "hprof: cannot write %s: %s\n", opts->pprof_path,
				strerror(-err));
			return err;
		}
	}
	if (opts->top) {
		err = write_top_table(p, modules, opts);
		if (err) {
			fprintf(stderr, "hprof: cannot write the top table: %s\n", strerror(-err));
			return err;
		}
	}
	return 0;
}
