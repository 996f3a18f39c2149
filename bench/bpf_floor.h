/* What bench/bpf_floor.bpf.c's programs do per run, shared with bench/bench_bpf_floor.c,
 * which divides their times by these. */
#ifndef HPROF_BENCH_BPF_FLOOR_H
#define HPROF_BENCH_BPF_FLOOR_H

/* bpf_loop iterations of floor_loop */
#define FLOOR_ITERATIONS 256
/* hash map lookups of floor_lookup */
#define FLOOR_LOOKUPS 16
/* 8-byte reads of floor_read_word, each from its own cache line of the buffer */
#define FLOOR_READS 16
#define FLOOR_READ_STRIDE 64
/* bytes of floor_read_block's one read; the buffer holds at least this many */
#define FLOOR_BLOCK 4096

#endif
