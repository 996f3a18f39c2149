/* Unit tests for the default ring buffer size (user/record/sampler.h): the largest record a
 * sample can take, and the ring sized to hold SAMPLER_RING_WORST_MS of the worst traffic,
 * a power of two between SAMPLER_RING_MIN and SAMPLER_RING_MAX. Prints one
 * "ok - NAME" / "not ok - NAME" line per check. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "record/sampler.h"
#include "check.h"

static bool power_of_two(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* The ring holds at least SAMPLER_RING_WORST_MS of the traffic, and is no larger than
 * twice that unless the floor made it so, or is the ceiling. */
static void check_rule(unsigned cpus, unsigned hz, uint64_t record)
{
	uint64_t ring = sampler__default_ring_size(cpus, hz, record);
	uint64_t want = (uint64_t)cpus * hz * record * SAMPLER_RING_WORST_MS / 1000;

	check(power_of_two(ring) && ring >= SAMPLER_RING_MIN && ring <= SAMPLER_RING_MAX,
	      "%u CPUs, %u Hz, %" PRIu64 "-byte records: %" PRIu64 " is a power of two in range",
	      cpus, hz, record, ring);
	check(ring >= want || ring == SAMPLER_RING_MAX,
	      "%u CPUs, %u Hz: %" PRIu64 " holds %d ms of the worst case (%" PRIu64 ")", cpus, hz,
	      ring, SAMPLER_RING_WORST_MS, want);
	check(ring < 2 * want || ring == SAMPLER_RING_MIN,
	      "%u CPUs, %u Hz: %" PRIu64 " is the smallest power of two that does", cpus, hz, ring);
}

int main(void)
{
	uint64_t full = sampler__max_record_size(131072, false);
	uint64_t none = sampler__max_record_size(0, false);

	/* 8-byte ring header + 176 fixed + (256 + 127) * 8 ips + 24 + 32 delta header and map
	 * + 131072 copy + 512 FP tail window */
	check(full == 134888, "128-KiB copies: records up to 134888 bytes (got %" PRIu64 ")", full);
	check(none == 8 + 176 + 383 * 8, "--no-dwarf: no copy, no tail window (got %" PRIu64 ")",
	      none);
	check(sampler__max_record_size(131072, true) == full + 131072,
	      "delta verification sends the copy twice");
	check(sampler__max_record_size(1 << 20, false) == full, "copies clamped to the largest");
	check(sampler__max_record_size(1000, false) % 8 == 0, "records are whole 8-byte words");
	check(sampler__max_record_size(16384, false) < full, "smaller copies, smaller records");

	/* this 2-core VM: 134.6 MB/s at 499 Hz, 3.37 MB in 25 ms */
	check(sampler__default_ring_size(2, 499, full) == 4u << 20, "2 CPUs at 499 Hz: 4 MiB");
	check(sampler__default_ring_size(2, 999, full) == 8u << 20, "2 CPUs at 999 Hz: 8 MiB");
	check(sampler__default_ring_size(2, 99, full) == SAMPLER_RING_MIN,
	      "2 CPUs at the default 99 Hz: the floor");
	check(sampler__default_ring_size(1, 1, none) == SAMPLER_RING_MIN, "1 Hz: the floor");
	check(sampler__default_ring_size(0, 499, full) == SAMPLER_RING_MIN, "no CPU: the floor");
	check(sampler__default_ring_size(128, 999, full) == SAMPLER_RING_MAX,
	      "128 CPUs at 999 Hz: the ceiling");
	check(sampler__default_ring_size(8192, 100000, sampler__max_record_size(131072, true)) ==
		      SAMPLER_RING_MAX,
	      "no overflow at the largest inputs");
	check(sampler__default_ring_size(16, 499, full) > sampler__default_ring_size(8, 499, full),
	      "more CPUs, a larger ring");

	for (unsigned cpus = 1; cpus <= 256; cpus *= 2) {
		check_rule(cpus, 99, full);
		check_rule(cpus, 499, full);
		check_rule(cpus, 999, none);
		check_rule(cpus, 4999, sampler__max_record_size(8192, false));
	}
	return failures ? 1 : 0;
}
