/* hprof serve's profile windows: a profile of the next N seconds for each client that asks
 * (GET /debug/pprof/profile), and back-to-back windows written to files (--every). Every
 * window counts the samples of its time in a profile of its own, with labels, freed once
 * its bytes are served or written, so memory does not grow with the time served.
 *
 * Two sides: the recorder's thread counts samples (serve_windows__add), starts and ends
 * windows (serve_windows__tick) and is the only one to touch profiles; the HTTP threads
 * ask for windows and wait for their bytes (serve_windows__request). A mutex guards what
 * they share. */
#ifndef HPROF_SERVE_WINDOWS_H
#define HPROF_SERVE_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

#include "binary/ksyms.h"
#include "binary/modules.h"
#include "output/outputs.h"
#include "output/profile.h"

/* Windows served at once, in all; one per client address at a time. */
#define SERVE_WINDOWS_MAX 4

struct serve_windows;

struct serve_windows_opts {
	struct module_registry *modules;
	const struct ksyms *ksyms;
	unsigned frequency;
	/* --every: back-to-back windows of this length written to the files out names (its
	 * paths are patterns: strftime of the window's start); 0: none */
	uint64_t every_ns;
	/* each window's profile expands frames into their inlined calls, gives them lines
	 * (profile__expand_inline) */
	bool inlines, lines;
	struct output_opts out; /* out.json_path: written through write_json */
	unsigned keep; /* --keep: files kept per output; 0: all */
	/* --every --json: snapshot() takes the counters at a window's start (malloc'd);
	 * write_json() writes the window's JSON summary to path, its figures those counted
	 * since the snapshot, and frees it. Returns 0 or -errno after printing a line. */
	void *(*snapshot)(void *ctx);
	/* An HTTP thread asked for a window (NULL: no one is told): the recorder's thread can
	 * start it now rather than at its next read. */
	void (*requested)(void *ctx);
	int (*write_json)(void *ctx, const char *path, struct profile *profile,
			  uint64_t duration_ns, void *snapshot);
	void *ctx;
};

int serve_windows__new(const struct serve_windows_opts *o, struct serve_windows **out);

/* HTTP threads: a profile of the next seconds for client, as gzip pprof. Waits for the
 * window to end. Returns 0 with *body (malloc'd) and *len; -EBUSY when client has a window
 * open or SERVE_WINDOWS_MAX are; -ESHUTDOWN once stopping; -ENOMEM. */
int serve_windows__request(struct serve_windows *w, unsigned seconds, const char *client,
			   uint8_t **body, size_t *len);

/* The recorder's thread: counts a sample in every open window (a session sample sink). */
int serve_windows__add(void *windows, const char *comm, const char *root,
		       const struct profile_labels *labels, const struct frame *frames,
		       uint32_t n);
/* The recorder's thread, after every read (every half second at least, and when a window
 * is due to end: serve_windows__ms_to_next_end): opens the windows asked for, ends
 * those whose time is up (their bytes to the waiting client, or their files written).
 * now_ns: CLOCK_MONOTONIC. Returns 0, or -errno after printing a line when an --every file
 * could not be written (serving goes on). */
int serve_windows__tick(struct serve_windows *w, uint64_t now_ns);
/* The recorder's thread: milliseconds from now_ns to the end of the first window to end
 * (rounded up), UINT_MAX when none is open. */
unsigned serve_windows__ms_to_next_end(const struct serve_windows *w, uint64_t now_ns);
/* Ends every window now with what it counted (SIGTERM): clients get their bytes, the
 * --every file in progress is written; later requests get -ESHUTDOWN. */
int serve_windows__stop(struct serve_windows *w, uint64_t now_ns);

struct serve_windows_stats {
	uint64_t served;    /* windows whose bytes reached their client */
	uint64_t refused;   /* requests refused: busy */
	uint64_t written;   /* --every windows written */
	uint64_t open;      /* windows open now */
};
void serve_windows__stats(struct serve_windows *w, struct serve_windows_stats *stats);

/* Frees the windows; no HTTP thread may be waiting (stop, then stop the HTTP side). */
void serve_windows__free(struct serve_windows *w);

#endif
