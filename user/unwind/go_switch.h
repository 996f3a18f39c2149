/* A Go thread's g0 stack joined to the goroutine it ran runtime work for. systemstack,
 * mcall and morestack move rsp to the thread's g0 stack, and the walk of that stack ends at
 * them, complete, as Go's own traceback ends it. The kernel reads where the switch left the
 * goroutine (m.curg's g.sched: sp, pc, bp) and copies its stack from there (common/go.h);
 * the goroutine's frames, walked over that copy, go under the switch's frame, as Go's pprof
 * shows them: ...;main.churn;runtime.mallocgc;runtime.gcAssistAlloc;runtime.systemstack;
 * runtime.gcAssistAlloc.func1;... Each sample that carries the kernel's record is counted
 * under what became of it. */
#ifndef HPROF_UNWIND_GO_SWITCH_H
#define HPROF_UNWIND_GO_SWITCH_H

#include <stdbool.h>
#include <stddef.h>

#include "sample.h"
#include "unwind/candidates.h"

enum go_switch_outcome {
	GO_SWITCH_JOINED = 0,       /* the goroutine's frames joined under the switch */
	GO_SWITCH_READ_FAILED,      /* the kernel could not read g, m, curg or its stack */
	GO_SWITCH_NOT_G0,           /* the thread ran its signal g */
	GO_SWITCH_NO_CURG,          /* g0 without a goroutine (the scheduler, sysmon): whole as it is */
	GO_SWITCH_BAD_SCHED,        /* curg's saved sp lay outside its stack */
	GO_SWITCH_G0_TRUNCATED,     /* the g0 stack's own walk was incomplete */
	GO_SWITCH_NOT_AT_SWITCH,    /* the g0 stack did not end at a switch's frame at g0's base */
	GO_SWITCH_GOROUTINE_INCOMPLETE, /* the goroutine's walk did not reach its start */
	GO_SWITCH_COUNT,
};

const char *go_switch__outcome_name(enum go_switch_outcome o);

/* For a sample with the kernel's record (SAMPLE_GO_SWITCH): joins the goroutine's frames
 * after the n frames of its g0 stack in out (room for max; complete: the g0 stack is) and
 * returns what became of it. GO_SWITCH_COUNT for a sample without the record. */
enum go_switch_outcome go_switch__join(struct candidate_tools *t, const struct hybrid_space *space,
				       const struct hprof_sample *sample,
				       const struct stack_copy *g0_stack, bool complete,
				       struct unwind_frame *out, uint32_t *n, uint32_t max);

/* A g0 stack teaches its thread's base (lesson.base) no lower than g0's sched.sp, where
 * every switch set rsp: a walk that ended at a switch's frame ends just below it (mcall's
 * frame lies 8 bytes below the return address into systemstack, which a copy to mcall's
 * would leave out), and one that ended at a vDSO call on g0 (nanotime1) ends deep in the
 * stack. Leaves *base as it is otherwise (a scheduler's stack ends above it). */
void go_switch__g0_base(const struct hprof_sample *sample, uint64_t *base);

#endif
