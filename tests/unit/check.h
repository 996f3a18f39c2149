/* The unit tests' one reporting helper: a line "ok - WHAT" or "not ok - WHAT" per check, as
 * tests/run.sh counts them; a test binary returns failures ? 1 : 0. */
#ifndef HPROF_TESTS_CHECK_H
#define HPROF_TESTS_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int failures;

static inline void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
}

#endif
