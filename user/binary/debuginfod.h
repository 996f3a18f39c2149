/* Debug files fetched by build-id from the servers DEBUGINFOD_URLS names, through elfutils'
 * client library (libdebuginfod, which keeps its own cache: DEBUGINFOD_CACHE_PATH, else
 * ~/.cache/debuginfod_client), loaded with dlopen on first use so that a run that fetches
 * nothing maps neither it nor libcurl. Fetching happens after sampling, never during it:
 * one file at a time, each within a per-file timeout and all within a total one. */
#ifndef HPROF_BINARY_DEBUGINFOD_H
#define HPROF_BINARY_DEBUGINFOD_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The per-file timeout when DEBUGINFOD_TIMEOUT does not give one (libdebuginfod's own
 * default), and the total one when the caller gives none. */
#define DEBUGINFOD_FILE_TIMEOUT_S 90
#define DEBUGINFOD_TOTAL_TIMEOUT_S 120
/* Progress is shown on a terminal once a file has taken this long. */
#define DEBUGINFOD_PROGRESS_AFTER_MS 1000

enum debuginfod_outcome {
	DEBUGINFOD_FROM_SERVER, /* downloaded now */
	DEBUGINFOD_FROM_CACHE,  /* in libdebuginfod's cache already */
	DEBUGINFOD_NOT_FOUND,   /* no server has it */
	DEBUGINFOD_FAILED,      /* timed out, unreachable, or not the debug file asked for */
	DEBUGINFOD_SKIPPED,     /* the total timeout had passed before its turn */
};

struct debuginfod_fetch {
	enum debuginfod_outcome outcome;
	char path[PATH_MAX];  /* the file, in the cache: FROM_SERVER and FROM_CACHE */
	char reason[160];     /* why not: NOT_FOUND, FAILED, SKIPPED */
	double seconds;
};

struct debuginfod;

/* Whether fetching is on: DEBUGINFOD_URLS names a server (and the caller did not turn it
 * off). */
bool debuginfod__wanted(void);
/* A client whose fetches all end by total_timeout_s from now (0: the default), showing
 * progress on progress_out when it is a terminal (NULL: never). Returns 0, or -errno with
 * a one-line reason in err (libdebuginfod cannot be loaded). */
int debuginfod__new(double total_timeout_s, FILE *progress_out, struct debuginfod **out,
		    char *err, size_t errlen);
/* Fetches the debug file of build-id id for the binary named name (for progress and
 * reasons), and checks it is an ELF file of that build-id. Fills *res; returns 0 when a
 * file was found (res->path), else -errno. */
int debuginfod__fetch(struct debuginfod *d, const uint8_t *id, size_t id_len, const char *name,
		      struct debuginfod_fetch *res);
/* Once *flag is set (by another thread), a fetch under way ends within a second or so, and
 * fails "hprof stopped first". */
void debuginfod__cancel_on(struct debuginfod *d, const atomic_bool *flag);
void debuginfod__free(struct debuginfod *d);

#endif
