/* hprof serve's HTTP layer (user/serve/http.c): the listen and seconds parsers, then a
 * server on a loopback port with stub handlers, spoken to over plain sockets as raw
 * HTTP/1.1, so that what is checked is the bytes a scraper would see. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "serve/http.h"

/* the stub's profile bytes: binary, a NUL inside */
static const uint8_t PROFILE[] = { 0x1f, 0x8b, 0x08, 0x00, 'p', 'p', 'r', 'o', 'f', 0x00, 0xff };
static const char METRICS[] = "# TYPE hprof_samples_total counter\nhprof_samples_total 42\n";
/* the idle timeout the server runs with here, and how long the slow profile waits */
#define IDLE_S 1
#define SLOW_MS 1600

struct stub {
	pthread_mutex_t lock;
	bool busy;
	unsigned seconds;
	char client[64];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* seconds picks the outcome: 2 waits past the idle timeout, 3 is hprof stopping, 4 fails,
 * 5 waits a little and answers 1 MiB */
static int stub_profile(void *ctx, unsigned seconds, const char *client, uint8_t **body,
			size_t *len)
{
	struct stub *s = ctx;
	bool busy;

	pthread_mutex_lock(&s->lock);
	busy = s->busy;
	s->seconds = seconds;
	snprintf(s->client, sizeof(s->client), "%s", client);
	pthread_mutex_unlock(&s->lock);
	if (busy)
		return -EBUSY;
	if (seconds == 3)
		return -ESHUTDOWN;
	if (seconds == 4)
		return -ENOMEM;
	if (seconds == 2)
		usleep(SLOW_MS * 1000);
	if (seconds == 5) {
		/* 1 MiB, for a client that is gone by then: sending it meets a reset socket */
		usleep(300 * 1000);
		*body = calloc(1, 1 << 20);
		*len = 1 << 20;
		return *body ? 0 : -ENOMEM;
	}
	*body = malloc(sizeof(PROFILE));
	if (!*body)
		return -ENOMEM;
	memcpy(*body, PROFILE, sizeof(PROFILE));
	*len = sizeof(PROFILE);
	return 0;
}

static int stub_metrics(void *ctx, char **body, size_t *len)
{
	(void)ctx;
	*body = strdup(METRICS);
	if (!*body)
		return -ENOMEM;
	*len = strlen(METRICS);
	return 0;
}

/* A connected socket to the server from source address src (NULL: any), reads bounded. */
static int dial(int family, uint16_t port, const char *src)
{
	struct timeval tv = { .tv_sec = 5 };
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (src) {
		struct sockaddr_in in = { .sin_family = AF_INET };

		inet_pton(AF_INET, src, &in.sin_addr);
		if (bind(fd, (struct sockaddr *)&in, sizeof(in))) {
			close(fd);
			return -1;
		}
	}
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		inet_pton(AF_INET, "127.0.0.1", &in->sin_addr);
		len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		in6->sin6_addr = in6addr_loopback;
		len = sizeof(*in6);
	}
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

struct response {
	int status; /* -1: no status line */
	char raw[16384];
	size_t len;
	const char *body;
	size_t body_len;
};

/* Reads to the end (the requests say "Connection: close") and splits status and body. */
static void read_response(int fd, struct response *r)
{
	ssize_t n;
	char *end;

	r->len = 0;
	r->status = -1;
	r->body = NULL;
	r->body_len = 0;
	while (r->len < sizeof(r->raw) - 1 &&
	       (n = recv(fd, r->raw + r->len, sizeof(r->raw) - 1 - r->len, 0)) > 0)
		r->len += (size_t)n;
	r->raw[r->len] = '\0';
	if (sscanf(r->raw, "HTTP/1.%*d %d ", &r->status) != 1)
		r->status = -1;
	end = memmem(r->raw, r->len, "\r\n\r\n", 4);
	if (end) {
		r->body = end + 4;
		r->body_len = r->len - (size_t)(r->body - r->raw);
	}
}

/* One raw request on a connection of its own; the response in r, its status returned. */
static int raw_request(int family, uint16_t port, const char *src, const char *req,
		       struct response *r)
{
	int fd = dial(family, port, src);

	r->status = -1;
	r->len = 0;
	r->raw[0] = '\0';
	if (fd < 0)
		return -1;
	if (send_all(fd, req, strlen(req)))
		read_response(fd, r);
	close(fd);
	return r->status;
}

/* METHOD TARGET as HTTP/1.1 from 127.0.0.1, closing after the answer. */
static int request(uint16_t port, const char *method, const char *target, struct response *r)
{
	char req[4096];

	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", method,
		 target);
	return raw_request(AF_INET, port, NULL, req, r);
}

/* A response header's line ("Name: value") is in the head. */
static bool has_header(const struct response *r, const char *line)
{
	char want[256];
	size_t head = r->body ? (size_t)(r->body - r->raw) : r->len;

	snprintf(want, sizeof(want), "\r\n%s\r\n", line);
	return memmem(r->raw, head, want, strlen(want)) != NULL;
}

static bool body_is(const struct response *r, const void *want, size_t len)
{
	return r->body && r->body_len == len && !memcmp(r->body, want, len);
}

static void test_parse_listen(void)
{
	static const char *const bad[] = {
		"", "127.0.0.1", "127.0.0.1:", ":6060", "localhost:6060", "127.0.0.1:65536",
		"127.0.0.1:-1", "127.0.0.1:+1", "127.0.0.1: 1", "127.0.0.1:1 ", " 127.0.0.1:1",
		"127.0.0.1:0x10", "127.0.0.1:000001", "::1:6060", "[::1]6060", "[::1]:", "[::1",
		"[]:1", "[fe80::1%lo]:6060", "1.2.3:80", "[127.0.0.1]:80", "127.0.0.1:80:80",
		"[::1]:80]",
	};
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	char text[64];
	int rc;

	rc = serve_http__parse_listen("127.0.0.1:6060", &ss, &len);
	check(rc == 0 && ss.ss_family == AF_INET && len == sizeof(*in) &&
		      ntohs(in->sin_port) == 6060 && in->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	      "parse_listen: 127.0.0.1:6060");
	rc = serve_http__parse_listen("0.0.0.0:0", &ss, &len);
	check(rc == 0 && ss.ss_family == AF_INET && in->sin_port == 0 &&
		      in->sin_addr.s_addr == htonl(INADDR_ANY),
	      "parse_listen: 0.0.0.0:0");
	rc = serve_http__parse_listen("[::1]:65535", &ss, &len);
	check(rc == 0 && ss.ss_family == AF_INET6 && len == sizeof(*in6) &&
		      ntohs(in6->sin6_port) == 65535 && IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr),
	      "parse_listen: [::1]:65535");
	rc = serve_http__parse_listen("[::]:06060", &ss, &len);
	check(rc == 0 && ss.ss_family == AF_INET6 && ntohs(in6->sin6_port) == 6060 &&
		      IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr),
	      "parse_listen: [::]:06060 (leading zero, 5 digits)");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check(serve_http__parse_listen(bad[i], &ss, &len) == -EINVAL,
		      "parse_listen: \"%s\" is -EINVAL", bad[i]);
	check(serve_http__parse_listen(NULL, &ss, &len) == -EINVAL, "parse_listen: NULL is -EINVAL");

	serve_http__parse_listen("[2001:db8::1]:80", &ss, &len);
	rc = serve_http__format_listen(&ss, text, sizeof(text));
	check(rc == 0 && !strcmp(text, "[2001:db8::1]:80"), "format_listen: [2001:db8::1]:80 (%s)",
	      text);
	serve_http__parse_listen("10.1.2.3:6060", &ss, &len);
	rc = serve_http__format_listen(&ss, text, sizeof(text));
	check(rc == 0 && !strcmp(text, "10.1.2.3:6060"), "format_listen: 10.1.2.3:6060 (%s)", text);
	check(serve_http__format_listen(&ss, text, 8) == -ENOSPC, "format_listen: short buffer");
}

static void test_parse_seconds(void)
{
	static const char *const bad[] = {
		"abc", "", "0", "00", "301", "100000", "+5", "-5", " 5", "5 ", "5s", "0x10", "1e2",
		"99999999999999999999999999",
	};
	static const struct {
		const char *text;
		unsigned want;
	} good[] = { { "1", 1 }, { "30", 30 }, { "300", 300 }, { "030", 30 }, { "0000000001", 1 } };
	unsigned s;

	s = 0;
	check(serve_http__parse_seconds(NULL, &s) == 0 && s == SERVE_SECONDS_DEFAULT,
	      "parse_seconds: absent is %u", SERVE_SECONDS_DEFAULT);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		s = 0;
		check(serve_http__parse_seconds(good[i].text, &s) == 0 && s == good[i].want,
		      "parse_seconds: \"%s\" is %u", good[i].text, good[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check(serve_http__parse_seconds(bad[i], &s) == -EINVAL,
		      "parse_seconds: \"%s\" is -EINVAL", bad[i]);
}

static void test_endpoints(uint16_t port, struct stub *stub)
{
	struct response *r = malloc(sizeof(*r));
	char target[1024];
	int st;

	if (!r)
		return;
	st = request(port, "GET", "/", r);
	check(st == 200 && has_header(r, "Content-Type: text/plain; charset=utf-8") && r->body &&
		      strstr(r->body, "/debug/pprof/profile") && strstr(r->body, "/metrics"),
	      "GET / is 200, a text index of the endpoints (%d)", st);

	st = request(port, "GET", "/metrics", r);
	check(st == 200 && has_header(r, "Content-Type: text/plain; version=0.0.4; charset=utf-8") &&
		      body_is(r, METRICS, strlen(METRICS)),
	      "GET /metrics is 200, the stub's text, Prometheus' content type (%d)", st);

	st = request(port, "GET", "/debug/pprof/profile?seconds=1", r);
	check(st == 200 && has_header(r, "Content-Type: application/octet-stream") &&
		      has_header(r, "Content-Disposition: attachment; filename=\"profile\"") &&
		      body_is(r, PROFILE, sizeof(PROFILE)),
	      "GET /debug/pprof/profile?seconds=1 is 200 with the stub's bytes, as Go sends them (%d)",
	      st);
	pthread_mutex_lock(&stub->lock);
	check(stub->seconds == 1 && !strcmp(stub->client, "127.0.0.1"),
	      "the profile handler got seconds 1 and client 127.0.0.1 (%u, %s)", stub->seconds,
	      stub->client);
	pthread_mutex_unlock(&stub->lock);

	st = request(port, "GET", "/debug/pprof/profile", r);
	pthread_mutex_lock(&stub->lock);
	check(st == 200 && stub->seconds == SERVE_SECONDS_DEFAULT,
	      "GET /debug/pprof/profile without seconds: %u seconds (%d, %u)", SERVE_SECONDS_DEFAULT,
	      st, stub->seconds);
	pthread_mutex_unlock(&stub->lock);
	st = request(port, "GET", "/debug/pprof/profile?debug=1&seconds=%31&gc=1", r);
	pthread_mutex_lock(&stub->lock);
	check(st == 200 && stub->seconds == 1,
	      "other parameters are ignored, seconds is unescaped (%d, %u)", st, stub->seconds);
	pthread_mutex_unlock(&stub->lock);

	st = request(port, "GET", "/nope-ECHOMARK", r);
	check(st == 404 && !strstr(r->raw, "ECHOMARK"), "GET /nope is 404, the path not echoed (%d)",
	      st);
	st = request(port, "GET", "/metrics/", r);
	check(st == 404, "GET /metrics/ is 404 (%d)", st);
	st = request(port, "GET", "/debug/pprof/", r);
	check(st == 404, "GET /debug/pprof/ is 404 (%d)", st);

	st = raw_request(AF_INET, port, NULL,
			 "POST /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
			 "Content-Length: 5\r\n\r\nhello",
			 r);
	check(st == 405 && has_header(r, "Allow: GET"), "POST /metrics is 405, Allow: GET (%d)", st);
	st = request(port, "HEAD", "/metrics", r);
	check(st == 405 && has_header(r, "Allow: GET"), "HEAD /metrics is 405, Allow: GET (%d)", st);
	st = request(port, "DELETE", "/debug/pprof/profile?seconds=1", r);
	check(st == 405, "DELETE /debug/pprof/profile is 405 (%d)", st);

	static const char *const bad_seconds[] = { "abc", "100000", "0", "301", "", "+5", "5s" };

	for (size_t i = 0; i < sizeof(bad_seconds) / sizeof(bad_seconds[0]); i++) {
		snprintf(target, sizeof(target), "/debug/pprof/profile?seconds=%s", bad_seconds[i]);
		st = request(port, "GET", target, r);
		check(st == 400, "seconds=%s is 400 (%d)", bad_seconds[i], st);
	}
	st = request(port, "GET", "/debug/pprof/profile?seconds", r);
	check(st == 400, "seconds without a value is 400 (%d)", st);
	st = request(port, "GET", "/debug/pprof/profile?seconds=ECHOMARK", r);
	check(st == 400 && !strstr(r->raw, "ECHOMARK") && r->body &&
		      strchr(r->body, '\n') == r->body + r->body_len - 1,
	      "a bad seconds' body is one line and does not echo it (%d)", st);

	/* "seconds=1&pad=" then 'a's: a query of exactly SERVE_QUERY_MAX, then one more */
	int n = snprintf(target, sizeof(target), "/metrics?seconds=1&pad=");
	size_t query = strlen("seconds=1&pad=");

	memset(target + n, 'a', SERVE_QUERY_MAX - query);
	target[n + SERVE_QUERY_MAX - query] = '\0';
	st = request(port, "GET", target, r);
	check(st == 200, "a query of %d bytes is taken (%d)", SERVE_QUERY_MAX, st);
	strcat(target, "a");
	st = request(port, "GET", target, r);
	check(st == 400, "a query of %d bytes is 400 (%d)", SERVE_QUERY_MAX + 1, st);
	snprintf(target, sizeof(target), "/nope?");
	memset(target + strlen(target), 'b', 600);
	target[6 + 600] = '\0';
	st = request(port, "GET", target, r);
	check(st == 400, "an overlong query is 400 on any path (%d)", st);

	pthread_mutex_lock(&stub->lock);
	stub->busy = true;
	pthread_mutex_unlock(&stub->lock);
	st = request(port, "GET", "/debug/pprof/profile?seconds=1", r);
	check(st == 429, "a profile the windows refuse (-EBUSY) is 429 (%d)", st);
	pthread_mutex_lock(&stub->lock);
	stub->busy = false;
	pthread_mutex_unlock(&stub->lock);
	st = request(port, "GET", "/debug/pprof/profile?seconds=3", r);
	check(st == 503, "a profile while hprof stops (-ESHUTDOWN) is 503 (%d)", st);
	st = request(port, "GET", "/debug/pprof/profile?seconds=4", r);
	check(st == 500 && r->body && strstr(r->body, "Cannot allocate memory"),
	      "a profile that fails (-ENOMEM) is 500 with the reason (%d)", st);

	/* MHD's own answers to what never reaches the handler */
	st = raw_request(AF_INET, port, NULL, "GARBAGE\r\n\r\n", r);
	check(st == -1 || (st >= 400 && st < 500),
	      "a request line of one word is closed unanswered or 4xx (%d)", st);
	st = raw_request(AF_INET, port, NULL, "GET / HTTP/1.1\r\nHost: t\r\nno colon\r\n\r\n", r);
	check(st == 400, "a header line without a colon is 400 (%d)", st);
	char *big = malloc(12000);

	if (big) {
		n = snprintf(big, 12000, "GET / HTTP/1.1\r\nHost: t\r\nX: ");
		memset(big + n, 'x', 10000);
		strcpy(big + n + 10000, "\r\n\r\n");
		st = raw_request(AF_INET, port, NULL, big, r);
		check(st == 431, "headers past the connection's memory are 431 (%d)", st);
		n = snprintf(big, 12000, "GET /metrics?");
		memset(big + n, 'x', 10000);
		strcpy(big + n + 10000, " HTTP/1.1\r\nHost: t\r\n\r\n");
		st = raw_request(AF_INET, port, NULL, big, r);
		check(st == 414, "a request line past the connection's memory is 414 (%d)", st);
		free(big);
	}
	st = raw_request(AF_INET, port, NULL, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", r);
	check(st == 200, "the server still answers after bad requests (%d)", st);
	free(r);
}

/* A client that sends half a request and stalls blocks no one; a profile handler that waits
 * longer than the idle timeout still gets its answer out; the stalled client is cut. */
static void test_slow_clients(uint16_t port)
{
	struct response *r = malloc(sizeof(*r));
	int stalled = dial(AF_INET, port, NULL);
	double t0;
	char c;
	int st;

	if (!r)
		return;
	check(stalled >= 0 && send_all(stalled, "GET /metrics HTTP/1.1\r\nHost: t\r\n", 32),
	      "a client sends half a request and stalls");
	st = request(port, "GET", "/metrics", r);
	check(st == 200, "another client is answered meanwhile (%d)", st);

	t0 = now_s();
	st = request(port, "GET", "/debug/pprof/profile?seconds=2", r);
	check(st == 200 && body_is(r, PROFILE, sizeof(PROFILE)),
	      "a profile handler waiting %.1f s, past the %d s idle timeout, is answered whole (%d, "
	      "%.1f s)",
	      SLOW_MS / 1000.0, IDLE_S, st, now_s() - t0);
	/* by now the stalled client has been idle longer than the timeout */
	t0 = now_s();
	check(stalled >= 0 && recv(stalled, &c, 1, 0) <= 0 && now_s() - t0 < 3,
	      "the stalled client is closed by the idle timeout");
	if (stalled >= 0)
		close(stalled);

	/* a client that leaves while its profile is made: the answer goes to a closed socket */
	int gone = dial(AF_INET, port, NULL);
	struct linger reset = { .l_onoff = 1, .l_linger = 0 };
	static const char req[] =
		"GET /debug/pprof/profile?seconds=5 HTTP/1.1\r\nHost: t\r\n\r\n";

	if (gone >= 0) {
		send_all(gone, req, strlen(req));
		setsockopt(gone, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
		close(gone);
	}
	usleep(500 * 1000);
	st = request(port, "GET", "/metrics", r);
	check(gone >= 0 && st == 200,
	      "a client gone before its profile is sent leaves the server serving (%d)", st);
	free(r);
}

/* The per-address bound: 8 open connections from one address, a ninth is closed
 * unanswered while another address is served. A server of its own, with the default idle
 * timeout, so that the 8 cannot time out while the test runs on a busy machine. */
static void test_per_address_limit(const struct serve_http_handlers *h)
{
	struct response *r = malloc(sizeof(*r));
	struct serve_http *http = NULL;
	struct sockaddr_storage ss;
	int held[8], n = 0, st;
	char err[256] = "";
	uint16_t port;
	socklen_t len;

	serve_http__parse_listen("127.0.0.1:0", &ss, &len);
	if (!r || serve_http__start(&ss, len, h, &http, err, sizeof(err))) {
		check(false, "per-address limit: a server starts (%s)", err);
		free(r);
		return;
	}
	port = serve_http__port(http);
	for (int i = 0; i < 8; i++) {
		held[i] = dial(AF_INET, port, "127.0.0.3");
		n += held[i] >= 0;
	}
	if (n != 8) {
		printf("skip - per-address limit: cannot bind 127.0.0.3 as a source\n");
	} else {
		for (int i = 0; i < 8; i++)
			send_all(held[i], "G", 1);
		st = raw_request(AF_INET, port, "127.0.0.3",
				 "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", r);
		check(st == -1, "a ninth connection from one address is closed unanswered (%d)", st);
		st = raw_request(AF_INET, port, "127.0.0.4",
				 "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", r);
		check(st == 200, "another address is served meanwhile (%d)", st);
	}
	for (int i = 0; i < 8; i++)
		if (held[i] >= 0)
			close(held[i]);
	serve_http__stop(http);
	free(r);
}

static void test_ipv6(const struct serve_http_handlers *h, struct stub *stub)
{
	struct sockaddr_storage ss;
	struct response *r = malloc(sizeof(*r));
	struct serve_http *http = NULL;
	char err[256] = "";
	socklen_t len;
	int rc, st;

	if (!r)
		return;
	serve_http__parse_listen("[::1]:0", &ss, &len);
	rc = serve_http__start_timeout(&ss, len, h, IDLE_S, &http, err, sizeof(err));
	if (rc == -EAFNOSUPPORT || rc == -EADDRNOTAVAIL) {
		printf("skip - IPv6: no ::1 here (%s)\n", err);
		free(r);
		return;
	}
	check(rc == 0 && serve_http__port(http) != 0, "a server on [::1]:0 starts (%s)", err);
	if (rc == 0) {
		st = raw_request(AF_INET6, serve_http__port(http), NULL,
				 "GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\nHost: t\r\n"
				 "Connection: close\r\n\r\n",
				 r);
		pthread_mutex_lock(&stub->lock);
		check(st == 200 && !strcmp(stub->client, "::1"),
		      "a profile over IPv6 is 200 for client ::1 (%d, %s)", st, stub->client);
		pthread_mutex_unlock(&stub->lock);
	}
	serve_http__stop(http);
	free(r);
}

int main(void)
{
	struct stub stub = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct serve_http_handlers h = {
		.profile = stub_profile,
		.metrics = stub_metrics,
		.ctx = &stub,
	};
	struct serve_http *http = NULL, *again = NULL;
	struct sockaddr_storage ss;
	char err[256] = "", want[64];
	socklen_t len;
	uint16_t port;
	double t0;
	int rc;

	test_parse_listen();
	test_parse_seconds();

	serve_http__parse_listen("127.0.0.1:0", &ss, &len);
	rc = serve_http__start_timeout(&ss, len, &h, IDLE_S, &http, err, sizeof(err));
	port = rc ? 0 : serve_http__port(http);
	check(rc == 0 && port != 0, "a server on 127.0.0.1:0 starts on a free port (%u) %s", port,
	      err);
	if (rc)
		return 1;

	((struct sockaddr_in *)&ss)->sin_port = htons(port);
	rc = serve_http__start(&ss, len, &h, &again, err, sizeof(err));
	snprintf(want, sizeof(want), "--listen 127.0.0.1:%u: Address already in use", port);
	check(rc == -EADDRINUSE && !again && !strcmp(err, want),
	      "a second server on the same port fails: \"%s\"", err);

	test_endpoints(port, &stub);
	test_slow_clients(port);
	test_per_address_limit(&h);
	test_ipv6(&h, &stub);

	/* a client that never finishes must not hold the stop up */
	int stalled = dial(AF_INET, port, NULL);

	send_all(stalled, "GET / HTTP/1.1\r\n", 16);
	t0 = now_s();
	serve_http__stop(http);
	check(now_s() - t0 < 1, "stop returns at once with a stalled client (%.2f s)", now_s() - t0);
	if (stalled >= 0)
		close(stalled);
	serve_http__stop(NULL);
	stalled = dial(AF_INET, port, NULL);
	check(stalled < 0, "after stop, the port is closed");
	if (stalled >= 0)
		close(stalled);
	return failures ? 1 : 0;
}
