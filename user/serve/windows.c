#include "serve/windows.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "binary/name_cache.h"
#include "output/pprof.h"

#define CLIENT_MAX 64

struct window {
	char client[CLIENT_MAX]; /* "" for an --every window */
	uint64_t length_ns;
	uint64_t start_ns, end_ns;
	time_t start_wall;       /* for --every's file names */
	void *snapshot;          /* --every --json: the counters at its start */
	struct profile *profile; /* the recorder's thread only */
	bool started;            /* counting: in active[] */
	bool done;               /* body or err is there for the client */
	int err;
	uint8_t *body;
	size_t len;
	struct window *next;
};

/* The files one --every output wrote, oldest first, for --keep. */
struct kept_files {
	char **paths;
	size_t n;
};

enum { OUT_FOLDED, OUT_PPROF, OUT_SVG, OUT_JSON, OUT_COUNT };

struct serve_windows {
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct window *requested; /* clients' windows until their client took the bytes */
	bool stopping;
	struct serve_windows_stats stats;
	/* the recorder's thread only */
	struct serve_windows_opts o;
	struct window *active[SERVE_WINDOWS_MAX + 1];
	size_t nr_active;
	struct window *every;
	struct kept_files kept[OUT_COUNT];
	/* the names windows made, for the next ones; swept as windows end */
	struct name_cache *names;
};

int serve_windows__new(const struct serve_windows_opts *o, struct serve_windows **out)
{
	struct serve_windows *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return -ENOMEM;
	if (pthread_mutex_init(&w->lock, NULL) != 0) {
		free(w);
		return -ENOMEM;
	}
	if (pthread_cond_init(&w->done, NULL) != 0) {
		pthread_mutex_destroy(&w->lock);
		free(w);
		return -ENOMEM;
	}
	w->names = name_cache__new();
	if (!w->names) {
		pthread_cond_destroy(&w->done);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return -ENOMEM;
	}
	w->o = *o;
	*out = w;
	return 0;
}

/* A client's window in the list: one open at a time per address. */
static bool client_busy(const struct serve_windows *w, const char *client)
{
	for (const struct window *x = w->requested; x; x = x->next) {
		if (!x->done && strcmp(x->client, client) == 0)
			return true;
	}
	return false;
}

static size_t open_requests(const struct serve_windows *w)
{
	size_t n = 0;

	for (const struct window *x = w->requested; x; x = x->next)
		n += !x->done;
	return n;
}

static void unlink_request(struct serve_windows *w, struct window *win)
{
	for (struct window **p = &w->requested; *p; p = &(*p)->next) {
		if (*p == win) {
			*p = win->next;
			return;
		}
	}
}

int serve_windows__request(struct serve_windows *w, unsigned seconds, const char *client,
			   uint8_t **body, size_t *len)
{
	struct window *win;
	int err;

	*body = NULL;
	*len = 0;
	pthread_mutex_lock(&w->lock);
	if (w->stopping) {
		pthread_mutex_unlock(&w->lock);
		return -ESHUTDOWN;
	}
	if (client_busy(w, client) || open_requests(w) >= SERVE_WINDOWS_MAX) {
		w->stats.refused++;
		pthread_mutex_unlock(&w->lock);
		return -EBUSY;
	}
	win = calloc(1, sizeof(*win));
	if (!win) {
		pthread_mutex_unlock(&w->lock);
		return -ENOMEM;
	}
	snprintf(win->client, sizeof(win->client), "%s", client);
	win->length_ns = (uint64_t)seconds * 1000000000ull;
	win->next = w->requested;
	w->requested = win;
	if (w->o.requested)
		w->o.requested(w->o.ctx);
	/* the recorder's thread ends every window, stopping or not */
	while (!win->done)
		pthread_cond_wait(&w->done, &w->lock);
	unlink_request(w, win);
	err = win->err;
	if (!err) {
		*body = win->body;
		*len = win->len;
		w->stats.served++;
	} else {
		free(win->body);
	}
	pthread_mutex_unlock(&w->lock);
	free(win);
	return err;
}

int serve_windows__add(void *windows, const char *comm, const char *root,
		       const struct profile_labels *labels, const struct frame *frames,
		       uint32_t n)
{
	struct serve_windows *w = windows;
	int err = 0;

	for (size_t i = 0; i < w->nr_active && !err; i++)
		err = profile__add_labeled(w->active[i]->profile, comm, root, labels, frames, n);
	return err;
}

/* The window's profile as gzip pprof bytes. */
static int encode_pprof(struct serve_windows *w, struct window *win, uint64_t now_ns)
{
	struct pprof_opts po = { .frequency = w->o.frequency,
				 .duration_ns = now_ns > win->start_ns ? now_ns - win->start_ns : 0 };
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	int err;

	if (!f)
		return -ENOMEM;
	err = pprof__write(win->profile, w->o.modules, &po, f);
	if (fclose(f) != 0 && !err)
		err = -ENOMEM;
	if (err) {
		free(buf);
		return err;
	}
	win->body = (uint8_t *)buf;
	win->len = size;
	return 0;
}

/* path with the window's start put in: strftime of it; a path without a '%' gets
 * ".YYYYmmddTHHMMSS" before its first extension. NULL when out of memory or too long. */
static char *window_path(const char *pattern, time_t start)
{
	char format[4096], out[4096];
	const char *base = strrchr(pattern, '/'), *dot;
	struct tm tm;

	base = base ? base + 1 : pattern;
	dot = strchr(base, '.');
	if (strchr(pattern, '%'))
		snprintf(format, sizeof(format), "%s", pattern);
	else if (dot && dot != base)
		snprintf(format, sizeof(format), "%.*s.%%Y%%m%%dT%%H%%M%%S%s", (int)(dot - pattern),
			 pattern, dot);
	else
		snprintf(format, sizeof(format), "%s.%%Y%%m%%dT%%H%%M%%S", pattern);
	localtime_r(&start, &tm);
	if (strftime(out, sizeof(out), format, &tm) == 0)
		return NULL;
	return strdup(out);
}

/* Remembers path as written by output k, removing the oldest past --keep. */
static void keep_file(struct serve_windows *w, int k, char *path)
{
	struct kept_files *kf = &w->kept[k];
	char **grown;

	for (size_t i = 0; i < kf->n; i++) {
		if (strcmp(kf->paths[i], path) == 0) {
			free(path); /* the same name again: written over */
			return;
		}
	}
	grown = realloc(kf->paths, (kf->n + 1) * sizeof(*kf->paths));
	if (!grown) {
		free(path);
		return;
	}
	kf->paths = grown;
	kf->paths[kf->n++] = path;
	while (w->o.keep && kf->n > w->o.keep) {
		unlink(kf->paths[0]);
		free(kf->paths[0]);
		memmove(kf->paths, kf->paths + 1, --kf->n * sizeof(*kf->paths));
	}
}

/* Before a new file of output k is written: the oldest go, so that with it there are never
 * more than --keep (a file of the same name is written over, and counts once). */
static void make_room(struct serve_windows *w, int k, const char *path)
{
	struct kept_files *kf = &w->kept[k];

	for (size_t i = 0; i < kf->n; i++) {
		if (strcmp(kf->paths[i], path) == 0)
			return;
	}
	while (w->o.keep && kf->n >= w->o.keep) {
		unlink(kf->paths[0]);
		free(kf->paths[0]);
		memmove(kf->paths, kf->paths + 1, --kf->n * sizeof(*kf->paths));
	}
}

/* Writes an --every window's files. */
static int write_window(struct serve_windows *w, struct window *win, uint64_t now_ns)
{
	struct output_opts out = w->o.out;
	const char *patterns[OUT_COUNT] = { w->o.out.folded_path, w->o.out.pprof_path,
					    w->o.out.svg_path, w->o.out.json_path };
	char *paths[OUT_COUNT] = { NULL };
	int err = 0;

	for (int k = 0; k < OUT_COUNT && !err; k++) {
		if (patterns[k] && !(paths[k] = window_path(patterns[k], win->start_wall))) {
			fprintf(stderr, "hprof: --every: cannot name a file after '%s'\n", patterns[k]);
			err = -ENAMETOOLONG;
		}
	}
	for (int k = 0; k < OUT_COUNT && !err; k++) {
		if (paths[k])
			make_room(w, k, paths[k]);
	}
	out.folded_path = paths[OUT_FOLDED];
	out.pprof_path = paths[OUT_PPROF];
	out.svg_path = paths[OUT_SVG];
	out.json_path = NULL;
	out.top = 0;
	out.frequency = w->o.frequency;
	out.duration_ns = now_ns > win->start_ns ? now_ns - win->start_ns : 0;
	if (!err && (out.folded_path || out.pprof_path || out.svg_path))
		err = outputs__write(win->profile, w->o.modules, &out);
	if (!err && paths[OUT_JSON] && w->o.write_json) {
		err = w->o.write_json(w->o.ctx, paths[OUT_JSON], win->profile, out.duration_ns,
				      win->snapshot);
		win->snapshot = NULL;
	}
	for (int k = 0; k < OUT_COUNT; k++) {
		if (paths[k] && !err)
			keep_file(w, k, paths[k]);
		else
			free(paths[k]);
	}
	if (!err)
		w->stats.written++;
	return err;
}

/* Starts win now: its profile, its time, its place among the counting windows. */
static int start_window(struct serve_windows *w, struct window *win, uint64_t now_ns,
			bool by_name)
{
	int err = profile__new(w->o.modules, w->o.ksyms, &win->profile);

	if (!err && by_name)
		err = profile__key_by_name(win->profile);
	if (!err && (w->o.inlines || w->o.lines))
		err = profile__expand_inline(win->profile, w->o.inlines, w->o.lines);
	if (err)
		return err;
	profile__use_name_cache(win->profile, w->names);
	win->start_ns = now_ns;
	win->end_ns = now_ns + win->length_ns;
	win->start_wall = time(NULL);
	win->started = true;
	if (!win->client[0] && w->o.out.json_path && w->o.snapshot)
		win->snapshot = w->o.snapshot(w->o.ctx);
	w->active[w->nr_active++] = win;
	return 0;
}

static void deactivate(struct serve_windows *w, struct window *win)
{
	for (size_t i = 0; i < w->nr_active; i++) {
		if (w->active[i] == win) {
			w->active[i] = w->active[--w->nr_active];
			return;
		}
	}
}

/* Ends a client's window: its bytes (or why not) to the client. */
static void end_request(struct serve_windows *w, struct window *win, uint64_t now_ns)
{
	int err;

	deactivate(w, win);
	/* JIT frames named after their mapping: as their perf maps and jitdumps name them
	 * now, read again whatever their recheck interval (a map written just before) */
	module_registry__reload_jit(w->o.modules, 0);
	profile__settle_names(win->profile, 0);
	err = encode_pprof(w, win, now_ns);
	profile__free(win->profile);
	win->profile = NULL;
	pthread_mutex_lock(&w->lock);
	win->err = err;
	win->done = true;
	pthread_cond_broadcast(&w->done);
	pthread_mutex_unlock(&w->lock);
}

/* Ends the --every window: its files written, the next one started where it ended. */
static int end_every(struct serve_windows *w, uint64_t now_ns, bool next)
{
	struct window *win = w->every;
	int err;

	deactivate(w, win);
	module_registry__reload_jit(w->o.modules, 0);
	profile__settle_names(win->profile, 0);
	err = write_window(w, win, now_ns);
	profile__free(win->profile);
	free(win->snapshot);
	win->snapshot = NULL;
	w->every = NULL;
	if (next && start_window(w, win, now_ns, !w->o.out.pprof_path) == 0) {
		w->every = win;
		return err;
	}
	free(win);
	return err;
}

/* Ends the windows whose time is up (all, when stopping). */
static int end_windows(struct serve_windows *w, uint64_t now_ns, bool all)
{
	struct window *ending[SERVE_WINDOWS_MAX + 1];
	size_t n = 0;
	int err = 0;

	for (size_t i = 0; i < w->nr_active; i++) {
		if (w->active[i] != w->every && (all || now_ns >= w->active[i]->end_ns))
			ending[n++] = w->active[i];
	}
	for (size_t i = 0; i < n; i++)
		end_request(w, ending[i], now_ns);
	if (w->every && (all || now_ns >= w->every->end_ns)) {
		err = end_every(w, now_ns, !all);
		n++;
	}
	if (n)
		name_cache__sweep(w->names);
	return err;
}

/* Starts the windows clients asked for since the last tick; a window that cannot start
 * gets its error at once. */
static void start_requests(struct serve_windows *w, uint64_t now_ns)
{
	pthread_mutex_lock(&w->lock);
	for (struct window *x = w->requested; x; x = x->next) {
		if (x->started || x->done)
			continue;
		if (w->nr_active >= SERVE_WINDOWS_MAX + 1 || start_window(w, x, now_ns, false) != 0) {
			x->err = -ENOMEM;
			x->done = true;
			pthread_cond_broadcast(&w->done);
		}
	}
	pthread_mutex_unlock(&w->lock);
}

int serve_windows__tick(struct serve_windows *w, uint64_t now_ns)
{
	if (w->o.every_ns && !w->every) {
		struct window *win = calloc(1, sizeof(*win));

		if (win) {
			win->length_ns = w->o.every_ns;
			if (start_window(w, win, now_ns, !w->o.out.pprof_path) == 0)
				w->every = win;
			else
				free(win);
		}
	}
	start_requests(w, now_ns);
	return end_windows(w, now_ns, false);
}

unsigned serve_windows__ms_to_next_end(const struct serve_windows *w, uint64_t now_ns)
{
	uint64_t first = UINT64_MAX;

	for (size_t i = 0; i < w->nr_active; i++) {
		if (w->active[i]->end_ns < first)
			first = w->active[i]->end_ns;
	}
	if (first == UINT64_MAX)
		return UINT_MAX;
	if (first <= now_ns)
		return 0;
	return (first - now_ns + 999999) / 1000000 > UINT_MAX ? UINT_MAX
	       : (unsigned)((first - now_ns + 999999) / 1000000);
}

int serve_windows__stop(struct serve_windows *w, uint64_t now_ns)
{
	int err;

	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_mutex_unlock(&w->lock);
	/* windows asked for but not started yet get an empty profile of no time */
	start_requests(w, now_ns);
	err = end_windows(w, now_ns, true);
	return err;
}

void serve_windows__stats(struct serve_windows *w, struct serve_windows_stats *stats)
{
	pthread_mutex_lock(&w->lock);
	*stats = w->stats;
	stats->open = open_requests(w) + (w->every != NULL);
	pthread_mutex_unlock(&w->lock);
}

void serve_windows__free(struct serve_windows *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nr_active; i++)
		profile__free(w->active[i]->profile);
	if (w->every)
		free(w->every->snapshot);
	free(w->every);
	for (struct window *x = w->requested, *next; x; x = next) {
		next = x->next;
		free(x->body);
		free(x);
	}
	for (int k = 0; k < OUT_COUNT; k++) {
		for (size_t i = 0; i < w->kept[k].n; i++)
			free(w->kept[k].paths[i]);
		free(w->kept[k].paths);
	}
	name_cache__free(w->names);
	pthread_cond_destroy(&w->done);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
