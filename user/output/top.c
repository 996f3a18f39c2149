#include "output/top.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "util/grow.h"

/* Longer module names are printed whole, past the column. */
#define MODULE_COLUMN_MAX 32

struct top_module {
	const char *label; /* the registry's, or a literal */
	uint64_t samples;  /* with the function, from this binary, on the stack */
};

struct top_fn {
	const char *name;    /* the profile's copy: valid until it is freed */
	uint64_t self, incl;
	uint64_t last_stack; /* the last stack that counted it inclusively */
	struct top_module *modules;
	size_t nr_modules, modules_cap;
	const char *module;  /* the binary with the most samples of it */
	UT_hash_handle hh;
};

struct top_build {
	struct profile *p;
	struct module_registry *reg;
	struct top_fn *by_name;
	uint64_t total;
	uint64_t stack; /* serial of the stack being counted, from 1 */
};

/* The binary a frame is in, as perf report's "Shared Object" column names it. */
static const char *module_label(struct module_registry *reg, const struct frame *f)
{
	const struct python_location *loc;
	const struct module *mod;

	if (f->module == MODULE_KERNEL)
		return "[kernel.kallsyms]";
	if (f->module == MODULE_PYTHON)
		return PYTHON_NAMES_MODULE_LABEL;
	/* an inlined call is in the binary it was inlined into */
	if (f->module == MODULE_INLINE && (loc = python_names__get(module_registry__inline_names(reg),
								   f->addr)))
		return loc->module;
	mod = f->module >= MODULE_FIRST_FILE ? module_registry__by_id(reg, f->module) : NULL;
	return mod && mod->name ? mod->name : "[unknown]";
}

static struct top_fn *function(struct top_build *b, const char *name)
{
	struct top_fn *fn;

	HASH_FIND_STR(b->by_name, name, fn);
	if (fn)
		return fn;
	fn = calloc(1, sizeof(*fn));
	if (!fn)
		return NULL;
	fn->name = name;
	HASH_ADD_KEYPTR(hh, b->by_name, fn->name, strlen(fn->name), fn);
	return fn;
}

static int add_module(struct top_fn *fn, const char *label, uint64_t count)
{
	for (size_t i = 0; i < fn->nr_modules; i++) {
		if (strcmp(fn->modules[i].label, label) == 0) {
			fn->modules[i].samples += count;
			return 0;
		}
	}
	if (grow_array((void **)&fn->modules, &fn->modules_cap, fn->nr_modules + 1,
		       sizeof(*fn->modules)))
		return -ENOMEM;
	fn->modules[fn->nr_modules++] = (struct top_module){ label, count };
	return 0;
}

/* One frame of the stack being counted; the innermost one's samples are its self. */
static int count_frame(struct top_build *b, const char *name, const char *label, uint64_t count,
		       bool innermost)
{
	struct top_fn *fn = name ? function(b, name) : NULL;

	if (!fn)
		return -ENOMEM;
	if (innermost)
		fn->self += count;
	/* a recursive function counts once per sample, as hprof diff and pprof count it */
	if (fn->last_stack == b->stack)
		return 0;
	fn->last_stack = b->stack;
	fn->incl += count;
	return add_module(fn, label, count);
}

static int count_stack(void *ctx, const struct profile_stack *st)
{
	struct top_build *b = ctx;
	int err = 0;

	b->stack++;
	b->total += st->count;
	for (uint32_t i = 0; i < st->nr_frames && !err; i++)
		err = count_frame(b, profile__frame_name(b->p, &st->frames[i]),
				  module_label(b->reg, &st->frames[i]), st->count, i == 0);
	if (!err && st->root)
		err = count_frame(b, st->root, "-", st->count, st->nr_frames == 0);
	return err;
}

static void pick_module(struct top_fn *fn)
{
	const struct top_module *best = &fn->modules[0];

	for (size_t i = 1; i < fn->nr_modules; i++) {
		const struct top_module *m = &fn->modules[i];

		if (m->samples > best->samples ||
		    (m->samples == best->samples && strcmp(m->label, best->label) < 0))
			best = m;
	}
	fn->module = best->label;
}

static int compare_fns(const void *a, const void *b)
{
	const struct top_fn *x = *(const struct top_fn *const *)a;
	const struct top_fn *y = *(const struct top_fn *const *)b;
	int c;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->module, y->module);
}

/* "name +N": the module column of a function found in N more binaries. */
static void module_text(const struct top_fn *fn, char *buf, size_t len)
{
	if (fn->nr_modules > 1)
		snprintf(buf, len, "%s +%zu", fn->module, fn->nr_modules - 1);
	else
		snprintf(buf, len, "%s", fn->module);
}

static void share(uint64_t part, uint64_t total, char *buf, size_t len)
{
	/* the same double hprof diff computes, so both print the same two decimals */
	snprintf(buf, len, "%.2f%%", total ? 100.0 * (double)part / (double)total : 0.0);
}

/* Column widths fitting the rows shown, so the table is the same for the same rows. */
static void widths(struct top_fn **fns, size_t n, int *samples_w, int *module_w)
{
	char buf[320];

	*samples_w = (int)strlen("samples");
	*module_w = (int)strlen("module");
	for (size_t i = 0; i < n; i++) {
		int digits = snprintf(buf, sizeof(buf), "%" PRIu64, fns[i]->self);

		module_text(fns[i], buf, sizeof(buf));
		if (digits > *samples_w)
			*samples_w = digits;
		if ((int)strlen(buf) > *module_w)
			*module_w = (int)strlen(buf) < MODULE_COLUMN_MAX ? (int)strlen(buf)
									  : MODULE_COLUMN_MAX;
	}
}

static int print_table(struct top_fn **fns, size_t nr_fns, size_t n, uint64_t total, FILE *out)
{
	char self[16], incl[16], module[320], *name = NULL;
	int samples_w, module_w;

	n = n < nr_fns ? n : nr_fns;
	widths(fns, n, &samples_w, &module_w);
	errno = 0;
	fprintf(out, "top %zu of %zu functions by self samples, of %" PRIu64 " samples\n", n,
		nr_fns, total);
	fprintf(out, "%7s %7s  %*s  %-*s  %s\n", "self", "incl", samples_w, "samples", module_w,
		"module", "function");
	for (size_t i = 0; i < n; i++) {
		char *bigger = realloc(name, strlen(fns[i]->name) + 1);

		if (!bigger) {
			free(name);
			return -ENOMEM;
		}
		name = bigger;
		/* as folded stacks print it: no control characters reach the terminal */
		profile__folded_name(fns[i]->name, name);
		share(fns[i]->self, total, self, sizeof(self));
		share(fns[i]->incl, total, incl, sizeof(incl));
		module_text(fns[i], module, sizeof(module));
		fprintf(out, "%7s %7s  %*" PRIu64 "  %-*s  %s\n", self, incl, samples_w, fns[i]->self,
			module_w, module, name);
	}
	free(name);
	if (fflush(out) || ferror(out))
		return errno ? -errno : -EIO;
	return 0;
}

static void free_build(struct top_build *b)
{
	struct top_fn *fn, *tmp;

	HASH_ITER(hh, b->by_name, fn, tmp) {
		HASH_DEL(b->by_name, fn);
		free(fn->modules);
		free(fn);
	}
}

int top__write(struct profile *p, struct module_registry *modules, size_t n, FILE *out)
{
	struct top_build b = { .p = p, .reg = modules };
	struct top_fn **sorted = NULL, *fn, *tmp;
	size_t nr = 0;
	int err;

	err = profile__for_each_stack(p, count_stack, &b);
	if (!err && !(sorted = malloc((HASH_COUNT(b.by_name) + 1) * sizeof(*sorted))))
		err = -ENOMEM;
	if (err)
		goto cleanup;
	HASH_ITER(hh, b.by_name, fn, tmp) {
		pick_module(fn);
		sorted[nr++] = fn;
	}
	qsort(sorted, nr, sizeof(*sorted), compare_fns);
	err = print_table(sorted, nr, n, b.total, out);
cleanup:
	free(sorted);
	free_build(&b);
	return err;
}
