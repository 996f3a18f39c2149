/* The run's summary as JSON (--json): what summary__print says, counted, and the top
 * frames by self and inclusive samples. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "binary/inline_frames.h"
#include "binary/modules.h"
#include "go/layout.h"
#include "output/json.h"
#include "output/outputs.h"
#include "output/stack_set.h"
#include "output/summary.h"
#include "util/atomic_file.h"

static void count_and_percent(struct json_writer *w, const char *key, uint64_t n, uint64_t of)
{
	json__key(w, key);
	json__begin_object(w);
	json__key(w, "count");
	json__uint(w, n);
	json__key(w, "percent");
	json__double(w, summary__percent(n, of));
	json__end_object(w);
}

static void json_jitdumps(struct json_writer *w, struct module_registry *modules)
{
	struct jitdump_stats jd;

	module_registry__jitdump_stats(modules, &jd);
	json__key(w, "jitdumps");
	json__begin_object(w);
	json__key_uint(w, "files_read", jd.read);
	json__key_uint(w, "files_refused", jd.refused);
	json__key_uint(w, "bad_headers", jd.bad_header);
	json__key_uint(w, "files_cut_short", jd.cut_short);
	json__key_uint(w, "code_loads", jd.code_loads);
	json__key_uint(w, "code_moves", jd.code_moves);
	json__key_uint(w, "unwinding_infos", jd.unwind_infos);
	json__key_uint(w, "bad_records", jd.bad_records);
	json__key_uint(w, "cut_records", jd.cut_records);
	json__key_uint(w, "unwind_tables", jd.unwind_tables);
	json__key_uint(w, "unwind_tables_failed", jd.unwind_failed);
	json__end_object(w);
}

static void json_gdb_jit(struct json_writer *w, struct module_registry *modules)
{
	struct gdb_jit_stats gj;

	module_registry__gdb_jit_stats(modules, &gj);
	json__key(w, "gdb_jit");
	json__begin_object(w);
	json__key_uint(w, "processes", gj.registrations);
	json__key_uint(w, "list_reads", gj.list_reads);
	json__key_uint(w, "bad_lists", gj.bad_lists);
	json__key_uint(w, "lists_cut_short", gj.cut_short);
	json__key_uint(w, "objects", gj.objects);
	json__key_uint(w, "objects_without_cfi", gj.no_cfi);
	json__key_uint(w, "objects_refused", gj.refused);
	json__key_uint(w, "objects_relocated", gj.relocated);
	json__end_object(w);
}

/* Code without CFI, as the JSON summary gives it. */
static void json_nocfi(struct json_writer *w, const struct nocfi_stats *n)
{
	json__key(w, "code_without_cfi");
	json__begin_object(w);
	json__key(w, "analyses");
	json__uint(w, n->analyses);
	json__key(w, "analyses_failed");
	json__begin_object(w);
	for (int f = CODE_OK + 1; f < CODE_FAIL_COUNT; f++) {
		json__key(w, code_fail__name(f));
		json__uint(w, n->failed[f]);
	}
	json__end_object(w);
	json__key(w, "analyses_unreadable");
	json__uint(w, n->unreadable);
	json__key(w, "analyses_read_further");
	json__uint(w, n->widened);
	json__key(w, "analysis_steps_rejected");
	json__uint(w, n->analysis_rejected);
	json__key(w, "analysis_return_addresses_by_walk");
	json__uint(w, n->analysis_ra_by_walk);
	json__key(w, "return_addresses_moved_to_caller_frame");
	json__uint(w, n->ra_moved);
	json__key(w, "return_addresses_in_sampled_register");
	json__uint(w, n->ra_register);
	json__key(w, "return_addresses_from_caller_top_word");
	json__uint(w, n->ra_top_word);
	json__key(w, "frames_by_frame_pointer");
	json__uint(w, n->frame_pointer_frames);
	json__key(w, "frames_by_scan");
	json__uint(w, n->scan_frames);
	json__key(w, "scan_rejected_by_code");
	json__uint(w, n->scan_rejected_code);
	json__key(w, "scan_rejected_by_walk");
	json__uint(w, n->scan_rejected_walk);
	json__key(w, "scan_rejected_as_stale");
	json__uint(w, n->scan_rejected_stale);
	json__key(w, "scan_passed_over");
	json__uint(w, n->scan_passed_over);
	json__key(w, "scan_through_jumps");
	json__uint(w, n->scan_through_jumps);
	json__end_object(w);
}

static void write_counts(struct json_writer *w, const struct run_summary *r, const uint64_t *kc)
{
	const struct sample_stats *st = r->stats;
	uint64_t user = summary__user_samples(st);

	json__key(w, "duration_s");
	json__double(w, r->duration_s);
	json__key(w, "frequency_hz");
	json__uint(w, r->frequency);
	json__key(w, "samples");
	json__uint(w, st->samples);
	json__key(w, "processes");
	json__uint(w, st->processes);
	json__key(w, "distinct_stacks");
	json__uint(w, profile__nr_stacks(r->profile));
	json__key(w, "user_samples");
	json__uint(w, user);
	json__key(w, "kernel_only_samples");
	json__uint(w, st->kernel_only);
	json__key(w, "kernel_only_in_execve_or_exit");
	json__uint(w, kc[KC_NO_USER_CONTEXT]);
	count_and_percent(w, "fp_complete", st->unwind.fp_complete, user);
	json__key(w, "user_stacks_by_method");
	json__begin_object(w);
	for (int m = 0; m < METHOD_COUNT; m++)
		count_and_percent(w, hybrid__method_name(m), st->methods[m], user);
	json__end_object(w);
	json__key(w, "fp_chains_finished_by_dwarf");
	json__uint(w, st->unwind.fp_tails);
	json__key(w, "fp_chains_finished_with_learned_frames");
	json__uint(w, st->unwind.fp_tails_learned);
	json__key(w, "gaps_crossed_by_learned_frames");
	json__uint(w, st->unwind.gaps_crossed);
	json_nocfi(w, &st->nocfi);
	json__key(w, "truncated_by_reason");
	json__begin_object(w);
	for (unsigned t = 0; t < UNWIND_END_COUNT; t++) {
		json__key(w, hybrid__truncated_root(t));
		json__uint(w, st->truncated[t]);
	}
	json__end_object(w);
	json__key(w, "lost_samples");
	json__begin_object(w);
	json__key(w, "total");
	json__uint(w, summary__lost_samples(st, kc));
	json__key(w, "ring_buffer_full");
	json__uint(w, kc[KC_DROP_RINGBUF_FULL]);
	json__key(w, "no_scratch_buffer");
	json__uint(w, kc[KC_DROP_NO_SCRATCH]);
	json__key(w, "malformed");
	json__uint(w, st->malformed);
	json__end_object(w);
	json__key(w, "not_recorded");
	json__begin_object(w);
	json__key(w, "idle");
	json__uint(w, kc[KC_IDLE]);
	json__key(w, "other_processes");
	json__uint(w, kc[KC_FILTERED]);
	json__key(w, "children_not_followed");
	json__uint(w, kc[KC_FORKS_NOT_FOLLOWED]);
	json__end_object(w);
	json__key(w, "lost_frames");
	json__begin_object(w);
	json__key(w, "fp_chain_unreadable");
	json__uint(w, kc[KC_FP_READ_FAILED]);
	json__key(w, "outside_any_mapping");
	json__uint(w, st->frames_unmapped);
	json__key(w, "process_maps_gone");
	json__uint(w, st->no_maps);
	json__key(w, "fp_chain_off_stack");
	json__uint(w, kc[KC_FP_OFF_STACK]);
	json__end_object(w);
}

static void write_deltas(struct json_writer *w, const struct stack_delta_stats *d)
{
	json__key(w, "stack_deltas");
	json__begin_object(w);
	json__key(w, "deltas");
	json__uint(w, d->deltas);
	json__key(w, "whole_copies");
	json__uint(w, d->full);
	json__key(w, "base_missing");
	json__uint(w, d->base_missing);
	json__key(w, "malformed");
	json__uint(w, d->malformed);
	json__key(w, "verified");
	json__uint(w, d->verified);
	json__key(w, "verify_mismatches");
	json__uint(w, d->verify_mismatch);
	json__key(w, "images_evicted");
	json__uint(w, d->evicted);
	json__key(w, "images_dropped");
	json__uint(w, d->dropped);
	json__end_object(w);
}

static void write_transport(struct json_writer *w, const struct run_summary *r, const uint64_t *kc)
{
	const struct sample_stats *st = r->stats;
	const struct process_table_stats *ps = r->processes;
	struct perf_map_stats pm;

	json__key(w, "mapping_events");
	json__begin_object(w);
	json__key(w, "mmap");
	json__uint(w, ps->events[MAP_EVENT_MMAP]);
	json__key(w, "exec");
	json__uint(w, ps->events[MAP_EVENT_EXEC]);
	json__key(w, "fork");
	json__uint(w, ps->events[MAP_EVENT_FORK]);
	json__key(w, "exit");
	json__uint(w, ps->events[MAP_EVENT_EXIT]);
	json__key(w, "processes_read_from_proc");
	json__uint(w, ps->seeded_from_proc);
	json__key(w, "lost");
	json__uint(w, r->sideband_lost);
	json__end_object(w);
	module_registry__perf_map_stats(r->modules, &pm);
	json__key(w, "perf_maps");
	json__begin_object(w);
	json__key(w, "entries");
	json__uint(w, pm.entries);
	json__key(w, "bad_lines");
	json__uint(w, pm.bad_lines);
	json__key(w, "files_read");
	json__uint(w, pm.read);
	json__key(w, "files_refused");
	json__uint(w, pm.refused);
	json__key(w, "files_cut_short");
	json__uint(w, pm.cut_short);
	json__end_object(w);
	json_jitdumps(w, r->modules);
	json_gdb_jit(w, r->modules);
	if (r->debug_files && r->debug_files->tried)
		summary__json_debug_files(w, r->debug_files);
	json__key(w, "bytes_per_sample");
	json__double(w, summary__bytes_per_sample(r));
	json__key(w, "frame_pointers_only");
	json__bool(w, r->no_dwarf);
	json__key(w, "stack_copies");
	json__begin_object(w);
	json__key(w, "to_learned_base");
	json__uint(w, kc[KC_COPY_LEARNED]);
	json__key(w, "to_end_of_stack");
	json__uint(w, kc[KC_COPY_DEFAULT]);
	json__key(w, "leaf_only");
	json__uint(w, kc[KC_COPY_FP]);
	json__key(w, "cut_short");
	json__uint(w, kc[KC_STACK_COPY_CLAMPED]);
	json__key(w, "failed");
	json__uint(w, kc[KC_STACK_COPY_FAILED]);
	json__key(w, "with_holes");
	json__uint(w, kc[KC_STACK_COPY_HOLES]);
	json__key(w, "with_base_window");
	json__uint(w, kc[KC_COPY_BASE_WINDOW]);
	json__key(w, "off_thread_stack");
	json__uint(w, kc[KC_COPY_OFF_STACK]);
	json__key(w, "from_alternate_stack");
	json__uint(w, kc[KC_COPY_ALTSTACK]);
	json__key(w, "signal_frame_not_found");
	json__uint(w, kc[KC_SIGFRAME_NOT_FOUND]);
	json__key(w, "fp_end_windows_sent");
	json__uint(w, st->tail_windows);
	json__key(w, "fp_end_windows_unreadable");
	json__uint(w, kc[KC_FP_TAIL_FAILED]);
	json__end_object(w);
	if (r->deltas)
		write_deltas(w, r->deltas);
}

struct ranked {
	uint32_t id;
	uint64_t samples;
};

static int compare_ranked(const void *a, const void *b, void *names)
{
	const struct ranked *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(name_table__name(names, x->id), name_table__name(names, y->id));
}

/* The top functions by one measure, largest first, ties in name order. */
static int write_top(struct json_writer *w, const char *key, const struct stack_set *set,
		     bool self)
{
	const struct name_table *names = stack_set__names(set);
	uint32_t n = name_table__count(names);
	struct ranked *r = calloc((size_t)n + 1, sizeof(*r));
	size_t m = 0;

	if (!r)
		return -ENOMEM;
	for (uint32_t id = 0; id < n; id++) {
		uint64_t v = self ? stack_set__self(set, id) : stack_set__inclusive(set, id);

		if (v)
			r[m++] = (struct ranked){ id, v };
	}
	qsort_r(r, m, sizeof(*r), compare_ranked, (void *)names);
	json__key(w, key);
	json__begin_array(w);
	for (size_t i = 0; i < m && i < SUMMARY_TOP_FUNCTIONS; i++) {
		json__begin_object(w);
		json__key(w, "function");
		json__string(w, name_table__name(names, r[i].id));
		json__key(w, "samples");
		json__uint(w, r[i].samples);
		json__key(w, "percent");
		json__double(w, summary__percent(r[i].samples, stack_set__total(set)));
		json__end_object(w);
	}
	json__end_array(w);
	free(r);
	return 0;
}

/* The Go line of -v: processes by whether the kernel reads their stack switches, samples
 * on g0 by what became of the goroutine read with them; absent without either. */
static void write_go(struct json_writer *w, const struct go_proc_stats *go,
		     const uint64_t *switches)
{
	if (!summary__go_seen(go, switches))
		return;
	json__key(w, "go");
	json__begin_object(w);
	json__key(w, "stack_switches");
	json__begin_object(w);
	for (unsigned i = 0; i < GO_SWITCH_COUNT; i++)
		json__key_uint(w, go_switch__outcome_name(i), switches[i]);
	json__end_object(w);
	json__key(w, "processes");
	json__begin_object(w);
	for (unsigned i = 0; go && i < GO_LAYOUT_REASON_COUNT; i++)
		json__key_uint(w, go_layout__reason_name(i), go->processes[i]);
	json__end_object(w);
	json__end_object(w);
}

int summary__write_json(const struct run_summary *r, FILE *out)
{
	static const uint64_t no_counters[KC_NR];
	const uint64_t *kc = r->kernel_counters ? r->kernel_counters : no_counters;
	struct name_table *names = NULL;
	struct stack_set *set = NULL;
	struct json_writer w;
	char msg[160];
	int err;

	err = name_table__new(&names);
	if (!err)
		err = stack_set__new(names, false, &set);
	if (!err)
		err = stack_set__add_profile(set, r->profile, msg, sizeof(msg));
	if (err)
		goto cleanup;
	json__init(&w, out);
	json__begin_object(&w);
	write_counts(&w, r, kc);
	write_transport(&w, r, kc);
	summary__json_python(&w, r->python);
	write_go(&w, r->go, r->stats->unwind.go_switches);
	summary__json_inline(&w, r->profile);
	err = write_top(&w, "top_self", set, true);
	if (!err)
		err = write_top(&w, "top_inclusive", set, false);
	json__end_object(&w);
	if (!err)
		err = json__finish(&w);
cleanup:
	stack_set__free(set);
	name_table__free(names);
	return err;
}

static int write_json(FILE *out, void *r)
{
	return summary__write_json(r, out);
}

int summary__write_json_file(const char *path, const struct run_summary *r)
{
	int err = atomic_file__write(path, 0644, write_json, (void *)r);

	if (err)
		fprintf(stderr, "hprof: cannot write %s: %s\n", path, strerror(-err));
	return err;
}
