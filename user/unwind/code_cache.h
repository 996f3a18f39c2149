/* What was learned of code without CFI, by binary (module id) and address in it: the
 * rules its analysis found (or why none), whether a return address follows a call, and
 * where rsp is where code jumps to code run in its frame (x86_code__jump_depths, from a
 * function's start, and x86_code__jump_offsets, from a pc).
 * Code is analysed once, as rows are compiled once. Bounded: a full cache starts again. */
#ifndef HPROF_CODE_CACHE_H
#define HPROF_CODE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "unwind/x86_code.h"

#define CODE_CACHE_SLOTS (1u << 14)
/* Jumps kept per address (x86_code__jump_depths, _offsets): a trampoline has one or two. */
#define CODE_JUMPS 3

struct code_cache;

struct code_cache_stats {
	uint64_t analyses;               /* code regions analysed */
	uint64_t failed[CODE_FAIL_COUNT]; /* ... that found no rules, by why */
	uint64_t unreadable;             /* analyses without the code's bytes */
	uint64_t widened;                /* analyses that read the code again, further on */
	uint64_t calls_checked;          /* return addresses whose call was decoded */
	uint64_t jumps_traced;           /* code traced for where rsp is at its jumps */
	uint64_t resets;                 /* times the cache was full and started again */
};

struct code_cache *code_cache__new(void);
void code_cache__free(struct code_cache *cc);

/* The analysis of (module, addr): true with *fail (and *rules for CODE_OK) when known. */
bool code_cache__rules(const struct code_cache *cc, uint32_t module, uint64_t addr,
		       enum code_fail *fail, struct code_rules *rules);
void code_cache__put_rules(struct code_cache *cc, uint32_t module, uint64_t addr,
			   enum code_fail fail, const struct code_rules *rules);
/* Whether the return address (module, addr) follows a call: true with *call and *target
 * (relative to addr, for a direct call) when known. */
bool code_cache__call(const struct code_cache *cc, uint32_t module, uint64_t addr,
		      enum code_call *call, int64_t *target_delta);
void code_cache__put_call(struct code_cache *cc, uint32_t module, uint64_t addr,
			  enum code_call call, int64_t target_delta);

/* Where rsp is at the jumps of the code at (module, addr), traced from a function's start
 * (from_start: x86_code__jump_depths) or from a pc (x86_code__jump_offsets): true with
 * values[0 .. *nr) and the jumps' addresses less addr in at[] (at most CODE_JUMPS) when
 * known. */
bool code_cache__jumps(const struct code_cache *cc, uint32_t module, uint64_t addr,
		       bool from_start, int32_t *values, int32_t *at, uint32_t *nr);
void code_cache__put_jumps(struct code_cache *cc, uint32_t module, uint64_t addr,
			   bool from_start, const int32_t *values, const int32_t *at, uint32_t nr);

struct code_cache_stats *code_cache__stats(struct code_cache *cc);
/* Bytes held (HPROF_DEBUG=memory): none until code without CFI was met. */
uint64_t code_cache__bytes(const struct code_cache *cc);

#endif
