/* hprof serve's debug files: debuginfod asked by a thread of its own while sampling goes
 * on, never on the recorder's thread, which a fetch of up to DEBUGINFOD_FILE_TIMEOUT_S
 * would stop. The recorder's thread asks, after a window, for the build-ids of the
 * binaries that want a debug file (module->wants_debug_file, binary/naming.c) and takes in,
 * at each tick, the files fetched since: registered, and their binaries' symbols and DWARF
 * read again, so that the next windows name their frames, with inline frames and lines.
 * A binary is asked for once; a supplementary file (dwz) that a fetched file names and no
 * local place has is asked for in turn. The thread touches no module, registry or debug
 * file list: only its requests, under its lock. */
#ifndef HPROF_BINARY_FETCH_BACKGROUND_H
#define HPROF_BINARY_FETCH_BACKGROUND_H

#include "binary/fetch_debug.h"
#include "binary/modules.h"

struct fetch_background;

/* Starts no thread until something is asked for. Returns 0 or -ENOMEM. */
int fetch_background__new(struct fetch_background **out);
/* The recorder's thread: asks for the files of reg's binaries that want one and were not
 * asked for yet. Returns 0, or -errno when the thread cannot start (nothing is fetched
 * then; the binaries keep their names). */
int fetch_background__ask(struct fetch_background *b, struct module_registry *reg);
/* The recorder's thread: takes in what was fetched since the last call (see above), its
 * outcomes appended to rep. Returns how many files it registered, or -ENOMEM. */
int fetch_background__take(struct fetch_background *b, struct module_registry *reg,
			   struct fetch_debug_report *rep);
/* Ends a fetch under way (within a second or so: it fails "hprof stopped first") and the
 * thread; nothing is asked for after. fetch_background__take still takes in what it
 * fetched. Accepts NULL. */
void fetch_background__stop(struct fetch_background *b);
/* Stops it, and frees it. Accepts NULL. */
void fetch_background__free(struct fetch_background *b);

#endif
