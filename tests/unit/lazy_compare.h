/* Checks that a lazily opened table (unwind_table__open) answers every lookup as the same
 * file's whole-table compile does: the rules, the function start and the gap, at each row's
 * pc, the byte before it and the byte after it. Shared by test_cfi (hand-built images) and
 * test_lazy_table (real binaries). */
#ifndef HPROF_TESTS_LAZY_COMPARE_H
#define HPROF_TESTS_LAZY_COMPARE_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cfi/unwind_table.h"

/* Same answers at pc; else a description of the first difference in why. */
static inline bool lazy_same_at(const struct unwind_table *whole, const struct unwind_table *lazy,
				uint64_t pc, char *why, size_t len)
{
	struct unwind_rules a, b;
	bool fa = unwind_table__rules_at(whole, pc, &a), fb = unwind_table__rules_at(lazy, pc, &b);
	uint64_t sa = 0, sb = 0, la = 0, ha = 0, lb = 0, hb = 0;
	int ea, eb;

	if (fa != fb || (fa && memcmp(&a, &b, sizeof(a)) != 0)) {
		snprintf(why, len, "rules at 0x%" PRIx64 ": %s vs %s", pc, fa ? "found" : "none",
			 fb ? "found" : "none");
		return false;
	}
	ea = unwind_table__function_start(whole, pc, &sa);
	eb = unwind_table__function_start(lazy, pc, &sb);
	if (ea != eb || sa != sb) {
		snprintf(why, len, "function start at 0x%" PRIx64 ": 0x%" PRIx64 " vs 0x%" PRIx64, pc,
			 sa, sb);
		return false;
	}
	ea = unwind_table__gap(whole, pc, &la, &ha);
	eb = unwind_table__gap(lazy, pc, &lb, &hb);
	if (ea != eb || (ea == 0 && (la != lb || ha != hb))) {
		snprintf(why, len, "gap at 0x%" PRIx64 ": [0x%" PRIx64 ", 0x%" PRIx64 ") vs [0x%" PRIx64
			 ", 0x%" PRIx64 ")", pc, la, ha, lb, hb);
		return false;
	}
	return true;
}

/* Compares at every row of whole (and around it); returns the pcs compared, 0 with why set
 * on the first difference. */
static inline size_t lazy_compare(const struct unwind_table *whole, const struct unwind_table *lazy,
				  char *why, size_t len)
{
	size_t n, compared = 0;
	const struct unwind_row *rows = unwind_table__rows(whole, &n);

	for (size_t i = 0; i < n; i++) {
		uint64_t pc = rows[i].pc;
		uint64_t around[3] = { pc - 1, pc, pc + 1 };

		for (int k = 0; k < 3; k++) {
			if (!lazy_same_at(whole, lazy, around[k], why, len))
				return 0;
			compared++;
		}
	}
	if (!lazy_same_at(whole, lazy, 0, why, len) || !lazy_same_at(whole, lazy, UINT64_MAX, why, len))
		return 0;
	return compared + 2;
}

#endif
