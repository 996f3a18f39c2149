/* No frame pointers: hot code in libraries loaded after start. main -> phase_a -> lib_a_hot
 * in libmaps_a.so (dlopen'ed); then, with libmaps_a.so closed, main -> phase_b -> lib_b_hot
 * in libmaps_b.so, which the loader puts where libmaps_a.so was: the same addresses now
 * hold other code. Prints "phase a: ...", "phase b: ..." as each phase starts and
 * "same address: yes" when the second library's function really is at the first one's.
 * Usage: nofp_dlopen SECONDS_PER_PHASE DIR (DIR holds libmaps_a.so and libmaps_b.so). */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "workload.h"

typedef void (*hot_fn)(unsigned long n);

static void *load(const char *dir, const char *which, hot_fn *fn, void **base)
{
	char path[4096], sym[32];
	Dl_info info;
	void *lib;

	snprintf(path, sizeof(path), "%s/libmaps_%s.so", dir, which);
	snprintf(sym, sizeof(sym), "lib_%s_hot", which);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "nofp_dlopen: %s\n", dlerror());
		exit(1);
	}
	*fn = (hot_fn)dlsym(lib, sym);
	if (!*fn || !dladdr((void *)*fn, &info)) {
		fprintf(stderr, "nofp_dlopen: no %s in %s\n", sym, path);
		exit(1);
	}
	*base = info.dli_fbase;
	return lib;
}

__attribute__((noinline)) void run_phase(hot_fn fn, double seconds)
{
	double start = workload_now();

	while (workload_now() - start < seconds)
		fn(20000);
}

__attribute__((noinline)) void phase_a(hot_fn fn, double seconds)
{
	run_phase(fn, seconds);
}

__attribute__((noinline)) void phase_b(hot_fn fn, double seconds)
{
	run_phase(fn, seconds);
}

int main(int argc, char **argv)
{
	double seconds = workload_seconds(argc, argv, 1.0);
	const char *dir = argc > 2 ? argv[2] : ".";
	hot_fn fn_a, fn_b;
	void *lib, *base_a, *base_b;

	lib = load(dir, "a", &fn_a, &base_a);
	printf("phase a: libmaps_a.so at %p, lib_a_hot at %p\n", base_a, (void *)fn_a);
	fflush(stdout);
	phase_a(fn_a, seconds);
	dlclose(lib);

	lib = load(dir, "b", &fn_b, &base_b);
	printf("phase b: libmaps_b.so at %p, lib_b_hot at %p\n", base_b, (void *)fn_b);
	printf("same address: %s\n", base_a == base_b && (void *)fn_a == (void *)fn_b ? "yes" : "no");
	fflush(stdout);
	phase_b(fn_b, seconds);
	dlclose(lib);
	return 0;
}
