/* hprof serve's HTTP side over libmicrohttpd (MHD): the request line, headers, limits and
 * timeouts are MHD's; hprof's own parsing is the listen address and the seconds parameter.
 *
 * Every request is answered in the access handler's first call, once its headers are in:
 * a GET has no body to wait for, and MHD discards any body that comes (and closes the
 * connection after the answer). */
#include "serve/http.h"
#include "serve/mhd.h"
#include "util/text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Connections open at once from one client address; more from it are closed at once. */
#define SERVE_CONNECTIONS_PER_IP 8
/* Bytes a connection may hold for its request line, headers and the answer's headers
 * (bodies are not in it): requests bigger than that get MHD's 414 or 431. */
#define SERVE_CONNECTION_MEMORY (8 * 1024)
/* "[" INET6 "]:" 65535 */
#define SERVE_ADDR_TEXT_MAX (INET6_ADDRSTRLEN + 8)
#define TEXT(x) #x
#define NUMBER_TEXT(x) TEXT(x)
#define SECONDS_RANGE \
	"default " NUMBER_TEXT(SERVE_SECONDS_DEFAULT) ", 1-" NUMBER_TEXT(SERVE_SECONDS_MAX)

struct serve_http {
	struct MHD_Daemon *daemon;
	struct serve_http_handlers h;
	uint16_t port;
	unsigned requests; /* requests answered and not completed (atomic): stop lets them finish */
};

/* What the URI callback tells the access handler about the raw query: these markers'
 * addresses only, never written, so connection threads share nothing mutable. */
static const char query_ok, query_overlong, answering;
/* libmicrohttpd's functions, loaded by the first serve_http__start before any thread */
static const struct mhd_api *mhd;

static const char BAD_SECONDS[] = "seconds: a whole number, " SECONDS_RANGE "\n";
static const char INDEX[] =
	"hprof serve\n"
	"/debug/pprof/profile?seconds=N  gzip pprof CPU profile of the next N s (" SECONDS_RANGE ")\n"
	"/metrics                        hprof's counters, Prometheus text format\n";


/* 0-65535, decimal digits only, at most 5 of them. */
static int parse_port(const char *text, uint16_t *port)
{
	unsigned v = 0;
	size_t n = 0;

	for (; text[n]; n++) {
		if (text[n] < '0' || text[n] > '9' || n == 5)
			return -EINVAL;
		v = v * 10 + (unsigned)(text[n] - '0');
	}
	if (n == 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int serve_http__parse_listen(const char *text, struct sockaddr_storage *addr, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN];
	const char *host_start, *host_end, *port_text;
	uint16_t port;
	int family;

	if (!text)
		return -EINVAL;
	if (text[0] == '[') {
		host_start = text + 1;
		host_end = strchr(host_start, ']');
		if (!host_end || host_end[1] != ':')
			return -EINVAL;
		port_text = host_end + 2;
		family = AF_INET6;
	} else {
		host_start = text;
		host_end = strrchr(text, ':');
		if (!host_end)
			return -EINVAL;
		port_text = host_end + 1;
		family = AF_INET;
	}
	if (host_end == host_start || (size_t)(host_end - host_start) >= sizeof(host))
		return -EINVAL;
	memcpy(host, host_start, (size_t)(host_end - host_start));
	host[host_end - host_start] = '\0';
	if (parse_port(port_text, &port))
		return -EINVAL;

	memset(addr, 0, sizeof(*addr));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)addr;

		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return -EINVAL;
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		*len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;

		/* inet_pton takes no zone ("%eth0"): link-local addresses are not supported */
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
	}
	return 0;
}

int serve_http__format_listen(const struct sockaddr_storage *addr, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	int n;

	if (addr->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)addr;

		if (!inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host)))
			return -errno;
		n = snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (addr->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;

		if (!inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host)))
			return -errno;
		n = snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		return -EAFNOSUPPORT;
	}
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

int serve_http__parse_seconds(const char *text, unsigned *seconds)
{
	unsigned v = 0;

	if (!text) {
		*seconds = SERVE_SECONDS_DEFAULT;
		return 0;
	}
	if (!*text)
		return -EINVAL;
	/* leading zeros are taken, as Go's strconv.Atoi takes them; a sign is not. Stopping
	 * past the maximum keeps v from overflowing however long the text. */
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*p - '0');
		if (v > SERVE_SECONDS_MAX)
			return -EINVAL;
	}
	if (v < 1)
		return -EINVAL;
	*seconds = v;
	return 0;
}

/* Called by MHD with the request's raw target, before it splits off and unescapes the
 * query: the only place that sees the query's length as sent. */
static void *uri_seen(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct serve_http *http = cls;
	const char *q = uri ? strchr(uri, '?') : NULL;

	(void)http;
	(void)conn;
	if (q && strlen(q + 1) > SERVE_QUERY_MAX)
		return (void *)&query_overlong;
	return (void *)&query_ok;
}

/* Called by MHD when a request is done: its answer sent, or its connection gone. */
static void request_done(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct serve_http *http = cls;

	(void)conn;
	(void)why;
	if (*req_cls == &answering)
		__atomic_sub_fetch(&http->requests, 1, __ATOMIC_SEQ_CST);
	*req_cls = NULL;
}

/* A response of bytes that MHD frees once sent; frees them itself when MHD refuses them. */
static struct MHD_Response *owned_response(void *body, size_t len)
{
	struct MHD_Response *resp = mhd->create_response_from_buffer_with_free_callback(len, body, free);

	if (!resp)
		free(body);
	return resp;
}

/* Queues resp (NULL: MHD could not make it, and closes the connection) with its
 * Content-Type and one more header when name is not NULL. */
static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status,
			     struct MHD_Response *resp, const char *type, const char *name,
			     const char *value)
{
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	/* a header fails only for memory; MHD then sends the response without it */
	mhd->add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	mhd->add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (name)
		mhd->add_response_header(resp, name, value);
	ret = mhd->queue_response(conn, status, resp);
	mhd->destroy_response(resp);
	return ret;
}

/* An error: a one-line reason, never anything of the request. */
static enum MHD_Result fail(struct MHD_Connection *conn, unsigned status, const char *line)
{
	struct MHD_Response *resp =
		mhd->create_response_from_buffer(strlen(line), (void *)line, MHD_RESPMEM_MUST_COPY);

	return queue(conn, status, resp, "text/plain; charset=utf-8",
		     status == MHD_HTTP_METHOD_NOT_ALLOWED ? MHD_HTTP_HEADER_ALLOW : NULL, "GET");
}

/* A handler's -errno as its status: 429, 503 or 500 with what failed. */
static enum MHD_Result fail_errno(struct MHD_Connection *conn, const char *what, int err)
{
	char buf[128], line[192];

	if (err == -EBUSY)
		return fail(conn, MHD_HTTP_TOO_MANY_REQUESTS,
			    "too many profiles running: one per client address, a few in all\n");
	if (err == -ESHUTDOWN)
		return fail(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "hprof is stopping\n");
	snprintf(line, sizeof(line), "%s: %s\n", what, strerror_r(-err, buf, sizeof(buf)));
	return fail(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, line);
}

/* The client's address as text, an IPv4 client of a dual-stack socket as IPv4, so that
 * one host is one client to the windows' per-client limit whichever way it came. */
static int client_text(struct MHD_Connection *conn, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *info =
		mhd->get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = info ? info->client_addr : NULL;

	if (!sa)
		return -ENOTCONN;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		return inet_ntop(AF_INET, &in->sin_addr, buf, (socklen_t)len) ? 0 : -errno;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			return inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], buf, (socklen_t)len)
				       ? 0
				       : -errno;
		return inet_ntop(AF_INET6, &in6->sin6_addr, buf, (socklen_t)len) ? 0 : -errno;
	}
	return -EAFNOSUPPORT;
}

static enum MHD_Result serve_profile(struct serve_http *http, struct MHD_Connection *conn)
{
	char client[INET6_ADDRSTRLEN];
	const char *value = NULL;
	uint8_t *body = NULL;
	size_t len = 0;
	unsigned seconds;
	int err;

	/* "?seconds" with no "=" is present with no value: malformed, not the default. Other
	 * parameters are ignored, as Go's net/http/pprof ignores them. */
	if (mhd->lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, "seconds",
					  strlen("seconds"), &value, NULL) == MHD_YES &&
	    !value)
		return fail(conn, MHD_HTTP_BAD_REQUEST, BAD_SECONDS);
	if (serve_http__parse_seconds(value, &seconds))
		return fail(conn, MHD_HTTP_BAD_REQUEST, BAD_SECONDS);
	err = client_text(conn, client, sizeof(client));
	if (err)
		return fail_errno(conn, "client address", err);

	/* The wait for the window is longer than the idle timeout, and does not trip it: the
	 * connection's thread checks the timeout only between calls into MHD, and
	 * MHD_queue_response restarts it (0.9.75 to 1.0), so sending the profile gets the whole
	 * timeout. test_serve_http checks a handler that outwaits the timeout. */
	err = http->h.profile(http->h.ctx, seconds, client, &body, &len);
	if (err) {
		free(body);
		return fail_errno(conn, "profile", err);
	}
	/* the headers Go's net/http/pprof sends */
	return queue(conn, MHD_HTTP_OK, owned_response(body, len), "application/octet-stream",
		     MHD_HTTP_HEADER_CONTENT_DISPOSITION, "attachment; filename=\"profile\"");
}

static enum MHD_Result serve_metrics(struct serve_http *http, struct MHD_Connection *conn)
{
	char *body = NULL;
	size_t len = 0;
	int err;

	err = http->h.metrics(http->h.ctx, &body, &len);
	if (err) {
		free(body);
		return fail_errno(conn, "metrics", err);
	}
	return queue(conn, MHD_HTTP_OK, owned_response(body, len),
		     "text/plain; version=0.0.4; charset=utf-8", NULL, NULL);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct serve_http *http = cls;
	enum { INDEX_PATH, PROFILE_PATH, METRICS_PATH } path;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	/* a request answered (its headers all in) counts until it completes: stop lets it */
	if (*req_cls != &answering) {
		bool overlong = *req_cls == &query_overlong;

		*req_cls = (void *)&answering;
		__atomic_add_fetch(&http->requests, 1, __ATOMIC_SEQ_CST);
		if (overlong)
			return fail(conn, MHD_HTTP_BAD_REQUEST, "query string too long\n");
	}
	if (!strcmp(url, "/"))
		path = INDEX_PATH;
	else if (!strcmp(url, "/debug/pprof/profile"))
		path = PROFILE_PATH;
	else if (!strcmp(url, "/metrics"))
		path = METRICS_PATH;
	else
		return fail(conn, MHD_HTTP_NOT_FOUND, "not found\n");
	/* GET only: HEAD of the profile would run a whole window for nothing */
	if (strcmp(method, MHD_HTTP_METHOD_GET))
		return fail(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET only\n");

	switch (path) {
	case PROFILE_PATH:
		return serve_profile(http, conn);
	case METRICS_PATH:
		return serve_metrics(http, conn);
	case INDEX_PATH:
		break;
	}
	return queue(conn, MHD_HTTP_OK,
		     mhd->create_response_from_buffer(sizeof(INDEX) - 1, (void *)INDEX,
						     MHD_RESPMEM_PERSISTENT),
		     "text/plain; charset=utf-8", NULL, NULL);
}

/* Whether fd is still the socket st describes: MHD closes the listening socket on some of
 * its start-up failures and not on others, and the number may have been reused since. */
static bool same_socket(int fd, const struct stat *st)
{
	struct stat now;

	return !fstat(fd, &now) && S_ISSOCK(now.st_mode) && now.st_dev == st->st_dev &&
	       now.st_ino == st->st_ino;
}

int serve_http__start_timeout(const struct sockaddr_storage *addr, socklen_t len,
			      const struct serve_http_handlers *h, unsigned idle_timeout_s,
			      struct serve_http **out, char *err, size_t errlen)
{
	char where[SERVE_ADDR_TEXT_MAX] = "?";
	struct sockaddr_storage bound;
	socklen_t bound_len = sizeof(bound);
	struct serve_http *http = NULL;
	unsigned flags;
	struct stat st;
	int fd = -1, one = 1, zero = 0, ret;

	*out = NULL;
	serve_http__format_listen(addr, where, sizeof(where));
	if (!h || !h->profile || !h->metrics ||
	    (addr->ss_family != AF_INET && addr->ss_family != AF_INET6)) {
		ret = -EINVAL;
		text__set_err(err, errlen, "--listen %s: an IPv4 or IPv6 address and handlers", where);
		goto cleanup;
	}
	if (!mhd && !(mhd = mhd__load(err, errlen))) {
		ret = -ENOENT;
		goto cleanup;
	}
	http = calloc(1, sizeof(*http));
	if (!http) {
		ret = -ENOMEM;
		text__set_err(err, errlen, "--listen %s: %s", where, strerror(ENOMEM));
		goto cleanup;
	}
	http->h = *h;

	/* the socket is bound here rather than by MHD (MHD_OPTION_SOCK_ADDR): MHD reports why
	 * a bind failed only to its log, and errno is the reason the user needs */
	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		text__set_err(err, errlen, "--listen %s: %s", where, strerror(errno));
		goto cleanup;
	}
	/* a restarted agent binds over its predecessor's TIME_WAIT connections */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* "[::]:PORT" takes IPv4 clients too, as Go's listeners do, whatever the sysctl */
	if (addr->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (const struct sockaddr *)addr, len) ||
	    listen(fd, SERVE_CONNECTIONS_MAX) ||
	    getsockname(fd, (struct sockaddr *)&bound, &bound_len) || fstat(fd, &st)) {
		ret = -errno;
		text__set_err(err, errlen, "--listen %s: %s", where, strerror(errno));
		goto cleanup;
	}
	http->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						      : ((struct sockaddr_in *)&bound)->sin_port);

	/* A thread per connection: a profile request blocks its handler for its whole window.
	 * poll, not select: hprof may hold more than FD_SETSIZE descriptors. No
	 * MHD_USE_ERROR_LOG: MHD's messages (a client gone, a malformed request) would go to
	 * stderr; each bad request gets its status instead. */
	/* MHD_USE_ITC: serve_http__stop quiesces the daemon before it stops it */
	flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
		MHD_USE_ITC;
	if (addr->ss_family == AF_INET6)
		flags |= MHD_USE_DUAL_STACK;
	errno = 0;
	http->daemon = mhd->start_daemon(
		flags, 0, NULL, NULL, answer, http, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_CONNECTIONS_MAX,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)SERVE_CONNECTIONS_PER_IP,
		MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_CONNECTION_MEMORY,
		MHD_OPTION_URI_LOG_CALLBACK, uri_seen, http,
		MHD_OPTION_NOTIFY_COMPLETED, request_done, http, MHD_OPTION_END);
	if (!http->daemon) {
		ret = errno ? -errno : -EIO;
		text__set_err(err, errlen, "--listen %s: libmicrohttpd could not start%s%s", where,
			errno ? ": " : "", errno ? strerror(errno) : "");
		if (!same_socket(fd, &st))
			fd = -1;
		goto cleanup;
	}
	*out = http;
	return 0;

cleanup:
	if (fd >= 0)
		close(fd);
	free(http);
	return ret;
}

int serve_http__start(const struct sockaddr_storage *addr, socklen_t len,
		      const struct serve_http_handlers *h, struct serve_http **out, char *err,
		      size_t errlen)
{
	return serve_http__start_timeout(addr, len, h, SERVE_IDLE_TIMEOUT_S, out, err, errlen);
}

uint16_t serve_http__port(const struct serve_http *http)
{
	return http->port;
}

void serve_http__stop(struct serve_http *http)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	MHD_socket listener;

	if (!http)
		return;
	/* No new connections; requests being answered (windows cut at SIGTERM, their answers
	 * on the way) get SERVE_DRAIN_S to finish before every connection is shut down. A
	 * client that has not sent its whole request holds nothing up. */
	listener = mhd->quiesce_daemon(http->daemon);
	for (int i = 0; i < SERVE_DRAIN_S * 100 && __atomic_load_n(&http->requests, __ATOMIC_SEQ_CST);
	     i++)
		nanosleep(&pause, NULL);
	/* closes the remaining connections and joins their threads: a profile handler still
	 * waiting for its window holds this up until it returns */
	mhd->stop_daemon(http->daemon);
	if (listener != MHD_INVALID_SOCKET)
		close(listener);
	free(http);
}
