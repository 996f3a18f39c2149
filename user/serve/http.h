/* hprof serve's HTTP side, over libmicrohttpd: the endpoints that continuous-profiling
 * servers and Prometheus pull from, and nothing else.
 *
 *   GET /                             a short index of the endpoints
 *   GET /debug/pprof/profile?seconds=N  the next N seconds (default 30, 1-300) as gzip pprof
 *   GET /metrics                      Prometheus text exposition of hprof's counters
 *
 * An overlong query is 400 whatever the path; then any other path is 404, any other method
 * (HEAD included: a profile's HEAD would run a window for nothing) 405 with "Allow: GET",
 * a malformed or out-of-range seconds 400. Other query parameters are ignored, as Go's
 * net/http/pprof ignores them. A profile the windows refuse (one per client address at a
 * time, a few in all) is 429. Error bodies are one line of text and never carry anything
 * of the request. Each connection runs on its own thread (a profile request waits for its
 * window), so the handlers are called on those threads, never on the recorder's, several
 * at once. Connections are bounded in number, in number per client address and in memory;
 * they time out when slow or idle, but not while their profile handler waits. */
#ifndef HPROF_SERVE_HTTP_H
#define HPROF_SERVE_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Defaults and bounds of the profile endpoint's seconds parameter. */
#define SERVE_SECONDS_DEFAULT 30
#define SERVE_SECONDS_MAX 300
/* Longest query string accepted; longer ones are 400. */
#define SERVE_QUERY_MAX 256
/* Connections open at once; more wait in the kernel's queue of this many, then are
 * refused. */
#define SERVE_CONNECTIONS_MAX 64
/* A connection that sends nothing (or takes nothing of its answer) for this long is
 * closed; the wait for a profile's window does not count. */
#define SERVE_IDLE_TIMEOUT_S 10

struct serve_http;

struct serve_http_handlers {
	/* A profile of the next seconds for client (its address as text, without the port; an
	 * IPv4 client of "[::]:PORT" as IPv4, "127.0.0.1" not "::ffff:127.0.0.1").
	 * Waits until the window ends. Returns 0 with *body (malloc'd, the gzip pprof bytes)
	 * and *len; -EBUSY when the windows refuse it (429); -ESHUTDOWN when hprof is
	 * stopping (503); another -errno (500). */
	int (*profile)(void *ctx, unsigned seconds, const char *client, uint8_t **body,
		       size_t *len);
	/* Prometheus text of hprof's counters: 0 with *body (malloc'd) and *len, or -errno
	 * (500). */
	int (*metrics)(void *ctx, char **body, size_t *len);
	void *ctx;
};

/* Parses "ADDR:PORT" ("127.0.0.1:6060", "[::1]:6060", "0.0.0.0:6060"; a numeric address,
 * IPv6 in brackets, no host names, no zone; the port 0-65535 in decimal digits, 0 picking
 * a free one). "[::]:PORT" also takes IPv4 clients. Returns 0 or -EINVAL. */
int serve_http__parse_listen(const char *text, struct sockaddr_storage *addr, socklen_t *len);
/* addr (IPv4 or IPv6) as "ADDR:PORT" text that serve_http__parse_listen reads back.
 * Returns 0, -EAFNOSUPPORT or -ENOSPC. */
int serve_http__format_listen(const struct sockaddr_storage *addr, char *buf, size_t len);

/* Parses the seconds parameter: NULL (absent) is SERVE_SECONDS_DEFAULT; else decimal
 * digits only (leading zeros taken, no sign, no space), 1 to SERVE_SECONDS_MAX. Returns 0
 * or -EINVAL. */
int serve_http__parse_seconds(const char *text, unsigned *seconds);

/* Listens on addr and serves until stopped. Returns 0, or -errno with a one-line reason
 * in err ("--listen 127.0.0.1:6060: Address already in use"). */
int serve_http__start(const struct sockaddr_storage *addr, socklen_t len,
		      const struct serve_http_handlers *h, struct serve_http **out, char *err,
		      size_t errlen);
/* serve_http__start with another idle timeout than SERVE_IDLE_TIMEOUT_S (the unit test's
 * shorter one). */
int serve_http__start_timeout(const struct sockaddr_storage *addr, socklen_t len,
			      const struct serve_http_handlers *h, unsigned idle_timeout_s,
			      struct serve_http **out, char *err, size_t errlen);
/* The port listened on (what port 0 picked). */
uint16_t serve_http__port(const struct serve_http *http);
/* How long serve_http__stop waits for answers already on their way. */
#define SERVE_DRAIN_S 3

/* Stops listening, lets the connections that are sending an answer finish (at most
 * SERVE_DRAIN_S), then shuts every connection down and waits for the connections' threads:
 * a profile handler still waiting for its window holds this up, so the profile handler
 * must return promptly (-ESHUTDOWN) once hprof is stopping. Accepts NULL. */
void serve_http__stop(struct serve_http *http);

#endif
