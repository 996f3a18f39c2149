/* Work in functions forced inline at known lines, for tests/t_inline.sh: spin() (not
 * inlined) runs step() inlined, which runs mix() and scale() inlined, each line of its own.
 * Built by the test with -O2 and each kind of debug info. Usage: inline_work [ROUNDS] */
#include <stdint.h>
#include <stdlib.h>

#define INLINE static inline __attribute__((always_inline))

INLINE uint64_t mix(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	return x ^ (x << 17);
}

INLINE uint64_t scale(uint64_t x, uint64_t k)
{
	return x * k + (x >> 3);
}

INLINE uint64_t step(uint64_t x, uint64_t i)
{
	x = mix(x + i);
	x = scale(x, 0x9e3779b97f4a7c15ull);
	return mix(x);
}

__attribute__((noinline)) uint64_t spin(uint64_t x, long rounds)
{
	for (long i = 0; i < rounds; i++)
		x = step(x, (uint64_t)i);
	return x;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100000000;

	return spin(1, rounds) == 42; /* 0, unless the hash says otherwise */
}
