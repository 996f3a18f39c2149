/* JIT workload: main -> run_jit -> two functions of x86-64 machine code written into an
 * anonymous executable mapping, each with a frame-pointer prologue and a counted loop.
 * Usage: fp_jit [SECONDS] [--perf-map | --perf-map-at-exit | --perf-map-owner UID |
 *                         --perf-map-fifo | --code-file PATH]
 *   --perf-map        writes /tmp/perf-PID.map naming the first function jit_hot_loop (the
 *                     second has no entry), after a stale entry for the same range and a
 *                     malformed line
 *   --perf-map-at-exit the same file, written only once the work is done (as HotSpot's
 *                     -XX:+DumpPerfMapAtExit does): the samples come before their names
 *   --perf-map-owner  the same file, then chowned to UID
 *   --perf-map-fifo   a FIFO at /tmp/perf-PID.map instead
 *   --code-file       the code is written into a private mapping of PATH (/dev/zero), not
 *                     of anonymous memory; no map file
 * Prints "map /tmp/perf-PID.map" first, so that a test can remove the file. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workload.h"

/* push %rbp; mov %rsp,%rbp; mov %rdi,%rax; test %rax,%rax; je done;
 * loop: dec %rax; jne loop; done: pop %rbp; ret */
static const unsigned char jit_loop_code[] = {
	0x55,
	0x48, 0x89, 0xe5,
	0x48, 0x89, 0xf8,
	0x48, 0x85, 0xc0,
	0x74, 0x05,
	0x48, 0xff, 0xc8,
	0x75, 0xfb,
	0x5d,
	0xc3,
};

/* The second function's offset in the mapping: far enough to be a function of its own. */
#define UNNAMED_OFFSET 256

typedef void (*jit_fn)(unsigned long rounds);

static volatile unsigned long sink;

__attribute__((noinline)) void run_jit(jit_fn fn, unsigned long rounds)
{
	fn(rounds);
	sink++;
}

static int write_perf_map(const char *path, uintptr_t named, int owner)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	/* The later entry for the same range wins: perf's rule, as JITs reuse memory. */
	fprintf(f, "%lx %zx stale_name\n", (unsigned long)named, sizeof(jit_loop_code));
	fprintf(f, "this line is not a perf map line\n");
	fprintf(f, "0x%lx 0x%zx jit_hot_loop\n", (unsigned long)named, sizeof(jit_loop_code));
	if (owner >= 0 && fchown(fileno(f), (uid_t)owner, (gid_t)-1) < 0) {
		fclose(f);
		return -errno;
	}
	return fclose(f) == 0 ? 0 : -errno;
}

static int make_map_file(const char *mode, const char *owner, uintptr_t named)
{
	char path[64];

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	printf("map %s\n", path);
	fflush(stdout);
	unlink(path);
	if (strcmp(mode, "--perf-map") == 0)
		return write_perf_map(path, named, -1);
	if (strcmp(mode, "--perf-map-at-exit") == 0)
		return 0; /* written by main once the work is done */
	if (strcmp(mode, "--perf-map-owner") == 0 && owner)
		return write_perf_map(path, named, atoi(owner));
	if (strcmp(mode, "--perf-map-fifo") == 0)
		return mkfifo(path, 0644) < 0 ? -errno : 0;
	return -EINVAL;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start;
	unsigned char *code;
	jit_fn named, unnamed;
	unsigned seed = 1;

	if (argc > 3 && strcmp(argv[2], "--code-file") == 0) {
		int fd = open(argv[3], O_RDWR);

		code = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		argc = 2; /* no map file */
	} else {
		code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (code == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(code, jit_loop_code, sizeof(jit_loop_code));
	memcpy(code + UNNAMED_OFFSET, jit_loop_code, sizeof(jit_loop_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) < 0) {
		perror("mprotect");
		return 1;
	}
	named = (jit_fn)code;
	unnamed = (jit_fn)(code + UNNAMED_OFFSET);
	if (argc > 2) {
		int err = make_map_file(argv[2], argc > 3 ? argv[3] : NULL, (uintptr_t)code);

		if (err) {
			fprintf(stderr, "fp_jit: %s: %s\n", argv[2], strerror(-err));
			return 1;
		}
	}
	start = workload_now();
	/* Calls of well under a sample period, of varying length, so that the two functions
	 * share the samples evenly instead of locking onto the sampling's phase. */
	while (workload_now() - start < seconds) {
		seed = seed * 1103515245u + 12345u;
		run_jit(named, 200 * 1000 + (seed >> 8) % (200 * 1000));
		run_jit(unnamed, 200 * 1000 + (seed >> 12) % (200 * 1000));
	}
	if (argc > 2 && strcmp(argv[2], "--perf-map-at-exit") == 0) {
		char path[64];
		int err;

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
		err = write_perf_map(path, (uintptr_t)code, -1);
		if (err) {
			fprintf(stderr, "fp_jit: %s: %s\n", path, strerror(-err));
			return 1;
		}
	}
	printf("done %lu\n", sink & 1);
	return 0;
}
