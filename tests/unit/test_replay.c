/* The replay corpus (tests/replay/CASE/): each case's capture replayed through the slices
 * of its binaries, with no ELF file, no BPF and no root, must give exactly the folded
 * stacks its recording wrote (expected.folded), and they must pass the case's checks
 * (tests/unit/replay_case.h). Run from the tree's root, as tests/run.sh runs it; a
 * directory may be named instead. Prints "ok - replay CASE" / "not ok - ..." per case and
 * check. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "replay_case.h"

#define CORPUS "tests/replay"

/* The first line where two texts differ, for the message. */
static void first_difference(const char *a, const char *b, char *out, size_t len)
{
	size_t line = 1, i = 0, start = 0;

	while (a[i] && a[i] == b[i]) {
		if (a[i] == '\n') {
			line++;
			start = i + 1;
		}
		i++;
	}
	snprintf(out, len, "line %zu: got '%.*s', want '%.*s'", line,
		 (int)strcspn(a + start, "\n"), a + start, (int)strcspn(b + start, "\n"), b + start);
}

static void replay_case(const char *dir, const char *name)
{
	char capture[PATH_MAX + 32], slices[PATH_MAX + 32], expected_path[PATH_MAX + 32],
	     checks_path[PATH_MAX + 32];
	char err[512] = "", why[512] = "";
	char *got = NULL, *expected = NULL, *checks = NULL;
	int ret, failed;

	snprintf(capture, sizeof(capture), "%s/%s", dir, REPLAY_CASE_CAPTURE);
	snprintf(slices, sizeof(slices), "%s/%s", dir, REPLAY_CASE_SLICES);
	snprintf(expected_path, sizeof(expected_path), "%s/%s", dir, REPLAY_CASE_EXPECTED);
	snprintf(checks_path, sizeof(checks_path), "%s/%s", dir, REPLAY_CASE_CHECKS);
	if (read_text(expected_path, &expected) || read_text(checks_path, &checks)) {
		check(false, "replay %s: the case has %s and %s", name, REPLAY_CASE_EXPECTED,
		      REPLAY_CASE_CHECKS);
		goto done;
	}
	ret = replay_case__folded(capture, slices, NULL, &got, err, sizeof(err));
	check(ret == 0, "replay %s: replays from its slices alone%s%s", name, ret ? ": " : "",
	      err);
	if (ret)
		goto done;
	if (strcmp(got, expected) == 0) {
		check(true, "replay %s: folded stacks as recorded", name);
	} else {
		first_difference(got, expected, why, sizeof(why));
		check(false, "replay %s: folded stacks as recorded: %s", name, why);
	}
	failed = replay_case__check(got, checks, why, sizeof(why));
	check(failed == 0, "replay %s: checks hold%s%s", name, failed ? ": " : "",
	      failed ? why : "");
done:
	free(got);
	free(expected);
	free(checks);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	const char *corpus = argc > 1 ? argv[1] : CORPUS;
	struct dirent **entries;
	int n, cases = 0;

	/* HPROF_DEBUG=scan changes what the walk does: the corpus holds what it does by default */
	unsetenv("HPROF_DEBUG");
	n = scandir(corpus, &entries, NULL, by_name);
	if (n < 0) {
		check(false, "replay: the corpus %s can be read", corpus);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char dir[PATH_MAX], capture[PATH_MAX + 32];
		struct stat st;

		snprintf(dir, sizeof(dir), "%s/%s", corpus, entries[i]->d_name);
		snprintf(capture, sizeof(capture), "%s/%s", dir, REPLAY_CASE_CAPTURE);
		if (entries[i]->d_name[0] != '.' && stat(capture, &st) == 0) {
			replay_case(dir, entries[i]->d_name);
			cases++;
		}
		free(entries[i]);
	}
	free(entries);
	check(cases > 0, "replay: the corpus %s holds cases (%d)", corpus, cases);
	return failures ? 1 : 0;
}
