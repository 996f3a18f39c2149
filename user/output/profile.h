/* Aggregates identical stacks and writes them as folded stacks, symbolized. */
#ifndef HPROF_PROFILE_H
#define HPROF_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "binary/frame.h"
#include "binary/ksyms.h"
#include "binary/modules.h"
#include "output/profile_labels.h"

struct profile;

int profile__new(struct module_registry *modules, const struct ksyms *ksyms,
		 struct profile **out);
/* Counts return addresses in one function (a name in one binary) as one frame, the first
 * one counted: folded stacks, flame graphs, JSON and the top table come out the same,
 * with a quarter of the nodes on a system-wide run; pprof, which shows addresses, needs
 * them apart. Python frames stay apart by line (the SVG's tooltips show it). Called before
 * the first sample; -EBUSY after. */
int profile__key_by_name(struct profile *p);
/* Expands each binary's frame into the calls inlined at its pc (inline frames,
 * MODULE_INLINE, inside it) when inlines, and gives frames their source lines when lines,
 * from the binary's DWARF (binary/inline_frames.h). Called before the first sample; -EBUSY
 * after. Returns 0, -EBUSY or -ENOMEM. */
int profile__expand_inline(struct profile *p, bool inlines, bool lines);
/* Counts every stack again, its frames expanded anew: after debug files were fetched
 * (binary/fetch_debug.h), the frames of the binaries that now have DWARF get their inline
 * frames and lines in every output. Frames keep their names, but those named provisionally,
 * which are named again. Nothing without profile__expand_inline. Returns 0 or -ENOMEM (p
 * as it was). */
int profile__recount_inline(struct profile *p);
/* The calls inlined at f's pc, outermost first (MODULE_INLINE frames, valid until the next
 * call): the frames that follow f in its stacks. None without profile__expand_inline. */
void profile__inline_frames(struct profile *p, const struct frame *f, const struct frame **inlined,
			    uint32_t *nr);
struct inline_frames_stats;
void profile__inline_stats(const struct profile *p, struct inline_frames_stats *stats);
/* Where f's code is: a Python frame's or an inline frame's location, a binary's frame's
 * function, file and line when it was counted with its line; NULL when none. */
const struct python_location *profile__frame_location(const struct profile *p,
						       const struct frame *f);
struct name_cache;
/* Takes frame names from cache and leaves there the ones it makes (hprof serve's windows,
 * one profile after another). The cache must outlive the profile's naming. */
void profile__use_name_cache(struct profile *p, struct name_cache *cache);
/* Counts one sample of frames[0..n), innermost first. root, when not NULL, is a
 * frame placed right under comm (e.g. the reason a stack is incomplete). */
int profile__add(struct profile *p, const char *comm, const char *root,
		 const struct frame *frames, uint32_t n);
/* profile__add with labels (NULL: none, as profile__add). */
int profile__add_labeled(struct profile *p, const char *comm, const char *root,
			 const struct profile_labels *labels, const struct frame *frames,
			 uint32_t n);
/* Names for good the JIT frames of pid (every process's with pid 0) that were named after
 * their mapping (frame_name__format_provisional): at its exit or the run's end, once its
 * perf map and jitdump were read again (module_registry__reload_jit). */
void profile__settle_names(struct profile *p, uint32_t pid);
uint64_t profile__nr_stacks(const struct profile *p);
uint64_t profile__nr_samples(const struct profile *p);
/* What the profile holds (HPROF_DEBUG=memory). */
struct profile_memory {
	uint64_t stacks; /* distinct stacks */
	uint64_t nodes;  /* of the calling-context tree, heads included */
	uint64_t frames; /* distinct frames */
	uint64_t names;  /* distinct names */
	uint64_t bytes;
};
void profile__memory(const struct profile *p, struct profile_memory *m);
/* Writes "comm;root;outer;...;inner COUNT" lines, sorted, identical names merged.
 * Returns 0 or -errno. */
int profile__write_folded(struct profile *p, FILE *out);
/* One distinct stack as it was counted. */
struct profile_stack {
	const char *comm;
	const char *root;           /* NULL, or a frame right under comm ("[truncated: ...]") */
	const struct profile_labels *labels; /* NULL: counted without labels */
	const struct frame *frames; /* innermost first; valid during the call only */
	uint32_t nr_frames;
	uint64_t count;
};

typedef int (*profile_stack_fn)(void *ctx, const struct profile_stack *stack);
/* Calls fn for every distinct stack in an order fixed by the stacks themselves (comm, root,
 * frames), so the same samples give the same order whatever order they came in. Returns 0,
 * -ENOMEM, or fn's first non-zero return, which stops the walk. */
int profile__for_each_stack(struct profile *p, profile_stack_fn fn, void *ctx);
/* The printable name of a frame ("func", "func_[k]", "module+0x1234"); valid until the
 * profile is freed. */
/* name as folded stacks carry it: they separate frames with ';' and end in " COUNT", so
 * ';' becomes ':' and control characters '?'. out holds strlen(name) + 1 bytes. */
void profile__folded_name(const char *name, char *out);
const char *profile__frame_name(struct profile *p, const struct frame *f);
void profile__free(struct profile *p);

#endif
