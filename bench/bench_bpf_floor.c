/* This machine's floor under a BPF sample handler's time (bench/bpf_floor.bpf.c): ns per
 * bpf_loop iteration, per hash map lookup, per 8-byte read of user memory and per KiB of a
 * 4-KiB read (cached lines: a floor), each program run REPEAT times by
 * BPF_PROG_TEST_RUN, the best of ROUNDS, the empty program's time taken off. A call and a
 * return cost what the CPU's mitigations make them cost (SRSO's Safe RET sends every return
 * through a thunk): figures of hprof's handler compare across machines only beside these.
 *
 * usage: bench_bpf_floor [-n REPEAT] [-r ROUNDS] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench/bpf_floor.skel.h"
#include "bpf_floor.h"

/* what the read programs read: nonzero words, so that a run that read them says XDP_PASS */
static unsigned char user_buf[FLOOR_BLOCK] __attribute__((aligned(4096)));

_Static_assert(FLOOR_READS * FLOOR_READ_STRIDE <= FLOOR_BLOCK, "the word reads stay in the buffer");

/* ns a run of prog takes, the best of rounds; -1 when it cannot be run or did not do what
 * it was run for (its return not XDP_PASS) */
static double run_ns(const struct bpf_program *prog, unsigned repeat, unsigned rounds)
{
	unsigned char packet[64] = { 0 };
	double best = -1;

	for (unsigned r = 0; r < rounds; r++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = packet, .data_size_in = sizeof(packet),
			    .repeat = repeat);

		if (bpf_prog_test_run_opts(bpf_program__fd(prog), &opts))
			return -1;
		if (opts.retval != XDP_PASS) {
			errno = EIO;
			return -1;
		}
		if (best < 0 || opts.duration < best)
			best = opts.duration;
	}
	return best;
}

int main(int argc, char **argv)
{
	unsigned repeat = 20000, rounds = 5;
	struct bpf_floor *skel;
	double empty, loop, lookup, word, block;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			repeat = (unsigned)strtoul(optarg, NULL, 10);
		else if (opt == 'r')
			rounds = (unsigned)strtoul(optarg, NULL, 10);
		else {
			fprintf(stderr, "usage: bench_bpf_floor [-n REPEAT] [-r ROUNDS]\n");
			return 2;
		}
	}
	if (repeat == 0 || rounds == 0) {
		fprintf(stderr, "bench_bpf_floor: REPEAT and ROUNDS must be at least 1\n");
		return 2;
	}
	skel = bpf_floor__open_and_load();
	if (!skel) {
		fprintf(stderr, "bench_bpf_floor: cannot load bpf_floor.bpf.o: %s\n", strerror(errno));
		return 1;
	}
	memset(user_buf, 0x5a, sizeof(user_buf));
	skel->bss->user_src = (unsigned long)user_buf;
	empty = run_ns(skel->progs.floor_empty, repeat, rounds);
	loop = run_ns(skel->progs.floor_loop, repeat, rounds);
	lookup = run_ns(skel->progs.floor_lookup, repeat, rounds);
	word = run_ns(skel->progs.floor_read_word, repeat, rounds);
	block = run_ns(skel->progs.floor_read_block, repeat, rounds);
	bpf_floor__destroy(skel);
	if (empty < 0 || loop < 0 || lookup < 0 || word < 0 || block < 0) {
		fprintf(stderr, "bench_bpf_floor: BPF_PROG_TEST_RUN failed: %s\n", strerror(errno));
		return 1;
	}
	printf("bpf_loop iteration %.1f ns, hash map lookup %.1f ns, user read of 8 bytes %.1f ns, "
	       "of %d KiB %.0f ns (cached; empty run %.0f ns; best of %u x %u runs)\n",
	       (loop - empty) / FLOOR_ITERATIONS, (lookup - empty) / FLOOR_LOOKUPS,
	       (word - empty) / FLOOR_READS, FLOOR_BLOCK / 1024, block - empty, empty, rounds, repeat);
	return 0;
}
