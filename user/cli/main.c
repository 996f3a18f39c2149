/* hprof: a sampling CPU profiler. Dispatches to a subcommand; recording is the default. */
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
};

int main(int argc, char **argv)
{
	if (argc > 1) {
		for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
			if (strcmp(argv[1], subcommands[i].name) == 0)
				return subcommands[i].run(argc - 1, argv + 1);
		}
	}
	return cmd_record(argc, argv);
}
