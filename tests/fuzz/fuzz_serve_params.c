/* hprof serve's own request parsing (user/serve/http.c): the --listen address and the
 * profile's seconds parameter; libmicrohttpd parses the rest of a request. The input is
 * the text of both (up to a NUL, as MHD hands a parameter over). What is taken must read
 * back: an address formatted again parses to the same bytes, seconds are in range and the
 * text was digits only. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/http.h"

static void listen_round_trip(const char *text)
{
	struct sockaddr_storage addr, again;
	socklen_t len, len2;
	char back[128];

	if (serve_http__parse_listen(text, &addr, &len))
		return;
	if (addr.ss_family == AF_INET) {
		if (len != sizeof(struct sockaddr_in))
			abort();
	} else if (addr.ss_family != AF_INET6 || len != sizeof(struct sockaddr_in6)) {
		abort();
	}
	if (serve_http__format_listen(&addr, back, sizeof(back)) ||
	    serve_http__parse_listen(back, &again, &len2) || len2 != len ||
	    memcmp(&addr, &again, len))
		abort();
}

static void seconds_in_range(const char *text)
{
	unsigned seconds = 0;

	if (serve_http__parse_seconds(text, &seconds))
		return;
	if (seconds < 1 || seconds > SERVE_SECONDS_MAX || !*text ||
	    strspn(text, "0123456789") != strlen(text))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	listen_round_trip(text);
	seconds_in_range(text);
	free(text);
	return 0;
}
