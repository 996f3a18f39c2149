/* A set of thread ids (never 0), for a check on every thread that exits: open addressing,
 * no allocation per entry. */
#ifndef HPROF_UTIL_TID_SET_H
#define HPROF_UTIL_TID_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Entries at most; tid_set__add fails past it. */
#define TID_SET_MAX 65536

struct tid_set;

struct tid_set *tid_set__new(void);
/* Returns 0, or -ENOSPC when full, -ENOMEM, -EINVAL for tid 0. */
int tid_set__add(struct tid_set *s, uint32_t tid);
bool tid_set__contains(const struct tid_set *s, uint32_t tid);
void tid_set__remove(struct tid_set *s, uint32_t tid);
size_t tid_set__count(const struct tid_set *s);
/* Removes every tid keep says false of. */
void tid_set__keep_if(struct tid_set *s, bool (*keep)(uint32_t tid, void *ctx), void *ctx);
/* Accepts NULL. */
void tid_set__free(struct tid_set *s);

#endif
