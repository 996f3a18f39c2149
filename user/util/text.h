/* Small text helpers every stage uses alike: a one-line error message into a caller's
 * buffer, a command-line number read whole, and a name made safe for a terminal. */
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

/* in as a terminal may show it: every byte of an ASCII control character (ESC included),
 * of a C1 control (U+0080..U+009F, which some terminals take as ESC [) and of a sequence
 * that is not UTF-8 becomes '?', so that a hostile file name cannot move the cursor or set
 * a title; printable ASCII and other UTF-8 characters stay. Cut to outlen - 1 bytes, never
 * inside a character; out is always terminated (outlen > 0). Returns out. */
char *text__terminal_safe(const char *in, char *out, size_t outlen);

#endif
