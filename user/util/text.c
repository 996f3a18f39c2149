#include "util/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void text__set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

bool text__parse_number(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* The length of the UTF-8 character at s (1 to 4), or 0 when s does not start one: a
 * stray continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short. */
static size_t utf8_length(const unsigned char *s, uint32_t *cp)
{
	size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	static const uint32_t least[] = { 0, 0, 0x80, 0x800, 0x10000 };

	if (len == 0 || s[0] >= 0xf8)
		return 0;
	*cp = s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	if (*cp < least[len] || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

char *text__terminal_safe(const char *in, char *out, size_t outlen)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = 0;

	while (*s && n + 1 < outlen) {
		uint32_t cp = 0;
		size_t len = *s < 0x80 ? 1 : utf8_length(s, &cp);

		if (*s < 0x80 && *s >= 0x20 && *s != 0x7f) {
			out[n++] = (char)*s++;
		} else if (len > 1 && cp > 0x9f) {
			if (n + len >= outlen)
				break;
			memcpy(out + n, s, len);
			n += len, s += len;
		} else {
			out[n++] = '?';
			s += len > 1 ? len : 1;
		}
	}
	out[n] = '\0';
	return out;
}
