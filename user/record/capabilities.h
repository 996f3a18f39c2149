/* Capabilities a recording gives up once its BPF program is loaded and its perf events are
 * open. What it keeps, and why:
 *   CAP_SYS_PTRACE        /proc/PID/maps, /proc/PID/root and /proc/PID/map_files of other
 *                         users' processes (ptrace read access)
 *   CAP_CHECKPOINT_RESTORE opening files through /proc/PID/map_files (CAP_SYS_ADMIN instead
 *                         on kernels older than 5.9, which have no such capability)
 *   CAP_DAC_READ_SEARCH   reading binaries and perf map files whatever their mode
 *   CAP_DAC_OVERRIDE, CAP_FOWNER  writing outputs where root could when the run started
 *                         (replacing a file the invoking user owns in a sticky /tmp)
 *   CAP_CHOWN             giving outputs to the invoking user under sudo
 *   CAP_BPF, CAP_SYS_ADMIN only where the kernel still wants one of them to read and update
 *                         the BPF maps through descriptors hprof holds (before Linux 6.5,
 *                         with unprivileged BPF disabled); probed, not assumed
 * Everything else (CAP_PERFMON, CAP_SYS_MODULE, CAP_NET_*, CAP_SETUID, CAP_KILL, ...) goes
 * from the effective, permitted and inheritable sets. The command hprof runs was forked
 * before and keeps what it had. */
#ifndef HPROF_RECORD_CAPABILITIES_H
#define HPROF_RECORD_CAPABILITIES_H

/* probe_map_fd: a BPF map with 4-byte keys and values of at most 64 bytes, read as the
 * probe. Returns 0 or -errno (capset failed, and
 * nothing was dropped). */
int capabilities__drop_unneeded(int probe_map_fd);

/* Says on stderr which of the capabilities BPF profiling needs (CAP_BPF, CAP_PERFMON, or
 * CAP_SYS_ADMIN for both) are missing. Returns 0 when none are, else -EPERM. */
int capabilities__check_for_profiling(void);

#endif
