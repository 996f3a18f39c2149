/* Unit tests for text__terminal_safe (user/util/text.h): a file name with escape sequences,
 * C0 and C1 controls, DEL and bytes that are not UTF-8 comes out with '?' in their place and
 * nothing a terminal would act on; printable ASCII and UTF-8 characters stay as they were;
 * a cut never splits a character. Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/text.h"
#include "check.h"

/* No byte a terminal takes as a control: C0, DEL, or the C1 range in UTF-8 (C2 80..9F). */
static bool inert(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; u[i]; i++) {
		if (u[i] < 0x20 || u[i] == 0x7f || (u[i] == 0xc2 && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f))
			return false;
	}
	return true;
}

static void expect(const char *what, const char *in, size_t outlen, const char *want)
{
	char out[128];

	text__terminal_safe(in, out, outlen);
	check(strcmp(out, want) == 0 && inert(out), "%s: \"%s\"", what, out);
}

int main(void)
{
	expect("plain ASCII stays", "libavcodec.so.59", 128, "libavcodec.so.59");
	expect("ESC [ 2 J (clear screen)", "lib\033[2Jx.so", 128, "lib?[2Jx.so");
	expect("OSC title with BEL", "\033]0;pwned\007.so", 128, "?]0;pwned?.so");
	expect("CR, LF, tab, DEL", "a\rb\nc\td\x7f" "e", 128, "a?b?c?d?e");
	expect("C1 CSI (U+009B) as UTF-8", "a\xc2\x9b" "31mb", 128, "a?31mb");
	expect("raw C1 byte, not UTF-8", "a\x9b" "31mb", 128, "a?31mb");
	expect("UTF-8 kept", "caf\xc3\xa9-\xe6\x97\xa5.so", 128, "caf\xc3\xa9-\xe6\x97\xa5.so");
	expect("U+00A0 and a 4-byte character kept", "\xc2\xa0\xf0\x9f\x98\x80", 128,
	       "\xc2\xa0\xf0\x9f\x98\x80");
	expect("overlong '/' (C0 AF)", "a\xc0\xaf" "b", 128, "a??b");
	expect("surrogate (ED A0 80)", "a\xed\xa0\x80" "b", 128, "a???b");
	expect("sequence cut short at the end", "ab\xe6\x97", 128, "ab??");
	expect("past U+10FFFF (F4 90 80 80)", "\xf4\x90\x80\x80", 128, "????");
	expect("cut to the buffer", "abcdef", 4, "abc");
	expect("cut never splits a character", "ab\xc3\xa9", 4, "ab");
	expect("empty", "", 128, "");
	return failures ? 1 : 0;
}
