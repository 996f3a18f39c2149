/* Unit tests for the copies of JIT code kept for samples walked after their process exited
 * (user/binary/code_copies.h): reads answered as far as a copy goes, overlapping and
 * touching reads merged with the newer bytes winning, the bound on bytes held, and random
 * adds checked against a plain array. Prints one "ok - NAME" / "not ok - NAME" line per
 * check. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary/code_copies.h"
#include "check.h"

#define BASE 0x7f0000001000ull

/* len bytes of value v. */
static const uint8_t *fill(uint8_t v, size_t len)
{
	static uint8_t buf[CODE_COPIES_MAX_BYTES + 4096];

	memset(buf, v, len);
	return buf;
}

/* The copies answer [addr, addr + want_len) with every byte v. */
static bool holds(struct code_copies *c, uint64_t addr, size_t len, ssize_t want_len, uint8_t v)
{
	static uint8_t buf[1 << 16];
	ssize_t n = code_copies__read(c, addr, buf, len);

	if (n != want_len)
		return false;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] != v)
			return false;
	return true;
}

static void test_reads(void)
{
	struct code_copies *c = code_copies__new();

	check(code_copies__read(c, BASE, (uint8_t[4]){ 0 }, 4) == -ENOENT, "reads: none before any copy");
	code_copies__add(c, BASE, fill(1, 100), 100);
	check(holds(c, BASE, 100, 100, 1) && holds(c, BASE + 90, 100, 10, 1),
	      "reads: as far as the copy goes");
	check(code_copies__read(c, BASE - 1, (uint8_t[4]){ 0 }, 4) == -ENOENT &&
		      code_copies__read(c, BASE + 100, (uint8_t[4]){ 0 }, 4) == -ENOENT,
	      "reads: none just before or just after the copy");
	check(code_copies__bytes(c) == 100 && code_copies__reads(c) == 2, "reads: bytes held and reads counted");
	check(code_copies__holds(c, BASE + 10, fill(1, 90), 90) &&
		      !code_copies__holds(c, BASE + 10, fill(1, 91), 91) &&
		      !code_copies__holds(c, BASE + 10, fill(2, 10), 10) &&
		      !code_copies__holds(c, BASE - 1, fill(1, 10), 10) && code_copies__reads(c) == 2,
	      "reads: holds says whether the copies hold these very bytes, counting no read");
	code_copies__free(c);
}

/* Slices (binary/slice.h) keep a binary's bytes in an unbounded set: past the bound of a
 * process's copies, and listed in address order. */
static void each_copy(void *ctx, uint64_t addr, const uint8_t *bytes, size_t len)
{
	uint64_t *sum = ctx;

	(void)bytes;
	sum[0]++;
	sum[1] += len;
	sum[2] = addr;
}

static void test_unbounded(void)
{
	struct code_copies *c = code_copies__new_unbounded();
	uint64_t sum[3] = { 0 };

	code_copies__add(c, BASE, fill(1, CODE_COPIES_MAX_BYTES), CODE_COPIES_MAX_BYTES);
	code_copies__add(c, BASE + (64u << 20), fill(2, 4096), 4096);
	code_copies__each(c, each_copy, sum);
	check(code_copies__count(c) == 2 && sum[0] == 2 && sum[1] == CODE_COPIES_MAX_BYTES + 4096 &&
		      sum[2] == BASE + (64u << 20),
	      "unbounded: copies past the bound are kept, and listed in address order");
	code_copies__free(c);
}

static void test_merges(void)
{
	struct code_copies *c = code_copies__new();

	code_copies__add(c, BASE, fill(1, 100), 100);
	code_copies__add(c, BASE + 200, fill(2, 100), 100);
	code_copies__add(c, BASE + 50, fill(3, 20), 20);
	check(holds(c, BASE, 50, 50, 1) && holds(c, BASE + 50, 20, 20, 3) && holds(c, BASE + 70, 30, 30, 1),
	      "merges: a read inside a copy replaces its bytes");
	code_copies__add(c, BASE + 100, fill(4, 100), 100); /* touches both */
	check(holds(c, BASE + 100, 100, 100, 4) && holds(c, BASE + 150, 1000, 150, 4) == false &&
		      code_copies__bytes(c) == 300,
	      "merges: a read that touches two copies joins them");
	check(holds(c, BASE + 200, 1000, 100, 2), "merges: the joined copy reads through to its end");
	code_copies__add(c, BASE - 50, fill(5, 400), 400); /* covers all */
	check(holds(c, BASE - 50, 400, 400, 5) && code_copies__bytes(c) == 400,
	      "merges: a read over every copy replaces them all");
	code_copies__free(c);
}

static void test_bound(void)
{
	struct code_copies *c = code_copies__new();

	code_copies__add(c, BASE, fill(1, CODE_COPIES_MAX_BYTES - 10), CODE_COPIES_MAX_BYTES - 10);
	code_copies__add(c, BASE + (64u << 20), fill(2, 100), 100);
	check(code_copies__read(c, BASE + (64u << 20), (uint8_t[4]){ 0 }, 4) == -ENOENT &&
		      code_copies__bytes(c) == CODE_COPIES_MAX_BYTES - 10,
	      "bound: past it nothing more is kept");
	code_copies__add(c, BASE + 16, fill(3, 16), 16);
	check(holds(c, BASE + 16, 16, 16, 3), "bound: bytes already held are still replaced");
	code_copies__add(c, BASE + CODE_COPIES_MAX_BYTES - 20, fill(4, 100), 100);
	check(code_copies__bytes(c) == CODE_COPIES_MAX_BYTES - 10 &&
		      holds(c, BASE + CODE_COPIES_MAX_BYTES - 20, 10, 10, 4) &&
		      holds(c, BASE + CODE_COPIES_MAX_BYTES - 30, 10, 10, 1),
	      "bound: a copy that would grow past it does not, but its bytes in the range are the newer");
	code_copies__free(c);
}

/* Random adds against a plain array of what the latest read gave at each byte. */
static void test_random(void)
{
	enum { SPAN = 1 << 15 };
	static int16_t model[SPAN];
	static uint8_t bytes[SPAN], buf[SPAN];
	struct code_copies *c = code_copies__new();
	bool same = true;

	srand(7);
	for (size_t i = 0; i < SPAN; i++)
		model[i] = -1;
	for (int round = 0; round < 2000 && same; round++) {
		size_t at = (size_t)rand() % SPAN, len = 1 + (size_t)rand() % 600;

		if (at + len > SPAN)
			len = SPAN - at;
		for (size_t i = 0; i < len; i++)
			model[at + i] = bytes[i] = (uint8_t)(round + i);
		code_copies__add(c, BASE + at, bytes, len);
		for (int probe = 0; probe < 8 && same; probe++) {
			size_t p = (size_t)rand() % SPAN, want = 0;
			ssize_t n = code_copies__read(c, BASE + p, buf, SPAN);

			while (p + want < SPAN && model[p + want] >= 0)
				want++;
			if (n != (want ? (ssize_t)want : -ENOENT))
				same = false;
			for (size_t i = 0; same && i < want; i++)
				same = buf[i] == (uint8_t)model[p + i];
		}
	}
	check(same, "random: 2000 adds read back as a plain array holds them");
	code_copies__free(c);
}

int main(void)
{
	test_reads();
	test_merges();
	test_bound();
	test_random();
	test_unbounded();
	return failures ? 1 : 0;
}
