/* Two unwinders over the samples of a raw capture (hprof --raw), for the libunwind
 * cross-check (tests/tools/xcheck.c) and the unwinding benchmark (bench/bench_unwind.c):
 *
 * - hprof's DWARF walk, through session__walk_sample and the session's own tables;
 * - libunwind driven remotely, the way Linux perf does (util/unwind-libunwind-local.c):
 *   one address space per process with our own accessors; registers and stack bytes come
 *   from the sample's copy, unwind info from the binary's .eh_frame_hdr read from the file
 *   on disk, and any other memory (CIEs, FDEs, code) from the file too.
 *
 * Both see exactly the same registers (ip, sp, bp) and the same copied stack bytes. */
#ifndef HPROF_TOOLS_WALKERS_H
#define HPROF_TOOLS_WALKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/format.h"
#include "sample.h"
#include "session.h"

/* One record of a capture, in file order. */
struct capture_rec {
	uint32_t type;
	uint32_t len;
	const uint8_t *payload;
};

struct capture_file {
	struct capture_reader *reader; /* owns the payloads */
	struct capture_rec *recs;
	size_t nr_recs;
	struct capture_info info;
};

/* Reads a whole capture. Returns 0 or -errno with a message in err. */
int capture_file__load(const char *path, struct capture_file **out, char *err, size_t errlen);
void capture_file__free(struct capture_file *f);

/* A record's pid and maps text, for CAPTURE_MAPS records (false for anything else). */
bool capture_rec__maps(const struct capture_rec *r, uint32_t *pid, const char **text,
		       size_t *len);
/* The sample, for CAPTURE_SAMPLE records long enough to hold the header (else NULL). */
/* A CAPTURE_MAP_EVENT record's event and path; false for any other record. */
bool capture_rec__map_event(const struct capture_rec *r, struct map_event *e, const char **path);
const struct hprof_sample *capture_rec__sample(const struct capture_rec *r);

/* Why a sample cannot be unwound by either side. */
enum walk_skip {
	WALK_SKIP_NONE = 0,
	WALK_SKIP_MALFORMED,   /* record shorter than its header says */
	WALK_SKIP_KERNEL_ONLY, /* no user stack (kernel thread) */
	WALK_SKIP_NO_COPY,     /* no stack bytes copied (--no-dwarf, or the copy failed) */
	WALK_SKIP_COUNT,
};

enum walk_skip walk__skip_reason(const struct hprof_sample *s, size_t size);
const char *walk_skip__name(enum walk_skip why);

/* The sample's copied stack bytes. */
const uint8_t *walk__stack_bytes(const struct hprof_sample *s);

struct lu_unwinder;

/* cache: libunwind's global per-address-space cache (perf's setting) instead of none. */
int lu_unwinder__new(bool cache, struct lu_unwinder **out);
/* The process's mappings (the text of /proc/PID/maps). */
int lu_unwinder__load_maps(struct lu_unwinder *u, uint32_t pid, const char *text, size_t len);
/* One of the capture's mapping events, in time order. */
int lu_unwinder__map_event(struct lu_unwinder *u, const struct map_event *e, const char *path);
/* Unwinds one sample, writing up to max pcs, innermost first (raw values: the sampled ip,
 * then return addresses, or exact pcs after a signal frame). A zero pc ends the walk and
 * is not written. Returns libunwind's last status: 0 when unw_step said the stack ended
 * (or max was reached), a negative UNW_E* code when it failed; -UNW_EUNSPEC also when
 * the process has no maps. */
int lu_unwinder__walk(struct lu_unwinder *u, const struct hprof_sample *s, uint64_t *pcs,
		      uint32_t max, uint32_t *nr);
/* "module!symbol+0xoff" (or "module+0xvaddr", or "0xaddr") for pc in pid, into buf. */
const char *lu_unwinder__describe(struct lu_unwinder *u, uint32_t pid, uint64_t pc, char *buf,
				  size_t len);
/* Drops libunwind's caches (for cold-table measurements). */
void lu_unwinder__flush(struct lu_unwinder *u);
void lu_unwinder__free(struct lu_unwinder *u);

#endif
