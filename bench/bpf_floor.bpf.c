// SPDX-License-Identifier: GPL-2.0
/* What this machine's kernel takes for the BPF constructs hprof's sample handler is built
 * from, run by BPF_PROG_TEST_RUN (bench/bench_bpf_floor.c): an iteration of bpf_loop (a
 * call of its callback, a BPF subprogram) and a hash map lookup (a helper call). Kernels
 * that return through a thunk (SRSO's Safe RET, retpolines) pay for every call and return:
 * these floors tell a sample handler's figures on one machine from another's. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define FLOOR_ITERATIONS 256
#define FLOOR_LOOKUPS 16

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} floor_hash SEC(".maps");

static long add_index(__u64 i, void *ctx)
{
	*(__u64 *)ctx += i;
	return 0;
}

SEC("xdp")
int floor_empty(struct xdp_md *ctx)
{
	return XDP_PASS;
}

SEC("xdp")
int floor_loop(struct xdp_md *ctx)
{
	__u64 sum = 0;

	bpf_loop(FLOOR_ITERATIONS, add_index, &sum, 0);
	return sum ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int floor_lookup(struct xdp_md *ctx)
{
	__u64 found = 0;

#pragma unroll
	for (__u32 i = 0; i < FLOOR_LOOKUPS; i++) {
		__u32 key = i * 7919; /* absent keys: a lookup's whole walk of its bucket */

		if (bpf_map_lookup_elem(&floor_hash, &key))
			found++;
	}
	return found ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
