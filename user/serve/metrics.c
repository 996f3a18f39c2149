#include "serve/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/map_event.h"
#include "sample.h"
#include "unwind/hybrid.h"

/* "# HELP" and "# TYPE" lines of a metric. */
static void header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP hprof_%s %s\n# TYPE hprof_%s %s\n", name, help, name, type);
}

static void value(FILE *f, const char *name, uint64_t v)
{
	fprintf(f, "hprof_%s %" PRIu64 "\n", name, v);
}

/* A sample of name{label="label_value"}; label values are hprof's own words, but are
 * escaped as the format asks all the same. */
static void labelled(FILE *f, const char *name, const char *label, const char *label_value,
		     uint64_t v)
{
	fprintf(f, "hprof_%s{%s=\"", name, label);
	for (const char *c = label_value; *c; c++) {
		if (*c == '\\' || *c == '"')
			fprintf(f, "\\%c", *c);
		else if (*c == '\n')
			fputs("\\n", f);
		else
			fputc(*c, f);
	}
	fprintf(f, "\"} %" PRIu64 "\n", v);
}

static void metric(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
	header(f, name, type, help);
	value(f, name, v);
}

static void sample_metrics(FILE *f, const struct serve_metrics *m)
{
	const struct sample_stats *st = m->stats;
	const uint64_t *kc = m->kernel_counters;
	static const char *const events[MAP_EVENT_TYPES] = {
		[MAP_EVENT_MMAP] = "mmap", [MAP_EVENT_EXEC] = "exec", [MAP_EVENT_FORK] = "fork",
		[MAP_EVENT_EXIT] = "exit", [MAP_EVENT_THREAD_EXIT] = "thread_exit",
	};

	metric(f, "samples_total", "counter", "Samples received from the kernel.", st->samples);
	header(f, "lost_samples_total", "counter", "Samples lost, by reason.");
	labelled(f, "lost_samples_total", "reason", "ring_buffer_full", kc[KC_DROP_RINGBUF_FULL]);
	labelled(f, "lost_samples_total", "reason", "no_scratch_buffer", kc[KC_DROP_NO_SCRATCH]);
	labelled(f, "lost_samples_total", "reason", "malformed", st->malformed);
	metric(f, "kernel_only_samples_total", "counter",
	       "Samples without a user stack (kernel threads, execve, exit).", st->kernel_only);
	header(f, "user_stacks_total", "counter", "User stacks, by how hprof obtained them.");
	for (int i = 0; i < METHOD_COUNT; i++)
		labelled(f, "user_stacks_total", "method", hybrid__method_name(i), st->methods[i]);
	header(f, "truncated_stacks_total", "counter", "Incomplete user stacks, by why they stopped.");
	for (unsigned t = 0; t < UNWIND_END_COUNT; t++) {
		if (t == UNWIND_END_COMPLETE)
			continue; /* the walks that were not truncated */
		labelled(f, "truncated_stacks_total", "reason", unwind_end__name(t),
			 st->truncated[t]);
	}
	metric(f, "frames_unmapped_total", "counter", "User frames in no executable mapping.",
	       st->frames_unmapped);
	header(f, "mapping_events_total", "counter",
	       "Mapping events applied, by type (a thread's exit only when it was sampled).");
	for (int t = 0; t < MAP_EVENT_TYPES; t++) {
		if (events[t])
			labelled(f, "mapping_events_total", "type", events[t], m->processes->events[t]);
	}
	metric(f, "mapping_events_lost_total", "counter",
	       "Mapping events the kernel had no room to send.", m->sideband_lost);
	metric(f, "received_bytes_total", "counter", "Bytes of sample records received.",
	       m->received_bytes);
}

static void memory_metrics(FILE *f, const struct serve_metrics *m)
{
	const struct memory_stats *mem = m->memory;
	struct mallinfo2 heap = mallinfo2();

	metric(f, "resident_memory_bytes", "gauge", "hprof's resident set size.",
	       summary__rss_kib() * 1024);
	metric(f, "heap_bytes", "gauge", "hprof's heap in use.", heap.uordblks + heap.hblkhd);
	metric(f, "processes", "gauge", "Processes hprof follows.", mem->processes);
	metric(f, "threads", "gauge", "Threads hprof knows.", mem->threads);
	metric(f, "binaries", "gauge", "Binaries hprof has met.", mem->modules.files);
	metric(f, "symbol_bytes", "gauge", "Memory of binaries' symbols.", mem->modules.symbol_bytes);
	metric(f, "unwind_index_bytes", "gauge", "Memory of binaries' unwind indexes.",
	       mem->modules.table_bytes);
	metric(f, "row_cache_bytes", "gauge", "Memory of compiled unwind rows.",
	       mem->modules.row_cache.bytes);
	metric(f, "row_cache_limit_bytes", "gauge", "The row cache's bound.",
	       mem->modules.row_cache.max_bytes);
	metric(f, "row_cache_functions", "gauge", "Functions whose rows are compiled.",
	       mem->modules.row_cache.functions);
	header(f, "row_cache_lookups_total", "counter", "Row lookups, by whether their function was compiled.");
	labelled(f, "row_cache_lookups_total", "result", "hit", mem->modules.row_cache.hits);
	labelled(f, "row_cache_lookups_total", "result", "miss", mem->modules.row_cache.misses);
	metric(f, "row_cache_evictions_total", "counter", "Functions evicted from the row cache.",
	       mem->modules.row_cache.evictions);
	metric(f, "profile_stacks", "gauge", "Distinct stacks held.", mem->profile.stacks);
}

static void window_metrics(FILE *f, const struct serve_metrics *m)
{
	metric(f, "profile_windows_open", "gauge", "Profile windows counting now.", m->windows->open);
	metric(f, "profile_windows_served_total", "counter", "Profiles served over HTTP.",
	       m->windows->served);
	metric(f, "profile_requests_refused_total", "counter",
	       "Profile requests refused: the client or hprof had enough open.", m->windows->refused);
	metric(f, "profile_files_written_total", "counter", "--every windows written.",
	       m->windows->written);
	metric(f, "sampling_frequency_hertz", "gauge", "Samples per second per CPU.", m->frequency);
	header(f, "uptime_seconds", "gauge", "Seconds since sampling started.");
	fprintf(f, "hprof_uptime_seconds %.3f\n", m->uptime_s);
}

int serve_metrics__format(const struct serve_metrics *m, char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);

	if (!f)
		return -ENOMEM;
	sample_metrics(f, m);
	memory_metrics(f, m);
	window_metrics(f, m);
	if (fclose(f) != 0) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}
