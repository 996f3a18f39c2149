/* Unit tests for the frame names kept from one profile to the next
 * (user/binary/name_cache.h): a name put is got back for the same frame only (module,
 * address and whether it is a return address); a sweep keeps what was asked for since the
 * last one and drops the rest; the count stops at NAME_CACHE_MAX; growing keeps every
 * name. Prints one "ok - NAME" / "not ok - NAME" line per check. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "binary/name_cache.h"
#include "check.h"

static struct frame frame_at(uint32_t module, uint64_t addr, bool caller)
{
	return (struct frame){ .module = module, .addr = addr, .flags = caller ? FRAME_CALLER : 0 };
}

static void names_by_frame(void)
{
	struct name_cache *c = name_cache__new();
	struct frame f = frame_at(7, 0x1234, true);
	struct frame other_flags = frame_at(7, 0x1234, false);
	struct frame other_module = frame_at(8, 0x1234, true);
	const char *got;

	check(name_cache__get(c, &f) == NULL, "empty: nothing is found");
	name_cache__put(c, &f, "main");
	got = name_cache__get(c, &f);
	check(got && strcmp(got, "main") == 0, "a name put is got back");
	check(name_cache__get(c, &other_flags) == NULL, "not for the same address as a non-caller");
	check(name_cache__get(c, &other_module) == NULL, "not for another module");
	name_cache__put(c, &f, "other");
	got = name_cache__get(c, &f);
	check(got && strcmp(got, "main") == 0, "a second put for the frame changes nothing");
	check(name_cache__count(c) == 1 && name_cache__bytes(c) > 0, "one entry counted");
	name_cache__free(c);
	name_cache__free(NULL);
}

static void sweeps_and_growth(void)
{
	struct name_cache *c = name_cache__new();
	char name[32];
	size_t wrong = 0, kept = 0, dropped = 0;

	for (uint64_t i = 0; i < 5000; i++) {
		struct frame f = frame_at(3 + (uint32_t)(i % 5), 0x1000 + i * 16, i & 1);

		snprintf(name, sizeof(name), "fn_%llu", (unsigned long long)i);
		name_cache__put(c, &f, name);
	}
	for (uint64_t i = 0; i < 5000; i++) {
		struct frame f = frame_at(3 + (uint32_t)(i % 5), 0x1000 + i * 16, i & 1);
		const char *got = name_cache__get(c, &f);

		snprintf(name, sizeof(name), "fn_%llu", (unsigned long long)i);
		wrong += !got || strcmp(got, name) != 0;
	}
	check(wrong == 0 && name_cache__count(c) == 5000, "5000 names survive growing (%zu wrong)",
	      wrong);
	/* every name was used since it was put: the first sweep keeps them all */
	name_cache__sweep(c);
	check(name_cache__count(c) == 5000, "a sweep keeps names used since the last one");
	for (uint64_t i = 0; i < 5000; i += 3) {
		struct frame f = frame_at(3 + (uint32_t)(i % 5), 0x1000 + i * 16, i & 1);

		name_cache__get(c, &f);
	}
	name_cache__sweep(c);
	for (uint64_t i = 0; i < 5000; i++) {
		struct frame f = frame_at(3 + (uint32_t)(i % 5), 0x1000 + i * 16, i & 1);
		const char *got = name_cache__get(c, &f);

		snprintf(name, sizeof(name), "fn_%llu", (unsigned long long)i);
		if (i % 3 == 0)
			kept += got && strcmp(got, name) == 0;
		else
			dropped += got == NULL;
	}
	check(kept == 1667 && dropped == 3333,
	      "the next sweep drops the names nobody asked for (%zu of 1667 kept, %zu of 3333 "
	      "dropped)", kept, dropped);
	name_cache__free(c);
}

static void bounded(void)
{
	struct name_cache *c = name_cache__new();
	struct frame past;

	for (uint64_t i = 0; i < NAME_CACHE_MAX + 100; i++) {
		struct frame f = frame_at(3, i * 4, false);

		name_cache__put(c, &f, "x");
	}
	past = frame_at(3, (uint64_t)(NAME_CACHE_MAX + 50) * 4, false);
	check(name_cache__count(c) == NAME_CACHE_MAX && name_cache__get(c, &past) == NULL,
	      "no more than NAME_CACHE_MAX names are kept");
	name_cache__free(c);
}

int main(void)
{
	names_by_frame();
	sweeps_and_growth();
	bounded();
	return failures ? 1 : 0;
}
