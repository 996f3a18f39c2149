/* hprof's demo workload (make run): a small batch job with a few phases, so the flamegraph
 * has some shape: parsing, hashing, sorting through libc's qsort, and writing through the
 * kernel. Usage: fp_demo [SECONDS] (default 5). Built with frame pointers. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NR_RECORDS 20000

struct record {
	uint64_t key;
	uint32_t hash;
	char text[40];
};

static struct record records[NR_RECORDS];
static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t next_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

__attribute__((noinline)) static void generate_records(uint64_t *state)
{
	for (int i = 0; i < NR_RECORDS; i++) {
		records[i].key = next_random(state);
		snprintf(records[i].text, sizeof(records[i].text), "record-%llu",
			 (unsigned long long)(records[i].key % 1000003));
	}
}

__attribute__((noinline)) static uint64_t parse_number(const char *text)
{
	uint64_t v = 0;

	for (; *text; text++) {
		if (*text >= '0' && *text <= '9')
			v = v * 10 + (uint64_t)(*text - '0');
	}
	return v;
}

__attribute__((noinline)) static void parse_records(void)
{
	for (int i = 0; i < NR_RECORDS; i++)
		sink += parse_number(records[i].text);
}

__attribute__((noinline)) static uint32_t fnv1a(const char *text)
{
	uint32_t h = 2166136261u;

	for (int round = 0; round < 16; round++) {
		for (const char *p = text; *p; p++)
			h = (h ^ (uint8_t)*p) * 16777619u;
	}
	return h;
}

__attribute__((noinline)) static void hash_records(void)
{
	for (int i = 0; i < NR_RECORDS; i++)
		records[i].hash = fnv1a(records[i].text);
}

__attribute__((noinline)) static int compare_records(const void *a, const void *b)
{
	const struct record *x = a, *y = b;

	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

__attribute__((noinline)) static void sort_records(void)
{
	qsort(records, NR_RECORDS, sizeof(records[0]), compare_records);
}

__attribute__((noinline)) static void write_report(int fd)
{
	char line[64];

	for (int i = 0; i < NR_RECORDS; i += 4) {
		int n = snprintf(line, sizeof(line), "%u %s\n", records[i].hash, records[i].text);

		if (write(fd, line, (size_t)n) < 0)
			exit(1);
	}
}

__attribute__((noinline)) static void run_batch(uint64_t *state, int fd)
{
	generate_records(state);
	parse_records();
	hash_records();
	sort_records();
	write_report(fd);
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5.0;
	uint64_t state = 88172645463325252ull;
	struct timespec start;
	int fd = open("/dev/null", O_WRONLY);
	unsigned batches = 0;

	if (fd < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (seconds_since(&start) < seconds) {
		run_batch(&state, fd);
		batches++;
	}
	printf("fp_demo: %u batches in %.1f s\n", batches, seconds);
	return 0;
}
