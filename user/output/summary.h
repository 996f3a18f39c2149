/* The end-of-run summary as JSON (--json): the figures hprof prints on stderr at the end
 * of a recording or a report, read from the same session counters, plus the functions
 * with the largest self and inclusive shares. */
#ifndef HPROF_OUTPUT_SUMMARY_H
#define HPROF_OUTPUT_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>


#include "sample.h"
#include "binary/fetch_debug.h"
#include "binary/modules.h"
#include "output/profile.h"
#include "output/sample_stats.h"
#include "go/process.h"
#include "proc/processes.h"
#include "python/stack.h"

/* Functions listed by self and by inclusive share. */
#define SUMMARY_TOP_FUNCTIONS 20

/* What a summary is made of. */
struct run_summary {
	const char *what; /* what ran, for the brief summary: "profiled ./server" (NULL: none) */
	const struct sample_stats *stats;
	const struct process_table_stats *processes;
	struct profile *profile;
	struct module_registry *modules;
	double duration_s;
	unsigned frequency;
	bool no_dwarf;
	const uint64_t *kernel_counters; /* NULL: none (a report) */
	uint64_t sideband_lost;
	/* A recording's: bytes of sample records as received (deltas as sent; 0: the
	 * session's count, a report's records), and its deltas (NULL: none). */
	uint64_t received_bytes;
	const struct stack_delta_stats *deltas;
	const struct python_stats *python; /* NULL: Python frames were off */
	const struct go_proc_stats *go;    /* NULL: none (a report) */
	const struct fetch_debug_report *debug_files; /* NULL: none tried */
};

static inline double summary__bytes_per_sample(const struct run_summary *r)
{
	uint64_t bytes = r->received_bytes ? r->received_bytes : r->stats->bytes;

	return r->stats->samples ? (double)bytes / (double)r->stats->samples : 0.0;
}

/* Figures the text and the JSON summary derive alike. */
static inline uint64_t summary__user_samples(const struct sample_stats *st)
{
	return st->samples - st->kernel_only - st->malformed;
}

static inline uint64_t summary__lost_samples(const struct sample_stats *st, const uint64_t *kc)
{
	return kc[KC_DROP_RINGBUF_FULL] + kc[KC_DROP_NO_SCRATCH] + st->malformed;
}

/* Go processes by whether the kernel reads their stack switches (go NULL: none). */
static inline uint64_t summary__go_processes(const struct go_proc_stats *go)
{
	uint64_t procs = 0;

	for (unsigned i = 0; go && i < GO_LAYOUT_REASON_COUNT; i++)
		procs += go->processes[i];
	return procs;
}

/* Whether the summary has a Go line: a Go process seen, or a sample on g0. */
static inline bool summary__go_seen(const struct go_proc_stats *go, const uint64_t *switches)
{
	uint64_t samples = 0;

	for (unsigned i = 0; i < GO_SWITCH_COUNT; i++)
		samples += switches[i];
	return summary__go_processes(go) || samples;
}

/* What hprof holds while it runs: the structures that grow with processes, threads,
 * binaries and distinct stacks (HPROF_DEBUG=memory). */
struct memory_stats {
	uint64_t processes;    /* held now */
	uint64_t processes_sampled; /* of them, the ones with samples */
	uint64_t threads;      /* held now */
	uint64_t filtered_pids; /* the kernel's pid filter (-p, -- COMMAND) */
	struct module_memory modules;
	struct profile_memory profile;
};

/* VmRSS of this process in KiB, 0 when /proc cannot say. */
uint64_t summary__rss_kib(void);
/* One line "hprof: memory: ..." with stats, the heap in use and VmRSS. */
void summary__print_memory(const struct memory_stats *m, FILE *out);
struct output_opts;

/* The summary as text, every figure (hprof prints it on stderr at the end of a recording or
 * a report with -v). */
void summary__print(const struct run_summary *r, FILE *out);
/* The summary as a reader wants it by default, at most 4 lines: what ran, for how long and
 * the samples; the share of user stacks complete and the main reasons for the others; what
 * was lost, only when something was; what debuginfod fetched, only when it was asked.
 * summary__print_written adds where the outputs are. */
void summary__print_brief(const struct run_summary *r, FILE *out);
/* The files written (raw_path: a capture, or NULL): one line each when verbose, else one
 * line in all; nothing for stdout. */
/* What debuginfod fetched: one line, and with verbose one per binary that got no file. */
void summary__print_debug_files(const struct fetch_debug_report *rep, bool verbose, FILE *out);
struct json_writer;
/* The same as the JSON summary's "debuginfod" object. */
void summary__json_debug_files(struct json_writer *w, const struct fetch_debug_report *rep);
/* How many samples of CPython processes got Python frames, and the commonest reasons the
 * others did not; nothing when no process ran a CPython. And the JSON summary's "python"
 * object (nothing when py is NULL). */
void summary__print_python(const struct python_stats *py, FILE *out);
void summary__json_python(struct json_writer *w, const struct python_stats *py);
/* The -v line on inline frames and lines from DWARF (binary/inline_frames.h), and the JSON
 * summary's "inline" object: nothing when no binary had DWARF. */
void summary__print_inline(struct profile *p, FILE *out);
void summary__json_inline(struct json_writer *w, struct profile *p);
void summary__print_written(const struct output_opts *o, const char *raw_path, bool verbose,
			    FILE *out);
/* part as a percentage of whole; 0 when whole is 0. */
static inline double summary__percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}
/* Writes the summary as one JSON object (summary_json.c). Returns 0 or -errno. */
int summary__write_json(const struct run_summary *r, FILE *out);
/* The same into path, whole or not at all; on error prints one line and returns -errno. */
int summary__write_json_file(const char *path, const struct run_summary *r);

#endif
