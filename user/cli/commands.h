/* Entry points of hprof's subcommands; user/cli/main.c dispatches on argv[1]. */
#ifndef HPROF_COMMANDS_H
#define HPROF_COMMANDS_H

/* Each returns the process exit status. argv[0] is the subcommand's name. */
int cmd_record(int argc, char **argv);     /* user/cli/record.c: sample and render (default) */
int cmd_report(int argc, char **argv);     /* user/cli/report.c: unwind and render a --raw capture */
int cmd_diff(int argc, char **argv);       /* user/cli/diff.c: compare two profiles, gate on regressions */
int cmd_stack(int argc, char **argv);      /* user/cli/stack.c: print every thread's stack of a process */
int cmd_table(int argc, char **argv);      /* user/cli/table.c: print a binary's unwind rows */
int cmd_flamegraph(int argc, char **argv); /* user/cli/flamegraph.c: folded stacks to SVG */
int cmd_serve(int argc, char **argv);      /* user/cli/serve.c: an always-on agent served over HTTP */

#endif
