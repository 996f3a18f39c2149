/* `hprof stack PID`: every thread's stack of a running process (ptrace). */
#include <stdio.h>

#include "commands.h"

int cmd_stack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "hprof: stack: not built yet\n");
	return 1;
}
