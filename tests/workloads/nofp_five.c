/* Five hot functions with fixed shares of the work, for hprof diff: work_a does 10% of it,
 * work_b 15%, work_c 20%, work_d 25%, work_e 30%, so those are their shares of samples.
 * Naming one of them makes it do 1.5x its work (work_e: from 30% to 45/115 = 39.1%). The
 * work comes in short calls (~16 us), each of a function drawn at random by its share, its
 * length drawn around its mean: what runs when one sample is taken says nothing of what
 * runs at the next (~60 calls later), so a run's shares vary as independent draws do, which
 * is what hprof diff's test assumes. (Calls in a fixed order, a round at a time, kept
 * samples a round apart in step: runs then differed by more than that, and unchanged reruns
 * failed the gate.) Runs for SECONDS of its own CPU time, so a loaded machine gives the
 * same number of samples, only later. Usage: nofp_five [SECONDS] [work_a|...|work_e]. No
 * frame pointers. */
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

/* Calls a round makes between two looks at the clock (a system call) */
#define CALLS_PER_ROUND 25
/* A call's mean length, in 1/16 units (4 units: ~16 us) */
#define CALL_SIXTEENTHS 64

/* CALLS_PER_ROUND calls, each of hot function i with probability hot[i].units / 100, for
 * between 1/2 and 3/2 of CALL_SIXTEENTHS times stretch[i] (3/2 for the slowed one). */
static HOT uint64_t round_of_work(uint64_t x, const unsigned *stretch_halves, uint64_t *rng)
{
	for (int call = 0; call < CALLS_PER_ROUND; call++) {
		unsigned pick = (unsigned)(next_random(rng) % 100), i = 0, below = hot[0].units;
		unsigned sixteenths;

		while (pick >= below && i + 1 < NR_HOT)
			below += hot[++i].units;
		sixteenths = CALL_SIXTEENTHS / 2 + (unsigned)(next_random(rng) % (CALL_SIXTEENTHS + 1));
		x = hot[i].fn(x, sixteenths * stretch_halves[i] / 2);
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
	/* each function's calls' length, in halves: 2, or 3 for the one slowed */
	unsigned stretch_halves[NR_HOT];
	uint64_t x = 88172645463325252ull, rng = 0x9e3779b97f4a7c15ull, rounds = 0;
	bool slowed = argc <= 2;

	for (size_t i = 0; i < NR_HOT; i++) {
		stretch_halves[i] = 2;
		/* 1.5x the work: its share grows from u/100 to 1.5u/(100 + 0.5u) */
		if (argc > 2 && strcmp(argv[2], hot[i].name) == 0) {
			stretch_halves[i] = 3;
			slowed = true;
		}
	}
	if (!slowed) {
		fprintf(stderr, "nofp_five: no hot function named %s\n", argv[2]);
		return 2;
	}
	end = cpu_seconds() + seconds;
	while (cpu_seconds() < end) {
		x = round_of_work(x, stretch_halves, &rng);
		rounds++;
	}
	sink = x;
	printf("nofp_five: %llu rounds\n", (unsigned long long)rounds);
	return 0;
}
