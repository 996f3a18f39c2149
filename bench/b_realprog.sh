#!/usr/bin/env bash
# Complete stacks on real programs (the list and the criterion of tests/t_realprog.sh, from
# tests/lib.sh), in one run: each program profiled at 499 Hz by hprof, hprof --no-dwarf and
# perf record --call-graph dwarf,16384; the share of its samples whose user stack reaches
# the program's or thread's entry. Goal: hprof >= 99% on every program, never below perf.
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh

if ! bpf_available 2>/dev/null; then
	echo "skip: b_realprog needs root and a BTF kernel (BPF recording)"
	exit 0
fi
if ! command -v perf >/dev/null; then
	echo "skip: b_realprog needs perf (linux-perf; scripts/install-deps.sh)"
	exit 0
fi

realprog_prepare "$TMP"
met=1
printf '%-10s | %-18s | %-18s | %-18s\n' program hprof "hprof --no-dwarf" "perf dwarf,16384"
printf '%-10s-|-%-18s-|-%-18s-|-%-18s\n' ---------- ------------------ ------------------ ------------------
for name in $REALPROGS; do
	if ! realprog_command "$name" "$TMP" 2>"$TMP/why"; then
		printf '%-10s | not run: %s\n' "$name" "$(cat "$TMP/why")"
		met=0
		continue
	fi
	"$HPROF" -F 499 --folded "$TMP/$name.folded" -- "${CMD[@]}" >/dev/null 2>"$TMP/$name.err"
	"$HPROF" -F 499 --no-dwarf --folded "$TMP/$name.fp.folded" -- "${CMD[@]}" >/dev/null 2>&1
	perf record -q -F 499 --call-graph dwarf,16384 -o "$TMP/$name.data" -- "${CMD[@]}" \
		>/dev/null 2>"$TMP/$name.perf.err" ||
		echo "$name: perf record failed: $(head -c 300 "$TMP/$name.perf.err")" >&2
	perf script --no-inline -F comm,ip,sym,dso -i "$TMP/$name.data" 2>/dev/null |
		perf_folded >"$TMP/$name.perf.folded"
	rm -f "$TMP/$name.data"
	h=$(complete_share "$TMP/$name.folded")
	f=$(complete_share "$TMP/$name.fp.folded")
	p=$(complete_share "$TMP/$name.perf.folded")
	printf '%-10s | %6s %-11s | %6s %-11s | %6s %-11s\n' "$name" \
		"$(pct "$h")" "($h)" "$(pct "$f")" "($f)" "$(pct "$p")" "($p)"
	# hprof's share below perf's: h_m / h_t < p_m / p_t.
	if ! at_least 99 "$h" || [ $((${h%/*} * ${p#*/})) -lt $((${p%/*} * ${h#*/})) ]; then
		met=0
	fi
done
echo "incomplete stacks, commonest ways (hprof; perf dwarf):"
for name in $REALPROGS; do
	[ -s "$TMP/$name.folded" ] || continue
	incomplete_why "$TMP/$name.folded" 3 | sed "s/^/  $name hprof: /"
	incomplete_why "$TMP/$name.perf.folded" 3 | sed "s/^/  $name perf: /"
done
if [ "$met" -eq 1 ]; then
	echo "goal: hprof >= 99% complete on every program and never below perf dwarf -> met"
else
	echo "goal: hprof >= 99% complete on every program and never below perf dwarf -> MISSED"
fi
