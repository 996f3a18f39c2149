/* Two profiles compared function by function: each function's inclusive and self share of
 * its profile's samples, the change in percentage points, whether the change is more than
 * sampling noise, and the gate a CI job fails on. Written as a text table, JSON, and a
 * differential flamegraph (NEW's frames coloured by their change against BASE). */
#ifndef HPROF_OUTPUT_DIFF_H
#define HPROF_OUTPUT_DIFF_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "output/stack_set.h"

enum diff_measure {
	DIFF_INCLUSIVE, /* samples with the function anywhere on the stack */
	DIFF_SELF,      /* samples with the function innermost */
};

struct diff_opts {
	enum diff_measure measure; /* what the change, the sort and the gate are about */
	bool gate;                 /* --threshold given */
	double threshold;          /* percentage points */
	double confidence;         /* in (0, 1) */
	uint64_t min_samples;      /* functions under this in both profiles are left out */
	const regex_t *functions;  /* the gate considers only names matching one of these */
	size_t nr_functions;       /* 0: every function */
	size_t top;                /* table rows with the largest changes; 0: all */
};

enum diff_status {
	DIFF_IN_BOTH,
	DIFF_NEW,      /* no samples in BASE */
	DIFF_VANISHED, /* no samples in NEW */
};

struct diff_row {
	uint32_t id; /* in the profiles' shared name table */
	uint64_t base_incl, new_incl, base_self, new_self;
	double base_incl_pct, new_incl_pct, base_self_pct, new_self_pct;
	double change; /* percentage points of the measure, NEW - BASE */
	double z;      /* pooled two-proportion z of the measure, positive when it grew */
	bool significant; /* |z| above the critical value */
	bool gated;       /* the gate considered it (--function) */
	bool regressed;   /* gated, grew by more than the threshold, and significantly */
	enum diff_status status;
};

struct diff_result {
	const struct name_table *names;
	struct diff_row *rows; /* sorted by change, largest growth first, ties by name */
	size_t nr_rows;
	uint64_t base_total, new_total;
	uint64_t tested;       /* functions the gate tested: the Bonferroni factor */
	double z_crit;
	size_t nr_regressed;
};

/* Compares two sets over the same name table. Returns 0, -ENODATA when either profile
 * has no samples, or -ENOMEM. */
int diff__compute(const struct stack_set *base, const struct stack_set *new,
		  const struct diff_opts *o, struct diff_result *out);
/* The smallest change (percentage points) the comparison can tell from noise for a
 * function at share p (0..1). */
double diff__min_detectable(const struct diff_result *r, double p);
/* The table, then (with a gate) the regressed functions, one a line, last. */
int diff__write_table(const struct diff_result *r, const struct diff_opts *o,
		      const char *base_name, const char *new_name, FILE *out);
int diff__write_json(const struct diff_result *r, const struct diff_opts *o,
		     const char *base_name, const char *new_name, FILE *out);
/* NEW's frames, each coloured by its call path's change of share against BASE: red grew,
 * blue shrank, the stronger the larger; tooltips give both shares and the change. */
int diff__write_svg(const struct stack_set *base, const struct stack_set *new,
		    const struct diff_result *r, const char *base_name, const char *new_name,
		    FILE *out);
void diff_result__free(struct diff_result *r);

#endif
