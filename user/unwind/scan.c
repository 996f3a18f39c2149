/* The scan of the stack for a frame's caller: candidate return addresses above its sp,
 * judged by the call before them and by a trial walk from each to the stack's start. */
#include "unwind/walk_internal.h"

#include <errno.h>
#include <string.h>

#include "unwind/x86_code.h"

/* Words a scan reads above a frame's sp, and candidates it walks from at most. */
#define SCAN_WORDS 4096
#define SCAN_TRIALS 8

/* A scan's read: false past the copy. A word in a hole (a page never touched: a large
 * frame's unused buffer, BEAM's register array in process_main's frame) reads as 0, which
 * no candidate is, and the scan goes on above it. */
static bool scan_read(const struct copy_view *v, uint64_t addr, uint64_t *word)
{
	uint64_t off = addr - v->base; /* wraps for addr < base: then off >= limit */
	enum stack_read r;

	if (__builtin_expect(off < v->limit, 1)) {
		memcpy(word, v->bytes + off, sizeof(*word));
		return true;
	}
	r = stack_copy__read(v->copy, addr, word);
	if (r == STACK_READ_HOLE)
		*word = 0;
	return r != STACK_READ_OUTSIDE;
}

/* A scan's last try, where no return address led to the start: the first word above the
 * frame that is where a runtime's stacks end (BEAM's exit). It follows no call, so it
 * comes after every return address that does: one of those, if any led on, is nearer. */
static bool scan_for_stack_end(struct walker *w, struct frame_regs *regs)
{
	for (uint32_t i = 0; i < SCAN_WORDS && w->space->symbols.is_stack_end; i++) {
		uint64_t addr = regs->sp + 8 * (uint64_t)i, word;

		if (!scan_read(w->view, addr, &word))
			break;
		if (word && is_stack_end(w, word)) {
			regs->ip = word;
			regs->sp = addr + 8;
			return true;
		}
	}
	return false;
}

/* Without a known start, a direct call's target must be at most this far below the pc. */
#define SCAN_MAX_FUNCTION (64u << 10)

/* How sure a scan's candidate is: a call known to go into the frame's function, one that
 * may (an indirect call; a direct one where the function's start is not known), or a call
 * elsewhere. */
enum scan_call { SCAN_CALL_ELSEWHERE, SCAN_CALL_MAYBE, SCAN_CALL_INTO };

/* What a scan knows of the frame's function, the same for every candidate: where it
 * starts (err 0), or that no map gives the start of its JIT code (-ENODATA), or nothing
 * (-ENOENT); and whether it is JIT code. */
struct scanned_function {
	uint64_t lookup; /* the pc, or the call before a return address */
	uint64_t start;
	int err;
	bool jit;
};

static struct scanned_function scanned_function(struct walker *w, uint64_t lookup)
{
	struct scanned_function f = { .lookup = lookup, .err = -ENOENT };

	if (w->space->symbols.function_start)
		f.err = w->space->symbols.function_start(w->space->ctx, lookup, &f.start);
	f.jit = f.err == -ENODATA || (f.err == 0 && w->space->symbols.is_jit_code &&
				      w->space->symbols.is_jit_code(w->space->ctx, lookup));
	return f;
}

/* What a candidate's call says about the frame's function. */
static enum scan_call scan_call(const struct scanned_function *f, enum code_call call,
				uint64_t target)
{
	if (call == CODE_CALL_INDIRECT)
		return SCAN_CALL_MAYBE;
	if (f->err == 0 && target == f->start)
		return SCAN_CALL_INTO;
	/* JIT code, its start known or not: the runtime enters it through trampolines of its own
	 * (BEAM's C++ process_main calls one in beam.smp), and runs pieces of it in frames other
	 * JIT code made (BEAM's fragments in process_main's): a direct call elsewhere may be
	 * this frame's caller's */
	if (f->jit)
		return SCAN_CALL_MAYBE;
	if (f->err == 0)
		return SCAN_CALL_ELSEWHERE;
	return target <= f->lookup && f->lookup - target < SCAN_MAX_FUNCTION ? SCAN_CALL_MAYBE
									      : SCAN_CALL_ELSEWHERE;
}

/* Where rsp is, relative to the frame's sp, where the frame's code jumps on (through a
 * register or memory): traced once per scan, when a candidate first needs it. */
struct frame_jumps {
	bool traced;
	uint32_t nr;
	int32_t offsets[SCAN_JUMPS];
};

/* A call's target that jumped to the frame's code: where rsp was as it jumped, and where
 * the jump is. */
struct jump_here {
	uint64_t sp, pc;
};

/* A direct call to target whose function jumps to code it runs in its own frame, at the
 * depth a candidate found at addr has over the frame's code as it jumps on (its sp plus an
 * offset of frame_jumps): the frame's code is what the function jumped to, and the
 * candidate is as sure as a call into it. GHC's schedule calls StgRun, which reserves
 * 16 KiB and jumps to Haskell code; the Haskell code leaves rsp as it found it where it
 * jumps on, and subtracts 8 around its calls of C. A PLT stub jumps at depth 8: a function
 * reached through one, sampled before it pushes anything. Sets *jump. */
static bool calls_jump_here(struct walker *w, const struct frame_regs *regs,
			    struct frame_jumps *fj, enum code_call call, uint64_t target,
			    uint64_t addr, struct jump_here *jump)
{
	int32_t depths[SCAN_JUMPS];
	uint64_t at[SCAN_JUMPS], unused[SCAN_JUMPS];
	uint32_t nr;

	if (call != CODE_CALL_DIRECT || !w->space->code.jumps)
		return false;
	if (!fj->traced) {
		/* the sampled pc's code, or a return address's: what runs on from there */
		fj->traced = true;
		fj->nr = w->space->code.jumps(w->space->ctx, regs->ip, false, fj->offsets, unused,
					 SCAN_JUMPS);
	}
	if (fj->nr == 0)
		return false;
	nr = w->space->code.jumps(w->space->ctx, target, true, depths, at, SCAN_JUMPS);
	for (uint32_t i = 0; i < nr; i++) {
		for (uint32_t j = 0; j < fj->nr; j++) {
			uint64_t sp = regs->sp + (uint64_t)(int64_t)fj->offsets[j];

			if (addr + 8 - sp == (uint64_t)(int64_t)depths[i]) {
				*jump = (struct jump_here){ .sp = sp, .pc = at[i] };
				return true;
			}
		}
	}
	return false;
}

/* The registers a candidate's frame had where a function jumped to the frame's code: the
 * function's own rules at its jump (CFI, else its analysis), from rsp as it jumped, give
 * back the rbp it saved (GHC's StgRun saves the scheduler's; Haskell code keeps its own
 * stack pointer in rbp, and the RTS's C may need the scheduler's for a CFA = rbp + 16).
 * Only where those rules find the candidate's return address at the candidate's place;
 * else the frame's rbp is taken as it is. Not step(): GHC's CFI for StgRun's body gives
 * the CFA as rsp itself, and the caller's rsp by an expression. */
static struct frame_regs regs_at_jump(struct walker *w, const struct frame_regs *regs,
				      const struct jump_here *jump, uint64_t word, uint64_t addr)
{
	struct frame_regs at = { .ip = jump->pc, .sp = jump->sp, .bp = regs->bp,
				 .bp_valid = regs->bp_valid, .bx_at = BX_LOST }, caller = *regs;
	struct cached_rules *rules = find_rules(w, w->space->id, jump->pc);
	uint64_t cfa, ra;
	bool in_register;

	if (!rules || rules->cfa == UNWIND_CFA_END)
		rules = analysis_rules(w, w->space->id, jump->pc, true, NULL);
	if (!rules || rules->ra != UNWIND_RA_AT_CFA ||
	    compute_cfa(w, rules, &at, false, &cfa) != UNWIND_END_COMPLETE ||
	    cfa + (uint64_t)(int64_t)rules->ra_offset != addr ||
	    return_address(w, rules, &at, cfa, false, &ra, &in_register) != UNWIND_END_COMPLETE ||
	    ra != word || recover_bp(rules, &at, cfa, w->view, &caller) != UNWIND_END_COMPLETE)
		return *regs;
	caller.ip = regs->ip;
	caller.sp = regs->sp;
	caller.bx_at = regs->bx_at;
	return caller;
}

/* Return addresses of a scan's first candidate whose walk reached the start but did not
 * agree throughout (trial_agrees), kept while later candidates are tried. */
#define SCAN_HELD_FRAMES 64

struct held_candidate {
	uint64_t ip, sp, bp;
	bool bp_valid;
	uint32_t nr;
	uint64_t chain[SCAN_HELD_FRAMES]; /* its walk's return addresses past its own */
};

static void hold_candidate(struct walker *w, struct held_candidate *held, uint64_t ip,
			   uint64_t sp, const struct frame_regs *from, uint32_t nr_frames)
{
	held->ip = ip;
	held->sp = sp;
	held->bp = from->bp;
	held->bp_valid = from->bp_valid;
	held->nr = 0;
	for (uint32_t i = 1; i < nr_frames && held->nr < SCAN_HELD_FRAMES; i++)
		held->chain[held->nr++] = w->cache->trial[i].pc;
}

/* The later candidate ra is a return address of the held one's own walk: only a shorter
 * tail of the same chain (the return address into start_thread, which every thread's walk
 * ends with), never a better one. */
static bool on_held_chain(const struct held_candidate *held, uint64_t ra)
{
	for (uint32_t i = 0; i < held->nr; i++) {
		if (held->chain[i] == ra)
			return true;
	}
	return false;
}

/* The last resort: the first word above the frame's sp that follows a call known to go
 * into the frame's function (or into one that jumped to it, calls_jump_here), else the
 * first that follows one that may (through a pointer), from which the walk reaches the
 * stack's start. A stale return address after an indirect call (a clock read through the
 * vDSO's pointer, earlier) can lead to the start too: the sure kind goes first, and one of
 * the other kind whose caller has called another function since is passed over
 * (caller_called_elsewhere). Within a kind, a candidate whose walk has a frame called by a
 * direct call elsewhere (trial_agrees: a stale chain joining the live one, or a tail call)
 * gives way to a later one whose walk agrees throughout, unless that one is on its own
 * walk; a sure candidate never gives way to an unsure one. rbp is taken as the frame left
 * it, or, after a call of a function that jumped to the frame's code, as that function
 * saved it (regs_at_jump). A word in JIT code that cannot be read ends the scan
 * (*unreadable): it may be the caller, and a candidate above it would skip its frame. */
static bool scan_for_caller(struct walker *w, struct frame_regs *regs, bool exact,
			    bool *unreadable)
{
	const struct scanned_function f = scanned_function(w, code_at(regs->ip, exact));
	const struct unwind_map *map;
	struct held_candidate held = { 0 };
	struct frame_jumps jumps = { 0 };
	uint32_t trials = 0;

	for (int pass = SCAN_CALL_INTO; pass >= SCAN_CALL_MAYBE; pass--) {
		for (uint32_t i = 0; i < SCAN_WORDS && trials < SCAN_TRIALS; i++) {
			uint64_t addr = regs->sp + 8 * (uint64_t)i, word, target;
			enum code_call call;
			enum scan_call how;
			struct frame_regs from;
			struct jump_here jump;
			enum trial trial;
			uint32_t nr_frames;
			bool agrees, through_jump;

			if (!scan_read(w->view, addr, &word))
				break;
			call = follows_call(w, word, &target);
			if (call == CODE_CALL_UNREADABLE) {
				*unreadable = true;
				return false;
			}
			how = call == CODE_CALL_NONE ? SCAN_CALL_ELSEWHERE
						     : scan_call(&f, call, target);
			through_jump = how != SCAN_CALL_INTO &&
				       calls_jump_here(w, regs, &jumps, call, target, addr, &jump);
			if (through_jump)
				how = SCAN_CALL_INTO;
			if (how != (enum scan_call)pass) {
				/* rejected ones counted once, on the first pass; a pointer into code
				 * that follows no call counts, data words do not */
				if (pass == SCAN_CALL_INTO && how == SCAN_CALL_ELSEWHERE &&
				    (call != CODE_CALL_NONE ||
				     find_map(&w->maps, w->space, word, &map) != -ENOENT))
					w->cache->stats.scan_rejected_code++;
				continue;
			}
			trials++;
			from = through_jump ? regs_at_jump(w, regs, &jump, word, addr) : *regs;
			trial = trial_walk(w, word, addr + 8, &from, pass == SCAN_CALL_INTO, &agrees,
					   &nr_frames);
			if (trial != TRIAL_REACHES_START) {
				if (trial == TRIAL_STALE)
					w->cache->stats.scan_rejected_stale++;
				else
					w->cache->stats.scan_rejected_walk++;
				continue;
			}
			if (!agrees && !held.ip) {
				/* taken if no later candidate of its kind agrees throughout */
				hold_candidate(w, &held, word, addr + 8, &from, nr_frames);
				continue;
			}
			if (held.ip && (!agrees || on_held_chain(&held, word)))
				continue;
			if (held.ip)
				w->cache->stats.scan_passed_over++;
			w->cache->stats.scan_through_jumps += through_jump;
			regs->bp = from.bp;
			regs->bp_valid = from.bp_valid;
			regs->ip = word;
			regs->sp = addr + 8;
			return true;
		}
		if (held.ip)
			break;
	}
	if (held.ip) {
		regs->ip = held.ip;
		regs->sp = held.sp;
		regs->bp = held.bp;
		regs->bp_valid = held.bp_valid;
		return true;
	}
	return false;
}

/* The scans come last, for code without CFI (and without rules by analysis, or with rules
 * whose caller did not fit), where the process tells about its code (call_before) and the
 * walk may scan (not no_scan, not within a trial walk). */
static bool may_scan(const struct walker *w)
{
	return w->space->code.call_before && w->may_scan;
}

/* The frame step by a scan for a return address (scan_for_caller). rbp's validity is the
 * candidate's (regs_at_jump may recover rbp). */
enum step_result scan_step(struct walker *w, struct walk_frame *f)
{
	bool unreadable = false;

	f->caller = f->regs;
	if (!may_scan(w))
		return STEP_REJECTED;
	if (!scan_for_caller(w, &f->caller, f->exact, &unreadable)) {
		if (!unreadable)
			return STEP_REJECTED;
		f->end = UNWIND_END_CODE_UNREADABLE;
		return STEP_STOP;
	}
	f->caller_exact = false;
	return STEP_FOUND;
}

/* The last frame step: a return address where a runtime's stacks end, above the frame
 * (scan_for_stack_end). */
enum step_result stack_end_step(struct walker *w, struct walk_frame *f)
{
	f->caller = f->regs;
	if (!may_scan(w) || !scan_for_stack_end(w, &f->caller))
		return STEP_REJECTED;
	f->caller_exact = false;
	return STEP_FOUND;
}
