/* Turns raw samples from the BPF program into symbolizable stacks: finds each process's
 * mappings, resolves every address to a module, judges whether the stack is complete,
 * and counts it in the profile. */
#ifndef HPROF_SESSION_H
#define HPROF_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc/map_event.h"
#include "proc/processes.h"
#include "output/profile.h"
#include "sample.h"
#include "unwind/walk.h"

/* How a user stack was obtained. */
enum stack_method {
	METHOD_FP = 0,      /* the kernel's frame-pointer chain, complete */
	METHOD_DWARF,       /* DWARF walk over the copied stack, complete */
	METHOD_DWARF_FP,    /* DWARF walk until the copy ran out, then the FP chain */
	METHOD_TRUNCATED,   /* incomplete: reason in truncated[] */
	METHOD_COUNT,
};

/* Truncation reasons beyond the walk's own (enum unwind_end). */
#define TRUNCATED_FP_ONLY UNWIND_END_COUNT /* FP chain broken and no stack copy (--no-dwarf) */
#define TRUNCATED_NO_COPY (UNWIND_END_COUNT + 1) /* FP chain broken, the stack copy failed */
#define TRUNCATED_COUNT (UNWIND_END_COUNT + 2)

struct session_stats {
	uint64_t samples;           /* samples received from the kernel */
	uint64_t methods[METHOD_COUNT];       /* user stacks per method */
	uint64_t truncated[TRUNCATED_COUNT];  /* truncated user stacks per reason */
	uint64_t bytes;             /* bytes of sample records received */
	uint64_t malformed;         /* lost: record shorter than its header says */
	uint64_t fp_complete;       /* user stacks whose FP chain reached the outermost frame */
	uint64_t fp_tails;          /* FP chains finished by a DWARF walk from their end */
	uint64_t fp_tails_learned;  /* FP chains finished with the frames learned for the thread */
	uint64_t tail_windows;      /* samples carrying the stack at the FP chain's end */
	uint64_t kernel_only;       /* samples with no user stack (kernel threads) */
	uint64_t no_maps;           /* samples of processes whose mappings could not be read */
	uint64_t frames_unmapped;   /* user frames in no executable mapping */
	uint64_t processes;         /* distinct processes seen */
};

struct session;

/* dwarf: replay the DWARF walk where the FP chain is short (needs stack copies). */
int session__new(bool dwarf, struct session **out);
const char *session__method_name(enum stack_method m);
/* "[truncated: copy too short]" and the like. */
const char *session__truncated_root(unsigned reason);
/* Accounts one record of size bytes. Returns 0 or -errno (out of memory only). */
int session__handle_sample(struct session *s, const struct hprof_sample *sample, size_t size);
/* Called with what walks have taught about a thread (user/proc/threads.h): where its
 * stack ends (0: not known) and the frame record its right FP chains end at (0: none). */
typedef void (*session_stack_base_fn)(void *ctx, uint32_t tid, uint64_t base, uint64_t fp_tail,
				      uint64_t fp_tail_ip);
void session__set_stack_base_hook(struct session *s, session_stack_base_fn fn, void *ctx);
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
struct module_registry *session__modules(struct session *s);
/* The DWARF walk alone over one sample's copy, through the session's mappings and tables
 * (for the libunwind cross-check and the unwinding benchmark): no FP chain, no stitching,
 * nothing counted in the profile. Returns 0, -EINVAL for a malformed sample or one without
 * a stack copy, or -ENOMEM. */
/* The unwind rule cache's counters, for benchmarks. */
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
const struct session_stats *session__stats(const struct session *s);
void session__free(struct session *s);

#endif
