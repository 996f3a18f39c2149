/* Names of JIT code from perf's map files, /tmp/perf-PID.map: one "START SIZE name" line
 * per function (hex, with or without 0x), written by node --perf-basic-prof, Java agents
 * and LuaJIT. One table per process; the file may grow while the process runs. */
#ifndef HPROF_PERFMAP_H
#define HPROF_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Beyond these the file is cut short: a map file is input from the profiled process. */
#define PERF_MAP_MAX_BYTES (64u << 20)
#define PERF_MAP_MAX_LINE 4096
#define PERF_MAP_MAX_ENTRIES (4u << 20)
/* A miss looks at the file again at most this often (a JIT appends as it compiles). */
#define PERF_MAP_RECHECK_MS 50

struct perf_map;

struct perf_map_stats {
	uint64_t read;      /* map files read */
	uint64_t refused;   /* map files not used: not a regular file, or a stranger's */
	uint64_t cut_short; /* map files read only up to a limit */
	uint64_t entries;   /* well-formed lines */
	uint64_t bad_lines; /* lines skipped: malformed, empty name, zero size, too long */
};

/* The (not yet read) map of process pid. Returns 0 or -ENOMEM. */
int perf_map__new(uint32_t pid, struct perf_map **out);
/* A map no file backs, that only perf_map__add_text fills: a replay's, of the text its
 * recording read (perf_map__set_read_hook). Returns 0 or -ENOMEM. */
int perf_map__new_fixed(struct perf_map **out);
/* Called with the text of every read of a map file, of process pid, as it is added: what a
 * raw capture keeps for replays. NULL: none. One for the program. */
typedef void (*perf_map_read_hook_fn)(void *ctx, uint32_t pid, const char *text, size_t len);
void perf_map__set_read_hook(perf_map_read_hook_fn fn, void *ctx);
/* Reads /tmp/perf-PID.map on first use, and again when its size or identity changed (only
 * the new lines of a grown file). The file must be a regular file with no other name (a
 * hard link), owned by root or by the process's effective uid. Returns 0, -ENOENT (no file), -EPERM (refused: a stranger's
 * file, a symlink or not a regular file), or another -errno. */
int perf_map__load(struct perf_map *pm);
/* The name of the latest entry holding addr, or NULL. A miss rereads a changed file
 * first, at most every PERF_MAP_RECHECK_MS. */
const char *perf_map__lookup(struct perf_map *pm, uint64_t addr);
/* The function holding addr: [*start, *end) of its entry, when no later entry covers any
 * of it. Returns 0, or -ENOENT (no entry, or one cut by a later one: its ends are not
 * known); rereads a changed file as perf_map__lookup does. */
int perf_map__bounds(struct perf_map *pm, uint64_t addr, uint64_t *start, uint64_t *end);
/* Adds text's complete lines (the file's next bytes) to the table, later entries winning
 * where ranges overlap; *consumed is how far that got (past the last complete line).
 * Returns 0 or -ENOMEM. */
int perf_map__add_text(struct perf_map *pm, const char *text, size_t len, size_t *consumed);
/* Adds pm's counts to *acc. */
void perf_map__stats(const struct perf_map *pm, struct perf_map_stats *acc);
void perf_map__free(struct perf_map *pm);

#endif
