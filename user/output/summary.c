/* The run's summary as text: the brief lines every run prints, the -v figures, the lines
 * on what was written, memory. The JSON form is summary_json.c. */
#include "output/summary.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "binary/inline_frames.h"
#include "binary/modules.h"
#include "output/outputs.h"

/* Code without CFI, one line, when a walk met any. */
static void print_nocfi(const struct nocfi_stats *n, FILE *out)
{
	uint64_t failed = 0;

	if (!n->analyses && !n->unreadable && !n->frame_pointer_frames && !n->scan_frames)
		return;
	for (int f = CODE_OK + 1; f < CODE_FAIL_COUNT; f++)
		failed += n->failed[f];
	fprintf(out, "hprof: code without CFI: %" PRIu64 " regions analysed (%" PRIu64
			" read again further on), %" PRIu64 " without rules (",
		n->analyses, n->widened, failed);
	for (int f = CODE_OK + 1; f < CODE_FAIL_COUNT; f++)
		fprintf(out, "%s%s %" PRIu64, f > CODE_OK + 1 ? ", " : "", code_fail__name(f),
			n->failed[f]);
	fprintf(out, "), %" PRIu64 " unreadable, %" PRIu64
			" steps rejected (no call before the return address), %" PRIu64
			" taken so (a walk from it reached the start); return addresses the code moved"
			" (sljit): %" PRIu64 " into the caller's frame, %" PRIu64 " into a sampled register, %" PRIu64
			" into another (the caller's top word taken); frames found by frame records %" PRIu64
			", by scanning %" PRIu64 " (candidates rejected: %" PRIu64 " by their code, %" PRIu64
			" by a walk, %" PRIu64 " as stale; %" PRIu64
			" scans passed over one for a later candidate whose callers all called their callees;"
			" %" PRIu64 " taken after a call of a function that jumped to the code, in its frame)\n",
		n->unreadable, n->analysis_rejected, n->analysis_ra_by_walk, n->ra_moved,
		n->ra_register, n->ra_top_word, n->frame_pointer_frames,
		n->scan_frames, n->scan_rejected_code, n->scan_rejected_walk, n->scan_rejected_stale,
		n->scan_passed_over, n->scan_through_jumps);
}

/* Only when some process with JIT code had a map file. */
/* jitdump files, one line when a process had one. */
static void print_jitdump_summary(struct module_registry *modules, FILE *out)
{
	struct jitdump_stats jd;

	module_registry__jitdump_stats(modules, &jd);
	if (!jd.read && !jd.refused && !jd.bad_header)
		return;
	fprintf(out, "hprof: jitdump files: %" PRIu64 " code loads, %" PRIu64 " moves, %" PRIu64
			" with unwinding info (%" PRIu64 " compiled, %" PRIu64 " failed); %" PRIu64
			" files read, %" PRIu64 " refused (owner or file type), %" PRIu64
			" with a bad header; %" PRIu64 " bad records skipped, %" PRIu64 " cut short\n",
		jd.code_loads, jd.code_moves, jd.unwind_infos, jd.unwind_tables, jd.unwind_failed,
		jd.read, jd.refused, jd.bad_header, jd.bad_records, jd.cut_records + jd.cut_short);
}

/* Code registered through gdb's JIT interface, one line when a process had some. */
static void print_gdb_jit_summary(struct module_registry *modules, FILE *out)
{
	struct gdb_jit_stats gj;

	module_registry__gdb_jit_stats(modules, &gj);
	if (!gj.registrations)
		return;
	fprintf(out, "hprof: gdb JIT interface: %" PRIu64 " processes, %" PRIu64
			" objects with CFI, %" PRIu64 " without, %" PRIu64 " refused (size, unreadable), %" PRIu64
			" relocated (LLVM's); %" PRIu64 " list reads, %" PRIu64
			" without a valid descriptor, %" PRIu64 " cut short\n",
		gj.registrations, gj.objects, gj.no_cfi, gj.refused, gj.relocated, gj.list_reads,
		gj.bad_lists, gj.cut_short);
}

static void print_perf_map_summary(struct module_registry *modules, FILE *out)
{
	struct perf_map_stats pm;

	module_registry__perf_map_stats(modules, &pm);
	if (!pm.read && !pm.refused)
		return;
	fprintf(out, "hprof: perf map files: %" PRIu64 " entries, %" PRIu64
			" bad lines skipped; %" PRIu64 " files read, %" PRIu64
			" refused (owner or file type)",
		pm.entries, pm.bad_lines, pm.read, pm.refused);
	if (pm.cut_short)
		fprintf(out, ", %" PRIu64 " cut short at %u MiB or %u entries", pm.cut_short,
			PERF_MAP_MAX_BYTES >> 20, PERF_MAP_MAX_ENTRIES);
	fprintf(out, "\n");
}

/* Only for a recording with deltas; the check against whole copies only when asked for. */
static void print_deltas(const struct stack_delta_stats *d, FILE *out)
{
	fprintf(out, "hprof: stack deltas: %" PRIu64 " rebuilt, %" PRIu64 " whole copies, %" PRIu64
			" lost for a missing base, %" PRIu64 " malformed",
		d->deltas, d->full, d->base_missing, d->malformed);
	if (d->evicted)
		fprintf(out, "; %" PRIu64 " images evicted", d->evicted);
	if (d->dropped)
		fprintf(out, "; %" PRIu64 " images dropped (HPROF_DEBUG)", d->dropped);
	if (d->verified)
		fprintf(out, "; checked against the whole copy: %" PRIu64 ", %" PRIu64 " differed",
			d->verified, d->verify_mismatch);
	fprintf(out, "\n");
}

uint64_t summary__rss_kib(void)
{
	char line[128];
	uint64_t kib = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %" SCNu64, &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

void summary__print_memory(const struct memory_stats *m, FILE *out)
{
	struct mallinfo2 heap = mallinfo2();
	const double mib = 1024.0 * 1024.0;

	fprintf(out, "hprof: memory: rss %" PRIu64 " KiB, heap in use %.1f MiB; %" PRIu64
			" processes (%" PRIu64 " with samples), %" PRIu64 " threads, %" PRIu64
			" pids in the kernel's filter; %" PRIu64 " distinct stacks (%" PRIu64 " nodes, %" PRIu64
			" frames, %" PRIu64 " names) in %.1f MiB; %" PRIu64
			" binaries (symbols %.1f MiB, unwind indexes %.1f MiB, rows of %" PRIu64
			" functions %.2f of %.0f MiB (%.1f%% of lookups hit, %" PRIu64
			" evicted), function starts of code without either %.1f MiB, %" PRIu64
			" files pinned; %" PRIu64 " idle ones dropped, %" PRIu64 " read again), %" PRIu64
			" anonymous code modules (copies of their code %.2f MiB, %" PRIu64
			" reads after their process exited; gdb JIT objects %.2f MiB), %" PRIu64
			" perf maps\n",
		summary__rss_kib(), (double)(heap.uordblks + heap.hblkhd) / mib, m->processes,
		m->processes_sampled, m->threads, m->filtered_pids,
		m->profile.stacks, m->profile.nodes, m->profile.frames, m->profile.names,
		(double)m->profile.bytes / mib, m->modules.files,
		(double)m->modules.symbol_bytes / mib, (double)m->modules.table_bytes / mib,
		m->modules.row_cache.functions, (double)m->modules.row_cache.bytes / mib,
		(double)m->modules.row_cache.max_bytes / mib,
		m->modules.row_cache.hits + m->modules.row_cache.misses ?
			100.0 * (double)m->modules.row_cache.hits /
				(double)(m->modules.row_cache.hits + m->modules.row_cache.misses) : 0.0,
		m->modules.row_cache.evictions,
		(double)m->modules.code_start_bytes / mib,
		m->modules.pinned_files, m->modules.dropped, m->modules.reloads, m->modules.anon_code,
		(double)m->modules.code_copy_bytes / mib, m->modules.code_copy_reads,
		(double)m->modules.gdb_jit_bytes / mib, m->modules.perf_maps);
}

/* Go processes by whether the kernel reads their stack switches, and the samples on g0
 * by what became of the goroutine read with them (unwind/go_switch.h); nothing without
 * either. */
static void print_go(const struct go_proc_stats *go, const uint64_t *switches, FILE *out)
{
	uint64_t procs = summary__go_processes(go);

	if (!summary__go_seen(go, switches))
		return;
	fprintf(out, "hprof: Go stack switches: %" PRIu64 " samples on g0 joined to their"
		     " goroutine by g.m.curg.sched (not joined:", switches[GO_SWITCH_JOINED]);
	for (unsigned i = GO_SWITCH_JOINED + 1; i < GO_SWITCH_COUNT; i++)
		fprintf(out, " %s %" PRIu64 "%s", go_switch__outcome_name(i), switches[i],
			i + 1 < GO_SWITCH_COUNT ? "," : ")");
	if (go && procs) {
		fprintf(out, "; Go processes:");
		for (unsigned i = 0; i < GO_LAYOUT_REASON_COUNT; i++)
			if (go->processes[i])
				fprintf(out, " %s %" PRIu64 "%s%s%s", go_layout__reason_name(i),
					go->processes[i],
					i == GO_LAYOUT_UNKNOWN_VERSION ? " (last " : "",
					i == GO_LAYOUT_UNKNOWN_VERSION ? go->last_unknown : "",
					i == GO_LAYOUT_UNKNOWN_VERSION ? ")" : "");
	}
	fprintf(out, "\n");
}

void summary__print(const struct run_summary *r, FILE *out)
{
	static const uint64_t no_counters[KC_NR];
	const struct sample_stats *st = r->stats;
	const struct process_table_stats *ps = r->processes;
	const uint64_t *kc = r->kernel_counters ? r->kernel_counters : no_counters;
	double duration_s = r->duration_s;
	unsigned frequency = r->frequency;
	uint64_t user_samples = summary__user_samples(st);
	uint64_t lost = summary__lost_samples(st, kc);

	fprintf(out, "hprof: %.2f s, %" PRIu64 " samples at %u Hz, %" PRIu64
			" processes, %" PRIu64 " distinct stacks\n",
		duration_s, st->samples, frequency, st->processes,
		profile__nr_stacks(r->profile));
	fprintf(out, "hprof: FP-complete: %.1f%% of user stacks (%" PRIu64 " of %" PRIu64
			"); %" PRIu64 " kernel-only samples (%" PRIu64 " in execve or exit)\n",
		summary__percent(st->unwind.fp_complete, user_samples), st->unwind.fp_complete, user_samples,
		st->kernel_only, kc[KC_NO_USER_CONTEXT]);
	fprintf(out, "hprof: user stacks by method:");
	for (int m = 0; m < METHOD_COUNT; m++)
		fprintf(out, " %s %.1f%%", hybrid__method_name(m),
			summary__percent(st->methods[m], user_samples));
	fprintf(out, " (FP chains finished from their end: %" PRIu64 " by the DWARF walk, %" PRIu64
			" with the thread's learned frames; deep stacks walked across their copy's gap"
			" by learned frames: %" PRIu64 ")\n",
		st->unwind.fp_tails, st->unwind.fp_tails_learned, st->unwind.gaps_crossed);
	print_nocfi(&st->nocfi, out);
	if (st->methods[METHOD_TRUNCATED]) {
		fprintf(out, "hprof: truncated stacks:");
		for (unsigned t = 0; t < UNWIND_END_COUNT; t++) {
			if (st->truncated[t])
				fprintf(out, " %s %" PRIu64 ";", hybrid__truncated_root(t),
					st->truncated[t]);
		}
		fprintf(out, "\n");
	}
	fprintf(out, "hprof: lost samples: %" PRIu64 " (ring buffer full %" PRIu64
			", no scratch buffer %" PRIu64 ", malformed %" PRIu64 "); not recorded: idle %" PRIu64
			", other processes %" PRIu64 "\n",
		lost, kc[KC_DROP_RINGBUF_FULL], kc[KC_DROP_NO_SCRATCH], st->malformed, kc[KC_IDLE],
		kc[KC_FILTERED]);
	if (kc[KC_FORKS_NOT_FOLLOWED])
		fprintf(out, "hprof: %" PRIu64 " children of profiled processes not followed: the"
				" kernel's pid filter was full (their samples count as other processes')\n",
			kc[KC_FORKS_NOT_FOLLOWED]);
	fprintf(out, "hprof: lost frames: %" PRIu64 " FP chains ended on unreadable memory, %" PRIu64
			" frames outside any mapping, %" PRIu64 " samples whose process maps were gone;"
			" %" PRIu64 " FP chains left the thread's stack (not followed)\n",
		kc[KC_FP_READ_FAILED], st->frames_unmapped, st->no_maps, kc[KC_FP_OFF_STACK]);
	fprintf(out, "hprof: mappings: %" PRIu64 " mmap, %" PRIu64 " exec, %" PRIu64 " fork, %" PRIu64
			" exit events; %" PRIu64 " processes read from /proc; %" PRIu64
			" mapping events lost\n",
		ps->events[MAP_EVENT_MMAP], ps->events[MAP_EVENT_EXEC], ps->events[MAP_EVENT_FORK],
		ps->events[MAP_EVENT_EXIT], ps->seeded_from_proc, r->sideband_lost);
	print_perf_map_summary(r->modules, out);
	print_jitdump_summary(r->modules, out);
	print_gdb_jit_summary(r->modules, out);
	fprintf(out, "hprof: %.0f bytes received per sample", summary__bytes_per_sample(r));
	if (r->no_dwarf)
		fprintf(out, " (frame pointers only, no stack copies)\n");
	else
		fprintf(out, " (stack copies: %" PRIu64 " to the thread's learned base, %" PRIu64
				" to the end of the stack, %" PRIu64 " of the leaf only (the FP chain sufficed), %" PRIu64
				" cut short by a failed read, %" PRIu64 " failed, %" PRIu64
				" with unreadable pages left as holes, %" PRIu64
				" deeper than the copy or off the thread's stack (%" PRIu64
				" off it), sent with the window below the thread's base; %" PRIu64
				" from a signal's alternate stack, %" PRIu64
				" of them without the interrupted stack (no signal frame found)"
				"; windows at the FP chain's end: %" PRIu64 " sent, %" PRIu64
				" unreadable)\n",
			kc[KC_COPY_LEARNED], kc[KC_COPY_DEFAULT], kc[KC_COPY_FP], kc[KC_STACK_COPY_CLAMPED],
			kc[KC_STACK_COPY_FAILED], kc[KC_STACK_COPY_HOLES], kc[KC_COPY_BASE_WINDOW],
			kc[KC_COPY_OFF_STACK], kc[KC_COPY_ALTSTACK],
			kc[KC_SIGFRAME_NOT_FOUND], st->tail_windows, kc[KC_FP_TAIL_FAILED]);
	if (r->deltas)
		print_deltas(r->deltas, out);
	summary__print_python(r->python, out);
	print_go(r->go, st->unwind.go_switches, out);
	summary__print_debug_files(r->debug_files, true, out);
	summary__print_inline(r->profile, out);
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* A truncation reason as the brief summary names it: the flame graph's root without its
 * brackets ("copy too short"). */
static const char *reason_name(unsigned t)
{
	return t == UNWIND_END_COMPLETE || t >= UNWIND_END_COUNT ? hybrid__truncated_root(t)
								 : unwind_end__name(t);
}

/* The share of user stacks complete, and the two commonest reasons the others stopped. */
static void print_brief_complete(const struct sample_stats *st, FILE *out)
{
	uint64_t user = summary__user_samples(st), truncated = st->methods[METHOD_TRUNCATED];
	uint64_t shown = 0;
	unsigned top[2] = { UNWIND_END_COUNT, UNWIND_END_COUNT };

	if (!user) {
		if (st->kernel_only)
			fprintf(out, "hprof: no user stacks: %" PRIu64 " sample%s in the kernel only\n",
				st->kernel_only, plural(st->kernel_only));
		return;
	}
	if (!truncated) {
		if (user == 1)
			fprintf(out, "hprof: the only user stack is complete\n");
		else
			fprintf(out, "hprof: all %" PRIu64 " user stacks complete\n", user);
		return;
	}
	for (unsigned t = 0; t < UNWIND_END_COUNT; t++) {
		if (!st->truncated[t])
			continue;
		if (top[0] == UNWIND_END_COUNT || st->truncated[t] > st->truncated[top[0]]) {
			top[1] = top[0];
			top[0] = t;
		} else if (top[1] == UNWIND_END_COUNT || st->truncated[t] > st->truncated[top[1]]) {
			top[1] = t;
		}
	}
	/* rounded down: 99.96% is not "100.0%" complete */
	fprintf(out, "hprof: %" PRIu64 " of %" PRIu64 " user stacks complete (%.1f%%); the others:",
		user - truncated, user, (double)(uint64_t)(summary__percent(user - truncated, user) * 10) / 10);
	for (int i = 0; i < 2 && top[i] < UNWIND_END_COUNT; i++) {
		fprintf(out, "%s %s %" PRIu64, i ? "," : "", reason_name(top[i]),
			st->truncated[top[i]]);
		shown += st->truncated[top[i]];
	}
	if (shown < truncated)
		fprintf(out, ", other reasons %" PRIu64, truncated - shown);
	fprintf(out, "\n");
}

/* What was lost, one line, only when anything was. Frames no method found are not counted
 * here: their stacks are the incomplete ones. */
static void print_brief_lost(const struct run_summary *r, const uint64_t *kc, FILE *out)
{
	const struct sample_stats *st = r->stats;
	uint64_t lost = summary__lost_samples(st, kc);
	const char *sep = "";

	if (!lost && !r->sideband_lost && !kc[KC_FORKS_NOT_FOLLOWED])
		return;
	fprintf(out, "hprof: lost");
	if (lost) {
		fprintf(out, " %" PRIu64 " sample%s (", lost, plural(lost));
		if (kc[KC_DROP_RINGBUF_FULL]) {
			fprintf(out, "ring buffer full %" PRIu64 ": raise --ring-size or lower -F",
				kc[KC_DROP_RINGBUF_FULL]);
			sep = ", ";
		}
		if (kc[KC_DROP_NO_SCRATCH]) {
			fprintf(out, "%sno scratch buffer %" PRIu64, sep, kc[KC_DROP_NO_SCRATCH]);
			sep = ", ";
		}
		if (st->malformed)
			fprintf(out, "%smalformed %" PRIu64, sep, st->malformed);
		fprintf(out, ")");
		sep = ",";
	}
	if (r->sideband_lost) {
		fprintf(out, "%s %" PRIu64 " mapping event%s", sep, r->sideband_lost,
			plural(r->sideband_lost));
		sep = ",";
	}
	if (kc[KC_FORKS_NOT_FOLLOWED])
		fprintf(out, "%s %" PRIu64 " child process%s (the kernel's pid filter was full)", sep,
			kc[KC_FORKS_NOT_FOLLOWED], kc[KC_FORKS_NOT_FOLLOWED] == 1 ? "" : "es");
	fprintf(out, "\n");
}

void summary__print_brief(const struct run_summary *r, FILE *out)
{
	static const uint64_t no_counters[KC_NR];
	const struct sample_stats *st = r->stats;
	const uint64_t *kc = r->kernel_counters ? r->kernel_counters : no_counters;

	fprintf(out, "hprof: %s%s%.2f s: %" PRIu64 " sample%s at %u Hz", r->what ? r->what : "",
		r->what ? " for " : "", r->duration_s, st->samples, plural(st->samples), r->frequency);
	if (st->processes)
		fprintf(out, " in %" PRIu64 " process%s", st->processes,
			st->processes == 1 ? "" : "es");
	fprintf(out, "%s\n", r->no_dwarf ? ", frame pointers only" : "");
	print_brief_complete(st, out);
	summary__print_python(r->python, out);
	print_brief_lost(r, kc, out);
	summary__print_debug_files(r->debug_files, false, out);
}

void summary__print_written(const struct output_opts *o, const char *raw_path, bool verbose,
			    FILE *out)
{
	const struct {
		const char *path, *what;
	} files[] = {
		{ o->svg_path, "flamegraph" },
		{ o->folded_path && strcmp(o->folded_path, "-") != 0 ? o->folded_path : NULL,
		  "folded stacks" },
		{ raw_path, "raw samples" },
		{ o->pprof_path, "pprof profile" },
		{ o->json_path, "JSON summary" },
	};
	bool any = false;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (!files[i].path)
			continue;
		if (verbose) {
			fprintf(out, "hprof: wrote %s to %s\n", files[i].what, files[i].path);
			continue;
		}
		fprintf(out, "%s%s (%s)", any ? ", " : "hprof: wrote ", files[i].path, files[i].what);
		any = true;
	}
	if (any)
		fprintf(out, "\n");
}
