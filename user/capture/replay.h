/* Replaying a raw capture (hprof --raw) through a session, with the same code a live
 * recording runs: `hprof report` renders the result, `hprof diff` compares it. */
#ifndef HPROF_CAPTURE_REPLAY_H
#define HPROF_CAPTURE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/format.h"
#include "session.h"

/* Called with each sample before the session handles it (a slice writer's look at it). */
typedef int (*replay_sample_fn)(void *ctx, struct session *s, const struct hprof_sample *sample,
				size_t size);

struct replay_opts {
	bool no_dwarf;        /* frame pointers only */
	uint32_t stack_limit; /* replay as if copies had been at most this long; 0 = as recorded */
	bool frame_addresses; /* keep return addresses in one function apart (pprof output) */
	bool no_inline;       /* no inline frames from DWARF */
	bool no_lines;        /* no source lines from DWARF */
	/* a slice file (binary/slice.h): binaries are read from it, never from their files */
	const char *slices;
	bool debuginfod;      /* debug files may be fetched once replayed (session__set_debuginfod) */
	replay_sample_fn on_sample; /* NULL: none */
	void *on_sample_ctx;
};

struct replay;

/* Reads the capture at path and feeds every record to a new session in file order. On
 * error returns -errno with a one-line message naming the file in err. */
int replay__run(const char *path, const struct replay_opts *o, struct replay **out, char *err,
		size_t errlen);
struct session *replay__session(struct replay *r);
const struct capture_info *replay__info(const struct replay *r);
/* Calls fn for every binary whose build-id differs from the one recorded: a binary rebuilt
 * since the capture gives wrong names and rows. */
void replay__for_each_changed(struct replay *r, void (*fn)(void *ctx, const char *path),
			      void *ctx);
void replay__free(struct replay *r);

#endif
