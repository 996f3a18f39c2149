/* A replay corpus case (tests/replay/CASE/): its capture replayed through the binaries'
 * slices into folded stacks, and the case's checks applied to them. Shared by the unit
 * test that replays every case (test_replay.c) and the tool that records one
 * (tests/tools/replay_case.c).
 *
 * A case's folded stacks leave kernel frames out ("NAME_[k]": without the recording
 * machine's kallsyms they would be addresses, named or not as the replaying user may read
 * /proc/kallsyms), stacks that differ only there merged, lines sorted.
 *
 * Checks, one a line ('#' starts a comment), each over the samples of stacks with a user
 * frame (the same kernel-only stacks the shell tests leave out):
 *   PCT CHAIN           at least PCT percent of them hold CHAIN (frames separated by ';',
 *                       from the outermost in) as a run of consecutive frames, names
 *                       compared without the suffixes of gcc's copies of a function
 *                       (.constprop.0, .isra.0, .part.0, .cold, demangled " [clone .cold]");
 *   PCT re REGEX        at least PCT percent of them match the extended REGEX, as a whole
 *                       line "comm;outer;...;inner" without its count;
 *   PCT among WITHIN re REGEX   the same over the samples whose stack matches WITHIN.
 * Regexes hold no space. */
#ifndef HPROF_TESTS_REPLAY_CASE_H
#define HPROF_TESTS_REPLAY_CASE_H

#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "capture/replay.h"
#include "output/profile.h"

#define REPLAY_CASE_CAPTURE "capture.raw.gz" /* gzip: stack copies compress well */
#define REPLAY_CASE_SLICES "slices.gz"
#define REPLAY_CASE_EXPECTED "expected.folded"
#define REPLAY_CASE_CHECKS "checks"

struct folded_line {
	char *stack;
	unsigned long long count;
};

static int compare_folded(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->stack, ((const struct folded_line *)b)->stack);
}

/* line without its kernel frames: "comm;a;b;k_[k] 3" -> "comm;a;b". */
static char *user_stack_of(const char *line, unsigned long long *count)
{
	const char *sp = strrchr(line, ' ');
	char *out, *copy, *save = NULL, *f;
	size_t len;

	if (!sp)
		return NULL;
	*count = strtoull(sp + 1, NULL, 10);
	copy = strndup(line, (size_t)(sp - line));
	out = calloc(1, (size_t)(sp - line) + 1);
	if (!copy || !out) {
		free(copy);
		free(out);
		return NULL;
	}
	for (f = strtok_r(copy, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
		len = strlen(f);
		if (len >= 4 && strcmp(f + len - 4, "_[k]") == 0)
			continue;
		if (out[0])
			strcat(out, ";");
		strcat(out, f);
	}
	free(copy);
	return out;
}

/* Folded text with kernel frames left out, as above. *out is malloc'd. */
static int normalize_folded(const char *in, char **out)
{
	struct folded_line *lines = NULL;
	size_t n = 0, cap = 0, kept = 0, size = 0;
	char *text = strdup(in), *save = NULL, *line;
	FILE *f;

	if (!text)
		return -ENOMEM;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long count;
		char *stack = user_stack_of(line, &count);

		if (!stack)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			lines = realloc(lines, cap * sizeof(*lines));
			if (!lines)
				return -ENOMEM;
		}
		lines[n++] = (struct folded_line){ stack, count };
	}
	free(text);
	qsort(lines, n, sizeof(*lines), compare_folded);
	f = open_memstream(out, &size);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < n; i = kept) {
		unsigned long long total = 0;

		for (kept = i; kept < n && strcmp(lines[kept].stack, lines[i].stack) == 0; kept++)
			total += lines[kept].count;
		fprintf(f, "%s %llu\n", lines[i].stack, total);
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i].stack);
	free(lines);
	return fclose(f) ? -EIO : 0;
}

/* A gzip-compressed capture decompressed into a new temporary file, whose path goes to
 * tmp (at least 64 bytes). */
static int gunzip_to_temp(const char *gz_path, char *tmp, size_t len)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	gzFile gz = gzopen(gz_path, "rb");
	char buf[65536];
	int fd, n = 0, ret = 0;

	if (!gz)
		return -ENOENT;
	snprintf(tmp, len, "%s/hprof-replay.XXXXXX", dir);
	fd = mkstemp(tmp);
	if (fd < 0) {
		gzclose(gz);
		return -errno;
	}
	while (!ret && (n = gzread(gz, buf, sizeof(buf))) > 0) {
		if (write(fd, buf, (size_t)n) != n)
			ret = -EIO;
	}
	if (n < 0)
		ret = -EINVAL;
	gzclose(gz);
	close(fd);
	if (ret)
		unlink(tmp);
	return ret;
}

/* The capture replayed (from slices, or from the binaries' files with slices NULL), its
 * folded stacks normalized into *out (malloc'd). opts may carry hooks. Without inline
 * frames and lines: the corpus pins the walk, and a replay from files would take them
 * from whatever debug files the machine has (slices keep none). */
static int replay_case__folded(const char *capture, const char *slices,
			       const struct replay_opts *opts, char **out, char *err,
			       size_t errlen)
{
	struct replay_opts o = opts ? *opts : (struct replay_opts){ 0 };
	struct replay *r = NULL;
	char *raw = NULL, tmp[PATH_MAX];
	size_t size = 0, len = strlen(capture);
	bool gz = len > 3 && strcmp(capture + len - 3, ".gz") == 0;
	FILE *f;
	int ret;

	o.slices = slices;
	o.no_inline = o.no_lines = true;
	if (gz && (ret = gunzip_to_temp(capture, tmp, sizeof(tmp))) != 0) {
		snprintf(err, errlen, "cannot decompress the capture: %s", strerror(-ret));
		return ret;
	}
	ret = replay__run(gz ? tmp : capture, &o, &r, err, errlen);
	if (gz)
		unlink(tmp);
	if (ret)
		return ret;
	f = open_memstream(&raw, &size);
	ret = f ? profile__write_folded(session__profile(replay__session(r)), f) : -ENOMEM;
	if (f && fclose(f) && !ret)
		ret = -EIO;
	if (!ret)
		ret = normalize_folded(raw, out);
	if (ret)
		snprintf(err, errlen, "folding the replay: %s", strerror(-ret));
	free(raw);
	replay__free(r);
	return ret;
}

/* name without a gcc copy's suffix, in place. */
static void plain_name(char *name)
{
	static const char *const suffixes[] = { ".constprop.", ".isra.", ".part.", ".cold",
						" [clone " };
	bool cut = true;

	while (cut) {
		cut = false;
		for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
			char *at = strstr(name, suffixes[i]);

			if (at && at != name) {
				*at = '\0';
				cut = true;
			}
		}
	}
}

/* Splits a ';'-separated stack into plain names (strdup'd, *n of them). */
static char **split_frames(const char *stack, size_t *n)
{
	char *copy = strdup(stack), *save = NULL, *f;
	char **frames = NULL;
	size_t cap = 0;

	*n = 0;
	for (f = copy ? strtok_r(copy, ";", &save) : NULL; f; f = strtok_r(NULL, ";", &save)) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 32;
			frames = realloc(frames, cap * sizeof(*frames));
			if (!frames)
				break;
		}
		frames[*n] = strdup(f);
		plain_name(frames[(*n)++]);
	}
	free(copy);
	return frames;
}

static void free_frames(char **frames, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(frames[i]);
	free(frames);
}

/* The chain is a run of consecutive frames of the stack. */
static bool holds_run(char **stack, size_t n, char **chain, size_t m)
{
	for (size_t i = 0; m && i + m <= n; i++) {
		size_t j = 0;

		while (j < m && strcmp(stack[i + j], chain[j]) == 0)
			j++;
		if (j == m)
			return true;
	}
	return false;
}

/* One check: a chain of frames, or regexes (within: NULL for every stack). */
struct stack_check {
	char **chain;
	size_t nr_chain;
	regex_t re, within;
	bool has_re, has_within;
};

static bool check_matches(const struct stack_check *c, const char *stack, bool *counted)
{
	char **frames;
	size_t n;
	bool hit;

	*counted = strchr(stack, ';') != NULL && (!c->has_within ||
						   regexec(&c->within, stack, 0, NULL, 0) == 0);
	if (!*counted)
		return false;
	if (c->has_re)
		return regexec(&c->re, stack, 0, NULL, 0) == 0;
	frames = split_frames(stack, &n);
	hit = holds_run(frames, n, c->chain, c->nr_chain);
	free_frames(frames, n);
	return hit;
}

/* Parses "CHAIN", "re REGEX" or "among WITHIN re REGEX". */
static bool parse_check(char *text, struct stack_check *c)
{
	char *sp;

	memset(c, 0, sizeof(*c));
	if (strncmp(text, "among ", 6) == 0) {
		text += 6;
		sp = strstr(text, " re ");
		if (!sp)
			return false;
		*sp = '\0';
		if (regcomp(&c->within, text, REG_EXTENDED | REG_NOSUB))
			return false;
		c->has_within = true;
		text = sp + 1;
	}
	if (strncmp(text, "re ", 3) == 0) {
		c->has_re = regcomp(&c->re, text + 3, REG_EXTENDED | REG_NOSUB) == 0;
		return c->has_re;
	}
	c->chain = split_frames(text, &c->nr_chain);
	return c->nr_chain > 0;
}

static void free_check(struct stack_check *c)
{
	if (c->has_re)
		regfree(&c->re);
	if (c->has_within)
		regfree(&c->within);
	free_frames(c->chain, c->nr_chain);
}

/* Applies the checks to normalized folded stacks. Returns the number of checks that
 * failed (each said in why, the last one kept) or -1 for a malformed checks file. */
static int replay_case__check(const char *folded, const char *checks, char *why, size_t whylen)
{
	char *text = strdup(checks), *save = NULL, *line;
	int failed = 0, nr = 0;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *rest, *fsave = NULL, *fl, *copy, *shown;
		unsigned long long with = 0, total = 0;
		struct stack_check c;
		double pct;

		while (*line == ' ' || *line == '\t')
			line++;
		if (!*line || *line == '#')
			continue;
		pct = strtod(line, &rest);
		shown = strdup(rest);
		if (rest == line || *rest != ' ' || !shown || !parse_check(rest + 1, &c)) {
			snprintf(why, whylen, "malformed check '%s'", shown ? shown : line);
			free(shown);
			free(text);
			return -1;
		}
		copy = strdup(folded);
		for (fl = copy ? strtok_r(copy, "\n", &fsave) : NULL; fl;
		     fl = strtok_r(NULL, "\n", &fsave)) {
			char *sp = strrchr(fl, ' ');
			unsigned long long count = sp ? strtoull(sp + 1, NULL, 10) : 0;
			bool counted, hit;

			if (!sp)
				continue;
			*sp = '\0';
			hit = check_matches(&c, fl, &counted);
			total += counted ? count : 0;
			with += hit ? count : 0;
		}
		free(copy);
		free_check(&c);
		nr++;
		if (!total || 100.0 * (double)with < pct * (double)total) {
			failed++;
			snprintf(why, whylen, "%.1f%% (%llu of %llu samples):%s, want >= %g%%",
				 total ? 100.0 * (double)with / (double)total : 0.0, with, total,
				 shown, pct);
		}
		free(shown);
	}
	free(text);
	if (!nr) {
		snprintf(why, whylen, "no checks");
		return -1;
	}
	return failed;
}

/* The whole file at path into *out (NUL-terminated, malloc'd). */
static int read_text(const char *path, char **out)
{
	FILE *f = fopen(path, "re");
	size_t size = 0;
	char *buf = NULL;
	FILE *m;
	char chunk[65536];
	size_t n;

	if (!f)
		return -errno;
	m = open_memstream(&buf, &size);
	while (m && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	if (!m || fclose(m))
		return -ENOMEM;
	*out = buf;
	return 0;
}

#endif
