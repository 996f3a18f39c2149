/* Unit tests for hprof diff's parts: stacks by name (folded parsing, inclusive counted once
 * per sample, self), frame name normalization, the statistics, and the comparison and gate
 * on synthetic profiles. Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/diff.h"
#include "output/stack_set.h"
#include "output/stats.h"
#include "check.h"

static bool near(double a, double b, double tol)
{
	return fabs(a - b) <= tol;
}

/* Reads folded text into a new set over names; returns the read's result, message in err. */
static int read_text(struct stack_set *s, const char *text, char *err, size_t errlen)
{
	FILE *in = fmemopen((void *)text, strlen(text) ? strlen(text) : 1, "r");
	int ret;

	if (!strlen(text))
		fgetc(in);
	ret = stack_set__read_folded(s, in, err, errlen);
	fclose(in);
	return ret;
}

static uint32_t id_of(struct name_table *t, const char *name)
{
	uint32_t id;

	if (name_table__intern(t, name, strlen(name), &id))
		abort();
	return id;
}

static void test_counts(void)
{
	struct name_table *t;
	struct stack_set *s;
	char err[128] = "";

	name_table__new(&t);
	stack_set__new(t, false, &s);
	check(read_text(s, "app;main;f;g;f 3\napp;main;g 2\n\napp;main 1\r\n", err, sizeof(err)) == 0,
	      "counts: reads (%s)", err);
	check(stack_set__total(s) == 6, "counts: total 6");
	check(stack_set__inclusive(s, id_of(t, "f")) == 3, "counts: recursive f counted once a sample");
	check(stack_set__inclusive(s, id_of(t, "g")) == 5, "counts: g inclusive 5");
	check(stack_set__self(s, id_of(t, "f")) == 3 && stack_set__self(s, id_of(t, "g")) == 2,
	      "counts: self is the innermost frame");
	check(stack_set__self(s, id_of(t, "main")) == 1 && stack_set__inclusive(s, id_of(t, "main")) == 6,
	      "counts: main self 1, inclusive 6");
	check(stack_set__nr_stacks(s) == 3, "counts: three stacks kept");
	check(stack_set__inclusive(s, id_of(t, "never")) == 0, "counts: an id the set never saw is 0");
	stack_set__free(s);
	name_table__free(t);
}

static void expect_error(const char *text, const char *want)
{
	struct name_table *t;
	struct stack_set *s;
	char err[128] = "";
	int ret;

	name_table__new(&t);
	stack_set__new(t, false, &s);
	ret = read_text(s, text, err, sizeof(err));
	check(ret < 0 && strcmp(err, want) == 0, "malformed: '%s' -> '%s' (got '%s')", want, want, err);
	stack_set__free(s);
	name_table__free(t);
}

static void test_malformed(void)
{
	expect_error("a;b 1\nno count here\n", "line 2: invalid sample count (want a decimal integer)");
	expect_error("a;b 1\na;b\n", "line 2: missing sample count");
	expect_error("a;;b 1\n", "line 1: empty frame name");
	expect_error("a;b; 1\n", "line 1: empty frame name");
	expect_error(" 4\n", "line 1: missing stack");
	expect_error("a 99999999999999999999\n", "line 1: sample count out of range");
	expect_error("a 18446744073709551615\nb 1\n", "line 2: sample total exceeds 2^64-1");
	expect_error("a 1\n\x01\x02\xff\xfe\n", "line 2: missing sample count");
	{
		static const char nul[] = "a 1\nb\0c 2\n";
		struct name_table *t;
		struct stack_set *s;
		char err[128] = "";
		FILE *in = fmemopen((void *)nul, sizeof(nul) - 1, "r");

		name_table__new(&t);
		stack_set__new(t, false, &s);
		check(stack_set__read_folded(s, in, err, sizeof(err)) < 0 &&
			      strcmp(err, "line 2: NUL byte in line") == 0,
		      "malformed: NUL byte named (%s)", err);
		fclose(in);
		stack_set__free(s);
		name_table__free(t);
	}
}

static void expect_normal(const char *in, const char *want)
{
	char buf[256];
	size_t len;

	snprintf(buf, sizeof(buf), "%s", in);
	len = frame_name__normalize(buf, strlen(buf));
	buf[len] = '\0';
	check(strcmp(buf, want) == 0, "normalize: '%s' -> '%s' (got '%s')", in, want, buf);
}

static void test_normalize(void)
{
	expect_normal("[unmapped]+0x7f12ab34", "[unmapped]");
	expect_normal("[jit]+0x1000", "[jit]");
	expect_normal("[anon:v8 code]+0xdeadbeef", "[anon:v8 code]");
	expect_normal("memfd:jit-cache (deleted)+0x40", "memfd:jit-cache (deleted)");
	expect_normal("[kernel]+0xffffffff81000000_[k]", "[kernel]_[k]");
	expect_normal("libfoo.so+0x1234", "libfoo.so+0x1234");
	expect_normal("[vdso]+0x9c0", "[vdso]+0x9c0");
	expect_normal("[truncated: copy too short]", "[truncated: copy too short]");
	expect_normal("[jit]", "[jit]");
	expect_normal("[jit]+0x", "[jit]+0x");
	expect_normal("main", "main");
	expect_normal("x+0x12", "x+0x12");

	struct name_table *t;
	struct stack_set *s;
	char err[128] = "";

	name_table__new(&t);
	stack_set__new(t, true, &s);
	read_text(s, "node;[jit]+0x7f00;f 2\nnode;[jit]+0x7f80;f 3\nnode;[truncated: copy too short];g 1\n",
		  err, sizeof(err));
	check(stack_set__inclusive(s, id_of(t, "[jit]")) == 5,
	      "normalize: JIT frames at two addresses count as one");
	check(stack_set__inclusive(s, id_of(t, "[truncated: copy too short]")) == 1,
	      "normalize: truncated roots kept apart");
	stack_set__free(s);
	name_table__free(t);
}

static void test_stats(void)
{
	double z;

	check(near(stats__normal_quantile(0.975), 1.959963985, 1e-8), "stats: quantile 0.975");
	check(near(stats__normal_quantile(0.5), 0, 1e-12), "stats: quantile 0.5");
	check(near(stats__critical_z(0.99, 1), 2.575829304, 1e-8), "stats: 99%% two-sided");
	check(near(stats__critical_z(0.99, 10), 3.290526731, 1e-8), "stats: Bonferroni over 10");
	check(near(stats__critical_z(0.99, 1000000), 5.730728869, 1e-8), "stats: far tail stays exact");
	/* 60 of 100 against 40 of 100: pooled p = 0.5, se = sqrt(0.25 * 0.02) */
	z = stats__two_proportion_z(40, 100, 60, 100);
	check(near(z, 0.2 / sqrt(0.005), 1e-12), "stats: z of 40/100 -> 60/100 (%f)", z);
	check(stats__two_proportion_z(0, 100, 0, 50) == 0, "stats: both zero, z 0");
	check(stats__two_proportion_z(100, 100, 50, 50) == 0, "stats: both all, z 0");
	check(stats__two_proportion_z(1, 0, 1, 1) == 0, "stats: empty profile, z 0");
	check(stats__two_proportion_z(0, 2000, 1, 2000) == 0,
	      "stats: 0 against 1 sample is noise, z 0");
	check(stats__two_proportion_z(0, 1999, 1, 1) == 0,
	      "stats: a one-sample profile tells nothing, z 0");
	z = stats__two_proportion_z(0, 2000, 30, 2000);
	check(z > 5, "stats: a new function with 30 of 2000 samples is far from noise (z %f)", z);
	check(near(stats__min_detectable(0.5, 1000, 1000, 2.0), 2.0 * sqrt(0.25 * 0.002), 1e-12),
	      "stats: minimum detectable difference");
}

struct pair {
	struct name_table *t;
	struct stack_set *base, *new;
};

static struct pair load_pair(const char *base, const char *new)
{
	struct pair p;
	char err[128];

	name_table__new(&p.t);
	stack_set__new(p.t, true, &p.base);
	stack_set__new(p.t, true, &p.new);
	if (read_text(p.base, base, err, sizeof(err)) || read_text(p.new, new, err, sizeof(err))) {
		fprintf(stderr, "bad test input: %s\n", err);
		abort();
	}
	return p;
}

static void free_pair(struct pair *p)
{
	stack_set__free(p->base);
	stack_set__free(p->new);
	name_table__free(p->t);
}

static const struct diff_row *row_of(const struct diff_result *r, const char *name)
{
	for (size_t i = 0; i < r->nr_rows; i++) {
		if (strcmp(name_table__name(r->names, r->rows[i].id), name) == 0)
			return &r->rows[i];
	}
	return NULL;
}

/* BASE: f 20%, g 30% (its callee h 10%), k 50%. NEW: f 30%, g 20%, k 40%, h gone, n new
 * 10%; each profile 10000 samples, so a 10-point change is far beyond noise. */
static const char base_text[] = "p;main;f 2000\np;main;g 2000\np;main;g;h 1000\np;main;k 5000\n";
static const char new_text[] = "p;main;f 3000\np;main;g 2000\np;main;k 4000\np;main;n 1000\n";

static void test_compare(void)
{
	struct pair p = load_pair(base_text, new_text);
	struct diff_opts o = { .confidence = 0.99, .gate = true, .threshold = 5 };
	struct diff_result r;
	const struct diff_row *f, *g, *h, *n;

	check(diff__compute(p.base, p.new, &o, &r) == 0, "compare: computes");
	f = row_of(&r, "f"), g = row_of(&r, "g"), h = row_of(&r, "h"), n = row_of(&r, "n");
	check(f && near(f->base_incl_pct, 20, 1e-9) && near(f->new_incl_pct, 30, 1e-9) &&
		      near(f->change, 10, 1e-9) && f->significant, "compare: f +10 pp, significant");
	check(g && near(g->change, -10, 1e-9) && near(g->base_self_pct, 20, 1e-9),
	      "compare: g -10 pp inclusive, self 20%% in base");
	check(h && h->status == DIFF_VANISHED && n && n->status == DIFF_NEW,
	      "compare: h vanished, n new");
	check(r.nr_rows == 7 && strcmp(name_table__name(r.names, r.rows[0].id), "f") == 0 &&
		      strcmp(name_table__name(r.names, r.rows[1].id), "n") == 0 &&
		      strcmp(name_table__name(r.names, r.rows[4].id), "g") == 0 &&
		      strcmp(name_table__name(r.names, r.rows[6].id), "k") == 0,
	      "compare: sorted by change, growth first, ties by name");
	check(r.tested == 7, "compare: Bonferroni over every function");
	check(r.nr_regressed == 2 && f->regressed && n->regressed, "compare: gate at 5 pp: f and n");
	diff_result__free(&r);

	o.threshold = 10;
	diff__compute(p.base, p.new, &o, &r);
	check(r.nr_regressed == 0, "compare: gate at 10 pp: growth must exceed it");
	diff_result__free(&r);

	o.threshold = 5;
	o.measure = DIFF_SELF;
	diff__compute(p.base, p.new, &o, &r);
	g = row_of(&r, "g");
	check(g && near(g->change, 0, 1e-9), "self: g's self share unchanged (20%%)");
	check(r.nr_regressed == 2 && row_of(&r, "f")->regressed, "self: f and n still regress");
	diff_result__free(&r);
	free_pair(&p);
}

static void test_gate_options(void)
{
	/* g's self share grows, its inclusive one does not: only --self catches it */
	struct pair p = load_pair("p;g 5000\np;g;h 5000\n", "p;g 7000\np;g;h 3000\n");
	struct diff_opts o = { .confidence = 0.99, .gate = true, .threshold = 5 };
	struct diff_result r;
	regex_t re;

	diff__compute(p.base, p.new, &o, &r);
	check(r.nr_regressed == 0, "--self: inclusive gate passes");
	diff_result__free(&r);
	o.measure = DIFF_SELF;
	diff__compute(p.base, p.new, &o, &r);
	check(r.nr_regressed == 1 && row_of(&r, "g")->regressed, "--self: self gate fails on g");
	diff_result__free(&r);
	free_pair(&p);

	p = load_pair(base_text, new_text);
	o.measure = DIFF_INCLUSIVE;
	regcomp(&re, "^[fk]$", REG_EXTENDED | REG_NOSUB);
	o.functions = &re;
	o.nr_functions = 1;
	diff__compute(p.base, p.new, &o, &r);
	check(r.tested == 2 && r.nr_regressed == 1 && row_of(&r, "f")->regressed &&
		      !row_of(&r, "n")->regressed && !row_of(&r, "n")->gated,
	      "--function: gates only f and k; n is not tested");
	check(r.nr_rows == 7, "--function: the table keeps every function");
	diff_result__free(&r);
	regfree(&re);
	o.nr_functions = 0;

	o.min_samples = 1500;
	diff__compute(p.base, p.new, &o, &r);
	check(!row_of(&r, "h") && !row_of(&r, "n") && row_of(&r, "f") && r.tested == 5,
	      "--min-samples: functions under 1500 in both left out");
	diff_result__free(&r);
	free_pair(&p);
}

static void test_noise(void)
{
	/* 52 of 1000 against 48 of 1000 is noise: not significant, no regression at 1 pp */
	struct pair p = load_pair("p;a 48\np;b 952\n", "p;a 52\np;b 948\n");
	struct diff_opts o = { .confidence = 0.99, .gate = true, .threshold = 0.1 };
	struct diff_result r;

	diff__compute(p.base, p.new, &o, &r);
	check(!row_of(&r, "a")->significant && r.nr_regressed == 0, "noise: +0.4 pp of 1000 samples passes");
	check(near(diff__min_detectable(&r, 0.5), 100 * r.z_crit * sqrt(0.25 * 0.002), 1e-9),
	      "noise: minimum detectable change at 50%%");
	diff_result__free(&r);
	free_pair(&p);

	p = load_pair("p;a 1\n", "");
	check(diff__compute(p.base, p.new, &o, &r) == -ENODATA, "empty: a profile without samples");
	diff_result__free(&r);
	free_pair(&p);
}

static void test_outputs(void)
{
	struct pair p = load_pair(base_text, new_text);
	struct diff_opts o = { .confidence = 0.99, .gate = true, .threshold = 5 };
	struct diff_result r;
	char *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	FILE *out;

	diff__compute(p.base, p.new, &o, &r);
	out = open_memstream(&a, &alen);
	diff__write_table(&r, &o, "base.folded", "new.folded", out);
	fclose(out);
	check(strstr(a, "\nregressed: 2 functions whose inclusive share grew by more than 5 pp, "
			"significant at 99%:\nf\nn\n") != NULL &&
		      a[alen - 1] == '\n' && strcmp(a + alen - 5, "\nf\nn\n") == 0,
	      "table: regressed functions last, one a line");
	check(strstr(a, "smallest detectable change: ") != NULL, "table: minimum detectable change");
	check(strstr(a, " new  n\n") && strstr(a, " gone  h\n"), "table: new and vanished marked");
	free(a);
	out = open_memstream(&a, &alen);
	diff__write_svg(p.base, p.new, &r, "base", "new", out);
	fclose(out);
	out = open_memstream(&b, &blen);
	diff__write_svg(p.base, p.new, &r, "base", "new", out);
	fclose(out);
	check(alen == blen && memcmp(a, b, alen) == 0, "svg: same input, same bytes");
	check(strstr(a, "<title>f (3000 samples, 30.00%; base 20.00%; change +10.00 pp)</title>") &&
		      strstr(a, "<title>n (1000 samples, 10.00%; base 0.00%, not in base; change +10.00 pp)"),
	      "svg: tooltips give both shares and the change");
	check(strstr(a, "<title>f (3000 samples, 30.00%; base 20.00%; change +10.00 pp)</title><rect "
			"x=\"10.00\" y=\"56\" width=\"354.00\" height=\"15\" fill=\"rgb(215,40,40)\"/>") != NULL,
	      "svg: the largest growth fully red");
	check(strstr(a, "<title>k (4000 samples, 40.00%; base 50.00%; change -10.00 pp)</title><rect "
			"x=\"600.00\" y=\"56\" width=\"472.00\" height=\"15\" fill=\"rgb(50,100,220)\"/>") != NULL,
	      "svg: the largest shrink fully blue");
	check(strstr(a, "<title>main (10000 samples, 100.00%; base 100.00%; change +0.00 pp)</title><rect "
			"x=\"10.00\" y=\"72\" width=\"1180.00\" height=\"15\" fill=\"rgb(235,235,235)\"/>") != NULL,
	      "svg: unchanged frames grey");
	free(a);
	free(b);
	out = open_memstream(&a, &alen);
	check(diff__write_json(&r, &o, "base", "new", out) == 0, "json: writes");
	fclose(out);
	check(strstr(a, "\"regressions\": [\n    \"f\",\n    \"n\"\n  ]") != NULL, "json: regressions listed");
	free(a);
	diff_result__free(&r);
	free_pair(&p);
}

int main(void)
{
	test_counts();
	test_malformed();
	test_normalize();
	test_stats();
	test_compare();
	test_gate_options();
	test_noise();
	test_outputs();
	return failures ? 1 : 0;
}
