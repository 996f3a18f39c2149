#include "binary/fetch_debug.h"
#include "binary/debug_files.h"
#include "util/text.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *debuginfod_outcome__name(enum debuginfod_outcome o)
{
	switch (o) {
	case DEBUGINFOD_FROM_SERVER:
		return "from the server";
	case DEBUGINFOD_FROM_CACHE:
		return "from the cache";
	case DEBUGINFOD_NOT_FOUND:
		return "not found";
	case DEBUGINFOD_FAILED:
		return "failed";
	case DEBUGINFOD_SKIPPED:
		return "skipped";
	}
	return "?";
}

size_t fetch_debug__count(const struct fetch_debug_report *rep, enum debuginfod_outcome o)
{
	size_t n = 0;

	for (size_t i = 0; i < rep->nr_results; i++)
		n += rep->results[i].fetch.outcome == o;
	return n;
}

size_t fetch_debug__fetched(const struct fetch_debug_report *rep)
{
	return fetch_debug__count(rep, DEBUGINFOD_FROM_SERVER) +
	       fetch_debug__count(rep, DEBUGINFOD_FROM_CACHE);
}

/* Whether a result for build-id (as hex) is there already: one fetch per build-id, however
 * many paths the binary had (a container's root, a bind mount). */
static bool already_fetched(const struct fetch_debug_report *rep, const char *build_id)
{
	for (size_t i = 0; i < rep->nr_results; i++) {
		if (strcmp(rep->results[i].build_id, build_id) == 0)
			return true;
	}
	return false;
}

static void hex(const uint8_t *id, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
	out[2 * len] = '\0';
}

void fetch_debug__settle_build_id(struct module_registry *reg, const uint8_t *id, size_t len,
				  bool reload)
{
	for (uint32_t i = 0; i < module_registry__count(reg); i++) {
		struct module *mod = module_registry__by_id(reg, MODULE_FIRST_FILE + i);
		const uint8_t *mine;

		if (!mod || !mod->syms || elf_symbols__build_id(mod->syms, &mine) != len ||
		    memcmp(mine, id, len) != 0)
			continue;
		mod->debug_file_done = true;
		if (reload && mod->wants_debug_file)
			module_registry__reload_symbols(reg, mod);
	}
}

int fetch_debug__add_result(struct fetch_debug_report *rep, const char *name,
			    const uint8_t *id, size_t len, const struct debuginfod_fetch *fetch)
{
	struct fetch_debug_result *r, *bigger;

	bigger = realloc(rep->results, (rep->nr_results + 1) * sizeof(*bigger));
	if (!bigger)
		return -ENOMEM;
	rep->results = bigger;
	r = &rep->results[rep->nr_results++];
	memset(r, 0, sizeof(*r));
	/* the summary prints it on a terminal */
	text__terminal_safe(name, r->name, sizeof(r->name));
	hex(id, len, r->build_id);
	if (fetch)
		r->fetch = *fetch;
	return 0;
}

/* Fetches the file of build-id id for the binary named name, unless it was already: into
 * a new result, registered where its build-id is looked for. Returns 0 (fetched or not:
 * *got says), or -ENOMEM. */
static int fetch_build_id(struct debuginfod *d, const uint8_t *id, size_t len, const char *name,
			  struct fetch_debug_report *rep, bool *got)
{
	struct fetch_debug_result *r;
	char build_id[2 * BUILD_ID_MAX + 1];

	*got = false;
	hex(id, len, build_id);
	if (already_fetched(rep, build_id))
		return 0;
	if (fetch_debug__add_result(rep, name, id, len, NULL))
		return -ENOMEM;
	r = &rep->results[rep->nr_results - 1];
	if (debuginfod__fetch(d, id, len, name, &r->fetch) != 0)
		return 0;
	if (debug_files__add_fetched(id, len, r->fetch.path) != 0)
		return -ENOMEM;
	*got = true;
	return 0;
}

/* A fetched debug file that dwz shrank needs its supplementary file to be read whole (its
 * types and inlined functions, not its symbols): fetched too, by the build-id its
 * .gnu_debugaltlink names, when no local place has it. Returns 0 or -ENOMEM. */
static int fetch_supplementary(struct debuginfod *d, const char *debug_file, const char *name,
			       struct fetch_debug_report *rep)
{
	uint8_t id[BUILD_ID_MAX];
	char path[PATH_MAX], what[64];
	size_t len;
	bool got;

	if (debug_files__altlink_build_id(debug_file, id, &len) != 0 ||
	    debug_files__altlink_of(debug_file, path, sizeof(path)) == 0)
		return 0;
	snprintf(what, sizeof(what), "%.50s (dwz)", name);
	return fetch_build_id(d, id, len, what, rep, &got);
}

/* Fetches the file of mod's build-id (and its supplementary file), unless it was already,
 * and reads the symbols of the binaries of that build-id again. Returns 0 or -ENOMEM. */
static int fetch_one(struct module_registry *reg, struct debuginfod *d, struct module *mod,
		     struct fetch_debug_report *rep)
{
	const uint8_t *id;
	size_t len = elf_symbols__build_id(mod->syms, &id);
	char debug_file[PATH_MAX];
	bool got;
	int err = fetch_build_id(d, id, len, mod->name, rep, &got);

	if (err || !got)
		return err;
	/* a copy: fetching the supplementary file moves the results */
	snprintf(debug_file, sizeof(debug_file), "%s", rep->results[rep->nr_results - 1].fetch.path);
	err = fetch_supplementary(d, debug_file, mod->name, rep);
	fetch_debug__settle_build_id(reg, id, len, true);
	return err;
}

static bool any_wanted(struct module_registry *reg)
{
	for (uint32_t i = 0; i < module_registry__count(reg); i++) {
		struct module *mod = module_registry__by_id(reg, MODULE_FIRST_FILE + i);

		if (mod && mod->wants_debug_file)
			return true;
	}
	return false;
}

int fetch_debug__run(struct module_registry *reg, double total_timeout_s, FILE *progress_out,
		     struct fetch_debug_report *rep)
{
	struct debuginfod *d = NULL;
	double start = now_s();
	int err = 0;

	memset(rep, 0, sizeof(*rep));
	if (!module_registry__debuginfod(reg) || !any_wanted(reg))
		goto done;
	rep->tried = true;
	if (debuginfod__new(total_timeout_s, progress_out, &d, rep->error, sizeof(rep->error)) != 0)
		goto done;
	for (uint32_t i = 0; i < module_registry__count(reg) && !err; i++) {
		struct module *mod = module_registry__by_id(reg, MODULE_FIRST_FILE + i);

		if (mod && mod->wants_debug_file && mod->syms)
			err = fetch_one(reg, d, mod, rep);
	}
	debuginfod__free(d);
done:
	/* names are final from here: the frames are named once more, for good */
	module_registry__set_debuginfod(reg, false);
	rep->seconds = now_s() - start;
	return err;
}

void fetch_debug__free_report(struct fetch_debug_report *rep)
{
	free(rep->results);
	rep->results = NULL;
	rep->nr_results = 0;
}
