/* The summary's lines on inline frames and lines from DWARF (binary/inline_frames.h). */
#include <inttypes.h>

#include "binary/inline_frames.h"
#include "output/json.h"
#include "output/summary.h"

void summary__print_inline(struct profile *p, FILE *out)
{
	struct inline_frames_stats st;

	profile__inline_stats(p, &st);
	if (!st.binaries_with_dwarf)
		return;
	fprintf(out, "hprof: inline frames and lines: %" PRIu64 " binaries with DWARF, %" PRIu64
		     " distinct pcs; without a chain: no function in the DWARF %" PRIu64
		     ", unreadable DWARF %" PRIu64 ", past the index's bounds %" PRIu64
		     "; looked up again (cache full) %" PRIu64,
		st.binaries_with_dwarf, st.pcs, st.pcs_no_chain, st.pcs_bad_dwarf,
		st.pcs_over_bounds, st.pcs_uncached);
	/* only when it happened: a run within the budget prints what it always did */
	if (st.dwarf_closed)
		fprintf(out, "; DWARF closed %" PRIu64 " times to stay within its memory budget, "
			     "opened again %" PRIu64,
			st.dwarf_closed, st.dwarf_reopened);
	fprintf(out, "\n");
}

void summary__json_inline(struct json_writer *w, struct profile *p)
{
	struct inline_frames_stats st;

	profile__inline_stats(p, &st);
	if (!st.binaries_with_dwarf)
		return;
	json__key(w, "inline");
	json__begin_object(w);
	json__key_uint(w, "binaries_with_dwarf", st.binaries_with_dwarf);
	json__key_uint(w, "pcs", st.pcs);
	json__key_uint(w, "pcs_no_function", st.pcs_no_chain);
	json__key_uint(w, "pcs_bad_dwarf", st.pcs_bad_dwarf);
	json__key_uint(w, "pcs_over_bounds", st.pcs_over_bounds);
	json__key_uint(w, "pcs_uncached", st.pcs_uncached);
	json__key_uint(w, "dwarf_closed", st.dwarf_closed);
	json__key_uint(w, "dwarf_reopened", st.dwarf_reopened);
	json__end_object(w);
}
