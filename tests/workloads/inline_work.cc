// C++ work in functions forced inline, for tests/t_inline.sh: a class template's method
// and a function template in a namespace, inlined into a member function that is not.
// Built by the test with -O2 and each kind of debug info. Usage: inline_work_cc [ROUNDS]
#include <cstdint>
#include <cstdlib>

#define INLINE inline __attribute__((always_inline))

namespace work {

template <typename T> INLINE T rotate(T x, int by)
{
	return (x << by) | (x >> (sizeof(T) * 8 - by));
}

template <typename T> struct Hasher {
	T state;

	INLINE void feed(T v)
	{
		state = rotate<T>(state ^ v, 13);
		state *= 0x100000001b3ull;
	}
};

struct Runner {
	__attribute__((noinline)) uint64_t run(long rounds);
};

uint64_t Runner::run(long rounds)
{
	Hasher<uint64_t> h{ 0xcbf29ce484222325ull };

	for (long i = 0; i < rounds; i++)
		h.feed((uint64_t)i);
	return h.state;
}

} // namespace work

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? std::atol(argv[1]) : 100000000;
	work::Runner r;

	return r.run(rounds) == 42; // 0, unless the hash says otherwise
}
