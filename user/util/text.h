/* Small text helpers every stage uses alike: a one-line error message into a caller's
 * buffer, and a command-line number read whole. */
#ifndef HPROF_UTIL_TEXT_H
#define HPROF_UTIL_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Formats a message into err (nothing when err is NULL or errlen 0). */
void text__set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Parses a whole decimal number in [min, max]; false on anything else (a sign is allowed
 * as strtoll takes it; trailing text, overflow and an empty string are not). */
bool text__parse_number(const char *s, long long min, long long max, long long *out);

#endif
