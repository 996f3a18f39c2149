/* One step by a frame's rules (CFI rows, or the rules an analysis gave): the CFA, the
 * return address, where the caller's rbp and rbx are; the first frame's rules (a signal
 * frame in rt_sigreturn, a function's entry); and the replay that finds rbx for a CFA =
 * rbx + N rule. */
#include "unwind/walk_internal.h"

/* The kernel's signal frame, as __restore_rt's CFI describes it: the CFA and return
 * address come from the saved ucontext. */
static bool is_signal_frame(const struct cached_rules *r)
{
	return r->cfa == UNWIND_CFA_EXPR_DEREF_SP && r->ra == UNWIND_RA_AT_SP;
}

/* rbx's value in a frame whose rbx is at bx_at. COMPLETE means "found". */
static enum unwind_end bx_value(const struct walker *w, uint64_t bx_at, uint64_t *bx)
{
	if (bx_at == BX_SAMPLED) {
		*bx = w->sampled->bx;
		return w->sampled->bx_valid ? UNWIND_END_COMPLETE : UNWIND_END_UNSUPPORTED;
	}
	if (bx_at == BX_LOST)
		return UNWIND_END_UNSUPPORTED;
	return read_u64(w->view, bx_at, bx) ? UNWIND_END_COMPLETE : UNWIND_END_COPY_SHORT;
}

/* The sampled value of a DRAP register, the CFA's base in a rule of kind cfa: known in the
 * first frame, and for r12-r15 (callee-saved) in the caller of a first frame that kept no
 * frame (dav1d's assembly: a frameless kernel called by a function whose CFA is r14 + 32). */
static bool drap_value(const struct walker *w, uint8_t cfa, bool leaf, uint64_t sp,
		       uint64_t *value)
{
	unsigned reg = cfa == UNWIND_CFA_R10_OFFSET
			       ? 0
			       : UNWIND_DWARF_R12 - UNWIND_DWARF_R10 + (unsigned)(cfa - UNWIND_CFA_R12_OFFSET);
	bool kept = cfa != UNWIND_CFA_R10_OFFSET && w->drap_caller_sp && sp == w->drap_caller_sp;

	if ((!leaf && !kept) || !w->sampled->drap_valid || w->first_is_return)
		return false;
	*value = w->sampled->drap[reg];
	return true;
}

/* CFA for the rules at regs->ip. Returns an unwind_end; COMPLETE means "computed". */
enum unwind_end compute_cfa(const struct walker *w, const struct cached_rules *rules,
				   const struct frame_regs *regs, bool leaf, uint64_t *cfa)
{
	enum unwind_end end;

	switch (rules->cfa) {
	case UNWIND_CFA_R10_OFFSET:
	case UNWIND_CFA_R12_OFFSET:
	case UNWIND_CFA_R13_OFFSET:
	case UNWIND_CFA_R14_OFFSET:
	case UNWIND_CFA_R15_OFFSET:
		if (!drap_value(w, rules->cfa, leaf, regs->sp, cfa))
			return UNWIND_END_UNSUPPORTED;
		*cfa += rules->cfa_offset;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_SP_OFFSET:
		*cfa = regs->sp + rules->cfa_offset;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_BP_OFFSET:
		if (!regs->bp_valid)
			return UNWIND_END_UNSUPPORTED;
		*cfa = regs->bp + rules->cfa_offset;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_BX_OFFSET:
		end = bx_value(w, regs->bx_at, cfa);
		if (end == UNWIND_END_COMPLETE)
			*cfa += rules->cfa_offset;
		return end;
	case UNWIND_CFA_EXPR_PLT:
		/* A lazy PLT entry pushes one more word after its first instruction group. */
		*cfa = regs->sp + 8 + ((regs->ip & 15) >= (uint64_t)rules->cfa_offset ? 8 : 0);
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_EXPR_DEREF_SP:
		if (!read_u64(w->view, regs->sp + rules->cfa_offset, cfa))
			return UNWIND_END_COPY_SHORT;
		*cfa += (uint64_t)(int64_t)rules->cfa_addend;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_EXPR_DEREF_BP:
		if (!regs->bp_valid)
			return UNWIND_END_UNSUPPORTED;
		if (!read_u64(w->view, regs->bp + rules->cfa_offset, cfa))
			return UNWIND_END_COPY_SHORT;
		*cfa += (uint64_t)(int64_t)rules->cfa_addend;
		return UNWIND_END_COMPLETE;
	case UNWIND_CFA_END:
		return UNWIND_END_NO_CFI;
	default:
		return UNWIND_END_UNSUPPORTED;
	}
}

/* The caller's rbp. A rule that loses it leaves bp_valid false: only a later bp-based CFA
 * needs it, and that then stops the walk as unsupported. */
enum unwind_end recover_bp(const struct cached_rules *rules, const struct frame_regs *regs,
				  uint64_t cfa, const struct copy_view *copy,
				  struct frame_regs *caller)
{
	uint64_t slot;

	caller->bp = regs->bp;
	caller->bp_valid = regs->bp_valid;
	switch (rules->rbp) {
	case UNWIND_RBP_UNCHANGED:
		return UNWIND_END_COMPLETE;
	case UNWIND_RBP_AT_CFA:
	case UNWIND_RBP_AT_SP:
		slot = (rules->rbp == UNWIND_RBP_AT_CFA ? cfa : regs->sp) + rules->rbp_offset;
		/* In an epilogue, after `pop %rbp`, compilers leave the rule pointing at the
		 * popped slot, now below sp: the register already holds the caller's value. */
		if (slot < regs->sp)
			return UNWIND_END_COMPLETE;
		caller->bp_valid = true;
		return read_u64(copy, slot, &caller->bp) ? UNWIND_END_COMPLETE
							 : UNWIND_END_COPY_SHORT;
	case UNWIND_RBP_AT_BP:
		/* GCC's realigned frames (DRAP) save it where their own rbp points: a DRAP
		 * function's caller that realigns too needs it for its CFA = *(rbp - N) */
		if (!regs->bp_valid)
			return UNWIND_END_COMPLETE;
		slot = regs->bp + rules->rbp_offset;
		/* A function saves rbp in its own frame, below its CFA: a slot at or above it
		 * is a rule left stale past the epilogue's restore (GCC's DRAP epilogue, at its
		 * ret), and rbp already holds the caller's value. */
		if (slot < regs->sp || slot >= cfa)
			return UNWIND_END_COMPLETE;
		caller->bp_valid = true;
		return read_u64(copy, slot, &caller->bp) ? UNWIND_END_COMPLETE
							 : UNWIND_END_COPY_SHORT;
	case UNWIND_RBP_VAL_CFA:
		caller->bp = cfa + rules->rbp_offset;
		caller->bp_valid = true;
		return UNWIND_END_COMPLETE;
	default:
		caller->bp_valid = false;
		return UNWIND_END_COMPLETE;
	}
}

/* Where the caller's rbx is: nothing is read (see BX_SAMPLED). A save below sp was popped
 * already, as for rbp. */
static uint64_t recover_bx(const struct cached_rules *rules, const struct frame_regs *regs,
			   uint64_t cfa)
{
	uint64_t slot = cfa + rules->rbx_offset;

	switch (rules->rbx) {
	case UNWIND_RBX_UNCHANGED:
		return regs->bx_at;
	case UNWIND_RBX_AT_CFA:
		return slot >= regs->sp ? slot : regs->bx_at;
	default:
		return BX_LOST;
	}
}

/* The sampled value of the register whose DWARF number is dwarf: rdi (glibc's __vfork
 * keeps its return address there), r8 (sljit's fast calls), rbx, rbp, and r10, r12-r15 (a
 * code analysis's rules may name any of them). False for a register the sample does not
 * hold. */
static bool sampled_register(const struct unwind_regs *sampled, int64_t dwarf, uint64_t *value)
{
	switch (dwarf) {
	case UNWIND_DWARF_RDI:
		*value = sampled->di;
		return sampled->di_valid;
	case UNWIND_DWARF_RBX:
		*value = sampled->bx;
		return sampled->bx_valid;
	case UNWIND_DWARF_RBP:
		*value = sampled->bp;
		return sampled->bp_valid;
	case UNWIND_DWARF_R8:
		*value = sampled->r8;
		return sampled->r8_valid;
	case UNWIND_DWARF_R10:
	case UNWIND_DWARF_R12:
	case UNWIND_DWARF_R13:
	case UNWIND_DWARF_R14:
	case UNWIND_DWARF_R15:
		*value = sampled->drap[dwarf - UNWIND_DWARF_R10];
		return sampled->drap_valid;
	default:
		return false;
	}
}

/* The return address in a register, in the first frame (leaf): the sampled register's
 * value, or, by an analysis's rules, for a register the sample lacks (sljit's fast calls
 * reload it into rax from their caller's top word before push %rax; ret, and pop it into
 * r8 for a call of their own), the word at the CFA: the caller's top word, where such a
 * callee keeps it otherwise (ra_from_top_word). */
static enum unwind_end ra_in_register(const struct walker *w, const struct cached_rules *rules,
				      uint64_t cfa, bool leaf, uint64_t *ra)
{
	if (!leaf)
		return UNWIND_END_UNSUPPORTED;
	if (sampled_register(w->sampled, rules->ra_offset, ra))
		return UNWIND_END_COMPLETE;
	if (rules->found != UNWIND_FOUND_ANALYSIS)
		return UNWIND_END_UNSUPPORTED;
	return read_u64(w->view, cfa, ra) ? UNWIND_END_COMPLETE : UNWIND_END_COPY_SHORT;
}

bool ra_from_top_word(const struct walker *w, const struct cached_rules *rules)
{
	uint64_t unused;

	return rules->ra == UNWIND_RA_REGISTER && rules->found == UNWIND_FOUND_ANALYSIS &&
	       !sampled_register(w->sampled, rules->ra_offset, &unused);
}

/* The return address, for the rules at regs->ip with the CFA computed. *in_register says
 * it was in a register: no stack slot held it, so the CFA may equal sp. Only the first
 * frame's registers besides rsp and rbp are known (leaf). */
enum unwind_end return_address(const struct walker *w, const struct cached_rules *rules,
				      const struct frame_regs *regs, uint64_t cfa, bool leaf,
				      uint64_t *ra, bool *in_register)
{
	uint64_t ra_addr;

	*in_register = false;
	switch (rules->ra) {
	case UNWIND_RA_AT_CFA:
		ra_addr = cfa + rules->ra_offset;
		break;
	case UNWIND_RA_AT_SP:
		ra_addr = regs->sp + rules->ra_offset;
		break;
	case UNWIND_RA_REGISTER:
		*in_register = true;
		return ra_in_register(w, rules, cfa, leaf, ra);
	default:
		return UNWIND_END_UNSUPPORTED;
	}
	return read_u64(w->view, ra_addr, ra) ? UNWIND_END_COMPLETE : UNWIND_END_COPY_SHORT;
}

/* One step: the caller's registers from the callee's, for any rules. leaf: regs are the
 * sampled registers. ra_undefined reports the outermost frame; signal reports a signal
 * trampoline (its caller resumes at an exact pc). */
enum unwind_end step(const struct walker *w, const struct cached_rules *rules,
			    const struct frame_regs *regs, bool leaf, struct frame_regs *caller,
			    bool *ra_undefined, bool *signal)
{
	enum unwind_end end;
	bool in_register, ra_in_caller;
	uint64_t cfa;

	*ra_undefined = false;
	*signal = false;
	if (rules->ra == UNWIND_RA_UNDEFINED && rules->cfa != UNWIND_CFA_END) {
		*ra_undefined = true;
		return UNWIND_END_COMPLETE;
	}
	end = compute_cfa(w, rules, regs, leaf, &cfa);
	if (end != UNWIND_END_COMPLETE)
		return end;
	end = return_address(w, rules, regs, cfa, leaf, &caller->ip, &in_register);
	if (end != UNWIND_END_COMPLETE)
		return end;
	end = recover_bp(rules, regs, cfa, w->view, caller);
	if (end != UNWIND_END_COMPLETE)
		return end;
	caller->bx_at = recover_bx(rules, regs, cfa);
	caller->sp = cfa;
	*signal = is_signal_frame(rules);
	/* Outside signal frames the stack only grows down: a caller's frame is above, or where
	 * the callee's is when the return address was never on the stack or is in the caller's
	 * frame (moved there: sljit's fast calls), and then the caller is another pc. */
	ra_in_caller = rules->ra == UNWIND_RA_AT_CFA && rules->ra_offset >= 0;
	if (!*signal && (in_register || ra_in_caller ? cfa < regs->sp : cfa <= regs->sp))
		return UNWIND_END_BAD_FRAME;
	if ((ra_in_caller || in_register) && cfa == regs->sp && caller->ip == regs->ip)
		return UNWIND_END_BAD_FRAME;
	return UNWIND_END_COMPLETE;
}

/* A sample taken in the rt_sigreturn system call has its ip just past the trampoline's
 * syscall instruction, which is where __restore_rt's FDE ends: no rule covers that pc.
 * The syscall instruction's own rules (at ip - 1) are the signal frame's, and sp has not
 * moved since, so they apply. Only a signal frame is taken from ip - 1: for any other
 * function, what precedes ip says nothing about ip. Returns the rules to use for the
 * first frame, whose own (rules) cover nothing. */
static struct cached_rules *in_sigreturn(struct walker *w, uint64_t id, uint64_t ip,
					 struct cached_rules *rules)
{
	struct cached_rules *before = ip ? find_rules(w, id, ip - 1) : NULL;

	return before && is_signal_frame(before) ? before : rules;
}

/* The first frame is at the very first instruction of a function its binary names (see
 * unwind_is_function_entry_fn): nothing has been pushed yet, whatever CFI there is or not.
 * Not a row: the psABI's entry rules hold at the exact pc only, while a row covering
 * the entry would also give them to a caller frame whose return address is entry + 1 (its
 * lookup is ra - 1), and they override the rows the binary has there. */
static bool at_function_entry(const struct walker *w, uint64_t ip)
{
	const struct unwind_symbols *symbols = &w->space->symbols;

	return symbols->is_function_entry && symbols->is_function_entry(w->space->ctx, ip);
}

/* The psABI's rules at a function's entry: CFA = rsp + 8, the return address at rsp,
 * every callee-saved register untouched. */
static struct cached_rules *entry_rules(struct walker *w)
{
	struct cached_rules *r = &w->cache->entry;

	*r = (struct cached_rules){
		.cfa = UNWIND_CFA_SP_OFFSET, .cfa_offset = 8,
		.ra = UNWIND_RA_AT_CFA, .ra_offset = -8,
		.rbp = UNWIND_RBP_UNCHANGED, .rbx = UNWIND_RBX_UNCHANGED,
		.found = UNWIND_FOUND_CFI,
		.next = r, /* space 0 never matches: the caller is looked up */
	};
	r->plain = is_plain(r);
	return r;
}

/* The rules for the first frame, at its exact pc: its own, or where it has none, a signal
 * frame's in rt_sigreturn, or the psABI's at a function's entry. NULL with w->miss set when
 * there are none (as find_rules). Only the first frame's pc can be an entry: the others'
 * are return addresses, which follow a call. */
struct cached_rules *first_rules(struct walker *w, uint64_t id, uint64_t ip)
{
	struct cached_rules *rules = find_rules(w, id, ip);

	if (rules && rules->cfa != UNWIND_CFA_END)
		return rules;
	if (rules) {
		struct cached_rules *signal = in_sigreturn(w, id, ip, rules);

		if (signal != rules)
			return signal;
	}
	if ((rules || w->miss == UNWIND_END_NO_CFI) && at_function_entry(w, ip))
		return entry_rules(w);
	return rules;
}

/* A return address that is the very start of a function was not pushed by a call (a
 * call's return address follows the call instruction): it was put there to start a
 * stack, as makecontext does with __start_context for the function it starts. That
 * frame is the stack's outermost. */
bool returns_to_function_start(struct walker *w, uint64_t ra)
{
	const struct unwind_map *map;
	uint64_t start;

	if (find_map(&w->maps, w->space, ra, &map) != 0)
		return false;
	return unwind_table__function_start(map->table, ra - map->bias, &start) == 0 &&
	       start == ra - map->bias;
}

/* Where rbx is in the frame the walk reaches after steps steps, steps at least as many as
 * last time: the walk again from the sampled registers, or from where the last call left
 * it, through step(), which follows rbx. Each frame is replayed once per walk at most. */
static uint64_t replay_bx_at(struct walker *w, uint32_t steps)
{
	const uint64_t id = w->space->id;
	struct frame_regs caller;
	bool ra_undefined, signal;

	if (w->replayed == 0) {
		const struct unwind_regs *s = w->sampled;

		w->replay = (struct frame_regs){ s->ip, s->sp, s->bp, BX_SAMPLED, s->bp_valid };
		w->replay_lookup = s->ip;
	}
	for (; w->replayed < steps; w->replayed++) {
		struct cached_rules *rules = w->replayed == 0 ? first_rules(w, id, w->replay_lookup)
							      : find_rules(w, id, w->replay_lookup);

		/* the walk itself went past here, so neither can fail: a guard */
		if (!rules || step(w, rules, &w->replay, w->replayed == 0, &caller, &ra_undefined,
				   &signal) != UNWIND_END_COMPLETE || ra_undefined)
			return BX_LOST;
		w->replay = caller;
		w->replay_lookup = code_at(caller.ip, signal);
	}
	return w->replay.bx_at;
}

/* step() for a CFA = rbx + N, after steps steps: finds where rbx is first. Out of line, so
 * that its copy of the rules (the replay's lookups may evict them from the cache) does not
 * cost the walk's loop a register for its alignment. */
static __attribute__((noinline)) enum unwind_end
step_bx(struct walker *w, const struct cached_rules *rules, uint32_t steps, struct frame_regs *cur,
	struct frame_regs *caller, bool *ra_undefined, bool *signal)
{
	const struct cached_rules here = *rules;

	cur->bx_at = replay_bx_at(w, steps);
	return step(w, &here, cur, steps == 0, caller, ra_undefined, signal);
}

/* A frame without rules of its own stops the walk where its pc is in no mapping, or where
 * it is a return address to a function's start (returns_to_function_start): no later
 * step finds a caller there. */
static enum step_result no_rules(struct walker *w, struct walk_frame *f)
{
	if (!f->rules && w->miss != UNWIND_END_NO_CFI) {
		f->end = w->miss;
		return STEP_STOP;
	}
	if (!f->exact && returns_to_function_start(w, f->regs.ip)) {
		f->end = UNWIND_END_NO_CFI;
		return STEP_STOP;
	}
	return STEP_REJECTED;
}

/* The frame step by CFI rows (or the psABI's rules at a function's entry): trusted as they
 * are, so a failure stops the walk rather than falling through to a guess. A frame without
 * CFI goes on to the next step. The walk's loop takes plain rules inline (step_plain) and
 * comes here with them only when traced; a frame's rbx is found by replay (step_bx) only
 * for a CFA = rbx + N. */
enum step_result cfi_step(struct walker *w, struct walk_frame *f)
{
	const struct cached_rules *rules = f->rules;
	bool ra_undefined = false, signal = false;
	enum unwind_end end;

	if (!rules || rules->cfa == UNWIND_CFA_END)
		return no_rules(w, f);
	if (rules->found != UNWIND_FOUND_CFI)
		return STEP_REJECTED;
	if (rules->plain) {
		f->caller = f->regs;
		end = step_plain(rules, w->view, &f->caller.ip, &f->caller.sp, &f->caller.bp,
				 &f->caller.bp_valid);
		/* only plain rules: the walk has always kept the DRAP caller's sp from them */
		if (f->leaf && end == UNWIND_END_COMPLETE && rules->cfa == UNWIND_CFA_SP_OFFSET &&
		    rules->cfa_offset == 8)
			w->drap_caller_sp = f->caller.sp;
	} else if (rules->cfa == UNWIND_CFA_BX_OFFSET) {
		end = step_bx(w, rules, f->index, &f->regs, &f->caller, &ra_undefined, &signal);
	} else {
		end = step(w, rules, &f->regs, f->leaf, &f->caller, &ra_undefined, &signal);
	}
	if (end != UNWIND_END_COMPLETE) {
		f->end = end;
		return STEP_STOP;
	}
	if (ra_undefined)
		return STEP_OUTERMOST;
	f->caller_exact = signal; /* a signal frame's caller resumes at its exact pc */
	return STEP_FOUND;
}
