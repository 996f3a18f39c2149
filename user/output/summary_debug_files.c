/* The summary's lines on debug files fetched through debuginfod (binary/fetch_debug.h). */
#include <inttypes.h>

#include "output/json.h"
#include "output/summary.h"

/* Binaries without a file named on the brief line; -v names them all. */
#define BRIEF_MISSES 3

/* "NAME (why)" for the binaries that got no file, up to max of them. */
static void print_misses(const struct fetch_debug_report *rep, size_t max, FILE *out)
{
	size_t shown = 0, misses = rep->nr_results - fetch_debug__fetched(rep);

	for (size_t i = 0; i < rep->nr_results && shown < max; i++) {
		const struct fetch_debug_result *r = &rep->results[i];

		if (r->fetch.outcome == DEBUGINFOD_FROM_SERVER ||
		    r->fetch.outcome == DEBUGINFOD_FROM_CACHE)
			continue;
		fprintf(out, "%s%s (%s)", shown ? ", " : ": ", r->name, r->fetch.reason);
		shown++;
	}
	if (misses > shown)
		fprintf(out, ", %zu more (-v)", misses - shown);
}

void summary__print_debug_files(const struct fetch_debug_report *rep, bool verbose, FILE *out)
{
	size_t got;

	if (!rep || !rep->tried)
		return;
	if (rep->error[0]) {
		fprintf(out, "hprof: debuginfod: nothing fetched: %s\n", rep->error);
		return;
	}
	got = fetch_debug__fetched(rep);
	fprintf(out, "hprof: debuginfod: %zu of %zu debug file%s fetched (%zu from the server, %zu from the cache) in %.1f s",
		got, rep->nr_results, rep->nr_results == 1 ? "" : "s",
		fetch_debug__count(rep, DEBUGINFOD_FROM_SERVER),
		fetch_debug__count(rep, DEBUGINFOD_FROM_CACHE), rep->seconds);
	if (got < rep->nr_results) {
		fprintf(out, "; none for %zu", rep->nr_results - got);
		print_misses(rep, verbose ? rep->nr_results : BRIEF_MISSES, out);
	}
	fprintf(out, "\n");
	for (size_t i = 0; verbose && i < rep->nr_results; i++) {
		const struct fetch_debug_result *r = &rep->results[i];

		fprintf(out, "hprof: debuginfod:   %s %s: %s%s%s, %.1f s\n", r->name, r->build_id,
			debuginfod_outcome__name(r->fetch.outcome), r->fetch.reason[0] ? ": " : "",
			r->fetch.reason, r->fetch.seconds);
	}
}

void summary__json_debug_files(struct json_writer *w, const struct fetch_debug_report *rep)
{
	json__key(w, "debuginfod");
	json__begin_object(w);
	json__key(w, "error");
	json__string(w, rep->error);
	json__key(w, "seconds");
	json__double(w, rep->seconds);
	json__key(w, "files");
	json__begin_array(w);
	for (size_t i = 0; i < rep->nr_results; i++) {
		const struct fetch_debug_result *r = &rep->results[i];

		json__begin_object(w);
		json__key(w, "binary");
		json__string(w, r->name);
		json__key(w, "build_id");
		json__string(w, r->build_id);
		json__key(w, "outcome");
		json__string(w, debuginfod_outcome__name(r->fetch.outcome));
		json__key(w, "reason");
		json__string(w, r->fetch.reason);
		json__key(w, "seconds");
		json__double(w, r->fetch.seconds);
		json__end_object(w);
	}
	json__end_array(w);
	json__end_object(w);
}
