/* Go's record of a stack switch, read when a sample of a process userspace recognised as Go
 * (common/go.h) is taken on a thread's g0 stack: the goroutine the thread runs (m.curg),
 * where its switch saved it (curg.sched: sp, pc, bp) and its stack from there, which
 * changes as soon as the switch returns. A thread on its goroutine costs three reads (g,
 * g.m, m.curg); other processes cost a map lookup. Everything read through the process's
 * memory is untrusted: each read may fail, and the copy is bounded. Included by
 * hprof.bpf.c. */
#ifndef HPROF_GO_BPF_H
#define HPROF_GO_BPF_H

#include "go.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct hprof_go_proc);
} go_procs SEC(".maps");

/* Set by userspace once it told the kernel of a Go process: until then no sample pays for
 * the lookup in go_procs. */
bool go_procs_known = false;

static __always_inline bool go_read_word(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr) == 0;
}

/* The g the thread runs and its m's curg; false when either cannot be read. */
static __always_inline bool go_current(const struct hprof_go_proc *proc, __u64 *g, __u64 *m,
				       __u64 *curg)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return go_read_word(task->thread.fsbase + (__s64)proc->tls_g, g) && *g &&
	       go_read_word(*g + proc->g_m, m) && *m && go_read_word(*m + proc->m_curg, curg);
}

/* Fills go (and the goroutine's stack at dst) for a thread on its g0 stack whose m runs
 * curg: status and what it read. */
static __always_inline void go_read_switch(const struct hprof_go_proc *proc, __u64 g, __u64 m,
					   __u64 curg, struct hprof_go_switch *go, __u8 *dst)
{
	__u64 g0, hi, len;

	if (!go_read_word(m + proc->m_g0, &g0)) {
		go->status = HPROF_GO_READ_FAILED;
		return;
	}
	if (g != g0) {
		go->status = HPROF_GO_NOT_G0;
		return;
	}
	/* where the switches set rsp: also where a g0 stack that ends at one ends */
	if (!go_read_word(g0 + proc->g_sched, &go->g0_sched_sp)) {
		go->status = HPROF_GO_READ_FAILED;
		return;
	}
	if (curg == 0) {
		go->status = HPROF_GO_NO_CURG;
		return;
	}
	if (!go_read_word(curg + proc->g_sched, &go->sched_sp) ||
	    !go_read_word(curg + proc->g_sched + 8, &go->sched_pc) ||
	    !go_read_word(curg + proc->g_sched + proc->gobuf_bp, &go->sched_bp) ||
	    !go_read_word(curg + proc->g_stack_hi, &hi)) {
		go->status = HPROF_GO_READ_FAILED;
		return;
	}
	if (go->sched_sp == 0 || go->sched_sp >= hi) {
		go->status = HPROF_GO_BAD_SCHED;
		return;
	}
	len = hi - go->sched_sp;
	if (len > HPROF_GO_STACK_MAX)
		len = HPROF_GO_STACK_MAX;
	barrier_var(len);
	len &= 2 * HPROF_GO_STACK_MAX - 1;
	if (len > HPROF_GO_STACK_MAX ||
	    bpf_probe_read_user(dst, len, (void *)go->sched_sp) != 0) {
		go->status = HPROF_GO_READ_FAILED;
		return;
	}
	go->len = len;
	go->status = HPROF_GO_OK;
}

/* For a sample of a known Go process taken off its goroutine: sets SAMPLE_GO_SWITCH and
 * writes struct hprof_go_switch and the goroutine's stack at dst (room for
 * HPROF_GO_MAX_BYTES). Returns the bytes written. */
static __always_inline __u32 read_go_switch(struct hprof_sample *s, __u8 *dst)
{
	struct hprof_go_proc *proc;
	struct hprof_go_switch *go = (struct hprof_go_switch *)dst;
	__u64 start, g, m, curg;

	if (!go_procs_known)
		return 0;
	proc = bpf_map_lookup_elem(&go_procs, &s->pid);
	if (!proc)
		return 0;
	/* an entry userspace wrote (0) is claimed by the process's next sample */
	start = bpf_get_current_task_btf()->group_leader->start_time;
	if (proc->start_time == 0)
		proc->start_time = start;
	if (proc->start_time != start)
		return 0;
	__builtin_memset(go, 0, sizeof(*go));
	if (!go_current(proc, &g, &m, &curg))
		go->status = HPROF_GO_READ_FAILED;
	else if (g == curg)
		return 0; /* on its goroutine: the stack copy holds it */
	else
		go_read_switch(proc, g, m, curg, go, dst + sizeof(*go));
	s->flags |= SAMPLE_GO_SWITCH;
	return sizeof(*go) + go->len;
}

#endif
