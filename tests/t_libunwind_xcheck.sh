#!/usr/bin/env bash
# Cross-check: libunwind, driven remotely over the same copied registers and stack bytes
# (as Linux perf does), must produce the same frames as hprof's DWARF walk on recorded
# samples of every no-frame-pointer workload. build/tools/xcheck does the comparison
# (its header states the rule); disagreements print both stacks and fail.
#
# --stack-size 32768: nofp_recurse's 300 frames take about 15 KiB of stack below main
# (48 bytes a level); 32 KiB leaves room for the rest, and the copy is clamped at the top
# of the stack anyway.
source "$(dirname "$0")/lib.sh"
require_bpf "libunwind xcheck"

XCHECK=build/tools/xcheck
STACK=32768
MIN_COMPARED=100   # 2 s at 299 Hz is ~600 samples of one busy thread; allow a loaded machine

field() { sed -n "s/^xcheck: .* $2 \([0-9]*\).*/\1/p" "$1"; }

# xcheck_workload NAME FRAMES CMD...: FRAMES, the frames of the workload's full stack
xcheck_workload() {
	local name=$1 min_depth=$2; shift 2
	local cap="$TMP/$name.cap" out="$TMP/$name.xcheck"

	if ! "$HPROF" -F 299 --stack-size $STACK --raw "$cap" --folded "$TMP/$name.folded" -- "$@" \
		>/dev/null 2>"$TMP/$name.err"; then
		fail "$name: recording failed"
		cat "$TMP/$name.err"
		return
	fi
	"$XCHECK" "$cap" >"$out" 2>&1
	local rc=$?
	sed 's/^/  /' "$out" | grep -v '^  #   ' | head -n 12
	local compared agree disagree prefix frames lu_errors
	compared=$(field "$out" compared) agree=$(field "$out" agree)
	disagree=$(field "$out" disagree) prefix=$(field "$out" prefix) frames=$(field "$out" frames)
	lu_errors=$(field "$out" lu_errors)
	if [ -z "$compared" ]; then
		fail "$name: xcheck failed (status $rc)"
		cat "$out"
		return
	fi
	if [ "$disagree" -eq 0 ] && [ "$rc" -eq 0 ]; then
		ok "$name: hprof and libunwind never disagree ($agree of $compared samples agree, $frames frames)"
	else
		fail "$name: $disagree of $compared samples disagree"
		grep '^#   ' "$out" | head -n 200
	fi
	check "$name: >= $MIN_COMPARED samples compared ($compared)" [ "$compared" -ge $MIN_COMPARED ]
	# Samples libunwind itself fails on are not judged: they must stay rare.
	check "$name: libunwind failed on <= 1% of complete walks ($lu_errors)" \
		[ $((lu_errors * 100)) -le "$compared" ]
	# Prefix comparisons (hprof truncated) prove less: most must be whole stacks.
	check "$name: >= 90% compared as whole stacks ($((compared - prefix))/$compared)" \
		at_least 90 "$((compared - prefix))/$compared"
	# Most comparisons are of the workload's full stacks: at least half its depth on average
	# (samples in main between two calls, in its clock or in the loader have fewer frames,
	# as many as the machine's time there gives).
	check "$name: >= $min_depth / 2 frames per sample on average ($frames/$compared)" \
		[ $((frames * 2)) -ge $((min_depth * compared)) ]
}

# main;recurse x300;leaf plus libc's start-up frames: 305 frames.
xcheck_workload nofp_recurse 300 "$WL/nofp_recurse" 2 300
xcheck_workload nofp_qsort 5 "$WL/nofp_qsort" 2
xcheck_workload nofp_signal 5 "$WL/nofp_signal" 2
xcheck_workload nofp_threads 5 "$WL/nofp_threads" 2
xcheck_workload nofp_cxx 5 "$WL/nofp_cxx" 2

# The comparison itself can fail: with hprof's second pc corrupted, every sample differs.
if [ -f "$TMP/nofp_qsort.cap" ]; then
	"$XCHECK" --mutate "$TMP/nofp_qsort.cap" >"$TMP/mutate.out" 2>&1
	rc=$?
	compared=$(field "$TMP/mutate.out" compared) disagree=$(field "$TMP/mutate.out" disagree)
	all_differ() { [ "$rc" -eq 1 ] && [ -n "$compared" ] && [ "$compared" -gt 0 ] && [ "$disagree" = "$compared" ]; }
	check "mutated walk: every sample disagrees and xcheck exits 1 ($disagree/$compared, status $rc)" all_differ
fi
