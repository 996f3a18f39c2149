/* Unit tests for the flamegraph renderer: numbers, order independence, colours, escaping,
 * hostile input. Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include <errno.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "flamegraph.h"
#include "check.h"

struct result {
	int ret;
	char *svg; /* NULL when nothing came out */
	size_t len;
	char err[256];
};

static struct result render_n(const char *input, size_t in_len, const struct flamegraph_opts *opts)
{
	struct result r = { 0 };
	FILE *in = fmemopen((void *)input, in_len, "r");
	FILE *out = open_memstream(&r.svg, &r.len);

	if (!in || !out) {
		perror("fmemopen/open_memstream");
		exit(1);
	}
	r.ret = flamegraph__render(in, out, opts, r.err, sizeof(r.err));
	fclose(in);
	fclose(out);
	return r;
}

static struct result render(const char *input, unsigned width)
{
	struct flamegraph_opts opts = { .title = "t", .width = width };

	return render_n(input, strlen(input), &opts);
}

static bool contains(const struct result *r, const char *needle)
{
	return r->svg && strstr(r->svg, needle);
}

/* Reads the fill of the frame whose tooltip starts with "name (". */
static bool frame_fill(const struct result *r, const char *name, unsigned rgb[3])
{
	char key[256];
	const char *p;

	snprintf(key, sizeof(key), "<title>%s (", name);
	p = r->svg ? strstr(r->svg, key) : NULL;
	p = p ? strstr(p, "fill=\"rgb(") : NULL;
	return p && sscanf(p, "fill=\"rgb(%u,%u,%u)", &rgb[0], &rgb[1], &rgb[2]) == 3;
}

static size_t count_of(const char *s, const char *needle)
{
	size_t n = 0;

	for (const char *p = s; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_tooltips(void)
{
	struct result r = render("x;a;b 3\nx;a;c 1\ny 4\n", 0);

	check(r.ret == 0, "tooltips: renders");
	check(contains(&r, "<title>all (8 samples, 100.00%)</title>"), "tooltips: root total");
	check(contains(&r, "<title>a (4 samples, 50.00%)</title>"), "tooltips: a 4 of 8");
	check(contains(&r, "<title>b (3 samples, 37.50%)</title>"), "tooltips: b 3 of 8");
	check(contains(&r, "<title>c (1 sample, 12.50%)</title>"), "tooltips: singular sample");
	check(contains(&r, "<title>y (4 samples, 50.00%)</title>"), "tooltips: second comm");
	free(r.svg);

	r = render("a 1\nb;c 2\na 2\n", 0);
	check(contains(&r, "<title>a (3 samples, 60.00%)</title>"), "tooltips: repeated stacks add");
	free(r.svg);
}

/* Geometry for a 1200 px image: 1180 px inside the 10 px margins. */
static void test_geometry(void)
{
	struct result r = render("a;b 1\na;c 3\n", 0);

	/* children sorted by name start at the parent's left edge: b then c */
	check(contains(&r, "<title>b (1 sample, 25.00%)</title><rect x=\"10.00\" y=\"40\" width=\"295.00\""),
	      "geometry: b at left, a quarter wide, top row");
	check(contains(&r, "<title>c (3 samples, 75.00%)</title><rect x=\"305.00\" y=\"40\" width=\"885.00\""),
	      "geometry: c after b");
	check(contains(&r, "height=\"116\""), "geometry: height from depth 2");
	free(r.svg);
}

static char *shuffled(const char *const *lines, size_t n, unsigned seed)
{
	size_t *idx = malloc(n * sizeof(*idx)), len = 0;
	char *buf;

	for (size_t i = 0; i < n; i++) {
		idx[i] = i;
		len += strlen(lines[i]) + 1;
	}
	srand(seed);
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rand() % i, t = idx[i - 1];

		idx[i - 1] = idx[j];
		idx[j] = t;
	}
	buf = calloc(1, len + 1);
	for (size_t i = 0; i < n; i++) {
		strcat(buf, lines[idx[i]]);
		strcat(buf, "\n");
	}
	free(idx);
	return buf;
}

static void test_determinism(void)
{
	static const char *const lines[] = {
		"app;main;parse;lex 5", "app;main;parse 2", "app;main;eval;add 7",
		"app;main;eval;mul 1", "app;main;eval;add 3", "app;write_[k];vfs_write_[k] 4",
		"app;[unknown] 1", "other;main 9", "other;main;zeta 2", "other;main;alpha 2",
		"app;main;eval 6", "z 1", "a 1", "app;main;parse;lex 1",
	};
	size_t n = sizeof(lines) / sizeof(lines[0]);
	char *first = shuffled(lines, n, 0);
	struct result base = render(first, 0), r;
	bool same = base.ret == 0;

	free(first);

	for (unsigned seed = 1; seed < 30 && same; seed++) {
		char *in = shuffled(lines, n, seed);

		r = render(in, 0);
		same = r.ret == 0 && r.len == base.len && memcmp(r.svg, base.svg, r.len) == 0;
		free(in);
		free(r.svg);
	}
	check(same, "determinism: shuffled lines give identical bytes");

	/* one line of 6 is the same profile as lines of 2 and 4 */
	r = render("p;q 6\n", 0);
	{
		struct result s = render("p;q 2\np;q 4\n", 0);

		check(r.len == s.len && memcmp(r.svg, s.svg, r.len) == 0,
		      "determinism: split counts give identical bytes");
		free(s.svg);
	}
	free(r.svg);
	free(base.svg);
}

struct bad_case {
	const char *input;
	const char *err;
	int ret;
};

static void test_malformed(void)
{
	static const struct bad_case cases[] = {
		{ "a;b\n", "line 1: missing sample count", -EINVAL },
		{ "ok 1\na;b x\n", "line 2: invalid sample count", -EINVAL },
		{ "a;b 1.5\n", "line 1: invalid sample count", -EINVAL },
		{ "a;b -3\n", "line 1: invalid sample count", -EINVAL },
		{ "a 99999999999999999999\n", "line 1: sample count out of range", -ERANGE },
		{ "a 18446744073709551615\n\nb 1\n", "line 3: sample total exceeds", -EOVERFLOW },
		{ " 5\n", "line 1: missing stack", -EINVAL },
		{ "a;;b 1\n", "line 1: empty frame name", -EINVAL },
		{ ";a 1\n", "line 1: empty frame name", -EINVAL },
		{ "a; 1\n", "line 1: empty frame name", -EINVAL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct result r = render(cases[i].input, 0);
		char name[128];

		snprintf(name, sizeof(name), "malformed: %s", cases[i].err);
		check(r.ret == cases[i].ret && strncmp(r.err, cases[i].err, strlen(cases[i].err)) == 0 &&
		      !strchr(r.err, '\n'), name);
		if (r.ret != cases[i].ret || strncmp(r.err, cases[i].err, strlen(cases[i].err)))
			printf("# got %d \"%s\"\n", r.ret, r.err);
		free(r.svg);
	}

	{
		static const char nul[] = "a 1\nb\0c 1\n";
		struct flamegraph_opts opts = { 0 };
		struct result r = render_n(nul, sizeof(nul) - 1, &opts);

		check(r.ret == -EINVAL && strcmp(r.err, "line 2: NUL byte in line") == 0,
		      "malformed: NUL byte");
		free(r.svg);
	}
}

static void test_hostile_sizes(void)
{
	size_t big = FLAMEGRAPH_MAX_LINE + 10, depth = 20000;
	char *line = malloc(big + 1), *p;
	struct result r;

	memset(line, 'a', big);
	line[big] = '\0';
	r = render(line, 0);
	check(r.ret == -E2BIG && strncmp(r.err, "line 1: longer than", 19) == 0,
	      "hostile: over-long line rejected");
	free(r.svg);
	free(line);

	/* thousands of distinct frames in one stack: no recursion anywhere */
	line = malloc(depth * 12 + 16);
	p = line;
	for (size_t i = 0; i < depth; i++)
		p += sprintf(p, "%sf%zu", i ? ";" : "", i);
	strcpy(p, " 7\n");
	r = render(line, 0);
	check(r.ret == 0 && count_of(r.svg, "<g data-s=") == depth + 1, "hostile: 20000 frames deep");
	check(contains(&r, "<title>f19999 (7 samples, 100.00%)</title>"), "hostile: deepest frame");
	free(r.svg);
	free(line);

	r = render("a 18446744073709551615\n", 0);
	check(r.ret == 0 && contains(&r, "<title>a (18446744073709551615 samples, 100.00%)"),
	      "hostile: count of UINT64_MAX");
	free(r.svg);
}

static void test_min_width(void)
{
	struct result r = render("a;x 1000000\nb 1\na;y 1\n", 0);

	check(r.ret == 0 && !contains(&r, "<title>b (") && !contains(&r, "<title>y ("),
	      "min width: sub-0.1px frames omitted");
	check(contains(&r, "<title>all (1000002 samples, 100.00%)</title>") &&
	      contains(&r, "<title>a (1000001 samples,"),
	      "min width: omitted samples still count toward parents");
	free(r.svg);
}

static bool label_is(const struct result *r, const char *name, const char *label)
{
	char key[512];
	const char *p;

	snprintf(key, sizeof(key), "<title>%s (", name);
	p = r->svg ? strstr(r->svg, key) : NULL;
	p = p ? strstr(p, "<text") : NULL;
	p = p ? strchr(p, '>') : NULL;
	snprintf(key, sizeof(key), ">%s</text>", label);
	return p && strncmp(p, key, strlen(key)) == 0;
}

static void test_labels(void)
{
	/* width 120: 100 px inside; one frame of 100 px fits floor(97 / 7.08) = 13 chars */
	struct result r = render("abcdefghijklmnopqrstuvwxyz 1\n", 120);

	check(label_is(&r, "abcdefghijklmnopqrstuvwxyz", "abcdefghijk.."), "labels: truncated with ..");
	check(label_is(&r, "all", "all"), "labels: short name whole");
	free(r.svg);

	/* code points, not bytes: a cut never splits a character */
	r = render("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		   "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 1\n", 120);
	check(label_is(&r, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
			   "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
		       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		       "\xc3\xa9.."),
	      "labels: UTF-8 cut on a character boundary");
	free(r.svg);

	/* 2 samples of 1002: about 2.4 px, room for no label at all */
	r = render("big 1000\nsmall 2\n", 0);
	check(label_is(&r, "small", ""), "labels: none when under 3 chars fit");
	free(r.svg);
}

static void test_colours(void)
{
	static const char *const user[] = { "main", "compute", "malloc", "std::vector::at", "x" };
	static const char *const kern[] = { "do_syscall_64_[k]", "vfs_write_[k]", "schedule_[k]",
					    "page_fault_[k]", "a_[k]" };
	static const char *const spec[] = { "[unknown]", "[truncated: copy too short]", "[vdso]",
					    "[unknown]_[k]" };
	struct result r = render("main;compute;malloc;std::vector::at;x 1\n"
				 "main;do_syscall_64_[k];vfs_write_[k];schedule_[k];page_fault_[k];a_[k] 1\n"
				 "[unknown];[truncated: copy too short];[vdso];[unknown]_[k] 1\n", 0);
	unsigned c[3], c2[3];
	bool warm = true, blue = true, grey = true;

	for (size_t i = 0; i < 5; i++) {
		warm &= frame_fill(&r, user[i], c) && c[0] >= 200 && c[2] <= 60 && c[0] > c[1];
		blue &= frame_fill(&r, kern[i], c) && c[2] >= 200 && c[0] <= 100 && c[2] > c[1];
	}
	for (size_t i = 0; i < 4; i++)
		grey &= frame_fill(&r, spec[i], c) && c[0] == c[1] && c[1] == c[2];
	check(warm, "colours: user frames warm (red/orange)");
	check(blue, "colours: kernel _[k] frames blue");
	check(grey, "colours: [special] frames grey");
	/* a style hook draws a frame in a family: the one the name alone gives, or greens */
	{
		struct flamegraph_rgb fam = flamegraph__colour(FLAMEGRAPH_FAMILY_USER, "main");
		bool green = true, apart = false;

		check(frame_fill(&r, "main", c) && c[0] == fam.r && c[1] == fam.g && c[2] == fam.b,
		      "colours: flamegraph__colour gives a family's colour as frames are drawn");
		for (size_t i = 0; i < 5; i++) {
			struct flamegraph_rgb g = flamegraph__colour(FLAMEGRAPH_FAMILY_INTERPRETED, user[i]);
			struct flamegraph_rgb g0 = flamegraph__colour(FLAMEGRAPH_FAMILY_INTERPRETED, user[0]);

			green &= g.g >= 180 && g.r <= 110 && g.b <= 160;
			apart |= g.r != g0.r || g.g != g0.g || g.b != g0.b;
		}
		check(green && apart, "colours: interpreted frames green to teal, by name");
	}
	free(r.svg);

	/* the colour belongs to the name, wherever the frame appears */
	r = render("a;main 1\nb;c;main 1\n", 0);
	check(frame_fill(&r, "a", c) && frame_fill(&r, "b", c2) && (c[0] != c2[0] || c[1] != c2[1]),
	      "colours: differ between names");
	{
		const char *second = r.svg ? strstr(strstr(r.svg, "<title>main (") + 1, "<title>main (") : NULL;
		struct result tail = { .svg = (char *)second };

		check(frame_fill(&r, "main", c) && second && frame_fill(&tail, "main", c2) &&
		      memcmp(c, c2, sizeof(c)) == 0, "colours: same name, same colour");
	}
	free(r.svg);
}

/* An independent check of the whole document: glibc's decoder rejects overlongs,
 * surrogates and truncated sequences; XML also forbids C0 controls but tab and newline. */
static bool valid_xml_text(const char *s, size_t len)
{
	mbstate_t st;
	size_t i = 0;

	memset(&st, 0, sizeof(st));
	while (i < len) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s + i, len - i, &st);

		if (n == (size_t)-1 || n == (size_t)-2 || n == 0)
			return false;
		if (wc < 0x20 && wc != '\n' && wc != '\t')
			return false;
		if (wc == 0xFFFE || wc == 0xFFFF)
			return false;
		i += n;
	}
	return true;
}

static void test_escaping(void)
{
	struct result r = render("<script>&\"';inner 1\n"
				 "bad\xff\xfe;over\xc0\xaf;cut\xe2\x82;ctl\x01\x1b;caf\xc3\xa9;\xef\xbf\xbf 1\n"
				 "p]]>q 1\n", 0);

	check(r.ret == 0, "escaping: renders");
	check(contains(&r, "<title>&lt;script&gt;&amp;&quot;&apos; (1 sample"), "escaping: markup escaped");
	check(count_of(r.svg, "<script") == 1, "escaping: only the renderer's own script element");
	check(contains(&r, "]]&gt;"), "escaping: ]]> in a name cannot close CDATA");
	check(contains(&r, "<title>bad\xef\xbf\xbd\xef\xbf\xbd ("), "escaping: invalid bytes become U+FFFD");
	check(contains(&r, "<title>caf\xc3\xa9 ("), "escaping: valid UTF-8 kept");
	check(setlocale(LC_CTYPE, "C.UTF-8") && valid_xml_text(r.svg, r.len),
	      "escaping: whole document valid UTF-8 without control characters");
	free(r.svg);

	{
		struct flamegraph_opts opts = { .title = "A<B & \"C\"", .subtitle = "4950 samples, 99 Hz, 5.0 s" };
		struct result t = render_n("a 1\n", 4, &opts);

		check(contains(&t, ">A&lt;B &amp; &quot;C&quot;</text>") &&
		      contains(&t, "<text id=\"subtitle\" x=\"600\" y=\"40\" text-anchor=\"middle\">4950 samples, 99 Hz, 5.0 s</text>"),
		      "escaping: title and subtitle");
		free(t.svg);
	}
}

static void test_api(void)
{
	struct flamegraph *fg = NULL;
	const char *stack[] = { "comm", "main", "leaf" }, *empty[] = { "comm", "" };
	char *svg = NULL;
	size_t len = 0;
	FILE *out;

	check(flamegraph__new(&fg) == 0, "api: new");
	check(flamegraph__add(fg, stack, 3, 5) == 0 && flamegraph__add(fg, stack, 2, 1) == 0 &&
	      flamegraph__total(fg) == 6, "api: add");
	check(flamegraph__add(fg, empty, 2, 1) == -EINVAL && flamegraph__add(fg, stack, 0, 1) == -EINVAL,
	      "api: empty frame and empty stack rejected");
	check(flamegraph__add(fg, stack, 1, UINT64_MAX) == -EOVERFLOW && flamegraph__total(fg) == 6,
	      "api: overflow rejected, total unchanged");
	out = open_memstream(&svg, &len);
	check(flamegraph__write_svg(fg, out, &(struct flamegraph_opts){ .width = 50 }) == -EINVAL,
	      "api: width below 100 rejected");
	check(flamegraph__write_svg(fg, out, NULL) == 0, "api: write with default options");
	fclose(out);
	check(svg && strstr(svg, "<title>main (6 samples, 100.00%)</title>") &&
	      strstr(svg, "<title>leaf (5 samples, 83.33%)</title>"), "api: tree from add");
	free(svg);
	flamegraph__free(fg);
	flamegraph__free(NULL);

	{
		struct result r = render("", 0);

		check(r.ret == 0 && contains(&r, ">No samples</text>") && !contains(&r, "<g data-s="),
		      "api: empty input gives an SVG saying so");
		free(r.svg);
	}

	{
		FILE *full = fopen("/dev/full", "w");
		FILE *in = fmemopen((void *)"a 1\n", 4, "r");
		char err[128] = "";
		int ret = full && in ? flamegraph__render(in, full, NULL, err, sizeof(err)) : 0;

		check(ret == -ENOSPC && strstr(err, "No space"), "api: write error reported");
		if (full)
			fclose(full);
		if (in)
			fclose(in);
	}
}

/* ~100k distinct stacks: the size the renderer is meant for. Reports the time taken. */
static void test_scale(void)
{
	size_t n = 100000, cap = n * 200, len = 0;
	char *buf = malloc(cap);
	struct timespec t0, t1;
	struct result r;

	srand(42);
	for (size_t i = 0; i < n; i++) {
		int depth = 5 + rand() % 30;

		len += (size_t)sprintf(buf + len, "app");
		for (int d = 0; d < depth; d++)
			len += (size_t)sprintf(buf + len, ";fn%d", rand() % (d < 4 ? 3 : 400));
		len += (size_t)sprintf(buf + len, ";leaf%zu %d\n", i, 1 + rand() % 100);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = render_n(buf, len, &(struct flamegraph_opts){ 0 });
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("# 100k stacks: %.2f s, %zu bytes of SVG\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, r.len);
	check(r.ret == 0 && r.len > 0, "scale: 100k distinct stacks render");
	free(r.svg);
	free(buf);
}

/* A style hook colours "hot" and rewrites every tooltip; lookups find call paths. */
static bool style_fill(void *ctx, const struct flamegraph_frame *f, struct flamegraph_rgb *fill)
{
	(void)ctx;
	if (strcmp(f->name, "hot") != 0)
		return false;
	*fill = (struct flamegraph_rgb){ 1, 2, 3 };
	return true;
}

static bool style_tip(void *ctx, const struct flamegraph_frame *f, char *buf, size_t len)
{
	int *calls = ctx;

	(*calls)++;
	snprintf(buf, len, "d%u (p%u) n=%llu", f->depth, f->parent == FLAMEGRAPH_NONE ? 99 : f->parent,
		 (unsigned long long)f->samples);
	return true;
}

static void test_style(void)
{
	struct flamegraph *fg = NULL;
	const char *a[] = { "comm", "main", "hot" }, *b[] = { "comm", "main", "cold" };
	int calls = 0;
	struct flamegraph_style style = { style_fill, style_tip, &calls };
	uint32_t comm, main_id, hot;
	char *svg = NULL;
	size_t len = 0;
	FILE *out;

	flamegraph__new(&fg);
	flamegraph__add(fg, a, 3, 3);
	flamegraph__add(fg, b, 3, 1);
	check(flamegraph__child(fg, 0, "comm", &comm) == 0 && flamegraph__child(fg, comm, "main", &main_id) == 0 &&
	      flamegraph__child(fg, main_id, "hot", &hot) == 0 && flamegraph__samples(fg, hot) == 3 &&
	      flamegraph__samples(fg, main_id) == 4, "style: lookup by call path");
	check(flamegraph__child(fg, comm, "hot", &hot) == -ENOENT &&
	      flamegraph__child(fg, 0, "nowhere", &hot) == -ENOENT &&
	      flamegraph__child(fg, 12345, "main", &hot) == -ENOENT, "style: missing paths not found");
	check(flamegraph__nr_nodes(fg) == 5, "style: five nodes");
	out = open_memstream(&svg, &len);
	check(flamegraph__write_svg(fg, out, &(struct flamegraph_opts){ .style = &style }) == 0,
	      "style: renders");
	fclose(out);
	check(calls == 5, "style: tip asked once per drawn frame");
	check(strstr(svg, "<title>hot (d3 [p2] n=3)</title><rect ") != NULL,
	      "style: tooltip text, parentheses made brackets");
	check(strstr(svg, "n=3)</title><rect x=\"305.00\" y=\"40\" width=\"885.00\" height=\"15\" "
			  "fill=\"rgb(1,2,3)\"/>") != NULL, "style: fill from the hook");
	check(strstr(svg, "<title>cold (d3 [p2] n=1)</title><rect x=\"10.00\" y=\"40\" width=\"295.00\" "
			  "height=\"15\" fill=\"rgb(237,64,1)\"/>") != NULL,
	      "style: other frames keep their colours");
	free(svg);
	flamegraph__free(fg);
}

int main(void)
{
	test_tooltips();
	test_geometry();
	test_determinism();
	test_malformed();
	test_hostile_sizes();
	test_min_width();
	test_labels();
	test_colours();
	test_escaping();
	test_api();
	test_style();
	test_scale();
	return failures ? 1 : 0;
}
