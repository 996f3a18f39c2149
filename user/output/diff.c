#include "output/diff.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "output/json.h"
#include "output/stats.h"
#include "util/grow.h"

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static const char *measure_name(enum diff_measure m)
{
	return m == DIFF_SELF ? "self" : "inclusive";
}

static uint64_t base_count(const struct diff_row *row, enum diff_measure m)
{
	return m == DIFF_SELF ? row->base_self : row->base_incl;
}

static uint64_t new_count(const struct diff_row *row, enum diff_measure m)
{
	return m == DIFF_SELF ? row->new_self : row->new_incl;
}

static bool matches_any(const struct diff_opts *o, const char *name)
{
	if (o->nr_functions == 0)
		return true;
	for (size_t i = 0; i < o->nr_functions; i++) {
		if (regexec(&o->functions[i], name, 0, NULL, 0) == 0)
			return true;
	}
	return false;
}

static int compare_rows(const void *a, const void *b, void *names)
{
	const struct diff_row *x = a, *y = b;

	if (x->change != y->change)
		return x->change > y->change ? -1 : 1;
	return strcmp(name_table__name(names, x->id), name_table__name(names, y->id));
}

/* One row per function with samples in either profile and at least min_samples in one. */
static int collect_rows(const struct stack_set *base, const struct stack_set *new,
			const struct diff_opts *o, struct diff_result *r)
{
	uint32_t n = name_table__count(r->names);

	r->rows = calloc((size_t)n + 1, sizeof(*r->rows));
	if (!r->rows)
		return -ENOMEM;
	for (uint32_t id = 0; id < n; id++) {
		struct diff_row row = {
			.id = id,
			.base_incl = stack_set__inclusive(base, id),
			.new_incl = stack_set__inclusive(new, id),
			.base_self = stack_set__self(base, id),
			.new_self = stack_set__self(new, id),
		};

		if (!row.base_incl && !row.new_incl)
			continue;
		if (base_count(&row, o->measure) < o->min_samples &&
		    new_count(&row, o->measure) < o->min_samples)
			continue;
		row.base_incl_pct = pct(row.base_incl, r->base_total);
		row.new_incl_pct = pct(row.new_incl, r->new_total);
		row.base_self_pct = pct(row.base_self, r->base_total);
		row.new_self_pct = pct(row.new_self, r->new_total);
		row.change = o->measure == DIFF_SELF ? row.new_self_pct - row.base_self_pct
						     : row.new_incl_pct - row.base_incl_pct;
		row.z = stats__two_proportion_z(base_count(&row, o->measure), r->base_total,
						new_count(&row, o->measure), r->new_total);
		row.status = !row.base_incl ? DIFF_NEW : !row.new_incl ? DIFF_VANISHED : DIFF_IN_BOTH;
		row.gated = matches_any(o, name_table__name(r->names, id));
		r->tested += row.gated;
		r->rows[r->nr_rows++] = row;
	}
	return 0;
}

int diff__compute(const struct stack_set *base, const struct stack_set *new,
		  const struct diff_opts *o, struct diff_result *r)
{
	int err;

	memset(r, 0, sizeof(*r));
	r->names = stack_set__names(new);
	r->base_total = stack_set__total(base);
	r->new_total = stack_set__total(new);
	if (!r->base_total || !r->new_total)
		return -ENODATA;
	err = collect_rows(base, new, o, r);
	if (err)
		return err;
	r->z_crit = stats__critical_z(o->confidence, r->tested);
	for (size_t i = 0; i < r->nr_rows; i++) {
		struct diff_row *row = &r->rows[i];

		row->significant = fabs(row->z) > r->z_crit;
		row->regressed = o->gate && row->gated && row->change > o->threshold &&
				 row->z > r->z_crit;
		r->nr_regressed += row->regressed;
	}
	qsort_r(r->rows, r->nr_rows, sizeof(*r->rows), compare_rows, (void *)r->names);
	return 0;
}

double diff__min_detectable(const struct diff_result *r, double p)
{
	return 100.0 * stats__min_detectable(p, r->base_total, r->new_total, r->z_crit);
}

void diff_result__free(struct diff_result *r)
{
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

/* ---- text ---- */

static const char *status_mark(enum diff_status s)
{
	return s == DIFF_NEW ? "new" : s == DIFF_VANISHED ? "gone" : "";
}

/* Which rows the table shows: with --top N, the N largest changes either way. */
static bool *shown_rows(const struct diff_result *r, size_t top)
{
	bool *shown = calloc(r->nr_rows + 1, sizeof(*shown));
	size_t lo = 0, hi = r->nr_rows;

	if (!shown)
		return NULL;
	if (!top || top >= r->nr_rows) {
		for (size_t i = 0; i < r->nr_rows; i++)
			shown[i] = true;
		return shown;
	}
	/* rows run from the largest growth down to the largest shrink: take from both ends */
	for (size_t n = 0; n < top && lo < hi; n++) {
		if (fabs(r->rows[lo].change) >= fabs(r->rows[hi - 1].change))
			shown[lo++] = true;
		else
			shown[--hi] = true;
	}
	return shown;
}

static void write_header(const struct diff_result *r, const struct diff_opts *o,
			 const char *base_name, const char *new_name, FILE *out)
{
	fprintf(out, "hprof diff: base %s (%" PRIu64 " samples), new %s (%" PRIu64 " samples)\n",
		base_name, r->base_total, new_name, r->new_total);
	fprintf(out, "change: of the %s share in percentage points; significant: |z| > %.2f in a "
		     "pooled two-proportion z-test at %g%% confidence over %" PRIu64 " function%s "
		     "(Bonferroni)\n",
		measure_name(o->measure), r->z_crit, 100 * o->confidence, r->tested,
		r->tested == 1 ? "" : "s");
	fprintf(out, "%7s %7s %7s %7s %8s %7s %4s %4s  %s\n", "base", "new", "base", "new",
		"change", "z", "sig", "note", "function");
	fprintf(out, "%7s %7s %7s %7s %8s\n", "incl%", "incl%", "self%", "self%", "pp");
}

/* v with two decimals, right-aligned in width, as printf's "%*.2f" (with sign: "%+*.2f")
 * writes it, "-0.00" included; a table of 100,000 functions spends most of its time in
 * printf otherwise. */
static char *put_fixed2(char *p, double v, int width, bool sign)
{
	char digits[32];
	int n = 0;
	double a = fabs(v), hi = a * 100, lo = fma(a, 100, -hi); /* a * 100 == hi + lo exactly */
	double hundredths = nearbyint(hi); /* ties to even, as printf rounds */
	bool neg = signbit(v);
	uint64_t u;

	/* only where the rounded product is a tie can the exact one fall on either side */
	if (fabs(hi - hundredths) == 0.5 && lo != 0)
		hundredths = lo > 0 ? floor(hi) + 1 : floor(hi);

	if (!isfinite(v) || hundredths > 1e17)
		return p + sprintf(p, sign ? "%+*.2f" : "%*.2f", width, v);
	u = (uint64_t)hundredths;
	do {
		digits[n++] = (char)('0' + u % 10);
		u /= 10;
		if (n == 2)
			digits[n++] = '.';
	} while (u || n < 4);
	if (neg || sign)
		digits[n++] = neg ? '-' : '+';
	for (int pad = width - n; pad > 0; pad--)
		*p++ = ' ';
	while (n)
		*p++ = digits[--n];
	return p;
}

static void write_row(const struct diff_result *r, const struct diff_row *row, FILE *out)
{
	char buf[96], *p = buf;

	p = put_fixed2(p, row->base_incl_pct, 7, false);
	*p++ = ' ';
	p = put_fixed2(p, row->new_incl_pct, 7, false);
	*p++ = ' ';
	p = put_fixed2(p, row->base_self_pct, 7, false);
	*p++ = ' ';
	p = put_fixed2(p, row->new_self_pct, 7, false);
	*p++ = ' ';
	p = put_fixed2(p, row->change, 8, true);
	*p++ = ' ';
	p = put_fixed2(p, row->z, 7, false);
	p += sprintf(p, " %4s %4s  ", row->significant ? "yes" : "-", status_mark(row->status));
	fwrite(buf, 1, (size_t)(p - buf), out);
	fputs(name_table__name(r->names, row->id), out);
	fputc('\n', out);
}

static void write_footer(const struct diff_result *r, const struct diff_opts *o, size_t hidden,
			 FILE *out)
{
	if (hidden)
		fprintf(out, "(%zu smaller changes not shown: --top)\n", hidden);
	fprintf(out, "smallest detectable change: %.2f pp at a 50%% share, %.2f pp at 10%%, "
		     "%.2f pp at 1%% (z %.2f x sqrt(p(1-p)(1/%" PRIu64 " + 1/%" PRIu64 ")))\n",
		diff__min_detectable(r, 0.5), diff__min_detectable(r, 0.1),
		diff__min_detectable(r, 0.01), r->z_crit, r->base_total, r->new_total);
	if (!o->gate)
		return;
	if (!r->nr_regressed) {
		fprintf(out, "no regression: no function's %s share grew by more than %g pp "
			     "significantly\n", measure_name(o->measure), o->threshold);
		return;
	}
	fprintf(out, "regressed: %zu function%s whose %s share grew by more than %g pp, "
		     "significant at %g%%:\n",
		r->nr_regressed, r->nr_regressed == 1 ? "" : "s", measure_name(o->measure),
		o->threshold, 100 * o->confidence);
	for (size_t i = 0; i < r->nr_rows; i++) {
		if (r->rows[i].regressed)
			fprintf(out, "%s\n", name_table__name(r->names, r->rows[i].id));
	}
}

int diff__write_table(const struct diff_result *r, const struct diff_opts *o,
		      const char *base_name, const char *new_name, FILE *out)
{
	bool *shown = shown_rows(r, o->top);
	size_t hidden = 0;

	if (!shown)
		return -ENOMEM;
	write_header(r, o, base_name, new_name, out);
	for (size_t i = 0; i < r->nr_rows; i++) {
		if (shown[i])
			write_row(r, &r->rows[i], out);
		else
			hidden++;
	}
	write_footer(r, o, hidden, out);
	free(shown);
	return fflush(out) == EOF || ferror(out) ? -EIO : 0;
}

/* ---- JSON ---- */

static void json_kv_uint(struct json_writer *w, const char *k, uint64_t v)
{
	json__key(w, k);
	json__uint(w, v);
}

static void json_kv_double(struct json_writer *w, const char *k, double v)
{
	json__key(w, k);
	json__double(w, v);
}

static void json_profile(struct json_writer *w, const char *k, const char *path, uint64_t n)
{
	json__key(w, k);
	json__begin_object(w);
	json__key(w, "path");
	json__string(w, path);
	json_kv_uint(w, "samples", n);
	json__end_object(w);
}

static void json_row(struct json_writer *w, const struct diff_result *r, const struct diff_row *row)
{
	static const char *const status[] = { "both", "new", "vanished" };

	json__begin_object(w);
	json__key(w, "function");
	json__string(w, name_table__name(r->names, row->id));
	json__key(w, "status");
	json__string(w, status[row->status]);
	json_kv_uint(w, "base_inclusive_samples", row->base_incl);
	json_kv_uint(w, "new_inclusive_samples", row->new_incl);
	json_kv_uint(w, "base_self_samples", row->base_self);
	json_kv_uint(w, "new_self_samples", row->new_self);
	json_kv_double(w, "base_inclusive_percent", row->base_incl_pct);
	json_kv_double(w, "new_inclusive_percent", row->new_incl_pct);
	json_kv_double(w, "base_self_percent", row->base_self_pct);
	json_kv_double(w, "new_self_percent", row->new_self_pct);
	json_kv_double(w, "change_pp", row->change);
	json_kv_double(w, "z", row->z);
	json__key(w, "significant");
	json__bool(w, row->significant);
	json__key(w, "gated");
	json__bool(w, row->gated);
	json__key(w, "regressed");
	json__bool(w, row->regressed);
	json__end_object(w);
}

int diff__write_json(const struct diff_result *r, const struct diff_opts *o,
		     const char *base_name, const char *new_name, FILE *out)
{
	static const double shares[] = { 0.5, 0.1, 0.01 };
	struct json_writer w;

	json__init(&w, out);
	json__begin_object(&w);
	json_profile(&w, "base", base_name, r->base_total);
	json_profile(&w, "new", new_name, r->new_total);
	json__key(&w, "measure");
	json__string(&w, measure_name(o->measure));
	json__key(&w, "test");
	json__string(&w, "pooled two-proportion z-test, two-sided, Bonferroni-corrected");
	json_kv_double(&w, "confidence", o->confidence);
	json_kv_uint(&w, "functions_tested", r->tested);
	json_kv_double(&w, "critical_z", r->z_crit);
	json__key(&w, "threshold_pp");
	if (o->gate)
		json__double(&w, o->threshold);
	else
		json__null(&w);
	json_kv_uint(&w, "min_samples", o->min_samples);
	json__key(&w, "min_detectable_pp");
	json__begin_array(&w);
	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
		json__begin_object(&w);
		json_kv_double(&w, "share", shares[i]);
		json_kv_double(&w, "change_pp", diff__min_detectable(r, shares[i]));
		json__end_object(&w);
	}
	json__end_array(&w);
	json__key(&w, "functions");
	json__begin_array(&w);
	for (size_t i = 0; i < r->nr_rows; i++)
		json_row(&w, r, &r->rows[i]);
	json__end_array(&w);
	json__key(&w, "regressions");
	json__begin_array(&w);
	for (size_t i = 0; i < r->nr_rows; i++) {
		if (r->rows[i].regressed)
			json__string(&w, name_table__name(r->names, r->rows[i].id));
	}
	json__end_array(&w);
	json__end_object(&w);
	return json__finish(&w);
}

/* ---- differential flamegraph ---- */

struct svg_style {
	uint64_t *base;    /* per NEW node: BASE's samples on the same call path */
	size_t nr_nodes;
	uint64_t base_total, new_total;
	double scale;      /* a change of this many points is drawn fully saturated */
};

struct stack_view {
	const uint32_t *ids;
	uint32_t len;
	uint32_t cut; /* frames to add */
	uint64_t count;
};

static int compare_stacks(const void *a, const void *b, void *ctx)
{
	const struct stack_view *views = ctx;
	const struct stack_view *x = &views[*(const uint32_t *)a], *y = &views[*(const uint32_t *)b];

	for (uint32_t i = 0; i < x->len && i < y->len; i++) {
		if (x->ids[i] != y->ids[i])
			return x->ids[i] < y->ids[i] ? -1 : 1;
	}
	return x->len < y->len ? -1 : x->len > y->len;
}

static uint32_t frame_at(const struct stack_view *v, uint32_t depth)
{
	return depth < v->len ? v->ids[depth] : UINT32_MAX;
}

struct range {
	size_t lo, hi;
	uint32_t depth;
};

/* With the stacks sorted by frames, the stacks through a call path are one run: its
 * samples are the run's sum. Each stack is cut after the first frame on its path too
 * narrow to be drawn; the frame itself stays, so its drawn siblings keep their places.
 * A graph of 100,000 deep stacks then holds the few thousand frames worth drawing. */
static int cut_stacks(struct stack_view *views, const uint32_t *order, size_t n,
		      uint64_t min_drawn)
{
	struct range *todo = malloc((n + 1) * sizeof(*todo));
	size_t ntodo = 0;

	if (!todo)
		return -ENOMEM;
	todo[ntodo++] = (struct range){ 0, n, 0 };
	while (ntodo) {
		struct range r = todo[--ntodo];
		size_t i = r.lo;

		/* stacks that end at this depth sort first */
		while (i < r.hi && frame_at(&views[order[i]], r.depth) == UINT32_MAX)
			i++;
		while (i < r.hi) {
			uint32_t id = frame_at(&views[order[i]], r.depth);
			uint64_t total = 0;
			size_t j;

			for (j = i; j < r.hi && frame_at(&views[order[j]], r.depth) == id; j++)
				total += views[order[j]].count;
			if (total >= min_drawn) {
				/* every range pushed is a non-empty run of [lo, hi): at most n in all */
				todo[ntodo++] = (struct range){ i, j, r.depth + 1 };
			} else {
				for (size_t k = i; k < j; k++)
					views[order[k]].cut = r.depth + 1;
			}
			i = j;
		}
	}
	free(todo);
	return 0;
}

/* NEW's graph, holding only what can be drawn (and the first frame that cannot). */
static int build_graph(const struct stack_set *set, const struct flamegraph_opts *opts,
		       struct flamegraph **out)
{
	const struct name_table *names = stack_set__names(set);
	size_t n = stack_set__nr_stacks(set);
	struct stack_view *views = n < UINT32_MAX ? malloc((n + 1) * sizeof(*views)) : NULL;
	uint32_t *order = malloc((n + 1) * sizeof(*order));
	const char **frames = NULL;
	size_t cap = 0;
	int err = views && order ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++) {
		stack_set__stack(set, i, &views[i].ids, &views[i].len, &views[i].count);
		views[i].cut = views[i].len;
		order[i] = (uint32_t)i;
	}
	if (!err) {
		qsort_r(order, n, sizeof(*order), compare_stacks, views);
		err = cut_stacks(views, order, n, flamegraph__min_drawn(stack_set__total(set), opts));
	}
	if (!err)
		err = flamegraph__new(out);
	for (size_t i = 0; !err && i < n; i++) {
		uint32_t len = views[i].cut;

		if (grow_array((void **)&frames, &cap, len, sizeof(*frames))) {
			err = -ENOMEM;
			break;
		}
		for (uint32_t f = 0; f < len; f++)
			frames[f] = name_table__name(names, views[i].ids[f]);
		err = flamegraph__add(*out, frames, len, views[i].count);
	}
	free(frames);
	free(views);
	free(order);
	return err;
}

/* BASE's samples on each of NEW's call paths: each BASE stack followed down NEW's graph
 * as far as NEW has its path. */
static void count_base(const struct stack_set *base, const struct flamegraph *new_fg,
		       uint64_t *counts)
{
	const struct name_table *names = stack_set__names(base);

	for (size_t i = 0; i < stack_set__nr_stacks(base); i++) {
		const uint32_t *ids;
		uint32_t len, node = 0;
		uint64_t count;

		stack_set__stack(base, i, &ids, &len, &count);
		counts[0] += count;
		for (uint32_t f = 0; f < len; f++) {
			if (flamegraph__child(new_fg, node, name_table__name(names, ids[f]), &node))
				break;
			counts[node] += count;
		}
	}
}

/* The change of a frame's share, in points. */
static double frame_change(const struct svg_style *st, const struct flamegraph_frame *f,
			   double *base_pct, double *new_pct)
{
	*base_pct = f->id < st->nr_nodes ? pct(st->base[f->id], st->base_total) : 0;
	*new_pct = pct(f->samples, st->new_total);
	return *new_pct - *base_pct;
}

static uint8_t mix(double from, double to, double s)
{
	return (uint8_t)lround(from + (to - from) * s);
}

/* Light grey for no change, towards red as the share grew, towards blue as it shrank. */
static bool diff_fill(void *ctx, const struct flamegraph_frame *f, struct flamegraph_rgb *fill)
{
	const struct svg_style *st = ctx;
	double base_pct, new_pct, change = frame_change(st, f, &base_pct, &new_pct);
	double s = fmin(1.0, fabs(change) / st->scale);

	if (change > 0)
		*fill = (struct flamegraph_rgb){ mix(235, 215, s), mix(235, 40, s), mix(235, 40, s) };
	else
		*fill = (struct flamegraph_rgb){ mix(235, 50, s), mix(235, 100, s), mix(235, 220, s) };
	return true;
}

static bool diff_tip(void *ctx, const struct flamegraph_frame *f, char *buf, size_t len)
{
	const struct svg_style *st = ctx;
	double base_pct, new_pct, change = frame_change(st, f, &base_pct, &new_pct);
	bool in_base = f->id < st->nr_nodes && st->base[f->id];

	snprintf(buf, len, "%" PRIu64 " sample%s, %.2f%%; base %.2f%%%s; change %+.2f pp", f->samples,
		 f->samples == 1 ? "" : "s", new_pct, base_pct, in_base ? "" : ", not in base",
		 change);
	return true;
}

/* Saturation is relative to the largest function change, but never below what the
 * comparison can tell from noise: with nothing significant, everything stays pale. */
static double colour_scale(const struct diff_result *r)
{
	double scale = diff__min_detectable(r, 0.5);

	for (size_t i = 0; i < r->nr_rows; i++)
		scale = fmax(scale, fabs(r->rows[i].new_incl_pct - r->rows[i].base_incl_pct));
	return scale > 0 && isfinite(scale) ? scale : 1;
}

int diff__write_svg(const struct stack_set *base, const struct stack_set *new,
		    const struct diff_result *r, const char *base_name, const char *new_name,
		    FILE *out)
{
	struct flamegraph *new_fg = NULL;
	struct svg_style st = { .base_total = r->base_total, .new_total = r->new_total };
	struct flamegraph_style style = { diff_fill, diff_tip, &st };
	struct flamegraph_opts opts = { .title = "Differential flame graph", .style = &style };
	char subtitle[512];
	int err;

	err = build_graph(new, &opts, &new_fg);
	if (err)
		goto cleanup;
	st.nr_nodes = flamegraph__nr_nodes(new_fg);
	st.scale = colour_scale(r);
	st.base = calloc(st.nr_nodes + 1, sizeof(*st.base));
	if (!st.base) {
		err = -ENOMEM;
		goto cleanup;
	}
	count_base(base, new_fg, st.base);
	snprintf(subtitle, sizeof(subtitle),
		 "%s (%" PRIu64 " samples) against base %s (%" PRIu64 " samples): red grew, blue shrank, "
		 "by share of all samples",
		 new_name, r->new_total, base_name, r->base_total);
	opts.subtitle = subtitle;
	err = flamegraph__write_svg(new_fg, out, &opts);
cleanup:
	free(st.base);
	flamegraph__free(new_fg);
	return err;
}
