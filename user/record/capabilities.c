#include "record/capabilities.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

typedef uint64_t capset_t;

#define CAP(c) ((capset_t)1 << (c))

static int get_caps(capset_t *effective, capset_t *permitted)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capget, &header, data) != 0)
		return -errno;
	*effective = data[0].effective | (capset_t)data[1].effective << 32;
	*permitted = data[0].permitted | (capset_t)data[1].permitted << 32;
	return 0;
}

/* Sets the effective and permitted sets; the inheritable set is emptied. */
static int set_caps(capset_t effective, capset_t permitted)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {
		{ (uint32_t)effective, (uint32_t)permitted, 0 },
		{ (uint32_t)(effective >> 32), (uint32_t)(permitted >> 32), 0 },
	};

	return syscall(SYS_capset, &header, data) != 0 ? -errno : 0;
}

/* The highest capability this kernel knows. */
static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int last = CAP_LAST_CAP;

	if (f) {
		if (fscanf(f, "%d", &last) != 1)
			last = CAP_LAST_CAP;
		fclose(f);
	}
	return last;
}

/* Whether a map can still be read with only the effective set asked for. */
static bool map_readable_with(capset_t effective, capset_t permitted, int map_fd)
{
	uint32_t key = 0;
	uint8_t value[64];

	if (map_fd < 0 || set_caps(effective, permitted))
		return true;
	/* a missing key (ENOENT) answers as well as a found one: only EPERM matters */
	return bpf_map_lookup_elem(map_fd, &key, value) == 0 || errno != EPERM;
}

int capabilities__drop_unneeded(int probe_map_fd)
{
	capset_t effective = 0, permitted = 0, keep, bpf;
	int err;

	err = get_caps(&effective, &permitted);
	if (err)
		return err;
	keep = CAP(CAP_SYS_PTRACE) | CAP(CAP_DAC_READ_SEARCH) | CAP(CAP_DAC_OVERRIDE) |
	       CAP(CAP_FOWNER) | CAP(CAP_CHOWN);
	keep |= last_cap() >= CAP_CHECKPOINT_RESTORE ? CAP(CAP_CHECKPOINT_RESTORE)
						      : CAP(CAP_SYS_ADMIN);
	keep &= permitted;
	/* Try without CAP_BPF first: only the effective set changes, so it can come back. */
	bpf = permitted & (CAP(CAP_BPF) | CAP(CAP_SYS_ADMIN));
	if (!map_readable_with(keep & effective, permitted, probe_map_fd))
		keep |= bpf;
	err = set_caps(keep & effective, keep);
	if (!err)
		prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	return err;
}

/* Says which of the capabilities BPF profiling needs are missing; 0 when none are. */
int capabilities__check_for_profiling(void)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	bool sys_admin, bpf, perfmon;

	if (syscall(SYS_capget, &header, data) != 0)
		return 0; /* cannot tell: let the load report what fails */
#define HAS_CAP(c) (data[(c) / 32].effective & (1u << ((c) % 32)))
	sys_admin = HAS_CAP(CAP_SYS_ADMIN);
	bpf = sys_admin || HAS_CAP(CAP_BPF);
	perfmon = sys_admin || HAS_CAP(CAP_PERFMON);
#undef HAS_CAP
	if (bpf && perfmon)
		return 0;
	fprintf(stderr, "hprof: missing capability %s%s%s (run as root, or grant CAP_BPF and CAP_PERFMON)\n",
		bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "", perfmon ? "" : "CAP_PERFMON");
	return -EPERM;
}
