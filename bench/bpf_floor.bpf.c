// SPDX-License-Identifier: GPL-2.0
/* What this machine's kernel takes for the BPF constructs hprof's sample handler is built
 * from, run by BPF_PROG_TEST_RUN (bench/bench_bpf_floor.c): an iteration of bpf_loop (a
 * call of its callback, a BPF subprogram), a hash map lookup (a helper call), and a read
 * of user memory, a word and a block (bpf_probe_read_user, what reading a process's
 * Python frames is made of). Kernels that return through a thunk (SRSO's Safe RET,
 * retpolines) pay for every call and return: these floors tell a sample handler's figures
 * on one machine from another's. The test run repeats a program over the same memory, so
 * its reads are of cached lines: a floor under the handler's, whose are not all cached. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf_floor.h"

/* The bench's buffer (at least FLOOR_BLOCK bytes), set before the runs: BPF_PROG_TEST_RUN
 * runs a program in the task that calls it, so a user read reads the bench's memory. */
__u64 user_src;

struct floor_block {
	__u8 bytes[FLOOR_BLOCK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_block);
} floor_blocks SEC(".maps");

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

SEC("xdp")
int floor_read_word(struct xdp_md *ctx)
{
	__u64 sum = 0, word;

#pragma unroll
	for (__u32 i = 0; i < FLOOR_READS; i++) {
		if (bpf_probe_read_user(&word, sizeof(word),
					(void *)(user_src + i * FLOOR_READ_STRIDE)))
			return XDP_ABORTED;
		sum += word;
	}
	return sum ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int floor_read_block(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct floor_block *block = bpf_map_lookup_elem(&floor_blocks, &zero);

	if (!block || bpf_probe_read_user(block->bytes, FLOOR_BLOCK, (void *)user_src))
		return XDP_ABORTED;
	return block->bytes[0] ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
