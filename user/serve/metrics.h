/* hprof serve's /metrics: its own counters in Prometheus's text exposition format (0.0.4),
 * every name prefixed hprof_, counters ending in _total, sizes in bytes. */
#ifndef HPROF_SERVE_METRICS_H
#define HPROF_SERVE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "output/sample_stats.h"
#include "output/summary.h"
#include "proc/processes.h"
#include "serve/windows.h"

/* What the metrics are made of, read on the recorder's thread. */
struct serve_metrics {
	const struct sample_stats *stats;
	const uint64_t *kernel_counters;     /* enum kernel_counter */
	const struct process_table_stats *processes;
	uint64_t sideband_lost;              /* mapping events the kernel could not send */
	uint64_t received_bytes;
	const struct memory_stats *memory;
	const struct serve_windows_stats *windows;
	unsigned frequency;
	double uptime_s;
};

/* The exposition text (malloc'd, *len bytes). Returns 0 or -ENOMEM. */
int serve_metrics__format(const struct serve_metrics *m, char **text, size_t *len);

#endif
