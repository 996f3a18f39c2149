#!/usr/bin/env bash
# Complete stacks on real programs (the list and the criterion of tests/t_realprog.sh, from
# tests/lib.sh), in one run: each program profiled at 499 Hz by hprof, hprof --no-dwarf and
# perf record --call-graph dwarf,16384; the share of its samples whose user stack reaches
# the program's or thread's entry. Goal: hprof >= 99% on every program, never below perf.
# Then the programs whose hot code has no CFI (REALPROGS_NOCFI: assembly without CFI, JIT
# code), each recorded by hprof, hprof --no-scan, perf record --call-graph dwarf,16384 and
# perf record -g (frame pointers), with how hprof found the stacks: its "user stacks by
# method" shares and its "code without CFI" line. Goal: hprof >= 99% on each, never below
# perf dwarf or perf -g. Where NVIDIA's CUDA toolkit is installed, the first table has a
# "cuda" row too: the host side of NVRTC and cuBLASLt (bench_command).
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh

# bench_command NAME: realprog_command's, and "cuda": the host side of NVIDIA's NVRTC and
# cuBLASLt where the CUDA toolkit is installed (bench/lib.sh), not a Debian package, so a
# row that may be missing without missing the goal.
bench_command() {
	if [ "$1" = cuda ]; then
		cuda_host_command "$TMP"
	else
		realprog_command "$1" "$TMP"
	fi
}

if ! bpf_available 2>/dev/null; then
	echo "skip: b_realprog needs root and a BTF kernel (BPF recording)"
	exit 0
fi
if ! command -v perf >/dev/null; then
	echo "skip: b_realprog needs perf (linux-perf; scripts/install-deps.sh)"
	exit 0
fi

realprog_prepare "$TMP"
realprog_nocfi_prepare "$TMP"
met=1
printf '%-10s | %-18s | %-18s | %-18s\n' program hprof "hprof --no-dwarf" "perf dwarf,16384"
printf '%-10s-|-%-18s-|-%-18s-|-%-18s\n' ---------- ------------------ ------------------ ------------------
for name in $REALPROGS cuda; do
	if ! bench_command "$name" 2>"$TMP/why"; then
		printf '%-10s | not run: %s\n' "$name" "$(cat "$TMP/why")"
		[ "$name" = cuda ] || met=0
		continue
	fi
	"$HPROF" -v -F 499 --folded "$TMP/$name.folded" -- "${CMD[@]}" >/dev/null 2>"$TMP/$name.err"
	"$HPROF" -F 499 --no-dwarf --folded "$TMP/$name.fp.folded" -- "${CMD[@]}" >/dev/null 2>&1
	perf_record_folded "$name" "$TMP/$name.perf.folded" --call-graph dwarf,16384
	h=$(complete_share "$TMP/$name.folded")
	f=$(complete_share "$TMP/$name.fp.folded")
	p=$(complete_share "$TMP/$name.perf.folded")
	printf '%-10s | %6s %-11s | %6s %-11s | %6s %-11s\n' "$name" \
		"$(pct "$h")" "($h)" "$(pct "$f")" "($f)" "$(pct "$p")" "($p)"
	if ! at_least 99 "$h" || below "$h" "$p"; then
		met=0
	fi
done

echo
echo "code without CFI:"
printf '%-10s | %-18s | %-18s | %-18s | %-18s\n' program hprof "hprof --no-scan" "perf dwarf,16384" "perf -g"
printf '%-10s-|-%-18s-|-%-18s-|-%-18s-|-%-18s\n' ---------- ------------------ ------------------ \
	------------------ ------------------
for name in $REALPROGS_NOCFI; do
	if ! realprog_command "$name" "$TMP" 2>"$TMP/why"; then
		printf '%-10s | not run: %s\n' "$name" "$(cat "$TMP/why")"
		met=0
		continue
	fi
	"$HPROF" -v -F 499 --folded "$TMP/$name.folded" -- "${CMD[@]}" >/dev/null 2>"$TMP/$name.err"
	"$HPROF" -v -F 499 --no-scan --folded "$TMP/$name.ns.folded" -- "${CMD[@]}" >/dev/null 2>"$TMP/$name.ns.err"
	perf_record_folded "$name" "$TMP/$name.perf.folded" --call-graph dwarf,16384
	perf_record_folded "$name" "$TMP/$name.perfg.folded" -g
	h=$(complete_share "$TMP/$name.folded")
	n=$(complete_share "$TMP/$name.ns.folded")
	p=$(complete_share "$TMP/$name.perf.folded")
	g=$(complete_share "$TMP/$name.perfg.folded")
	printf '%-10s | %6s %-11s | %6s %-11s | %6s %-11s | %6s %-11s\n' "$name" \
		"$(pct "$h")" "($h)" "$(pct "$n")" "($n)" "$(pct "$p")" "($p)" "$(pct "$g")" "($g)"
	if ! at_least 99 "$h" || below "$h" "$p" || below "$h" "$g"; then
		met=0
	fi
done
# Stacks that pass for complete without reaching an entry (false_complete): 0 is the goal.
echo "stacks passing for complete short of an entry (hprof; perf dwarf):"
for name in $REALPROGS cuda $REALPROGS_NOCFI; do
	[ -s "$TMP/$name.folded" ] || continue
	hf=$(false_complete "$TMP/$name.folded")
	[ "$hf" = 0 ] || met=0
	printf '  %-10s hprof %s, perf dwarf %s\n' "$name" "$hf" "$(false_complete "$TMP/$name.perf.folded")"
done
echo "how hprof found them (hprof; hprof --no-scan):"
for name in $REALPROGS_NOCFI; do
	for run in "" .ns; do
		[ -s "$TMP/$name$run.err" ] || continue
		sed -n 's/^hprof: user stacks by method: \([^(]*\).*/\1/p; s/^hprof: code without CFI: /  /p' \
			"$TMP/$name$run.err" | sed "s/^/  $name${run:+ --no-scan}: /"
	done
done

echo "incomplete stacks, commonest ways (hprof; perf dwarf):"
for name in $REALPROGS cuda; do
	[ -s "$TMP/$name.folded" ] || continue
	incomplete_why "$TMP/$name.folded" 3 | sed "s/^/  $name hprof: /"
	incomplete_why "$TMP/$name.perf.folded" 3 | sed "s/^/  $name perf: /"
done
echo "incomplete stacks, commonest ways (hprof; hprof --no-scan; perf dwarf; perf -g):"
for name in $REALPROGS_NOCFI; do
	[ -s "$TMP/$name.folded" ] || continue
	incomplete_why "$TMP/$name.folded" 3 | sed "s/^/  $name hprof: /"
	incomplete_why "$TMP/$name.ns.folded" 3 | sed "s/^/  $name hprof --no-scan: /"
	incomplete_why "$TMP/$name.perf.folded" 3 | sed "s/^/  $name perf dwarf: /"
	incomplete_why "$TMP/$name.perfg.folded" 3 | sed "s/^/  $name perf -g: /"
done
if [ "$met" -eq 1 ]; then
	echo "goal: hprof >= 99% complete on every program, never below perf dwarf (nor perf -g on code without CFI), none passing for complete short of an entry -> met"
else
	echo "goal: hprof >= 99% complete on every program, never below perf dwarf (nor perf -g on code without CFI), none passing for complete short of an entry -> MISSED"
fi
