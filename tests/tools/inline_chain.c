/* inline_chain [--time] FILE [ADDR...]: the inline chain hprof's DWARF index gives each ELF
 * virtual address of FILE (the addresses from stdin, one a line, when none is given),
 * innermost first, one "function<TAB>file:line" line per frame and an empty line after each
 * address, as eu-addr2line -i -f -C prints them without columns. With --time, prints instead
 * what it cost (bench/b_inline.sh): opening FILE, the first chain, each further distinct
 * address the first time (its unit indexed on first use) and again (from the cache), and
 * the index's bytes. Exits 2 when FILE has no DWARF. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "binary/dwarf_index.h"

static void print_chain(struct dwarf_index *ix, uint64_t addr)
{
	struct source_chain chain;

	if (dwarf_index__chain(ix, addr, &chain) != 0) {
		printf("??\t??:0\n\n");
		return;
	}
	for (uint32_t i = chain.nr; i-- > 0;)
		printf("%s\t%s:%" PRIu32 "\n", chain.frames[i].function,
		       chain.frames[i].file[0] ? chain.frames[i].file : "??", chain.frames[i].line);
	printf("\n");
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Chains of addrs[0..n): the first, the others the first time, all again. */
static void time_chains(struct dwarf_index *ix, const uint64_t *addrs, size_t n, double open_us)
{
	struct source_chain chain;
	struct dwarf_index_stats st;
	double t0 = now_us(), t1, t2, t3;

	dwarf_index__chain(ix, addrs[0], &chain);
	t1 = now_us();
	for (size_t i = 1; i < n; i++)
		dwarf_index__chain(ix, addrs[i], &chain);
	t2 = now_us();
	for (size_t i = 0; i < n; i++)
		dwarf_index__chain(ix, addrs[i], &chain);
	t3 = now_us();
	dwarf_index__stats(ix, &st);
	printf("open_ms %.1f first_ms %.1f cold_us_per_pc %.2f warm_us_per_pc %.3f pcs %zu "
	       "units_indexed %" PRIu64 " scopes %" PRIu64 " lines %" PRIu64 " index_kib %zu\n",
	       open_us / 1e3, (t1 - t0) / 1e3, n > 1 ? (t2 - t1) / (double)(n - 1) : 0.0,
	       (t3 - t2) / (double)n, n, st.units_indexed, st.scopes, st.lines, dwarf_index__bytes(ix) / 1024);
}

int main(int argc, char **argv)
{
	bool timed = argc > 1 && strcmp(argv[1], "--time") == 0;
	struct dwarf_index *ix;
	char msg[256] = "", line[64];
	uint64_t *addrs = NULL;
	size_t n = 0, cap = 0;
	double t0;
	int err, first = timed ? 2 : 1;

	if (argc <= first) {
		fprintf(stderr, "usage: inline_chain [--time] FILE [ADDR...]\n");
		return 2;
	}
	t0 = now_us();
	err = dwarf_index__open(argv[first], &ix, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "inline_chain: %s\n", msg);
		return 2;
	}
	t0 = now_us() - t0;
	for (int i = first + 1; i <= argc; i++) {
		uint64_t addr;
		uint64_t *bigger;

		if (i < argc)
			addr = strtoull(argv[i], NULL, 0);
		else if (argc == first + 1 && fgets(line, sizeof(line), stdin))
			addr = strtoull(line, NULL, 0), i--;
		else
			break;
		if (!timed) {
			print_chain(ix, addr);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			bigger = realloc(addrs, cap * sizeof(*addrs));
			if (!bigger)
				return 1;
			addrs = bigger;
		}
		addrs[n++] = addr;
	}
	if (timed && n)
		time_chains(ix, addrs, n, t0);
	free(addrs);
	dwarf_index__free(ix);
	return 0;
}
