/* livestack CAPTURE [COMM]: how many bytes each sample of a raw capture (hprof --raw) moved
 * against the live stack it described (bench/b_stackcopy.sh).
 *
 * A sample's live stack runs from its sp to its thread's outermost frame: the sp of the
 * outermost frame a complete DWARF walk reaches (the base hprof teaches the kernel). A
 * sample whose own copy holds a complete walk gives it; any other (a leaf-only copy, a
 * truncated walk) takes its thread's base from the latest complete walk before it, when
 * its sp lies below that base. Samples with neither are counted apart. With COMM, only
 * samples of that command name count.
 *
 * The last line is machine-readable:
 * "livestack: samples N live L record_bytes R copy_bytes C live_bytes B max_live M"
 * over the L samples whose live stack is known: R the records' sizes as the kernel sent
 * them, C the stack bytes they carried (copy and window), B the live stacks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "walkers.h"

/* Farther than any ceiling hprof copies: a base that far above sp is another stack's. */
#define LIVE_MAX (1ull << 20)

struct thread_base {
	uint32_t tid;
	uint64_t base;
	UT_hash_handle hh;
};

struct livestack {
	struct capture_file *cap;
	struct session *session;
	struct unwind_frame *frames;
	struct thread_base *bases;
	const char *comm;
	uint64_t samples, live, record_bytes, copy_bytes, live_bytes, max_live;
};

static int remember_base(struct livestack *l, uint32_t tid, uint64_t base)
{
	struct thread_base *t;

	HASH_FIND(hh, l->bases, &tid, sizeof(tid), t);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		t->tid = tid;
		HASH_ADD(hh, l->bases, tid, sizeof(t->tid), t);
	}
	t->base = base;
	return 0;
}

static uint64_t known_base(struct livestack *l, uint32_t tid)
{
	struct thread_base *t;

	HASH_FIND(hh, l->bases, &tid, sizeof(tid), t);
	return t ? t->base : 0;
}

static int measure(struct livestack *l, const struct capture_rec *r)
{
	const struct hprof_sample *s = capture_rec__sample(r);
	char comm[HPROF_COMM_LEN + 1] = { 0 };
	struct unwind_result res;
	uint64_t base, live;
	int err;

	if (!s || walk__skip_reason(s, r->len) == WALK_SKIP_MALFORMED)
		return 0;
	memcpy(comm, s->comm, HPROF_COMM_LEN);
	if (l->comm && strcmp(comm, l->comm) != 0)
		return 0;
	l->samples++;
	if (walk__skip_reason(s, r->len) != WALK_SKIP_NONE)
		return 0;
	err = session__walk_sample(l->session, s, r->len, l->frames, UNWIND_MAX_FRAMES, &res);
	if (err)
		return err;
	if (res.end == UNWIND_END_COMPLETE && res.last.sp > s->user_sp) {
		base = res.last.sp;
		err = remember_base(l, s->tid, base);
		if (err)
			return err;
	} else {
		base = known_base(l, s->tid);
	}
	if (base <= s->user_sp || base - s->user_sp > LIVE_MAX)
		return 0;
	live = base - s->user_sp;
	l->live++;
	l->record_bytes += r->len;
	l->copy_bytes += hprof_sample__user_memory_len(s);
	l->live_bytes += live;
	if (live > l->max_live)
		l->max_live = live;
	return 0;
}

static int run(struct livestack *l)
{
	uint32_t pid;
	const char *text, *path;
	struct map_event e;
	size_t len;
	int err = 0;

	for (size_t i = 0; i < l->cap->nr_recs && !err; i++) {
		const struct capture_rec *r = &l->cap->recs[i];

		if (capture_rec__maps(r, &pid, &text, &len))
			err = session__load_maps(l->session, pid, text, len);
		else if (capture_rec__map_event(r, &e, &path))
			err = session__handle_map_event(l->session, &e, path);
		else if (r->type == CAPTURE_SAMPLE)
			err = measure(l, r);
	}
	return err;
}

int main(int argc, char **argv)
{
	struct livestack l = { 0 };
	struct thread_base *t, *tmp;
	char msg[512] = "";
	int err;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: livestack CAPTURE [COMM]\n");
		return 2;
	}
	l.comm = argc == 3 ? argv[2] : NULL;
	err = capture_file__load(argv[1], &l.cap, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "livestack: %s\n", msg[0] ? msg : strerror(-err));
		return 2;
	}
	l.frames = calloc(UNWIND_MAX_FRAMES, sizeof(*l.frames));
	err = !l.frames ? -ENOMEM : session__new(true, &l.session);
	if (!err) {
		session__set_replay(l.session);
		err = run(&l);
	}
	if (err)
		fprintf(stderr, "livestack: %s: %s\n", argv[1], strerror(-err));
	else
		printf("livestack: samples %llu live %llu record_bytes %llu copy_bytes %llu live_bytes %llu max_live %llu\n",
		       (unsigned long long)l.samples, (unsigned long long)l.live,
		       (unsigned long long)l.record_bytes, (unsigned long long)l.copy_bytes,
		       (unsigned long long)l.live_bytes, (unsigned long long)l.max_live);
	HASH_ITER(hh, l.bases, t, tmp) {
		HASH_DEL(l.bases, t);
		free(t);
	}
	session__free(l.session);
	capture_file__free(l.cap);
	free(l.frames);
	return err ? 2 : 0;
}
