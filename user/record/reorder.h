/* Puts samples and mapping events back in time order. Each CPU delivers its own records
 * in order, but samples (the BPF ring buffer) and mapping events (one perf buffer per CPU)
 * are read from separate buffers at separate moments: a sample must not be resolved before
 * an mmap that came before it, nor after an exec that came after it. Records are held
 * until everything older has certainly been read, then handed on oldest first. */
#ifndef HPROF_REORDER_H
#define HPROF_REORDER_H

#include <stddef.h>
#include <stdint.h>

/* Of records with the same time, a mapping change goes first. */
enum reorder_kind {
	REORDER_EVENT = 0,
	REORDER_SAMPLE = 1,
};

struct reorder;

/* Returns 0 or -errno (which stops the flush). */
typedef int (*reorder_fn)(void *ctx, enum reorder_kind kind, const void *data, size_t len);

struct reorder *reorder__new(void);
/* Keeps a copy of data. Returns 0 or -ENOMEM. */
int reorder__push(struct reorder *q, uint64_t time_ns, enum reorder_kind kind, const void *data,
		  size_t len);
/* Hands on, oldest first, every record older than before_ns (UINT64_MAX: all). */
int reorder__flush(struct reorder *q, uint64_t before_ns, reorder_fn fn, void *ctx);
size_t reorder__pending(const struct reorder *q);
void reorder__free(struct reorder *q);

#endif
