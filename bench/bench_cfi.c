/* CFI compiler speed and memory: per binary, FDEs, rows, bytes of CFI, compile time (median
 * of repeated runs, monotonic clock, pinned to one CPU), rows per second, table bytes per
 * row, and `readelf -wF` on the same file in the same run, with the ratios against the
 * anchors: parca-agent's compiler ~3M rows/s, hprof's goal >= 20M rows/s.
 *
 * usage: bench_cfi [-n RUNS] [-r READELF_RUNS] FILE... */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cfi/unwind_table.h"

#define PARCA_ROWS_PER_SEC 3e6  /* parca-agent's Go compiler: libpython3.10 in 17 ms */
#define GOAL_ROWS_PER_SEC 20e6

extern char **environ;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU time of this thread: the per-core figure, robust to other load on the machine */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Runs readelf -wF FILE, counting the rows it prints; returns seconds or -1. */
static double time_readelf(const char *path, uint64_t *rows)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = { "readelf", "-wF", (char *)path, NULL };
	int pipefd[2], status;
	char buf[1 << 16];
	bool at_line_start = true, hex_run = true;
	size_t col = 0;
	uint64_t n = 0;
	ssize_t got;
	pid_t pid;
	double t0;

	if (pipe(pipefd))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	t0 = now();
	if (posix_spawnp(&pid, "readelf", &fa, NULL, argv, environ)) {
		posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	/* a row line is 16 hex digits and a space: count those */
	while ((got = read(pipefd[0], buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < got; i++) {
			char c = buf[i];

			if (c == '\n') {
				at_line_start = true;
				col = 0;
				hex_run = true;
				continue;
			}
			if (at_line_start) {
				if (col < 16)
					hex_run &= (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
				else if (col == 16) {
					if (hex_run && c == ' ')
						n++;
					at_line_start = false;
				}
				col++;
			}
		}
	}
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	*rows = n;
	return now() - t0;
}

static int bench_file(const char *path, int runs, int readelf_runs)
{
	double *t = calloc(runs, sizeof(*t)), *tcpu = calloc(runs, sizeof(*tcpu)), rt[16];
	struct unwind_table *table = NULL;
	struct unwind_stats st;
	uint64_t readelf_rows = 0;
	double tc, tcpu_med, tr = -1, rows_all;
	char err[512];
	int ret = 0;

	if (!t || !tcpu) {
		free(t);
		free(tcpu);
		return -ENOMEM;
	}
	for (int i = 0; i < runs; i++) {
		double t0 = now(), c0 = cpu_now();

		ret = unwind_table__from_file(path, UNWIND_SRC_ALL, &table, err, sizeof(err));
		t[i] = now() - t0;
		tcpu[i] = cpu_now() - c0;
		if (ret) {
			fprintf(stderr, "bench_cfi: %s\n", err);
			free(t);
			free(tcpu);
			return ret;
		}
		if (i + 1 < runs)
			unwind_table__free(table);
	}
	unwind_table__stats(table, &st);
	unwind_table__free(table);
	tc = median(t, runs);
	tcpu_med = median(tcpu, runs);
	if (readelf_runs > 16)
		readelf_runs = 16;
	for (int i = 0; i < readelf_runs; i++)
		rt[i] = time_readelf(path, &readelf_rows);
	if (readelf_runs > 0)
		tr = median(rt, readelf_runs);
	rows_all = (double)(st.rows + st.end_markers);
	printf("%s\n", path);
	printf("  fdes %llu, rows %llu (+%llu end markers), readelf rows %llu, cfi %.2f MB\n",
	       (unsigned long long)st.fdes, (unsigned long long)st.rows,
	       (unsigned long long)st.end_markers, (unsigned long long)readelf_rows,
	       st.cfi_bytes / 1e6);
	printf("  compile %.2f ms wall (median of %d): %.1fM table rows/s, %.1fM readelf rows/s\n",
	       tc * 1e3, runs, rows_all / tc / 1e6, readelf_rows / tc / 1e6);
	printf("  compile %.2f ms thread CPU (median of %d): %.1fM readelf rows/s\n",
	       tcpu_med * 1e3, runs, readelf_rows / tcpu_med / 1e6);
	printf("  memory %.2f bytes a row (%llu bytes for %llu rows incl. %llu wide)\n",
	       st.table_bytes / rows_all, (unsigned long long)st.table_bytes,
	       (unsigned long long)(st.rows + st.end_markers), (unsigned long long)st.wide_rows);
	if (tr > 0)
		printf("  readelf -wF %.0f ms (median of %d): hprof is %.0fx faster\n", tr * 1e3,
		       readelf_runs, tr / tc);
	printf("  vs parca-agent (3M rows/s): %.1fx wall, %.1fx CPU; goal 20M rows/s: %s wall, %s CPU\n",
	       readelf_rows / tc / PARCA_ROWS_PER_SEC, readelf_rows / tcpu_med / PARCA_ROWS_PER_SEC,
	       readelf_rows / tc >= GOAL_ROWS_PER_SEC ? "met" : "NOT met",
	       readelf_rows / tcpu_med >= GOAL_ROWS_PER_SEC ? "met" : "NOT met");
	free(t);
	free(tcpu);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = 7, readelf_runs = 3, opt, rc = 0;
	cpu_set_t one;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			runs = atoi(optarg);
		else if (opt == 'r')
			readelf_runs = atoi(optarg);
		else
			return 2;
	}
	if (runs < 1 || optind >= argc) {
		fprintf(stderr, "usage: bench_cfi [-n RUNS] [-r READELF_RUNS] FILE...\n");
		return 2;
	}
	/* one core: the figure is per-core throughput */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	for (int i = optind; i < argc; i++)
		if (bench_file(argv[i], runs, readelf_runs))
			rc = 1;
	return rc;
}
