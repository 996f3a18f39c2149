/* What a stack is labelled with besides its command name (output/profile.h). */
#ifndef HPROF_OUTPUT_PROFILE_LABELS_H
#define HPROF_OUTPUT_PROFILE_LABELS_H

#include <stdint.h>

/* What a stack is labelled with besides its command name (hprof serve's pprof labels):
 * stacks with other labels are counted apart. */
struct profile_labels {
	uint32_t pid, tid;
	const char *process; /* the process's command name; NULL: unknown */
	const char *cgroup;  /* the cgroup path; NULL: none */
};

#endif
