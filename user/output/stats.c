#include "output/stats.h"

#include <math.h>

/* z with P(Z > z) = q. Bisection on erfc, which libm computes to full relative precision
 * in the far tail (where 1 - q would round away the very small q of a Bonferroni level):
 * 200 halvings of [-40, 40] go below a double's resolution, the same on every run. */
static double upper_tail_quantile(double q)
{
	double lo = -40, hi = 40;

	if (!(q > 0 && q < 1))
		return q >= 1 ? -INFINITY : INFINITY;
	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;

		if (0.5 * erfc(mid / M_SQRT2) > q)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

double stats__normal_quantile(double p)
{
	return upper_tail_quantile(1 - p);
}

double stats__two_proportion_z(uint64_t x1, uint64_t n1, uint64_t x2, uint64_t n2)
{
	double p1, p2, pooled, se;

	if (n1 == 0 || n2 == 0)
		return 0;
	p1 = (double)x1 / (double)n1;
	p2 = (double)x2 / (double)n2;
	pooled = ((double)x1 + (double)x2) / ((double)n1 + (double)n2);
	/* The normal approximation holds only with enough expected samples on both sides of
	 * both profiles: 0 against 1 sample, or a profile of a handful of samples, is noise. */
	if (pooled * (double)n1 < STATS_MIN_EXPECTED || (1 - pooled) * (double)n1 < STATS_MIN_EXPECTED ||
	    pooled * (double)n2 < STATS_MIN_EXPECTED || (1 - pooled) * (double)n2 < STATS_MIN_EXPECTED)
		return 0;
	se = sqrt(pooled * (1 - pooled) * (1.0 / (double)n1 + 1.0 / (double)n2));
	return se > 0 ? (p2 - p1) / se : 0;
}

double stats__critical_z(double confidence, uint64_t m)
{
	double alpha = (1 - confidence) / (double)(m ? m : 1);

	return upper_tail_quantile(alpha / 2);
}

double stats__min_detectable(double p, uint64_t n1, uint64_t n2, double z_crit)
{
	if (n1 == 0 || n2 == 0)
		return INFINITY;
	return z_crit * sqrt(p * (1 - p) * (1.0 / (double)n1 + 1.0 / (double)n2));
}
