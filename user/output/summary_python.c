/* The summary's lines on Python frames (python/stack.h's counts). */
#include <inttypes.h>

#include "output/json.h"
#include "output/summary.h"

void summary__print_python(const struct python_stats *py, FILE *out)
{
	const char *sep = "";

	if (!py || py->samples == 0)
		return;
	fprintf(out, "hprof: Python frames in %" PRIu64 " of %" PRIu64
			" samples of CPython processes (%.1f%%)",
		py->with_frames, py->samples, summary__percent(py->with_frames, py->samples));
	for (unsigned i = 0; i < PYTHON_REASON_COUNT; i++) {
		if (!py->reasons[i] || i == PYTHON_TRUNCATED)
			continue;
		fprintf(out, "%s %s %" PRIu64, *sep ? "," : "; the others:",
			python_reason__name(i), py->reasons[i]);
		sep = ",";
	}
	if (py->frames_unreadable)
		fprintf(out, "; %" PRIu64 " frames of code unreadable", py->frames_unreadable);
	if (py->reasons[PYTHON_TRUNCATED])
		fprintf(out, "; %" PRIu64 " cut at %d Python frames", py->reasons[PYTHON_TRUNCATED],
			HPROF_PY_MAX_FRAMES);
	fprintf(out, "\n");
}

void summary__json_python(struct json_writer *w, const struct python_stats *py)
{
	if (!py)
		return;
	json__key(w, "python");
	json__begin_object(w);
	json__key_uint(w, "samples", py->samples);
	json__key_uint(w, "with_frames", py->with_frames);
	json__key_uint(w, "frames", py->frames);
	json__key_uint(w, "frames_unreadable", py->frames_unreadable);
	json__key(w, "reasons");
	json__begin_object(w);
	for (unsigned i = 0; i < PYTHON_REASON_COUNT; i++)
		json__key_uint(w, python_reason__name(i), py->reasons[i]);
	json__end_object(w);
	json__end_object(w);
}
