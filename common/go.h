/* Go's record of a stack switch, read by the BPF program at sample time: what userspace tells
 * the kernel of each Go process (BPF map go_procs, by tgid), and the section a sample of a
 * thread running on its g0 stack carries. Shared by kernel/go.bpf.h and user/go/.
 *
 * Go runs runtime work (the collector's assists, mark work, the scheduler) on each thread's
 * g0 stack, entered by systemstack, mcall or morestack, which first save where the
 * goroutine was in its g.sched (gobuf: sp, pc, bp). That goroutine is the thread's m.curg;
 * its stack changes as soon as the switch returns, so it is read here, while the sample's
 * thread is still on g0. */
#ifndef HPROF_GO_H
#define HPROF_GO_H

#include "types.h"

/* Bytes of the goroutine's stack copied from its sched.sp at most (to its stack.hi): its
 * frames from systemstack's caller to runtime.goexit. */
#define HPROF_GO_STACK_MAX 8192

/* BPF map go_procs value: offsets in bytes of the fields the kernel reads, for the Go
 * version userspace found in the binary. The kernel trusts nothing it reads through them. */
struct hprof_go_proc {
	__u64 start_time; /* the process's task start time; userspace writes 0 (claimed by its
			   * next sample) */
	__s32 tls_g;      /* the current g's slot, from the fs base (-8 when Go links itself) */
	__u32 g_m;        /* g.m */
	__u32 g_sched;    /* g.sched: gobuf sp at +0, pc at +8, bp at gobuf_bp */
	__u32 gobuf_bp;   /* gobuf.bp */
	__u32 g_stack_hi; /* g.stack.hi */
	__u32 m_g0;       /* m.g0 */
	__u32 m_curg;     /* m.curg */
	__u32 pad;
};
_Static_assert(sizeof(struct hprof_go_proc) == 40, "go_procs value is shared with BPF");

/* What the kernel found; hprof_go_switch.status. */
enum hprof_go_status {
	HPROF_GO_OK = 0,         /* curg's sched and stack window follow */
	HPROF_GO_READ_FAILED,    /* g, m, curg or its stack could not be read */
	HPROF_GO_NOT_G0,         /* the thread runs neither its curg nor its g0 (gsignal) */
	HPROF_GO_NO_CURG,        /* on g0 with no goroutine (the scheduler, sysmon) */
	HPROF_GO_BAD_SCHED,      /* curg's saved sp lies outside its stack */
	HPROF_GO_STATUS_COUNT,
};

/* With SAMPLE_GO_SWITCH a record ends with this header, then len bytes of the goroutine's
 * stack from sched_sp (unaligned). */
struct hprof_go_switch {
	__u64 sched_sp, sched_pc, sched_bp; /* curg.sched */
	/* where a switch sets rsp on g0: its frame's sp lies just below (also with
	 * HPROF_GO_NO_CURG) */
	__u64 g0_sched_sp;
	__u32 len;         /* bytes of stack after this header (HPROF_GO_STACK_MAX at most) */
	__u32 status;      /* enum hprof_go_status; len is 0 unless HPROF_GO_OK */
};
_Static_assert(sizeof(struct hprof_go_switch) == 40, "hprof_go_switch is shared with BPF");
_Static_assert((HPROF_GO_STACK_MAX & (HPROF_GO_STACK_MAX - 1)) == 0, "the window is masked");

#define HPROF_GO_MAX_BYTES (sizeof(struct hprof_go_switch) + HPROF_GO_STACK_MAX)

#endif
