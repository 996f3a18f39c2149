#include "binary/fetch_background.h"
#include "binary/debug_files.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct request {
	uint8_t id[BUILD_ID_MAX];
	size_t len;
	/* the build-id of the binaries the file is for: id itself, or for a supplementary
	 * file, the dwz'd debug file's binary */
	uint8_t for_id[BUILD_ID_MAX];
	size_t for_len;
	char name[64];
	bool done; /* fetch holds the outcome */
	struct debuginfod_fetch fetch;
};

struct fetch_background {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool started;
	atomic_bool stopping;
	/* every request ever made, in order: [0, taken) taken in by the recorder's thread,
	 * [taken, fetched) done, [fetched, nr) waiting for the thread */
	struct request *reqs;
	size_t nr, cap, fetched, taken;
};

int fetch_background__new(struct fetch_background **out)
{
	struct fetch_background *b = calloc(1, sizeof(*b));

	*out = b;
	if (!b)
		return -ENOMEM;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->wake, NULL);
	return 0;
}

/* Every request waiting fails with reason (the client could not be made). Under the lock. */
static void fail_waiting(struct fetch_background *b, const char *reason)
{
	for (; b->fetched < b->nr; b->fetched++) {
		struct request *r = &b->reqs[b->fetched];

		r->fetch.outcome = DEBUGINFOD_FAILED;
		snprintf(r->fetch.reason, sizeof(r->fetch.reason), "%.150s", reason);
		r->done = true;
	}
}

/* Fetches the waiting requests through one client (its total timeout counts from now),
 * one at a time, the lock let go while each is fetched. Under the lock. */
static void fetch_waiting(struct fetch_background *b)
{
	struct debuginfod *d = NULL;
	char err[192];

	pthread_mutex_unlock(&b->lock);
	if (debuginfod__new(0, NULL, &d, err, sizeof(err)) != 0) {
		pthread_mutex_lock(&b->lock);
		fail_waiting(b, err);
		return;
	}
	debuginfod__cancel_on(d, &b->stopping);
	pthread_mutex_lock(&b->lock);
	while (b->fetched < b->nr && !atomic_load(&b->stopping)) {
		/* a copy: the recorder's thread may move the requests while this one fetches */
		struct request r = b->reqs[b->fetched];

		pthread_mutex_unlock(&b->lock);
		debuginfod__fetch(d, r.id, r.len, r.name, &r.fetch);
		pthread_mutex_lock(&b->lock);
		b->reqs[b->fetched].fetch = r.fetch;
		b->reqs[b->fetched].done = true;
		b->fetched++;
	}
	pthread_mutex_unlock(&b->lock);
	debuginfod__free(d);
	pthread_mutex_lock(&b->lock);
}

static void *fetch_thread(void *arg)
{
	struct fetch_background *b = arg;

	pthread_mutex_lock(&b->lock);
	while (!atomic_load(&b->stopping)) {
		if (b->fetched == b->nr)
			pthread_cond_wait(&b->wake, &b->lock);
		else
			fetch_waiting(b);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

static bool asked_already(const struct fetch_background *b, const uint8_t *id, size_t len)
{
	for (size_t i = 0; i < b->nr; i++) {
		if (b->reqs[i].len == len && memcmp(b->reqs[i].id, id, len) == 0)
			return true;
	}
	return false;
}

/* Queues a request for build-id id (unless it was made already), for the binaries of
 * for_id. Under the lock. Returns 0 or -ENOMEM. */
static int queue(struct fetch_background *b, const uint8_t *id, size_t len, const uint8_t *for_id,
		 size_t for_len, const char *name)
{
	struct request *r;

	if (len == 0 || len > BUILD_ID_MAX || for_len > BUILD_ID_MAX || asked_already(b, id, len))
		return 0;
	if (b->nr == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		struct request *bigger = realloc(b->reqs, cap * sizeof(*bigger));

		if (!bigger)
			return -ENOMEM;
		b->reqs = bigger;
		b->cap = cap;
	}
	r = &b->reqs[b->nr++];
	memset(r, 0, sizeof(*r));
	memcpy(r->id, id, len);
	r->len = len;
	memcpy(r->for_id, for_id, for_len);
	r->for_len = for_len;
	snprintf(r->name, sizeof(r->name), "%s", name);
	return 0;
}

static int start_thread(struct fetch_background *b)
{
	int err;

	if (b->started)
		return 0;
	err = pthread_create(&b->thread, NULL, fetch_thread, b);
	if (err)
		return -err;
	b->started = true;
	return 0;
}

int fetch_background__ask(struct fetch_background *b, struct module_registry *reg)
{
	size_t before;
	int err = 0;

	pthread_mutex_lock(&b->lock);
	before = b->nr;
	for (uint32_t i = 0; i < module_registry__count(reg) && !err; i++) {
		struct module *mod = module_registry__by_id(reg, MODULE_FIRST_FILE + i);
		const uint8_t *id;
		size_t len;

		if (!mod || !mod->wants_debug_file || mod->debug_file_asked || !mod->syms)
			continue;
		mod->debug_file_asked = true;
		len = elf_symbols__build_id(mod->syms, &id);
		err = queue(b, id, len, id, len, mod->name ? mod->name : mod->path);
	}
	if (!err && b->nr > before && !atomic_load(&b->stopping)) {
		err = start_thread(b);
		pthread_cond_signal(&b->wake);
	}
	pthread_mutex_unlock(&b->lock);
	return err;
}

/* A fetched debug file that dwz shrank names its supplementary file: asked for in turn,
 * unless a local place has it. Under the lock. Returns 0 or -ENOMEM. */
static int queue_supplementary(struct fetch_background *b, const struct request *r)
{
	uint8_t id[BUILD_ID_MAX];
	char path[PATH_MAX], name[64];
	size_t len;

	if (debug_files__altlink_build_id(r->fetch.path, id, &len) != 0 ||
	    debug_files__altlink_of(r->fetch.path, path, sizeof(path)) == 0)
		return 0;
	snprintf(name, sizeof(name), "%.50s (dwz)", r->name);
	if (queue(b, id, len, r->for_id, r->for_len, name))
		return -ENOMEM;
	pthread_cond_signal(&b->wake);
	return 0;
}

int fetch_background__take(struct fetch_background *b, struct module_registry *reg,
			   struct fetch_debug_report *rep)
{
	int registered = 0, err = 0;

	pthread_mutex_lock(&b->lock);
	for (; b->taken < b->fetched && !err; b->taken++) {
		/* a copy: queueing a supplementary file may move the requests */
		struct request r = b->reqs[b->taken];
		bool got = r.fetch.outcome == DEBUGINFOD_FROM_SERVER ||
			   r.fetch.outcome == DEBUGINFOD_FROM_CACHE;

		rep->tried = true;
		rep->seconds += r.fetch.seconds;
		err = fetch_debug__add_result(rep, r.name, r.id, r.len, &r.fetch);
		if (!err && got)
			err = debug_files__add_fetched(r.id, r.len, r.fetch.path);
		if (!err && got)
			err = queue_supplementary(b, &r);
		if (err)
			break;
		fetch_debug__settle_build_id(reg, r.for_id, r.for_len, got);
		registered += got;
	}
	pthread_mutex_unlock(&b->lock);
	return err ? err : registered;
}

void fetch_background__stop(struct fetch_background *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	atomic_store(&b->stopping, true);
	pthread_cond_signal(&b->wake);
	pthread_mutex_unlock(&b->lock);
	if (b->started)
		pthread_join(b->thread, NULL);
	b->started = false;
}

void fetch_background__free(struct fetch_background *b)
{
	if (!b)
		return;
	fetch_background__stop(b);
	pthread_cond_destroy(&b->wake);
	pthread_mutex_destroy(&b->lock);
	free(b->reqs);
	free(b);
}
