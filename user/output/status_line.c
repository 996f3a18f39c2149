#include "output/status_line.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Back to the line's start, erase to its end. */
#define CLEAR_LINE "\r\033[K"

struct status_line {
	int fd;
	bool shown;
	double next_s; /* elapsed time of the next update */
};

int status_line__new(int fd, struct status_line **out)
{
	struct status_line *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->fd = fd;
	s->next_s = STATUS_LINE_FIRST_S;
	*out = s;
	return 0;
}

bool status_line__due(const struct status_line *s, double elapsed_s)
{
	return s && elapsed_s >= s->next_s;
}

/* One write, so that the terminal never shows half an update; a failed one is no error. */
static void put(const struct status_line *s, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(s->fd, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		text += n;
		len -= (size_t)n;
	}
}

static unsigned columns(int fd)
{
	struct winsize ws;

	return ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
}

void status_line__show(struct status_line *s, const struct status_figures *f)
{
	char line[256];
	size_t prefix = sizeof(CLEAR_LINE) - 1, max;
	int n;

	if (!s)
		return;
	while (s->next_s <= f->elapsed_s)
		s->next_s += STATUS_LINE_EVERY_S;
	n = snprintf(line, sizeof(line), CLEAR_LINE "hprof: %.1f s", f->elapsed_s);
	if (f->left_s >= 0)
		n += snprintf(line + n, sizeof(line) - n, " (%.1f s left)", f->left_s);
	n += snprintf(line + n, sizeof(line) - n, ", %" PRIu64 " samples", f->samples);
	if (f->user_stacks)
		n += snprintf(line + n, sizeof(line) - n, ", %.1f%% complete",
			      (double)(uint64_t)(1000.0 * (double)f->complete /
						 (double)f->user_stacks) / 10);
	n += snprintf(line + n, sizeof(line) - n, ", %" PRIu64 " lost", f->lost);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	/* the cursor stays on the line: a line as wide as the terminal would wrap */
	max = prefix + columns(s->fd) - 1;
	put(s, line, (size_t)n < max ? (size_t)n : max);
	s->shown = true;
}

void status_line__clear(struct status_line *s)
{
	if (!s || !s->shown)
		return;
	put(s, CLEAR_LINE, sizeof(CLEAR_LINE) - 1);
	s->shown = false;
}

void status_line__free(struct status_line *s)
{
	status_line__clear(s);
	free(s);
}
