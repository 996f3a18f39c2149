/* Turns raw samples from the BPF program into symbolizable stacks: finds each process's
 * mappings, resolves every address to a module, judges whether the stack is complete,
 * and counts it in the profile. */
#ifndef HPROF_SESSION_H
#define HPROF_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "sample.h"

struct session_stats {
	uint64_t samples;           /* samples received from the kernel */
	uint64_t bytes;             /* bytes of sample records received */
	uint64_t malformed;         /* lost: record shorter than its header says */
	uint64_t fp_complete;       /* user stacks whose FP chain reached the outermost frame */
	uint64_t kernel_only;       /* samples with no user stack (kernel threads) */
	uint64_t no_maps;           /* samples of processes whose mappings could not be read */
	uint64_t frames_unmapped;   /* user frames in no executable mapping */
	uint64_t processes;         /* distinct processes seen */
};

struct session;

int session__new(struct session **out);
/* Accounts one record of size bytes. Returns 0 or -errno (out of memory only). */
int session__handle_sample(struct session *s, const struct hprof_sample *sample, size_t size);
struct profile *session__profile(struct session *s);
const struct session_stats *session__stats(const struct session *s);
void session__free(struct session *s);

#endif
