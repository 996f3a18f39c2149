/* xcheck CAPTURE: unwinds every sample of a raw capture (hprof --raw) twice, with hprof's
 * DWARF walk and with libunwind driven remotely over the same registers and stack copy
 * (tests/tools/walkers.h), and compares the pcs frame by frame.
 *
 * The rule:
 * - hprof's walk complete: libunwind must give exactly the same pcs, no more, no fewer,
 *   unless libunwind itself failed with an error (it does inside rt_sigreturn interrupting
 *   vDSO code, for one): then it is no reference, and the sample counts as a libunwind
 *   error, not judged.
 * - hprof's walk truncated (copy too short, no CFI, ...): the frames hprof gave must be
 *   libunwind's first frames. What libunwind finds beyond them is not judged: when its
 *   DWARF step fails, libunwind falls back to guessing through rbp, which hprof
 *   deliberately does not do. Such samples count as "prefix" comparisons, by reason.
 * - hprof's walk went through code without CFI (a frame found by instruction analysis, a
 *   frame record or a scan, or a first frame without CFI at a function's first
 *   instruction, whose caller the psABI's entry rule gives): libunwind, which unwinds by CFI alone, is a reference only for
 *   the frames before the first such frame; they must be its first frames. Such samples
 *   count as "beyond CFI".
 * - Samples neither side can unwind (kernel threads, no stack copy, malformed records)
 *   are skipped, by reason.
 * Every disagreement prints both stacks. --show-prefix also prints truncated samples where
 * libunwind went further. --mutate flips a bit of hprof's second pc in every sample (its
 * first, where the walk has one frame or the second was found through code without CFI), to
 * show that the comparison catches a difference.  Exits 1 when there is any disagreement, 2 on
 * bad usage or an unreadable capture. The last line is machine-readable:
 * "xcheck: samples N compared C agree A disagree D prefix P skipped S frames F"
 * (F: hprof frames compared). */
#include <errno.h>
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary/modules.h"
#include "cfi/unwind_table.h"
#include "walkers.h"

/* Disagreements printed in full; the rest are only counted. */
#define MAX_PRINTED 10

struct xcheck {
	struct capture_file *cap;
	struct session *session;
	struct lu_unwinder *lu;
	struct unwind_frame *frames;
	uint64_t *pcs;
	uint64_t samples, compared, agree, disagree, prefix, skipped, beyond_cfi;
	uint64_t skip[WALK_SKIP_COUNT];
	uint64_t prefix_by_end[UNWIND_END_COUNT];
	uint64_t lu_further[UNWIND_END_COUNT]; /* prefix samples where libunwind went on */
	uint64_t frames_compared;
	uint64_t lu_errors;                    /* complete-walk samples where libunwind failed */
	bool show_prefix;                      /* print prefix samples where libunwind went on */
	bool mutate;                           /* self-test: corrupt hprof's second frame */
};

static void print_stacks(struct xcheck *x, uint64_t index, const struct hprof_sample *s,
			 const struct unwind_result *res, uint32_t nr_lu, int lu_ret,
			 uint32_t first_diff)
{
	char comm[HPROF_COMM_LEN + 1] = { 0 };
	char a[256], b[256];
	uint32_t n = res->nr_frames > nr_lu ? res->nr_frames : nr_lu;

	memcpy(comm, s->comm, HPROF_COMM_LEN);
	printf("# %s: sample %llu pid %u tid %u comm %s ip %#llx sp %#llx bp %#llx stack_len %u\n",
	       first_diff == UINT32_MAX ? "libunwind went further" : "disagreement",
	       (unsigned long long)index, s->pid, s->tid, comm, (unsigned long long)s->user_ip,
	       (unsigned long long)s->user_sp, (unsigned long long)s->user_bp, s->stack_len);
	printf("#   hprof: %u frames, %s; libunwind: %u frames, %s; first difference at frame %u\n",
	       res->nr_frames, unwind_end__name(res->end), nr_lu,
	       lu_ret ? unw_strerror(lu_ret) : "end of stack", first_diff);
	for (uint32_t i = 0; i < n; i++) {
		const char *ha = i < res->nr_frames
					 ? lu_unwinder__describe(x->lu, s->pid, x->frames[i].pc, a, sizeof(a))
					 : "-";
		const char *lb = i < nr_lu ? lu_unwinder__describe(x->lu, s->pid, x->pcs[i], b, sizeof(b))
					   : "-";

		if (n > 40 && i >= 20 && i + 20 < n && i != first_diff)
			continue; /* deep stacks: both ends and the difference */
		printf("#   %c%3u  hprof %-60s  libunwind %s\n", i == first_diff ? '>' : ' ', i, ha,
		       lb);
	}
}

/* The frames before the first one found through code without CFI (by analysis, a frame
 * record or a scan): all of them when there is none. */
static uint32_t frames_by_cfi(const struct unwind_frame *frames, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (frames[i].found == UNWIND_FOUND_ANALYSIS ||
		    frames[i].found == UNWIND_FOUND_FRAME_POINTER || frames[i].found == UNWIND_FOUND_SCAN)
			return i;
	}
	return n;
}

/* The first frame's pc has no CFI (its caller came from the psABI's rule at a function's
 * first instruction, as for ld.so calling a library's _init): libunwind, by CFI alone,
 * can only agree on that frame. */
static bool first_without_cfi(struct xcheck *x, uint32_t pid, uint64_t pc)
{
	struct module_registry *modules = session__modules(x->session);
	struct module *mod;
	struct frame f;

	if (session__resolve_frame(x->session, pid, pc, false, &f) != 0 || f.module < MODULE_FIRST_FILE)
		return false;
	mod = module_registry__by_id(modules, f.module);
	return mod && !mod->anon_code &&
	       !unwind_table__find(module_registry__unwind_table(modules, mod), f.addr);
}

static int check_sample(struct xcheck *x, uint64_t index, const struct capture_rec *r)
{
	const struct hprof_sample *s = capture_rec__sample(r);
	enum walk_skip why = s ? walk__skip_reason(s, r->len) : WALK_SKIP_MALFORMED;
	struct unwind_result res;
	uint32_t nr_lu = 0, i, common, cfi_frames;
	bool complete, same;
	int err, lu_ret;

	x->samples++;
	if (why != WALK_SKIP_NONE) {
		x->skipped++;
		x->skip[why]++;
		return 0;
	}
	err = session__walk_sample(x->session, s, r->len, x->frames, UNWIND_MAX_FRAMES, &res);
	if (err)
		return err;
	lu_ret = lu_unwinder__walk(x->lu, s, x->pcs, UNWIND_MAX_FRAMES, &nr_lu);
	complete = res.end == UNWIND_END_COMPLETE;
	cfi_frames = frames_by_cfi(x->frames, res.nr_frames);
	if (cfi_frames > 1 && first_without_cfi(x, s->pid, x->frames[0].pc))
		cfi_frames = 1;
	/* the second pc, or the first where only it is compared (a one-frame walk, or code
	 * without CFI after it) */
	if (x->mutate && res.nr_frames > 0)
		x->frames[cfi_frames > 1 ? 1 : 0].pc ^= 1;
	common = cfi_frames < nr_lu ? cfi_frames : nr_lu;
	for (i = 0; i < common && x->frames[i].pc == x->pcs[i]; i++)
		;
	same = complete && cfi_frames == res.nr_frames ? i == res.nr_frames && nr_lu == res.nr_frames
						       : i == cfi_frames;
	x->compared++;
	x->frames_compared += cfi_frames;
	if (cfi_frames < res.nr_frames) {
		x->beyond_cfi++;
	} else if (!complete) {
		x->prefix++;
		x->prefix_by_end[res.end]++;
		if (same && nr_lu > res.nr_frames) {
			x->lu_further[res.end]++;
			if (x->show_prefix)
				print_stacks(x, index, s, &res, nr_lu, lu_ret, UINT32_MAX);
		}
	} else if (lu_ret) {
		x->lu_errors++;
		if (!same && lu_ret < 0)
			return 0; /* libunwind failed: not judged (see the rule above) */
	}
	if (same) {
		x->agree++;
		return 0;
	}
	if (x->disagree++ < MAX_PRINTED)
		print_stacks(x, index, s, &res, nr_lu, lu_ret, i);
	return 0;
}

static int run(struct xcheck *x)
{
	uint64_t index = 0;
	uint32_t pid;
	const char *text, *path;
	struct map_event e;
	size_t len;
	int err;

	for (size_t i = 0; i < x->cap->nr_recs; i++) {
		const struct capture_rec *r = &x->cap->recs[i];

		if (capture_rec__maps(r, &pid, &text, &len)) {
			err = session__load_maps(x->session, pid, text, len);
			if (!err)
				err = lu_unwinder__load_maps(x->lu, pid, text, len);
			if (err)
				return err;
		} else if (capture_rec__map_event(r, &e, &path)) {
			err = session__handle_map_event(x->session, &e, path);
			if (!err)
				err = lu_unwinder__map_event(x->lu, &e, path);
			if (err)
				return err;
		} else if (r->type == CAPTURE_SAMPLE) {
			err = check_sample(x, index++, r);
			if (err)
				return err;
		}
	}
	return 0;
}

static void report(const struct xcheck *x)
{
	printf("# %llu samples: %llu compared (%llu frames), %llu agree, %llu disagree\n",
	       (unsigned long long)x->samples, (unsigned long long)x->compared,
	       (unsigned long long)x->frames_compared, (unsigned long long)x->agree,
	       (unsigned long long)x->disagree);
	printf("# complete hprof walks where libunwind reported an error: %llu\n",
	       (unsigned long long)x->lu_errors);
	for (int e = 0; e < UNWIND_END_COUNT; e++) {
		if (x->prefix_by_end[e])
			printf("# prefix-compared (hprof truncated: %s): %llu, libunwind went further in %llu\n",
			       unwind_end__name(e), (unsigned long long)x->prefix_by_end[e],
			       (unsigned long long)x->lu_further[e]);
	}
	if (x->beyond_cfi)
		printf("# compared up to code without CFI (hprof went on by analysis, a frame record or a scan): %llu\n",
		       (unsigned long long)x->beyond_cfi);
	for (int w = 1; w < WALK_SKIP_COUNT; w++) {
		if (x->skip[w])
			printf("# skipped (%s): %llu\n", walk_skip__name(w),
			       (unsigned long long)x->skip[w]);
	}
	printf("xcheck: samples %llu compared %llu agree %llu disagree %llu prefix %llu skipped %llu frames %llu lu_errors %llu\n",
	       (unsigned long long)x->samples, (unsigned long long)x->compared,
	       (unsigned long long)x->agree, (unsigned long long)x->disagree,
	       (unsigned long long)x->prefix, (unsigned long long)x->skipped,
	       (unsigned long long)x->frames_compared, (unsigned long long)x->lu_errors);
}

int main(int argc, char **argv)
{
	struct xcheck x = { 0 };
	char msg[512] = "";
	int err;

	for (; argc > 2 && argv[1][0] == '-'; argc--, argv++) {
		if (strcmp(argv[1], "--show-prefix") == 0)
			x.show_prefix = true;
		else if (strcmp(argv[1], "--mutate") == 0)
			x.mutate = true;
		else
			break;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: xcheck [--show-prefix] [--mutate] CAPTURE\n");
		return 2;
	}
	err = capture_file__load(argv[1], &x.cap, msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "xcheck: %s\n", msg[0] ? msg : strerror(-err));
		return 2;
	}
	x.frames = calloc(UNWIND_MAX_FRAMES, sizeof(*x.frames));
	x.pcs = calloc(UNWIND_MAX_FRAMES, sizeof(*x.pcs));
	err = !x.frames || !x.pcs ? -ENOMEM : session__new(true, &x.session);
	if (!err)
		err = lu_unwinder__new(true, &x.lu);
	if (!err) {
		session__set_replay(x.session);
		err = run(&x);
	}
	if (err) {
		fprintf(stderr, "xcheck: %s: %s\n", argv[1], strerror(-err));
	} else {
		report(&x);
	}
	lu_unwinder__free(x.lu);
	session__free(x.session);
	capture_file__free(x.cap);
	free(x.frames);
	free(x.pcs);
	if (err)
		return 2;
	return x.disagree ? 1 : 0;
}
