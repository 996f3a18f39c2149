// No frame pointers, C++: virtual calls, a lambda comparator inside std::sort, and
// exceptions thrown and caught on the way.
//   main -> run -> Shape::work (virtual: Square::work) -> sort_points -> std::sort ... lambda
//   main -> run -> throw_and_catch -> thrower (throws; caught in throw_and_catch)
// Usage: nofp_cxx [SECONDS] (default 3).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

extern "C" {
#include "workload.h"
}

static volatile unsigned long sink;

struct Point {
	unsigned x, y;
};

__attribute__((noinline)) void sort_points(std::vector<Point> &points)
{
	std::sort(points.begin(), points.end(), [](const Point &a, const Point &b) {
		for (int i = 0; i < 40; i++)
			sink += (a.x ^ static_cast<unsigned>(i)) & b.y;
		return a.x < b.x;
	});
}

struct Shape {
	virtual ~Shape() = default;
	virtual void work(std::vector<Point> &points) = 0;
};

struct Square : Shape {
	__attribute__((noinline)) void work(std::vector<Point> &points) override
	{
		unsigned seed = 7;
		for (auto &p : points) {
			seed = seed * 1103515245u + 12345u;
			p = { seed, seed >> 7 };
		}
		sort_points(points);
	}
};

__attribute__((noinline)) void thrower(int i)
{
	if (i % 2 == 0)
		throw std::runtime_error("even");
	sink += static_cast<unsigned long>(i);
}

__attribute__((noinline)) void throw_and_catch()
{
	for (int i = 0; i < 100; i++) {
		try {
			thrower(i);
		} catch (const std::exception &) {
			sink++;
		}
	}
}

__attribute__((noinline)) void run(Shape &shape, std::vector<Point> &points)
{
	shape.work(points);
	throw_and_catch();
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 3.0), start = workload_now();
	std::unique_ptr<Shape> shape = std::make_unique<Square>();
	std::vector<Point> points(2000);

	while (workload_now() - start < seconds)
		run(*shape, points);
	std::printf("cxx done\n");
	return 0;
}
