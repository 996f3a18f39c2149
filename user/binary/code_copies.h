/* Copies of JIT code a process's memory gave, kept while the process lives: samples wait
 * in the ring buffer and the reorder queue (up to ~100 ms) before they are walked, so a
 * process's last samples are walked after it exited, when its memory can no longer be
 * read. Their code is then analysed from these copies. Ranges are disjoint and sorted;
 * a later read of the same bytes replaces them (JIT code is rewritten); the total is
 * bounded, and past the bound only bytes already held are replaced. */
#ifndef HPROF_CODE_COPIES_H
#define HPROF_CODE_COPIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The most bytes of copies per process. */
#define CODE_COPIES_MAX_BYTES (4u << 20)

struct code_copies;

/* An empty set, or NULL when out of memory. */
struct code_copies *code_copies__new(void);
/* The same without the bound: a binary's slice (binary/slice.h), whose file bounds it. */
struct code_copies *code_copies__new_unbounded(void);
/* Keeps [addr, addr + len) with these bytes. Past the bound (or out of memory) no copy
 * grows, but the bytes replace what copies hold of the range. */
void code_copies__add(struct code_copies *c, uint64_t addr, const uint8_t *bytes, size_t len);
/* Up to len bytes from addr, as far as the copy holding addr goes. Returns the bytes
 * read, or -ENOENT where no copy holds addr. */
ssize_t code_copies__read(struct code_copies *c, uint64_t addr, uint8_t *buf, size_t len);
/* The copies hold [addr, addr + len) as these bytes. Not counted as a read. */
bool code_copies__holds(const struct code_copies *c, uint64_t addr, const uint8_t *bytes,
			size_t len);
/* Calls fn with each copy, by ascending address. */
void code_copies__each(const struct code_copies *c,
		       void (*fn)(void *ctx, uint64_t addr, const uint8_t *bytes, size_t len),
		       void *ctx);
/* Copies held. */
uint64_t code_copies__count(const struct code_copies *c);
/* Bytes held, and reads answered. */
uint64_t code_copies__bytes(const struct code_copies *c);
uint64_t code_copies__reads(const struct code_copies *c);
void code_copies__free(struct code_copies *c);

#endif
