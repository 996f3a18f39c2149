/* Unit tests of Python frames (MODULE_PYTHON, their locations in the registry's
 * python_names) in the files a profile is written to: pprof (a location per line of the
 * mapping "[python]", functions with their file and first line, read back by name), the
 * SVG (greens, tooltips with the code's file and line, the same bytes however the profile
 * was keyed and whatever order samples came in) and the top table's module column. Stacks
 * made by hand: no BPF, no root, no live process. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "binary/modules.h"
#include "output/outputs.h"
#include "output/pprof.h"
#include "output/profile.h"
#include "output/stack_set.h"
#include "output/top.h"
#include "check.h"
#include "pprof_message.h"

static struct module_registry *registry;

/* The locations the stacks run at. work.spin ran on two lines of /srv/work.py; another
 * package's work.py has a work.spin of its own. */
enum { SPIN_5, SPIN_6, RUN_12, OTHER_SPIN_7, NR_LOCS };
static const struct python_location LOCS[NR_LOCS] = {
	[SPIN_5] = { "work", "spin", "/srv/work.py", 3, 5 },
	[SPIN_6] = { "work", "spin", "/srv/work.py", 3, 6 },
	[RUN_12] = { "app", "run", "/srv/app.py", 10, 12 },
	[OTHER_SPIN_7] = { "work", "spin", "/srv/lib/work.py", 2, 7 },
};
static uint64_t ids[NR_LOCS];

#define KERNEL_PC 0xffffffff81002010ull

struct input {
	const char *comm;
	int locs[3]; /* innermost first, -1: the kernel frame */
	uint32_t n;
	unsigned count;
};

/* "py": spin on lines 5 and 6 under run, the kernel over line 6; "one": spin on line 5
 * only; "two": one work.spin from each file under run. */
static const struct input INPUTS[] = {
	{ "py", { SPIN_5, RUN_12 }, 2, 2 },
	{ "py", { SPIN_6, RUN_12 }, 2, 1 },
	{ "py", { -1, SPIN_6, RUN_12 }, 3, 1 },
	{ "one", { SPIN_5, RUN_12 }, 2, 1 },
	{ "two", { SPIN_5, RUN_12 }, 2, 1 },
	{ "two", { OTHER_SPIN_7, RUN_12 }, 2, 1 },
};
#define NR_INPUTS (sizeof(INPUTS) / sizeof(INPUTS[0]))

static struct profile *python_profile(bool by_name, bool reversed)
{
	struct profile *p;

	if (profile__new(registry, NULL, &p) != 0 || (by_name && profile__key_by_name(p) != 0))
		abort();
	for (size_t k = 0; k < NR_INPUTS; k++) {
		const struct input *in = &INPUTS[reversed ? NR_INPUTS - 1 - k : k];
		struct frame frames[3];

		for (uint32_t i = 0; i < in->n; i++) {
			frames[i] = in->locs[i] < 0
					    ? (struct frame){ .module = MODULE_KERNEL, .addr = KERNEL_PC }
					    : (struct frame){ .module = MODULE_PYTHON,
							      .addr = ids[in->locs[i]] };
		}
		for (unsigned c = 0; c < in->count; c++) {
			if (profile__add(p, in->comm, NULL, frames, in->n) != 0)
				abort();
		}
	}
	return p;
}

static const Perftools__Profiles__Function *pb_function(const Perftools__Profiles__Profile *m,
							 uint64_t id)
{
	for (size_t i = 0; i < m->n_function; i++) {
		if (m->function[i]->id == id)
			return m->function[i];
	}
	return NULL;
}

/* The Python locations of m: each one line, no address, the mapping "[python]". */
static void check_pprof_message(const Perftools__Profiles__Profile *m)
{
	const Perftools__Profiles__Mapping *py_map = NULL;
	uint64_t spin_fn = 0;
	bool shape = true, lines[NR_LOCS] = { false };

	for (size_t i = 0; i < m->n_mapping; i++) {
		if (strcmp(pb_string(m, m->mapping[i]->filename), "[python]") == 0)
			py_map = m->mapping[i];
	}
	check(py_map && py_map->has_functions && py_map->has_filenames && py_map->has_line_numbers,
	      "pprof: Python frames in the mapping [python], with functions, files and lines");
	for (size_t i = 0; py_map && i < m->n_location; i++) {
		const Perftools__Profiles__Location *loc = m->location[i];
		const Perftools__Profiles__Function *fn;

		if (loc->mapping_id != py_map->id)
			continue;
		fn = loc->n_line == 1 ? pb_function(m, loc->line[0]->function_id) : NULL;
		shape &= fn && loc->address == 0 && fn->name == fn->system_name;
		for (int k = 0; fn && k < NR_LOCS; k++) {
			char name[64];

			snprintf(name, sizeof(name), "%s.%s", LOCS[k].module, LOCS[k].function);
			if (strcmp(pb_string(m, fn->name), name) != 0 ||
			    strcmp(pb_string(m, fn->filename), LOCS[k].file) != 0 ||
			    fn->start_line != LOCS[k].firstlineno || loc->line[0]->line != LOCS[k].line)
				continue;
			shape &= !lines[k]; /* once each */
			lines[k] = true;
			if (k == SPIN_5 || k == SPIN_6) {
				shape &= !spin_fn || spin_fn == fn->id;
				spin_fn = fn->id;
			}
		}
	}
	check(shape && lines[SPIN_5] && lines[SPIN_6] && lines[RUN_12] && lines[OTHER_SPIN_7],
	      "pprof: a location per line, without address, one line each: \"module.function\", "
	      "its file, first line and line; a function's lines share it");
}

static void test_pprof(void)
{
	struct pprof_opts o = { 99, 1000000000 };
	struct profile *p = python_profile(false, false);
	char *gz = NULL, err[256] = "";
	size_t len = 0, raw_len;
	FILE *out = open_memstream(&gz, &len);
	struct name_table *names;
	struct stack_set *set;
	uint8_t *raw;
	Perftools__Profiles__Profile *m;
	uint32_t spin, run;

	check(out && pprof__write(p, registry, &o, out) == 0, "pprof: writes Python frames");
	fclose(out);
	raw = gunzip_all(gz, len, &raw_len);
	m = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	check(m != NULL, "pprof: a profile.proto message");
	if (m)
		check_pprof_message(m);
	perftools__profiles__profile__free_unpacked(m, NULL);
	free(raw);

	if (name_table__new(&names) || stack_set__new(names, false, &set))
		abort();
	check(pprof__read(gz, len, set, err, sizeof(err)) == 0 &&
		      name_table__intern(names, "work.spin", 9, &spin) == 0 &&
		      name_table__intern(names, "app.run", 7, &run) == 0 &&
		      stack_set__inclusive(set, spin) == 7 && stack_set__self(set, spin) == 6 &&
		      stack_set__inclusive(set, run) == 7,
	      "pprof: read back (hprof diff) by name, a function's lines as one (%s)", err);
	stack_set__free(set);
	name_table__free(names);
	free(gz);
	profile__free(p);
}

/* The SVG outputs__write makes of p, malloc'd. */
static char *svg_of(struct profile *p, const char *dir)
{
	char path[4096], *text = NULL;
	struct output_opts o = { .svg_path = path, .title = "t" };
	size_t len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/out.svg", dir);
	if (outputs__write(p, registry, &o) != 0 || !(f = fopen(path, "r")))
		return NULL;
	if (getdelim(&text, &len, '\0', f) < 0) {
		free(text);
		text = NULL;
	}
	fclose(f);
	unlink(path);
	return text;
}

/* The fill of the frame whose tooltip is tip, after the stack's comm (so a name's frame
 * of that stack). */
static bool fill_after(const char *svg, const char *comm, const char *tip, unsigned rgb[3])
{
	char key[256];
	const char *at;

	snprintf(key, sizeof(key), "<title>%s (", comm);
	at = svg ? strstr(svg, key) : NULL;
	at = at ? strstr(at, tip) : NULL;
	at = at ? strstr(at, "fill=\"rgb(") : NULL;
	return at && sscanf(at, "fill=\"rgb(%u,%u,%u)", &rgb[0], &rgb[1], &rgb[2]) == 3;
}

static bool green(const unsigned c[3])
{
	return c[1] >= 180 && c[0] <= 110 && c[2] <= 160;
}

static void test_svg(void)
{
	char dir[] = "/tmp/hprof-test-python-XXXXXX";
	char *svg[4] = { NULL };
	unsigned c[3];
	bool same = true;

	if (!mkdtemp(dir))
		abort();
	for (int v = 0; v < 4; v++) {
		struct profile *p = python_profile(v & 1, v & 2);

		svg[v] = svg_of(p, dir);
		same &= svg[v] && strcmp(svg[v], svg[0]) == 0;
		profile__free(p);
	}
	rmdir(dir);
	check(svg[0] != NULL, "svg: writes Python frames");
	check(same, "svg: the same bytes keyed by name or by address, in either input order");
	check(fill_after(svg[0], "py", "<title>work.spin (4 samples, 57.14%, /srv/work.py)", c) &&
		      green(c),
	      "svg: a function that ran two lines: green, its file in the tooltip");
	check(fill_after(svg[0], "py", "<title>app.run (4 samples, 57.14%, /srv/app.py:12)", c) &&
		      green(c),
	      "svg: a function that ran one line: green, file:line in the tooltip");
	check(fill_after(svg[0], "one", "<title>work.spin (1 sample, 14.29%, /srv/work.py:5)", c) &&
		      green(c),
	      "svg: the same function elsewhere on one line: file:line");
	check(fill_after(svg[0], "two", "<title>work.spin (2 samples, 28.57%)", c) && green(c),
	      "svg: one name from two files: green, no file in the tooltip");
	check(fill_after(svg[0], "py", "<title>[kernel]+0xffffffff81002010_[k] (1 sample, 14.29%)", c) &&
		      c[0] == c[1] && c[1] == c[2],
	      "svg: a native frame over Python keeps its colour (grey, no kallsyms) and tooltip");
	for (int v = 0; v < 4; v++)
		free(svg[v]);
}

static void test_top(void)
{
	struct profile *p = python_profile(true, false);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	check(out && top__write(p, registry, 3, out) == 0, "top: writes Python frames");
	fclose(out);
	check(text && strstr(text, " 85.71% 100.00%        6  [python]           work.spin\n"),
	      "top: a Python function once, its lines and files together, module [python]");
	if (text && !strstr(text, " 85.71% 100.00%        6  [python]           work.spin\n"))
		printf("# got:\n%s", text);
	free(text);
	profile__free(p);
}

int main(void)
{
	if (module_registry__new(&registry) != 0)
		abort();
	for (int k = 0; k < NR_LOCS; k++) {
		if (python_names__intern(module_registry__python_names(registry), &LOCS[k], &ids[k]))
			abort();
	}
	test_pprof();
	test_svg();
	test_top();
	module_registry__free(registry);
	return failures ? 1 : 0;
}
