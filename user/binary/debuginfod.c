#include "binary/debuginfod.h"
#include "binary/debug_files.h"
#include "binary/symbols.h"
#include "util/text.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ELF_SYMBOLS_FILE_MAX_BYTES (binary/symbols.h), as text. */
#define DEBUGINFOD_MAXSIZE_TEXT "4294967296"
_Static_assert(ELF_SYMBOLS_FILE_MAX_BYTES == 4294967296ull, "DEBUGINFOD_MAXSIZE_TEXT");

/* The library's soname (libdebuginfod1), then the development name. */
static const char *const libraries[] = { "libdebuginfod.so.1", "libdebuginfod.so" };

struct debuginfod_api {
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *c, const unsigned char *id, int id_len,
			      char **path);
	void (*set_progressfn)(debuginfod_client *c, debuginfod_progressfn_t fn);
	void (*set_user_data)(debuginfod_client *c, void *value);
	void *(*get_user_data)(debuginfod_client *c);
	void (*end)(debuginfod_client *c);
};

struct debuginfod {
	struct debuginfod_api api;
	void *lib;
	debuginfod_client *client;
	FILE *progress_out;   /* a terminal, or NULL */
	double file_timeout_s;
	double deadline;      /* monotonic seconds: every fetch ends by then */
	/* the fetch under way */
	char name[96]; /* the binary's, as a terminal may show it (text__terminal_safe) */
	double started;
	bool went_to_server;  /* the progress callback ran: the cache did not have it */
	bool timed_out;
	bool past_deadline;
	bool progress_shown;
	const atomic_bool *cancel; /* set: every fetch ends at its next progress call */
	bool cancelled;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool debuginfod__wanted(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	/* a list of URLs separated by spaces: only spaces is none */
	return urls && urls[strspn(urls, " \t")] != '\0';
}

/* DEBUGINFOD_TIMEOUT, which libdebuginfod also reads (seconds for a connection and for a
 * transfer that stalls), is the most one file may take here; else libdebuginfod's 90 s. */
static double file_timeout_s(void)
{
	const char *v = getenv("DEBUGINFOD_TIMEOUT");
	char *end;
	long s;

	if (!v || !v[0])
		return DEBUGINFOD_FILE_TIMEOUT_S;
	s = strtol(v, &end, 10);
	return *end || s <= 0 || s > 24 * 3600 ? DEBUGINFOD_FILE_TIMEOUT_S : (double)s;
}

static int load(struct debuginfod *d, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(libraries) / sizeof(libraries[0]) && !d->lib; i++)
		d->lib = dlopen(libraries[i], RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		snprintf(err, errlen, "cannot load libdebuginfod (libdebuginfod1): %s", dlerror());
		return -ENOENT;
	}
	d->api.begin = (debuginfod_client * (*)(void)) dlsym(d->lib, "debuginfod_begin");
	d->api.find_debuginfo = dlsym(d->lib, "debuginfod_find_debuginfo");
	d->api.set_progressfn = dlsym(d->lib, "debuginfod_set_progressfn");
	d->api.set_user_data = dlsym(d->lib, "debuginfod_set_user_data");
	d->api.get_user_data = dlsym(d->lib, "debuginfod_get_user_data");
	d->api.end = dlsym(d->lib, "debuginfod_end");
	if (!d->api.begin || !d->api.find_debuginfo || !d->api.set_progressfn ||
	    !d->api.set_user_data || !d->api.get_user_data || !d->api.end) {
		snprintf(err, errlen, "libdebuginfod lacks a function hprof calls (elfutils 0.179 or later)");
		return -ENOSYS;
	}
	return 0;
}

static void show_progress(struct debuginfod *d, long done, long total, double elapsed)
{
	if (total > 0)
		fprintf(d->progress_out, "\rhprof: fetching debug info for %s: %.1f of %.1f MiB, %.0f s  ",
			d->name, (double)done / (1 << 20), (double)total / (1 << 20), elapsed);
	else
		fprintf(d->progress_out, "\rhprof: fetching debug info for %s: %.1f MiB, %.0f s  ",
			d->name, (double)done / (1 << 20), elapsed);
	fflush(d->progress_out);
	d->progress_shown = true;
}

/* The library's, set when it is loaded: the progress callback finds its client's struct
 * with it. */
static void *(*client_user_data)(debuginfod_client *c);

/* libdebuginfod calls it at least once a second while it talks to a server (never for a
 * file in its cache): nonzero aborts the fetch, which then returns -EINTR. */
static int on_progress(debuginfod_client *c, long done, long total)
{
	struct debuginfod *d = client_user_data(c);
	double t = now_s(), elapsed = t - d->started;

	d->went_to_server = true;
	if (elapsed >= d->file_timeout_s)
		d->timed_out = true;
	if (t >= d->deadline)
		d->past_deadline = true;
	if (d->progress_out && elapsed * 1000 >= DEBUGINFOD_PROGRESS_AFTER_MS)
		show_progress(d, done, total, elapsed);
	if (d->cancel && atomic_load(d->cancel))
		d->cancelled = true;
	return d->timed_out || d->past_deadline || d->cancelled;
}

int debuginfod__new(double total_timeout_s, FILE *progress_out, struct debuginfod **out,
		    char *err, size_t errlen)
{
	struct debuginfod *d = calloc(1, sizeof(*d));
	int ret;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	/* libdebuginfod refuses a file over DEBUGINFOD_MAXSIZE bytes before downloading it:
	 * none larger than hprof reads (the user's own setting wins) */
	setenv("DEBUGINFOD_MAXSIZE", DEBUGINFOD_MAXSIZE_TEXT, 0);
	ret = load(d, err, errlen);
	if (!ret && !(d->client = d->api.begin())) {
		snprintf(err, errlen, "libdebuginfod could not start a client");
		ret = -ENOMEM;
	}
	if (ret) {
		debuginfod__free(d);
		return ret;
	}
	client_user_data = d->api.get_user_data;
	d->api.set_user_data(d->client, d);
	d->api.set_progressfn(d->client, on_progress);
	d->progress_out = progress_out && isatty(fileno(progress_out)) ? progress_out : NULL;
	d->file_timeout_s = file_timeout_s();
	d->deadline = now_s() + (total_timeout_s > 0 ? total_timeout_s : DEBUGINFOD_TOTAL_TIMEOUT_S);
	*out = d;
	return 0;
}

/* Why a fetch that returned -errno found nothing. */
static enum debuginfod_outcome failure(const struct debuginfod *d, int err, char *reason,
				       size_t size)
{
	if (d->cancelled) {
		snprintf(reason, size, "hprof stopped first");
		return DEBUGINFOD_FAILED;
	}
	if (d->past_deadline) {
		snprintf(reason, size, "the total timeout passed");
		return DEBUGINFOD_FAILED;
	}
	if (d->timed_out || err == -ETIME || err == -ETIMEDOUT) {
		snprintf(reason, size, "timed out after %.0f s", d->file_timeout_s);
		return DEBUGINFOD_FAILED;
	}
	if (err == -ENOENT) {
		snprintf(reason, size, "not on the servers%s", d->went_to_server ? "" : " (cached answer)");
		return DEBUGINFOD_NOT_FOUND;
	}
	if (err == -ECONNREFUSED || err == -EHOSTUNREACH || err == -ENETUNREACH)
		snprintf(reason, size, "server unreachable: %s", strerror(-err));
	else
		snprintf(reason, size, "%s", strerror(-err));
	return DEBUGINFOD_FAILED;
}

int debuginfod__fetch(struct debuginfod *d, const uint8_t *id, size_t id_len, const char *name,
		      struct debuginfod_fetch *res)
{
	char *path = NULL;
	int fd, err;

	memset(res, 0, sizeof(*res));
	text__terminal_safe(name, d->name, sizeof(d->name));
	d->started = now_s();
	d->went_to_server = d->timed_out = d->past_deadline = d->progress_shown = false;
	d->cancelled = false;
	if (d->started >= d->deadline) {
		res->outcome = DEBUGINFOD_SKIPPED;
		snprintf(res->reason, sizeof(res->reason), "the total timeout passed before its turn");
		return -ETIME;
	}
	fd = d->api.find_debuginfo(d->client, id, (int)id_len, &path);
	res->seconds = now_s() - d->started;
	if (d->progress_shown)
		fprintf(d->progress_out, "\r\033[K");
	if (fd < 0) {
		free(path);
		res->outcome = failure(d, fd, res->reason, sizeof(res->reason));
		return fd;
	}
	close(fd);
	snprintf(res->path, sizeof(res->path), "%s", path ? path : "");
	free(path);
	/* a server may send anything: only the debug file of this very build is taken */
	err = res->path[0] ? debug_files__check_build_id(res->path, id, id_len) : -ENOENT;
	if (err) {
		res->outcome = DEBUGINFOD_FAILED;
		snprintf(res->reason, sizeof(res->reason), "%s",
			 err == -ENOEXEC ? "the server sent a file that is not ELF"
			 : err == -EBADMSG ? "the server sent another build's file"
					   : strerror(-err));
		res->path[0] = '\0';
		return err;
	}
	res->outcome = d->went_to_server ? DEBUGINFOD_FROM_SERVER : DEBUGINFOD_FROM_CACHE;
	return 0;
}

void debuginfod__cancel_on(struct debuginfod *d, const atomic_bool *flag)
{
	d->cancel = flag;
}

void debuginfod__free(struct debuginfod *d)
{
	if (!d)
		return;
	if (d->client)
		d->api.end(d->client);
	/* the library stays mapped: libcurl's global state must not be unmapped under it */
	free(d);
}
