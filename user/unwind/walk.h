/* The DWARF walk replayed in userspace over a sample's copied stack: from the sampled
 * registers, find each pc's unwind row, compute the CFA, read the return address and the
 * caller's rbp (and where its rbx is) from the copy, and repeat. Never reads anything but
 * the copy. */
#ifndef HPROF_UNWIND_H
#define HPROF_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cfi/unwind_table.h"

/* Deepest walk; deeper stacks end truncated (UNWIND_END_DEPTH). */
#define UNWIND_MAX_FRAMES 2048

struct unwind_regs {
	uint64_t ip, sp, bp;
	bool bp_valid; /* false once rbp's value is lost (an undefined or unsupported rule) */
	/* rbx: only a CFA = rbx + N rule needs it (ld.so's lazy-binding trampoline). rdi: only
	 * the first frame's, where a return address kept in rdi is (glibc's __vfork). Both
	 * false when not known; a walk's result has neither. */
	bool bx_valid, di_valid;
	uint64_t bx, di;
	/* r10 and r12-r15: only the first frame's, where a realigned frame's prologue or
	 * epilogue keeps its CFA in one (indexed by DWARF number - UNWIND_DWARF_R10). */
	bool drap_valid;
	uint64_t drap[6];
	/* r8: only the first frame's, where sljit's fast calls keep a return address */
	bool r8_valid;
	uint64_t r8;
};

/* User memory from base to base + len, copied at sample time, and more memory copied
 * with it, the walk may go on to (the stack a signal handler's interrupted, when the
 * handler ran on an alternate stack), or NULL. */
struct stack_copy {
	const uint8_t *bytes;
	uint64_t base;
	uint64_t len;
	/* Pages that could not be copied: bit i is the i-th page from base's, whose bytes in
	 * the copy are zeros, not memory. */
	uint64_t holes;
	const struct stack_copy *more;
};

#define STACK_COPY_PAGE 4096

/* Why a user stack ends: the one enum of truncation reasons. The walk gives the first ones;
 * the hybrid (hybrid.h) adds the last three, for a chain it had no copy to walk. Everything
 * but COMPLETE leaves the stack truncated, under a root frame "[truncated: NAME]" with
 * unwind_end__name's NAME. */
enum unwind_end {
	UNWIND_END_COMPLETE = 0,  /* reached a frame whose return address is undefined, or a zero
				   * one in entry code, a thread's start routine or at a runtime's
				   * stack end */
	UNWIND_END_COPY_SHORT,    /* needed a read outside the copied stack */
	UNWIND_END_NO_CFI,        /* no unwind row covers a pc */
	UNWIND_END_UNSUPPORTED,   /* the row's rule is one hprof cannot evaluate */
	UNWIND_END_UNMAPPED,      /* a pc lies outside any known mapping */
	UNWIND_END_BAD_FRAME,     /* the CFA did not move up the stack */
	UNWIND_END_DEPTH,         /* UNWIND_MAX_FRAMES reached */
	UNWIND_END_COPY_HOLE,     /* needed a read from a page the kernel could not copy */
	UNWIND_END_ZERO_RA,       /* a zero return address in a frame that cannot be outermost */
	UNWIND_END_FP_ONLY,       /* FP chain broken and no stack copy (--no-dwarf) */
	UNWIND_END_NO_COPY,       /* FP chain broken, the stack copy failed */
	/* FP chain broken, and the copy was a delta against one userspace did not hold */
	UNWIND_END_DELTA_BASE_MISSING,
	/* a scan met a word in JIT code that could not be read (its process exited before
	 * the copies held it): a caller there cannot be told from a stale word, nor skipped */
	UNWIND_END_CODE_UNREADABLE,
	UNWIND_END_COUNT,
};

const char *unwind_end__name(enum unwind_end end);

/* How a frame was found (Breakpad's "found by"): the sample's registers, the rows of the
 * callee's CFI, an analysis of the callee's code, the callee's frame record, a scan of the
 * stack, or the kernel's frame-pointer chain. Ordered from the most to the least sure of
 * the walk's own methods. */
enum unwind_found {
	UNWIND_FOUND_CONTEXT = 0,
	UNWIND_FOUND_CFI,
	UNWIND_FOUND_ANALYSIS,
	UNWIND_FOUND_FRAME_POINTER,
	UNWIND_FOUND_SCAN,
	UNWIND_FOUND_FP_CHAIN,
	UNWIND_FOUND_LEARNED, /* a return address the thread's earlier walks found at that sp */
	/* the first frame of a Go goroutine under the runtime work its thread's g0 stack ran
	 * for it: where the stack switch left it, by its g.sched (unwind/go_switch.h) */
	UNWIND_FOUND_GO_SCHED,
	UNWIND_FOUND_COUNT,
};

const char *unwind_found__name(enum unwind_found found);

/* The executable mapping holding a pc, as the walk needs it: its range, the load bias
 * (table address = pc - bias) and its CFI table. */
struct unwind_map {
	uint64_t start, end; /* [start, end) in the process */
	uint64_t bias;
	const struct unwind_table *table;
};

/* Finds the mapping holding pc. Returns 0, -ENOENT for a pc in no mapping, or -ENODATA
 * for a mapping without CFI. */
typedef int (*unwind_find_map_fn)(void *ctx, uint64_t pc, struct unwind_map *map);

/* pc is where a function starts by its binary's ELF file (DT_INIT, DT_FINI, the start of
 * .init or .fini): code that may have no CFI (crti.o's _init), but where, at its first
 * instruction, the psABI says the return address is at rsp and the CFA is rsp + 8. */
typedef bool (*unwind_is_function_entry_fn)(void *ctx, uint64_t pc);

/* The rules at pc (an instruction's address, or a return address) of code without CFI,
 * found by decoding it (unwind/x86_code.h). Returns CODE_OK (0) with *rules filled, or an
 * enum code_fail. The space caches the answer per binary and pc. */
struct code_rules;
typedef int (*unwind_analyze_fn)(void *ctx, uint64_t pc, struct code_rules *rules);

/* What precedes the return address ra in the process's code: an enum code_call, and for a
 * direct call its target. */
typedef int (*unwind_call_before_fn)(void *ctx, uint64_t ra, uint64_t *target);

/* Where the function holding pc starts, by a symbol or a JIT's map: 0, -ENOENT, or
 * -ENODATA for JIT code (anonymous memory) whose start no map gives: a runtime enters such
 * code through its own trampolines, so a direct call just before a return address into it
 * goes to one of those, not to the code itself. */
typedef int (*unwind_function_start_fn)(void *ctx, uint64_t pc, uint64_t *start);

/* pc is JIT code: in anonymous memory (or memory shared with no file behind it), not in
 * a binary. */
typedef bool (*unwind_is_jit_code_fn)(void *ctx, uint64_t pc);

/* pc (or the call before a return address, caller) is in its binary's ELF entry code. */
typedef bool (*unwind_is_entry_code_fn)(void *ctx, uint64_t pc, bool caller);

/* Where rsp is where code jumps to code that then runs in its frame (through a register or
 * memory): with from_start, the depths CFA - rsp of the function starting at addr
 * (x86_code__jump_depths: a trampoline such as GHC's StgRun); else rsp - (rsp at addr) on
 * the paths from addr, a pc (x86_code__jump_offsets). Fills values and the jumps'
 * addresses in at, at most max; returns how many. */
typedef uint32_t (*unwind_jumps_fn)(void *ctx, uint64_t addr, bool from_start, int32_t *values,
				    uint64_t *at, uint32_t max);

/* ra is a return address where a runtime's stacks end though no call precedes it: BEAM's
 * exit, where every Erlang process's stack ends. */
typedef bool (*unwind_is_stack_end_fn)(void *ctx, uint64_t ra);

/* What the walk asks about code without CFI, decoded from its instructions (x86_code.h;
 * process_code.c for a process). Each may be NULL. */
struct unwind_code {
	unwind_analyze_fn analyze;
	unwind_call_before_fn call_before;
	unwind_jumps_fn jumps;
};

/* What the walk asks about the functions and binaries a pc is in: symbols and JIT maps,
 * ELF facts (entry code, function entries), and where a runtime's stacks end
 * (process_space.c and process_code.c for a process). Each may be NULL. */
struct unwind_symbols {
	unwind_function_start_fn function_start;
	unwind_is_jit_code_fn is_jit_code;
	unwind_is_function_entry_fn is_function_entry;
	unwind_is_entry_code_fn is_entry_code;
	unwind_is_stack_end_fn is_stack_end;
};

/* The address space a walk runs in: how to find its mappings, and an id that names this
 * set of mappings (a new one whenever they change; never 0) so cached rules can be keyed
 * by the pc alone.
 *
 * Code without CFI: where a pc has no row, the walk goes on through it, if the space can
 * tell about its code, by the first of these that works: the rules code.analyze() finds in
 * its instructions; a frame-pointer step (a frame record above sp whose return address
 * follows a call, code.call_before()); and unless no_scan, a scan of the stack for a return
 * address that follows a call into the function (symbols.function_start()), through a
 * pointer, into a function that jumped to the frame's code from exactly that far above its
 * sp (code.jumps()), or anywhere when the function is JIT code (symbols.is_jit_code()), from
 * which the walk reaches the stack's start (symbols.is_entry_code()). */
struct unwind_space {
	unwind_find_map_fn find_map;
	void *ctx;
	uint64_t id;
	struct unwind_code code;
	struct unwind_symbols symbols;
	bool no_scan;
	/* HPROF_DEBUG=scan: no frame records either (and code.analyze NULL), so that every
	 * frame without CFI is found by a scan: for measuring scans against decoys */
	bool scan_only;
};

/* Decoded rules by (address space, pc), kept across walks: a profile's samples return
 * through the same call sites again and again, so most frames need neither the mapping
 * nor the table search. Tables must outlive the cache (a session frees both together). */
struct unwind_cache;

struct unwind_cache_stats {
	uint64_t misses; /* lookups that searched a mapping's table (the rest were hits) */
	/* Code without CFI: frames found by each way (frame-pointer steps, scans), candidates a
	 * scan rejected by their code (no call before them, or a direct call elsewhere), by a
	 * trial walk that did not reach the stack's start, and as stale (the frame below
	 * called another function since: caller_called_elsewhere). */
	uint64_t nocfi_frames[UNWIND_FOUND_COUNT];
	uint64_t scan_rejected_code, scan_rejected_walk, scan_rejected_stale;
	/* scans that passed over a candidate whose walk reached the start for a later one whose
	 * walk agreed with every call on it (trial_agrees) */
	uint64_t scan_passed_over;
	/* scan candidates taken though their call went to another function: one that jumps
	 * to code run in its frame, at this frame's depth (jumps) */
	uint64_t scan_through_jumps;
	/* steps by an analysis's rules whose return address followed no call: rejected, and
	 * taken because a walk from the return address reached the stack's start */
	uint64_t analysis_rejected, analysis_ra_by_walk;
	/* steps by an analysis's rules taken with the return address where the code moved it
	 * (sljit's fast calls): into the caller's frame (a word at or above the CFA), into a
	 * register the sample holds, into one it lacks (the word at the CFA taken instead) */
	uint64_t analysis_ra_moved, analysis_ra_register, analysis_ra_top_word;
};

struct unwind_cache *unwind_cache__new(void);
void unwind_cache__free(struct unwind_cache *cache);
void unwind_cache__stats(const struct unwind_cache *cache, struct unwind_cache_stats *stats);

struct unwind_frame {
	uint64_t pc;
	bool exact; /* the pc itself (first frame, or interrupted by a signal), not a return address */
	uint8_t found; /* enum unwind_found */
	/* the frame's sp less the walk's first sp; UNWIND_DEPTH_UNKNOWN where that is not a
	 * 32-bit distance up the stack, or the frame came from elsewhere */
	uint32_t depth;
};

#define UNWIND_DEPTH_UNKNOWN UINT32_MAX

struct unwind_result {
	enum unwind_end end;
	uint32_t nr_frames;
	struct unwind_regs last; /* registers of the outermost frame reached */
	/* complete at a stack some code started by hand (makecontext): not the thread's own
	 * entry, so nothing to learn about where the thread's stack ends */
	bool started_stack;
	/* bit (1 << enum unwind_found) for each way a frame of the walk was found */
	uint32_t found;
};

/* The rules of the row covering pc in space (pc itself: a caller's is its return address
 * less 1); false when no row does. Uncached: for the few lookups outside a walk. */
bool unwind__rules_at(const struct unwind_space *space, uint64_t pc, struct unwind_rules *rules);

/* The CFA kind of the row covering pc (as unwind__rules_at's), UNWIND_CFA_END where no row
 * does, read through the walk's cache (slots keyed by space->id and pc, as the walk's):
 * for a check of every frame of a sample outside the walk. Not counted as a miss. */
enum unwind_cfa_kind unwind__cfa_kind_at(const struct unwind_space *space,
					 struct unwind_cache *cache, uint64_t pc);

/* Walks from regs over copy, writing up to max frames (innermost first). space->id must
 * not be 0 and cache not NULL. */
void unwind__walk(const struct unwind_regs *regs, const struct stack_copy *copy,
		  const struct unwind_space *space, struct unwind_cache *cache,
		  struct unwind_frame *frames, uint32_t max, struct unwind_result *result);

/* unwind__walk traced, one line per frame on out: pc and registers, then each frame step
 * the walk tried, in order, with the rules it stepped by, and what the last one gave (the
 * CFA and return address, or why the walk stops there); then why it stopped
 * (HPROF_DEBUG=unwind). The walk itself, through a hook on its loop: it cannot print a
 * step the walk does not take. Slow (no inline fast path); never counts (the cache's
 * stats are put back). */
void unwind__trace(const struct unwind_regs *regs, const struct stack_copy *copy,
		   const struct unwind_space *space, struct unwind_cache *cache, FILE *out);

/* What a read from a copy found. */
enum stack_read {
	STACK_READ_OK = 0,
	STACK_READ_OUTSIDE, /* some byte lies outside every copy */
	STACK_READ_HOLE,    /* in a copy, but on a page it could not read */
};

/* Reads 8 bytes at addr from the copy or the memory copied with it. */
enum stack_read stack_copy__read(const struct stack_copy *copy, uint64_t addr, uint64_t *value);

static inline bool stack_copy__read_u64(const struct stack_copy *copy, uint64_t addr,
					uint64_t *value)
{
	return stack_copy__read(copy, addr, value) == STACK_READ_OK;
}

/* Bytes from base that hold memory, before the first hole (all len without one). */
uint64_t stack_copy__len_before_holes(const struct stack_copy *copy);

#endif
