/* The debug files debuginfod may serve for the binaries whose frames no symbol named
 * (module->wants_debug_file), fetched once per build-id after sampling, and those binaries'
 * symbols read again with them: the frames are then named anew (profile__settle_names).
 * What was fetched, from where, and what was not and why, for the summary. */
#ifndef HPROF_BINARY_FETCH_DEBUG_H
#define HPROF_BINARY_FETCH_DEBUG_H

#include <stdio.h>

#include "binary/debuginfod.h"
#include "binary/elf_facts.h"
#include "binary/modules.h"

struct fetch_debug_result {
	char name[64]; /* the binary's file name */
	char build_id[2 * BUILD_ID_MAX + 1];
	struct debuginfod_fetch fetch;
};

struct fetch_debug_report {
	bool tried;       /* some binary wanted a debug file, and fetching was on */
	char error[192];  /* why nothing could be fetched (libdebuginfod missing), or "" */
	struct fetch_debug_result *results;
	size_t nr_results;
	double seconds;
};

/* Fetches what the binaries of reg want, within total_timeout_s (0: the default), showing
 * progress on progress_out when it is a terminal (NULL: never); then turns provisional
 * naming off in reg. Fills *rep (free it with fetch_debug__free_report). Returns 0 or
 * -ENOMEM; a file not found is in *rep, not an error. */
int fetch_debug__run(struct module_registry *reg, double total_timeout_s, FILE *progress_out,
		     struct fetch_debug_report *rep);
/* Marks every binary of build-id id as done with debuginfod (its frames are named for good
 * from now on), and when reload, reads again the symbols of those that wanted its file,
 * now registered. */
void fetch_debug__settle_build_id(struct module_registry *reg, const uint8_t *id, size_t len,
				  bool reload);
/* Appends a result for build-id id of the binary named name (made safe for a terminal),
 * with fetch's outcome (NULL: none yet). Returns 0 or -ENOMEM. */
int fetch_debug__add_result(struct fetch_debug_report *rep, const char *name,
			    const uint8_t *id, size_t len, const struct debuginfod_fetch *fetch);
/* How many files were fetched, from the server or the cache. */
size_t fetch_debug__fetched(const struct fetch_debug_report *rep);
/* How many results had outcome o. */
size_t fetch_debug__count(const struct fetch_debug_report *rep, enum debuginfod_outcome o);
const char *debuginfod_outcome__name(enum debuginfod_outcome o);
void fetch_debug__free_report(struct fetch_debug_report *rep);

#endif
