/* Stack copies sent as deltas (common/sample.h, struct hprof_stack_delta): the kernel sends
 * only the chunks of a thread's stack that changed since its previous copy the ring buffer
 * accepted; this module keeps each thread's last copy whole and rebuilds every record into
 * the one the kernel would have sent without deltas, before anything else reads it, so
 * that the session, the walk and --raw captures see whole stacks. A delta against a copy
 * it does not hold (a record lost, an image evicted) loses its stack, under a named
 * reason, and asks the kernel to send the thread's next copy whole. */
#ifndef HPROF_RECORD_STACK_DELTA_H
#define HPROF_RECORD_STACK_DELTA_H

#include <stddef.h>
#include <stdint.h>

#include "output/sample_stats.h"
#include "sample.h"

/* Images kept at most: one per thread the kernel keeps hashes for. */
#define STACK_DELTA_MAX_IMAGES HPROF_DELTA_SLOTS
/* Bytes of images kept at most; the least recently used go first. */
#define STACK_DELTA_MAX_BYTES (64u << 20)

/* Asks the kernel to send the thread's next copy whole. */
typedef void (*stack_delta_resend_fn)(void *ctx, uint32_t tid);

struct stack_delta;

/* Keeps at most max_images images and max_bytes of them. Returns 0 or -ENOMEM. */
int stack_delta__new(size_t max_images, size_t max_bytes, struct stack_delta **out);
void stack_delta__set_resend_hook(struct stack_delta *d, stack_delta_resend_fn fn, void *ctx);
/* A check of the loss path (HPROF_DEBUG=delta-drop:N): every nth image kept is dropped at
 * once, unknown to the kernel, as if its record had been lost. 0: never. */
void stack_delta__set_drop_every(struct stack_delta *d, uint64_t n);
/* The record to hand on for a ring buffer record of size bytes (not yet checked): *out is
 * rec itself when it is not a delta or does not add up (the session counts it malformed),
 * else a record of d's, valid until the next call, with the whole stack, or with none and
 * SAMPLE_DELTA_BASE_MISSING. Returns 0 or -ENOMEM. */
int stack_delta__rebuild(struct stack_delta *d, const void *rec, size_t size, const void **out,
			 size_t *out_size);
/* The thread is gone: its image goes (a later thread with its tid starts whole). */
void stack_delta__forget(struct stack_delta *d, uint32_t tid);
size_t stack_delta__nr_images(const struct stack_delta *d);
const struct stack_delta_stats *stack_delta__stats(const struct stack_delta *d);
void stack_delta__free(struct stack_delta *d);

#endif
