/* Flamegraph renderer: folded stacks in, a standalone interactive SVG out.
 *
 * Input is the folded format flamegraph.pl, inferno and speedscope read: one stack a line,
 * `comm;outer;...;inner COUNT`, repeated stacks adding up. Frames ending in `_[k]` are
 * kernel frames, frames written `[...]` are synthetic ones (`[unknown]`, `[truncated: ...]`);
 * each family gets its own colours. The output depends only on the multiset of stacks,
 * never on line order, so the same profile always gives the same bytes. */
#ifndef HPROF_FLAMEGRAPH_H
#define HPROF_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Lines longer than this are rejected rather than buffered: input is untrusted. */
#define FLAMEGRAPH_MAX_LINE (16u << 20)
#define FLAMEGRAPH_DEFAULT_WIDTH 1200u
/* Narrower frames than this are left out (their samples still count toward the parent). */
#define FLAMEGRAPH_DEFAULT_MIN_WIDTH 0.1

/* The root frame's parent. */
#define FLAMEGRAPH_NONE UINT32_MAX

/* A frame as it is drawn, for a style hook. */
struct flamegraph_frame {
	uint32_t id;      /* node id (see flamegraph__child); the root ("all") is 0 */
	uint32_t parent;  /* FLAMEGRAPH_NONE for the root */
	const char *name; /* "all" for the root */
	uint32_t depth;
	uint64_t samples; /* in this frame and below */
	uint64_t total;   /* of the whole graph */
};

struct flamegraph_rgb {
	uint8_t r, g, b;
};

/* The colour families frames are drawn in; within one, a frame's colour comes from a hash
 * of its name. A style hook that knows a frame's kind better than its name tells (an
 * interpreter's frames) draws it in its family with flamegraph__colour. */
enum flamegraph_family {
	FLAMEGRAPH_FAMILY_USER,    /* reds to oranges: native code */
	FLAMEGRAPH_FAMILY_KERNEL,  /* blues: "_[k]" */
	FLAMEGRAPH_FAMILY_SPECIAL, /* greys: "[...]" */
	/* greens to teals: an interpreter's code (Python), as flamegraph.pl's java and js
	 * palettes draw code that is not native; never chosen by name */
	FLAMEGRAPH_FAMILY_INTERPRETED,
};

/* The colour of a frame named name in family: the one the SVG draws it in. */
struct flamegraph_rgb flamegraph__colour(enum flamegraph_family family, const char *name);

/* Per-frame colour and tooltip, e.g. a differential flamegraph's. Hooks are called for
 * every drawn frame in pre-order (a frame after its parent); either may be NULL. */
struct flamegraph_style {
	/* Returns true with *fill set, or false for the frame's usual colour. */
	bool (*fill)(void *ctx, const struct flamegraph_frame *f, struct flamegraph_rgb *fill);
	/* Writes what follows the name in the tooltip, inside its parentheses (by default
	 * "N samples, P%"); returns false for the default. Parentheses in it become brackets:
	 * the script takes the name from before the last parenthesized group. */
	bool (*tip)(void *ctx, const struct flamegraph_frame *f, char *buf, size_t len);
	void *ctx;
};

struct flamegraph_opts {
	const char *title;    /* NULL = "Flame Graph" */
	const char *subtitle; /* NULL or "" = no subtitle line */
	unsigned width;       /* image width in px; 0 = FLAMEGRAPH_DEFAULT_WIDTH */
	double min_width;     /* px; 0 = FLAMEGRAPH_DEFAULT_MIN_WIDTH */
	const struct flamegraph_style *style; /* NULL: colours by name, sample counts */
};

/* Reads folded stacks from `in`, writes the SVG to `out`. Returns 0 or -errno; on error
 * writes a one-line message (e.g. "line 12: missing sample count") into err. */
int flamegraph__render(FILE *in, FILE *out, const struct flamegraph_opts *opts,
		       char *err, size_t errlen);

/* Lower level: build the call tree in memory, then write it. For callers that already
 * hold aggregated stacks and need not round-trip through text. */
struct flamegraph;

int flamegraph__new(struct flamegraph **out);
/* Adds `count` samples of the stack frames[0] (outermost, usually comm) .. frames[n-1]
 * (innermost). Returns 0, -EINVAL for an empty frame name or n == 0, -EOVERFLOW when the
 * sample total would pass UINT64_MAX, -E2BIG for too many distinct frames, -ENOMEM. */
int flamegraph__add(struct flamegraph *fg, const char *const *frames, size_t n, uint64_t count);
/* Parses one folded line (without its newline) and adds it; blank lines are skipped.
 * Returns 0 or -errno with the reason, without a line number, in err. */
int flamegraph__add_folded(struct flamegraph *fg, const char *line, size_t len,
			   char *err, size_t errlen);
uint64_t flamegraph__total(const struct flamegraph *fg);
/* Node ids run from 0 (the root) to flamegraph__nr_nodes() - 1. */
size_t flamegraph__nr_nodes(const struct flamegraph *fg);
/* The child of node parent named name: 0 with *id set, or -ENOENT. Lets a style hook find
 * the same call path in another graph. */
int flamegraph__child(const struct flamegraph *fg, uint32_t parent, const char *name,
		      uint32_t *id);
/* Samples in node id and below (0 for an id out of range). */
uint64_t flamegraph__samples(const struct flamegraph *fg, uint32_t id);
/* Frames with fewer samples than this, in a graph of total samples drawn with opts, are
 * never drawn (they are narrower than min_width): callers holding many stacks may cut
 * them off before adding. */
uint64_t flamegraph__min_drawn(uint64_t total, const struct flamegraph_opts *opts);
/* Returns 0 or -errno (the stream's write error). */
int flamegraph__write_svg(struct flamegraph *fg, FILE *out, const struct flamegraph_opts *opts);
void flamegraph__free(struct flamegraph *fg);

#endif
