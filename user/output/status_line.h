/* The live status line on a terminal: one line on stderr, rewritten in place while a
 * recording runs (elapsed time, time left, samples, complete share, lost samples), taken
 * off before anything else is printed. */
#ifndef HPROF_OUTPUT_STATUS_LINE_H
#define HPROF_OUTPUT_STATUS_LINE_H

#include <stdbool.h>
#include <stdint.h>

/* Shown from this far into a run, then every STATUS_LINE_EVERY_S: a shorter run shows none. */
#define STATUS_LINE_FIRST_S 1.0
#define STATUS_LINE_EVERY_S 0.5

struct status_figures {
	double elapsed_s;
	double left_s;          /* < 0: no end set (--time) */
	uint64_t samples;       /* handled so far */
	uint64_t user_stacks;   /* of them, with a user stack */
	uint64_t complete;      /* of those, complete */
	uint64_t lost;          /* samples lost */
};

struct status_line;

/* A status line on descriptor fd. Returns 0 or -errno. */
int status_line__new(int fd, struct status_line **out);
/* Whether the line is due an update at elapsed_s (the caller then gathers the figures). */
bool status_line__due(const struct status_line *s, double elapsed_s);
/* Rewrites the line, cut to the terminal's width so that it never wraps. */
void status_line__show(struct status_line *s, const struct status_figures *f);
/* Takes the line off the terminal (nothing when none is shown); the next show draws it again. */
void status_line__clear(struct status_line *s);
/* Clears the line and frees s. */
void status_line__free(struct status_line *s);

#endif
