/* Unit tests for the thread id set (user/util/tid_set.h): a long random run of adds and
 * removes (tids drawn from a small range, so that probes collide and removals shift
 * entries back) agrees with a plain array at every step; tid 0 is refused; the set stops at
 * TID_SET_MAX and takes adds again after removals. Prints one "ok - NAME" / "not ok - NAME"
 * line per check. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/tid_set.h"
#include "check.h"

#define RANGE 5000

static void random_run(void)
{
	struct tid_set *s = tid_set__new();
	static bool in[RANGE];
	size_t count = 0, wrong_member = 0, wrong_count = 0, failed_adds = 0;
	uint32_t seed = 12345;

	for (int step = 0; step < 400000; step++) {
		uint32_t tid;

		seed = seed * 1103515245u + 12345u;
		tid = 1 + (seed >> 8) % (RANGE - 1);
		/* adds win early, removes later: the set grows, then shrinks to empty */
		if (step < 200000 ? ((seed >> 4) & 3) != 0 : ((seed >> 4) & 3) == 0) {
			if (tid_set__add(s, tid))
				failed_adds++;
			count += !in[tid];
			in[tid] = true;
		} else {
			tid_set__remove(s, tid);
			count -= in[tid];
			in[tid] = false;
		}
		if (step % 97 == 0) {
			for (uint32_t t = 1; t < RANGE; t++)
				wrong_member += tid_set__contains(s, t) != in[t];
		}
		wrong_count += tid_set__count(s) != count;
	}
	check(failed_adds == 0, "random: every add succeeded (%zu failed)", failed_adds);
	check(wrong_member == 0, "random: membership agrees with the reference (%zu wrong)",
	      wrong_member);
	check(wrong_count == 0, "random: the count agrees at every step (%zu wrong)", wrong_count);
	check(count > 0 && count < RANGE / 2, "random: the run ends part full (%zu)", count);
	for (uint32_t t = 1; t < RANGE; t++)
		tid_set__remove(s, t);
	check(tid_set__count(s) == 0, "random: removing everything empties it");
	tid_set__free(s);
}

/* t * 7919 for odd t */
static bool odd_multiples(uint32_t tid, void *ctx)
{
	(void)ctx;
	return tid % 7919u == 0 && (tid / 7919u) % 2 == 1;
}

static void limits(void)
{
	struct tid_set *s = tid_set__new();
	int err = 0;
	bool all = true;

	check(tid_set__add(s, 0) == -EINVAL && !tid_set__contains(s, 0), "tid 0 is refused");
	for (uint32_t t = 1; t <= TID_SET_MAX && !err; t++)
		err = tid_set__add(s, t * 7919u);
	check(err == 0 && tid_set__count(s) == TID_SET_MAX, "holds TID_SET_MAX tids");
	check(tid_set__add(s, 1) == -ENOSPC, "one more is refused with -ENOSPC");
	check(tid_set__add(s, 7919u) == 0, "adding one it holds still succeeds when full");
	for (uint32_t t = 1; t <= TID_SET_MAX; t++)
		all = all && tid_set__contains(s, t * 7919u);
	check(all, "every one of them is found");
	tid_set__remove(s, 7919u);
	check(tid_set__add(s, 1) == 0 && tid_set__contains(s, 1), "after a removal, adds again");
	tid_set__keep_if(s, odd_multiples, NULL);
	all = true;
	for (uint32_t t = 2; t <= TID_SET_MAX; t++)
		all = all && tid_set__contains(s, t * 7919u) == (t % 2 == 1);
	/* 7919 itself went above */
	check(all && tid_set__count(s) == TID_SET_MAX / 2 - 1 && !tid_set__contains(s, 1),
	      "keep_if keeps exactly the tids it is told to (%zu)", tid_set__count(s));
	tid_set__free(s);
	tid_set__free(NULL);
}

int main(void)
{
	random_run();
	limits();
	return failures ? 1 : 0;
}
