/* Unwind tables opened lazily against compiled whole: per binary, the time from opening it
 * to the rules of its first pc (the file mapped, its sections found, .eh_frame_hdr's table
 * checked, one function compiled), the time to load its symbols (what a mapping event of a
 * new binary costs: its segments place the mapping) and to name a first frame, the whole-table compile the lazy table
 * replaces, and the memory of each: the whole table's bytes against the FDE index plus the
 * rows of K functions a profile might touch (every N-th function). Times are the best of
 * RUNS, monotonic clock; memory is the tables' own count.
 * Goal (issue 19): a first sample in a 450 MB library resolved <= 5 ms after its mapping
 * event: symbols and first lookup together ("first"); the function index is built when a
 * frame is first named ("name", after the walk).
 *
 * usage: bench_lazy [-n RUNS] [-k FUNCTIONS] FILE... */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "binary/symbols.h"
#include "cfi/unwind_table.h"

#define GOAL_FIRST_LOOKUP_MS 5.0

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Seconds from opening path lazily to the rules at pc, the best of runs. */
static double first_lookup(const char *path, uint64_t pc, int runs, int *found)
{
	double best = 1e9;

	for (int r = 0; r < runs; r++) {
		struct unwind_row_cache *cache;
		struct unwind_table *t = NULL;
		struct unwind_rules rules;
		char err[256];
		double t0 = now(), t1;

		if (unwind_row_cache__new(4u << 20, &cache) != 0 ||
		    unwind_table__open(path, cache, &t, err, sizeof(err)) != 0) {
			fprintf(stderr, "bench_lazy: %s\n", err);
			exit(1);
		}
		*found = unwind_table__rules_at(t, pc, &rules);
		t1 = now();
		if (t1 - t0 < best)
			best = t1 - t0;
		unwind_table__free(t);
		unwind_row_cache__free(cache);
	}
	return best;
}

/* Seconds to load path's symbols, and to name a first frame after that (the function
 * index is built then), the best of runs each. */
static double symbols_load(const char *path, uint64_t pc, int runs, double *first_name)
{
	double best = 1e9;

	*first_name = 1e9;
	for (int r = 0; r < runs; r++) {
		struct elf_symbols *syms = NULL;
		uint64_t off;
		char err[256];
		double t0 = now(), t1, t2;

		elf_symbols__load(path, &syms, err, sizeof(err));
		t1 = now();
		elf_symbols__lookup(syms, pc, &off);
		t2 = now();
		if (t1 - t0 < best)
			best = t1 - t0;
		if (t2 - t1 < *first_name)
			*first_name = t2 - t1;
		elf_symbols__free(syms);
	}
	return best;
}

int main(int argc, char **argv)
{
	int runs = 9, k = 3000, opt, met = 1;

	while ((opt = getopt(argc, argv, "n:k:")) != -1) {
		if (opt == 'n')
			runs = atoi(optarg);
		else if (opt == 'k')
			k = atoi(optarg);
	}
	if (optind >= argc || runs < 1 || k < 1) {
		fprintf(stderr, "usage: bench_lazy [-n RUNS] [-k FUNCTIONS] FILE...\n");
		return 2;
	}
	printf("%-24s | %7s | %8s | %8s | %8s | %9s | %9s | %9s | %10s | %8s\n", "binary", "FDEs",
	       "lookup ms", "syms ms", "first ms", "name ms", "whole ms", "whole MiB", "lazy MiB",
	       "of whole");
	for (int i = optind; i < argc; i++) {
		struct unwind_table *whole = NULL, *lazy = NULL;
		struct unwind_row_cache *cache = NULL;
		struct unwind_row_cache_stats cs;
		struct unwind_stats ws, ls;
		const struct unwind_row *rows;
		const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
		double compile = 1e9, first, syms, name;
		size_t n, step;
		char err[256];
		int found = 0;

		for (int r = 0; r < (runs < 3 ? runs : 3); r++) {
			double t0 = now();

			unwind_table__free(whole);
			whole = NULL;
			if (unwind_table__from_file(argv[i], UNWIND_SRC_ALL, &whole, err, sizeof(err)) != 0) {
				fprintf(stderr, "bench_lazy: %s\n", err);
				return 1;
			}
			if (now() - t0 < compile)
				compile = now() - t0;
		}
		rows = unwind_table__rows(whole, &n);
		/* a pc in the middle of the file's code: a library's first sample lands anywhere */
		first = first_lookup(argv[i], rows[n / 2].pc, runs, &found);
		syms = symbols_load(argv[i], rows[n / 2].pc, runs, &name);
		/* the memory of a profile that touched k functions, spread over the file */
		unwind_row_cache__new(64u << 20, &cache);
		unwind_table__open(argv[i], cache, &lazy, err, sizeof(err));
		step = n / (size_t)k ? n / (size_t)k : 1;
		for (size_t r = 0; r < n; r += step) {
			struct unwind_rules rules;

			unwind_table__rules_at(lazy, rows[r].pc, &rules);
		}
		unwind_table__stats(whole, &ws);
		unwind_table__stats(lazy, &ls);
		unwind_row_cache__stats(cache, &cs);
		printf("%-24s | %7llu | %8.2f%s | %8.2f | %8.2f | %9.2f | %9.1f | %9.1f | %10.2f | %7.2f%%\n",
		       base, (unsigned long long)ls.fdes, first * 1e3, found ? "" : "?", syms * 1e3,
		       (first + syms) * 1e3, name * 1e3, compile * 1e3, ws.table_bytes / 1048576.0,
		       (ls.table_bytes + cs.bytes) / 1048576.0,
		       100.0 * (double)(ls.table_bytes + cs.bytes) / (double)ws.table_bytes);
		if ((first + syms) * 1e3 > GOAL_FIRST_LOOKUP_MS)
			met = 0;
		unwind_table__free(whole);
		unwind_table__free(lazy);
		unwind_row_cache__free(cache);
	}
	printf("goal: symbols and first lookup <= %.0f ms in every binary: %s\n", GOAL_FIRST_LOOKUP_MS,
	       met ? "met" : "not met");
	return 0;
}
