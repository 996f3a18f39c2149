/* hprof: a sampling CPU profiler. Dispatches to a subcommand; recording is the default. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct subcommand subcommands[] = {
	{ "report", cmd_report },
	{ "diff", cmd_diff },
	{ "stack", cmd_stack },
	{ "table", cmd_table },
	{ "flamegraph", cmd_flamegraph },
	{ "serve", cmd_serve },
};

/* Blocks this large (binaries' symbols and unwind tables, the profile's arrays) each get
 * their own mapping, returned to the system when freed. glibc would otherwise raise the
 * threshold to the largest block freed so far and serve later ones from the heap, which
 * seldom shrinks: the memory of a dropped binary would stay in hprof's RSS. */
#define MMAP_THRESHOLD (128 * 1024)

int main(int argc, char **argv)
{
	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
	if (argc > 1) {
		for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
			if (strcmp(argv[1], subcommands[i].name) == 0)
				return subcommands[i].run(argc - 1, argv + 1);
		}
	}
	return cmd_record(argc, argv);
}
