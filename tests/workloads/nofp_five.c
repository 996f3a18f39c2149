/* Five hot functions with fixed shares of the work, for hprof diff: per round work_a does
 * 10 units on average, work_b 15, work_c 20, work_d 25, work_e 30, so their shares of
 * samples are 10/15/20/25/30%. Naming one of them makes it do 1.5x its work (work_e: from
 * 30% to 45/115 = 39.1%). Each call's length is drawn at random around its mean, so rounds
 * (~0.4 ms) never fall into step with the sampling period, which would bias the shares.
 * Runs for SECONDS of its own CPU time, so a loaded machine gives the same number of
 * samples, only later. Usage: nofp_five [SECONDS] [work_a|...|work_e]. No frame pointers. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "workload.h"

#define UNIT 2000 /* xorshift steps a unit: ~4 us */

static volatile uint64_t sink;

/* noipa: no clones (work_a.constprop.0) and no merging, so each keeps its name */
#define HOT __attribute__((noinline, noipa))

/* Each hot function spins inline in its own body, so its samples are its own (self). */
#define HOT_FUNCTION(name)                                          \
	HOT uint64_t name(uint64_t x, unsigned sixteenths)          \
	{                                                           \
		for (unsigned i = 0; i < sixteenths * (UNIT / 16); i++) { \
			x ^= x << 13;                               \
			x ^= x >> 7;                                \
			x ^= x << 17;                               \
		}                                                   \
		return x;                                           \
	}

uint64_t work_a(uint64_t x, unsigned sixteenths);
uint64_t work_b(uint64_t x, unsigned sixteenths);
uint64_t work_c(uint64_t x, unsigned sixteenths);
uint64_t work_d(uint64_t x, unsigned sixteenths);
uint64_t work_e(uint64_t x, unsigned sixteenths);
HOT_FUNCTION(work_a)
HOT_FUNCTION(work_b)
HOT_FUNCTION(work_c)
HOT_FUNCTION(work_d)
HOT_FUNCTION(work_e)

static const struct {
	const char *name;
	uint64_t (*fn)(uint64_t, unsigned);
	unsigned units;
} hot[] = {
	{ "work_a", work_a, 10 }, { "work_b", work_b, 15 }, { "work_c", work_c, 20 },
	{ "work_d", work_d, 25 }, { "work_e", work_e, 30 },
};

#define NR_HOT (sizeof(hot) / sizeof(hot[0]))

static uint64_t next_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* Each call does between 1/2 and 3/2 of its mean number of units (in 1/16 units). */
static HOT uint64_t round_of_work(uint64_t x, const unsigned *units, uint64_t *rng)
{
	for (size_t i = 0; i < NR_HOT; i++) {
		unsigned sixteenths = units[i] * 8 + (unsigned)(next_random(rng) % (units[i] * 16 + 1));

		x = hot[i].fn(x, sixteenths);
	}
	return x;
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 2.0), end;
	/* units of work per round, by function */
	unsigned units[NR_HOT];
	uint64_t x = 88172645463325252ull, rng = 0x9e3779b97f4a7c15ull, rounds = 0;
	bool slowed = argc <= 2;

	for (size_t i = 0; i < NR_HOT; i++) {
		units[i] = hot[i].units;
		/* 1.5x the work: its share grows from u/100 to 1.5u/(100 + 0.5u) */
		if (argc > 2 && strcmp(argv[2], hot[i].name) == 0) {
			units[i] = hot[i].units * 3 / 2;
			slowed = true;
		}
	}
	if (!slowed) {
		fprintf(stderr, "nofp_five: no hot function named %s\n", argv[2]);
		return 2;
	}
	end = cpu_seconds() + seconds;
	while (cpu_seconds() < end) {
		x = round_of_work(x, units, &rng);
		rounds++;
	}
	sink = x;
	printf("nofp_five: %llu rounds\n", (unsigned long long)rounds);
	return 0;
}
