/* pprof's format (profile.proto, gzip-compressed), written from a profile and read back
 * into stacks by name. Written: sample types samples/count and cpu/nanoseconds, one
 * location per distinct frame with its address (the ELF virtual address for files, as
 * `addr2line -e FILE` takes it; absolute for the kernel and code outside files), mappings
 * per file segment with path, build-id and file offset, functions with names, and each
 * sample's command name as the label "comm" (and more labels for stacks counted with them).
 * A Python frame (MODULE_PYTHON) is a location of the mapping "[python]", without address,
 * whose one line is its function "module.function" (file co_filename, start_line
 * co_firstlineno) at the line it ran: one location per line, as pprof shows compiled code. */
#ifndef HPROF_OUTPUT_PPROF_H
#define HPROF_OUTPUT_PPROF_H

#include <stdint.h>
#include <stdio.h>

#include "binary/modules.h"
#include "output/profile.h"

struct stack_set;

struct pprof_opts {
	unsigned frequency;   /* Hz per CPU: each sample stands for 1e9 / frequency ns */
	uint64_t duration_ns;
};

/* Writes the profile's stacks to out; the same profile gives the same bytes. Returns 0 or
 * -errno. */
int pprof__write(struct profile *p, struct module_registry *reg, const struct pprof_opts *o,
		 FILE *out);

/* The same into path, whole or not at all. Returns 0 or -errno. */
int pprof__write_file(const char *path, struct profile *p, struct module_registry *reg,
		      const struct pprof_opts *o);

/* The label every sample carries its command name in. */
#define PPROF_COMM_LABEL "comm"
/* Labels of stacks counted with labels (profile__add_labeled, hprof serve): there "comm" is
 * the process's name, and these the thread's name, pid, tid and cgroup path. */
#define PPROF_THREAD_LABEL "thread_name"
#define PPROF_PID_LABEL "pid"
#define PPROF_TID_LABEL "tid"
#define PPROF_CGROUP_LABEL "cgroup"
/* Larger decompressed profiles are refused: the input is untrusted. */
#define PPROF_MAX_BYTES (1u << 30)

/* Reads a gzip-compressed profile.proto message (data[0..len)) into set: each sample a
 * stack of its "comm" label (when present) and its locations' functions, outermost first,
 * counted by its first value of type "samples" (else its first value). Returns 0 or -errno
 * with a one-line reason in err. */
int pprof__read(const void *data, size_t len, struct stack_set *set, char *err, size_t errlen);

#endif
