/* The walk's callbacks about a process's code (process_code.h). The analysis and the
 * jump traces read into static buffers: walks run on one thread. */
#include "unwind/process_code.h"

#include <errno.h>
#include <sys/types.h>

#include "binary/code.h"
#include "binary/modules.h"
#include "binary/symbols.h"
#include "proc/processes.h"
#include "proc/resolver.h"
#include "unwind/code_cache.h"
#include "unwind/process_view.h"
#include "unwind/x86_code.h"

/* The code at pc: its mapping and module, and the address the caches know it by (the ELF
 * virtual address in a file, the address itself in JIT code). */
struct code_place {
	struct mapping *m;
	struct module *mod;
	uint64_t key;
};

static bool code_place(struct process_view *c, uint64_t pc, struct code_place *at)
{
	at->m = process__find_mapping(c->proc, pc);
	at->mod = at->m ? resolver__module(c->resolver, c->proc, at->m) : NULL;
	if (!at->mod || at->m->bias_err)
		return false;
	at->key = pc - (uint64_t)at->m->bias;
	return true;
}

/* Reads [addr, addr + len) of the code in at, clipped to its mapping. */
static ssize_t read_code(struct process_view *c, const struct code_place *at, uint64_t addr,
			 uint8_t *buf, size_t len)
{
	uint32_t pid = c->resolver->replay ? 0 : c->proc->pid;

	if (addr < at->m->start) {
		len = addr + len > at->m->start ? addr + len - at->m->start : 0;
		addr = at->m->start;
	}
	return len ? code__read(at->mod, at->m, pid, addr, buf, len) : -ENOENT;
}

/* JIT code's function, by its jitdump's code load, else its perf map's entry. */
static int jit_function_bounds(struct module *mod, uint64_t pc, uint64_t *start, uint64_t *end)
{
	struct jitdump_code code;

	if (mod->jitdump && jitdump__find(mod->jitdump, pc, &code) == 0 && code.size != 0) {
		*start = code.start;
		*end = code.start + code.size;
		return 0;
	}
	return perf_map__bounds(mod->perf_map, pc, start, end);
}

/* The function holding pc by its binary's symbols (JIT code's by its jitdump or perf map): [*start,
 * *end), end 0 when the symbol has no size. */
static int function_bounds(struct process_view *c, uint64_t pc, uint64_t *start, uint64_t *end)
{
	struct code_place at;
	uint64_t vstart, size;

	if (code_place(c, pc, &at) && at.mod->anon_code)
		return jit_function_bounds(at.mod, pc, start, end) == 0 ? 0 : -ENODATA;
	if (!code_place(c, pc, &at) || !at.mod->syms ||
	    elf_symbols__function(at.mod->syms, at.key, &vstart, &size) != 0)
		return -ENOENT;
	*start = pc - (at.key - vstart);
	*end = size ? *start + size : 0;
	return 0;
}

bool process_code__is_jit_code(void *ctx, uint64_t pc)
{
	struct code_place at;

	return code_place(ctx, pc, &at) && at.mod->anon_code;
}

int process_code__function_start(void *ctx, uint64_t pc, uint64_t *start)
{
	uint64_t end;

	return function_bounds(ctx, pc, start, &end);
}

/* How much code an analysis reads: from the function's start, if it is this close,
 * else from a little before pc (loops branch back), to well after pc. Where a path ran
 * past that without meeting a return, the code is read again, as far as the analysis
 * goes (CODE_MAX_WINDOW): oneDNN's JIT GEMM kernels are 60-110 KiB, one return at the
 * end. */
#define ANALYSIS_BEFORE (64u << 10)
#define ANALYSIS_BACK 4096u
#define ANALYSIS_AFTER (16u << 10)

/* Analyses [from, from + len) of the code in at for pc's rules; false when unreadable. */
static bool analyze_read(struct process_view *c, const struct code_place *at, uint64_t pc,
			 uint64_t start, uint64_t end, uint64_t from, uint8_t *buf, size_t len,
			 enum code_fail *fail, struct code_rules *rules, bool *cut)
{
	struct code_window window;
	ssize_t n = read_code(c, at, from, buf, len);

	if (n <= 0)
		return false;
	window = (struct code_window){ .bytes = buf, .addr = from < at->m->start ? at->m->start : from,
				       .len = (size_t)n };
	/* the read stopped at the window's end, not the code's: more can be read */
	*cut = window.addr + window.len == from + len;
	*fail = x86_code__analyze(&window, pc, start, end, rules);
	return true;
}

int process_code__analyze(void *ctx, uint64_t pc, struct code_rules *rules)
{
	static uint8_t buf[ANALYSIS_BEFORE + ANALYSIS_AFTER], wide[CODE_MAX_WINDOW];
	struct process_view *c = ctx;
	struct code_cache_stats *stats = code_cache__stats(c->code);
	enum code_fail fail;
	uint64_t start = 0, end = 0, from;
	struct code_place at;
	bool cut;

	if (!code_place(c, pc, &at))
		return CODE_UNDECODABLE;
	if (code_cache__rules(c->code, at.mod->id, at.key, &fail, rules))
		return fail;
	if (function_bounds(c, pc, &start, &end) != 0 || pc - start > ANALYSIS_BEFORE)
		start = end = 0;
	from = start ? start : pc - ANALYSIS_BACK;
	/* A process that exited is read from the copies of what was read while it lived,
	 * which may hold the code at pc but not the code before it: then from pc on alone,
	 * tracing forward. */
	if (!analyze_read(c, &at, pc, start, end, from, buf, pc + ANALYSIS_AFTER - from, &fail,
			  rules, &cut) &&
	    !analyze_read(c, &at, pc, 0, 0, pc, buf, ANALYSIS_AFTER, &fail, rules, &cut)) {
		stats->unreadable++;
		fail = CODE_UNDECODABLE;
	} else {
		if (fail == CODE_NO_EXIT && rules->past_window && cut &&
		    analyze_read(c, &at, pc, start, end, from, wide, sizeof(wide), &fail, rules, &cut))
			stats->widened++;
		stats->analyses++;
		stats->failed[fail]++;
	}
	code_cache__put_rules(c->code, at.mod->id, at.key, fail, rules);
	return fail;
}

/* The longest call instruction, with prefixes. */
#define CALL_MAX_BYTES 16

int process_code__call_before(void *ctx, uint64_t ra, uint64_t *target)
{
	struct process_view *c = ctx;
	uint8_t buf[CALL_MAX_BYTES];
	struct code_window window;
	enum code_call call;
	int64_t delta = 0;
	struct code_place at;
	ssize_t n;

	*target = 0;
	if (ra < CALL_MAX_BYTES || !code_place(c, ra - 1, &at))
		return CODE_CALL_NONE;
	if (!code_cache__call(c->code, at.mod->id, at.key + 1, &call, &delta)) {
		n = read_code(c, &at, ra - CALL_MAX_BYTES, buf, CALL_MAX_BYTES);
		/* not remembered: the bytes may be read later, from a live process */
		if (n <= 0 && at.mod->anon_code)
			return CODE_CALL_UNREADABLE;
		call = CODE_CALL_NONE;
		if (n > 0) {
			uint64_t from = ra - CALL_MAX_BYTES < at.m->start ? at.m->start : ra - CALL_MAX_BYTES;

			window = (struct code_window){ .bytes = buf, .addr = from, .len = (size_t)n };
			call = x86_code__call_before(&window, ra, target);
			delta = (int64_t)(*target - ra);
		}
		code_cache__stats(c->code)->calls_checked++;
		code_cache__put_call(c->code, at.mod->id, at.key + 1, call, delta);
	}
	if (call == CODE_CALL_DIRECT)
		*target = ra + (uint64_t)delta;
	return call;
}

/* Code a trace for jumps reads after the address, and before it for a pc (GHC's code
 * jumps back to the block before): trampolines and most of GHC's blocks are short. From a
 * pc where that found no jump, as far as JUMP_TRACE_FAR after it (a long Haskell function
 * runs straight on past 4 KiB). */
#define JUMP_TRACE_BYTES 4096u
#define JUMP_TRACE_FAR (64u << 10)

/* x86_code__jump_depths (from_start) or _offsets of the code at addr, read from its
 * binary or memory: [addr - back, addr + after). */
static uint32_t trace_jumps_read(struct process_view *c, const struct code_place *code, uint64_t addr,
				 bool from_start, uint64_t back, uint64_t after, uint8_t *buf,
				 int32_t *found, uint64_t *jump_at)
{
	uint64_t from = addr - back, start = 0, end = 0;
	ssize_t n = read_code(c, code, from, buf, back + after);
	struct code_window window = { .bytes = buf,
				      .addr = from < code->m->start ? code->m->start : from,
				      .len = n > 0 ? (size_t)n : 0 };

	if (!from_start)
		return x86_code__jump_offsets(&window, addr, found, CODE_JUMPS);
	/* a symbol that starts there bounds the trace; any other is another's */
	if (function_bounds(c, addr, &start, &end) != 0 || start != addr)
		end = 0;
	return x86_code__jump_depths(&window, addr, end, found, jump_at, CODE_JUMPS);
}

uint32_t process_code__jumps(void *ctx, uint64_t addr, bool from_start, int32_t *values, uint64_t *at,
		      uint32_t max)
{
	static uint8_t buf[JUMP_TRACE_BYTES + JUMP_TRACE_FAR];
	struct process_view *c = ctx;
	int32_t found[CODE_JUMPS], found_at[CODE_JUMPS] = { 0 };
	uint64_t jump_at[CODE_JUMPS];
	uint32_t nr = 0;
	struct code_place code;

	if (!code_place(c, addr, &code) || addr < JUMP_TRACE_BYTES)
		return 0;
	if (!code_cache__jumps(c->code, code.mod->id, code.key, from_start, found, found_at, &nr)) {
		const uint64_t back = from_start ? 0 : JUMP_TRACE_BYTES;

		nr = trace_jumps_read(c, &code, addr, from_start, back, JUMP_TRACE_BYTES, buf, found,
				      jump_at);
		if (nr == 0 && !from_start)
			nr = trace_jumps_read(c, &code, addr, false, back, JUMP_TRACE_FAR, buf, found,
					      jump_at);
		for (uint32_t i = 0; from_start && i < nr; i++)
			found_at[i] = (int32_t)(jump_at[i] - addr);
		code_cache__stats(c->code)->jumps_traced++;
		code_cache__put_jumps(c->code, code.mod->id, code.key, from_start, found, found_at,
				      nr);
	}
	nr = nr < max ? nr : max;
	for (uint32_t i = 0; i < nr; i++) {
		values[i] = found[i];
		at[i] = addr + (uint64_t)(int64_t)found_at[i];
	}
	return nr;
}

