/* Frame names kept from one profile to the next. hprof serve starts a profile for every
 * window, and each names its frames afresh: a symbol lookup, a read of the binary's string
 * table (whose pages were handed back since) and a demangling, for the same few thousand
 * frames every ten seconds. The cache keeps the names the last windows made. */
#ifndef HPROF_BINARY_NAME_CACHE_H
#define HPROF_BINARY_NAME_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "binary/frame.h"

/* Entries at most: past it, names are made but not kept. */
#define NAME_CACHE_MAX 32768

struct name_cache;

struct name_cache *name_cache__new(void);
/* The name kept for f, NULL when none; valid until the next name_cache__sweep. */
const char *name_cache__get(struct name_cache *c, const struct frame *f);
/* Keeps a copy of name for f. Only for names that cannot change while f's module id lives
 * (a binary's or the kernel's; not a JIT's). Out of memory or room, keeps nothing. */
void name_cache__put(struct name_cache *c, const struct frame *f, const char *name);
/* Drops the names nobody asked for since the last sweep: what it holds follows the code
 * profiled now. */
void name_cache__sweep(struct name_cache *c);
size_t name_cache__count(const struct name_cache *c);
size_t name_cache__bytes(const struct name_cache *c);
/* Accepts NULL. */
void name_cache__free(struct name_cache *c);

#endif
