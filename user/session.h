/* A sample's way through the stages: its process and mappings (proc/), its user stack
 * (unwind/hybrid.c), its frames resolved to binaries (proc/resolver.c), counted in the
 * profile (output/profile.c). The one place that calls the stages in order. */
#ifndef HPROF_SESSION_H
#define HPROF_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc/map_event.h"
#include "proc/processes.h"
#include "output/profile.h"
#include "output/sample_stats.h"
#include "output/summary.h"
#include "go/process.h"
#include "python/process.h"
#include "python/stack.h"
#include "sample.h"
#include "unwind/code_cache.h"
#include "unwind/hybrid.h"
#include "unwind/walk.h"


struct session;

/* dwarf: replay the DWARF walk where the FP chain is short (needs stack copies). */
int session__new(bool dwarf, struct session **out);
/* As session__new, kernel frames named from ksyms (a capture's, replayed), which the
 * session takes, even on failure; NULL reads /proc/kallsyms. A capture that carries its
 * kernel symbols so never reads the machine's (a tenth of a report's time). */
int session__new_with_ksyms(bool dwarf, struct ksyms *ksyms, struct session **out);
/* Accounts one record of size bytes. Returns 0 or -errno (out of memory only). */
int session__handle_sample(struct session *s, const struct hprof_sample *sample, size_t size);
/* Called with what walks teach about each thread (see unwind/hybrid.h). */
void session__set_stack_base_hook(struct session *s, hybrid_thread_fn fn, void *ctx);
/* Called with every read of a CPython process's memory (for --raw: a replay reads them
 * back, through session__add_python_memory). */
void session__set_python_memory_hook(struct session *s, python_memory_hook_fn fn, void *ctx);
int session__add_python_memory(struct session *s, uint32_t pid, uint64_t addr,
			       const void *bytes, size_t len);
/* Called with what the kernel needs to read each CPython process's frames. */
void session__set_python_hook(struct session *s, python_proc_hook_fn fn, void *ctx);
/* Go processes' layouts, for the kernel to read their stack switches (go/process.h). */
void session__set_go_hook(struct session *s, go_proc_hook_fn fn, void *ctx);
const struct go_proc_stats *session__go_stats(const struct session *s);
/* The command pid hprof just started: its executable looked at for Go now. 0 or -ENOMEM. */
int session__look_go_command(struct session *s, uint32_t pid);
enum session_python {
	SESSION_PYTHON_ON,     /* Python frames in place of the evaluator's (the default) */
	SESSION_PYTHON_NATIVE, /* ... keeping the interpreter's frames between them */
	SESSION_PYTHON_OFF,    /* native frames only */
};
void session__set_python(struct session *s, enum session_python mode);
const struct python_stats *session__python_stats(const struct session *s);
/* What CPython pid runs (python/process.h), looked at in its mappings now (the kernel's
 * struct goes to the hook when it is first known); NULL when Python frames are off or out
 * of memory. */
const struct python_proc *session__python_proc(struct session *s, uint32_t pid);
/* Places a chain read outside of samples (hprof stack) into pid's user frames, as a
 * sample's are (python_stack__place); for a process that runs no CPython nothing is
 * placed, origin is left as it is and *why is PYTHON_REASON_COUNT. Returns 0 or -ENOMEM. */
int session__python_place(struct session *s, uint32_t pid, const struct python_chain *chain,
			  struct frame *frames, uint32_t *n, uint32_t max, uint32_t *origin,
			  enum python_reason *why);
/* Called with the text of every /proc/PID/maps the session reads (for --raw). */
typedef void (*session_maps_hook_fn)(void *ctx, uint32_t pid, const char *text, size_t len);
void session__set_maps_hook(struct session *s, session_maps_hook_fn fn, void *ctx);
/* Replaying a capture: mappings come only from session__load_maps and the capture's
 * mapping events, never from /proc. */
void session__set_replay(struct session *s);
int session__load_maps(struct session *s, uint32_t pid, const char *text, size_t len);
/* Reads pid's mappings from /proc now (a process whose earlier mapping changes hprof did
 * not see, and whose first sample may come after it changed them). */
void session__track_process(struct session *s, uint32_t pid);
/* Applies one of the kernel's mapping events (fork, exec, mmap, exit); records must come
 * in time order with the samples. Returns 0 or -ENOMEM. */
int session__handle_map_event(struct session *s, const struct map_event *e, const char *path);
const struct process_table_stats *session__process_stats(const struct session *s);
/* Opens the file of an mmap event as soon as it is read, while its process still lives
 * (it is handled later, in time order). */
void session__pin_mapped_file(struct session *s, const struct map_event *e, const char *path);
/* When the last sample handled of a process with code outside files (a JIT's) was taken
 * (CLOCK_MONOTONIC ns; 0: none): such code is read from the process while it lives. */
uint64_t session__anon_code_sampled_ns(const struct session *s);
/* A process's exit was read (it is handled later, in time order): see
 * process_table__exit_seen. */
void session__process_exit_seen(struct session *s, uint32_t pid);
struct module_registry *session__modules(struct session *s);
/* The kernel's symbols (NULL when /proc/kallsyms shows no addresses). */
const struct ksyms *session__ksyms(const struct session *s);
/* The DWARF walk alone over one sample's copy, through the session's mappings and tables
 * (for the libunwind cross-check and the unwinding benchmark): no FP chain, no stitching,
 * nothing counted in the profile. Returns 0, -EINVAL for a malformed sample or one without
 * a stack copy, or -ENOMEM. */
/* The unwind rule cache's counters, for benchmarks. */
/* --no-scan: no stack scanning through code without CFI. */
void session__set_no_scan(struct session *s, bool no_scan);
/* What the analysis of code without CFI did. */
const struct code_cache_stats *session__code_stats(const struct session *s);
void session__unwind_cache_stats(const struct session *s, struct unwind_cache_stats *stats);

int session__walk_sample(struct session *s, const struct hprof_sample *sample, size_t size,
			 struct unwind_frame *frames, uint32_t max, struct unwind_result *result);
/* A live process's stack outside of samples (hprof stack): the DWARF walk from regs over
 * copy through pid's mappings (read from /proc, or session__load_maps, on first use).
 * Returns 0 or -ENOMEM. */
int session__walk_process(struct session *s, uint32_t pid, const struct unwind_regs *regs,
			  const struct stack_copy *copy, struct unwind_frame *frames, uint32_t max,
			  struct unwind_result *result);
/* The frame for a user address of pid (caller: a return address), for naming with
 * profile__frame_name(session__profile(s), f). Returns 0, -ENOENT when no mapping holds
 * it (f is then an [unmapped] frame), or -ENOMEM. */
int session__resolve_frame(struct session *s, uint32_t pid, uint64_t addr, bool caller,
			   struct frame *f);
struct profile *session__profile(struct session *s);
/* Names the JIT frames of processes still running as their perf maps and jitdumps name
 * them now (frames named after their mapping when counted): before a recording's outputs. */
void session__settle_names(struct session *s);
/* Debug files may be fetched at the end (debuginfod): until then, frames no symbol names in
 * a binary whose file a server may have stay re-nameable. Call before the first sample. */
void session__set_debuginfod(struct session *s, bool on);
/* Fetches the debug files those binaries want (binary/fetch_debug.h), after sampling and
 * before session__settle_names, within total_timeout_s (0: the default), with progress on
 * progress_out when it is a terminal. What was fetched goes into the summary. Returns 0 or
 * -ENOMEM. */
int session__fetch_debug_files(struct session *s, double total_timeout_s, FILE *progress_out);
/* What session__fetch_debug_files fetched (the summary's). */
const struct fetch_debug_report *session__debug_files(const struct session *s);
/* Where counted stacks go instead of the session's profile (hprof serve's windows), each
 * with its labels (pid, tid, the process's name and cgroup, read from /proc once per
 * process). fn returns 0 or -ENOMEM. */
typedef int (*session_sample_fn)(void *ctx, const char *comm, const char *root,
				 const struct profile_labels *labels, const struct frame *frames,
				 uint32_t n);
void session__set_sample_sink(struct session *s, session_sample_fn fn, void *ctx);
const struct sample_stats *session__stats(const struct session *s);
/* The run's summary: the session's figures, and the recording's (kernel_counters NULL and
 * sideband_lost 0 for a report). */
struct run_summary session__summary(struct session *s, double duration_s, unsigned frequency,
				    bool no_dwarf, const uint64_t *kernel_counters,
				    uint64_t sideband_lost);
/* What the session holds now (HPROF_DEBUG=memory). */
void session__memory(const struct session *s, struct memory_stats *m);
void session__free(struct session *s);

#endif
