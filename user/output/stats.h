/* The statistics behind hprof diff: is a change in a function's share of samples more than
 * sampling noise? Each profile's samples are taken as independent draws, so a function's
 * sample count is binomial in the profile's total. */
#ifndef HPROF_OUTPUT_STATS_H
#define HPROF_OUTPUT_STATS_H

#include <stdint.h>

/* z with P(Z <= z) = p for a standard normal Z, p in (0, 1). */
double stats__normal_quantile(double p);
/* Expected samples, under the pooled share, that each side of each profile needs for the
 * z-test's normal approximation to hold (the usual rule of five). */
#define STATS_MIN_EXPECTED 5.0

/* The pooled two-proportion z statistic of x1 of n1 against x2 of n2: positive when the
 * second share is larger; 0 when either total is 0, both shares are 0 or 1, or the counts
 * are too small for the test (STATS_MIN_EXPECTED). */
double stats__two_proportion_z(uint64_t x1, uint64_t n1, uint64_t x2, uint64_t n2);
/* The critical |z| of a two-sided test at confidence (0..1) over m comparisons, each at
 * 1 - (1 - confidence) / m (Bonferroni): the chance of any false alarm among m functions
 * stays below 1 - confidence. */
double stats__critical_z(double confidence, uint64_t m);
/* The smallest difference in share (as a fraction) that reaches z_crit for a function at
 * share p in profiles of n1 and n2 samples: z_crit * sqrt(p (1 - p) (1/n1 + 1/n2)). */
double stats__min_detectable(double p, uint64_t n1, uint64_t n2, double z_crit);

#endif
