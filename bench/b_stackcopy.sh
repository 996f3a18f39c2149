#!/usr/bin/env bash
# What the live-stack copies cost, in one run, against perf record on the same workloads:
# 1. Bytes per sample: hprof (from its summary) against perf --call-graph dwarf (8 KiB
#    dumps; the mean PERF_RECORD_SAMPLE size) and against the live stack itself (sp to the
#    outermost frame's CFA, per sample, by tests/tools/livestack over hprof's --raw
#    capture). BPF time per sample (kernel.bpf_stats_enabled, bpftool's run_time_ns over
#    the samples recorded), hprof's and perf's own CPU and peak RSS, with both CPUs busy
#    (two copies of each workload). Goals: median <= 1 KiB a sample; <= 1.25x the live
#    stack on average; >= 8x fewer bytes than perf dwarf; BPF <= 5 us a sample without
#    frame pointers, <= 2 us where they suffice.
# 2. Slowdown of fixed-work programs (xz, cc1) at 99 and 999 Hz under hprof, perf
#    --call-graph dwarf and perf -g: each round runs every variant once, in a new random
#    order, and each variant's time is divided by the same round's unprofiled time; the
#    median ratio over ROUNDS (default 5) rounds is the slowdown, of the wall time and of
#    the workload's own CPU time (the goals' figure). Goals: at 999 Hz at most half of perf
#    dwarf's; at 99 Hz <= 0.3%.
# FREQ (default 499) is part 1's frequency; ROUNDS=0 runs part 1 only. Timings on a shared machine are noisy.
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh
ROUNDS=${ROUNDS:-5}
FREQ=${FREQ:-499}

if ! bpf_available 2>/dev/null; then
	echo "skip: b_stackcopy needs root and a BTF kernel (BPF recording)"
	exit 0
fi
for tool in perf bpftool jq; do
	if ! command -v $tool >/dev/null; then
		echo "skip: b_stackcopy needs $tool (scripts/install-deps.sh)"
		exit 0
	fi
done

stats_was=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q -w kernel.bpf_stats_enabled="$stats_was"; rm -rf "$TMP"' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

nested_blocks_c 100 60 >"$TMP/nested.c"
text_lines 130000 >"$TMP/text"
TICK=$(getconf CLK_TCK)

# The profiled command (bash): COPIES copies of the workload at once, timed (wall, and the
# copies' user+sys CPU); the profiler's own (the parent's) CPU ticks while they ran (its
# start-up before and its report after are not counted), its peak RSS, and its BPF
# program's statistics.
cat >"$TMP/run.sh" <<'EOF'
out=$1 copies=$2; shift 2
ticks() { sed 's/.*) //' /proc/$PPID/stat | awk '{ print $12 + $13 }'; }
ticks0=$(ticks)
TIMEFORMAT='%3R %3U %3S'
{ time { for ((i = 1; i < copies; i++)); do "$@" >/dev/null 2>&1 & done; "$@" >/dev/null 2>&1; wait; }; } 2>"$out.time"
awk '{ printf "%.0f\n", $1 * 1e9 }' "$out.time" >"$out.ns"
awk '{ printf "%.0f\n", ($2 + $3) * 1e9 }' "$out.time" >"$out.cpu"
echo $(($(ticks) - ticks0)) >"$out.ticks"
awk '/^VmHWM/ { print $2 }' /proc/$PPID/status >"$out.hwm"
if [ "${BPF_STATS:-}" = 1 ]; then
	# The profiler's own programs: the ids behind its file descriptors.
	cat /proc/$PPID/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' >"$out.progs"
	bpftool -j prog show >"$out.bpf"
fi
exit 0
EOF

# workload NAME: sets CMD to NAME's command line.
workload() {
	case $1 in
	recurse)  CMD=("$WL/nofp_recurse" 3 30) ;;
	threads)  CMD=("$WL/nofp_threads" 3) ;;
	cc1)      CMD=(gcc -O2 -c "$TMP/nested.c" -o /dev/null) ;;
	fp_chain) CMD=("$WL/fp_chain" 3) ;;
	xz)       CMD=(xz -9 -T1 -c "$TMP/text") ;;
	esac
}

# own OUT: "CPU ms per second of wall time, peak RSS MB" of the profiler that ran OUT.
own() { calc '%.0f %.1f' "$(cat "$1.ticks") * 1000 / $TICK / ($(cat "$1.ns") / 1e9), $(cat "$1.hwm") / 1024"; }

# bpf_ns OUT: "ns per recorded sample, ns per run" of the profiler's perf_event program
# (bpftool's run_time_ns; runs include idle CPUs and other processes' filtered samples).
bpf_ns() {
	local samples run_ns run_cnt
	samples=$(sed -n 's/^hprof: [0-9.]* s, \([0-9]*\) samples.*/\1/p' "$1.err")
	read -r run_ns run_cnt < <(jq -r --argjson ids "[$(paste -sd, "$1.progs")]" '.[] |
		select(.name == "on_cpu_sample" and (.id | IN($ids[]))) |
		"\(.run_time_ns // 0) \(.run_cnt // 0)"' "$1.bpf")
	calc '%.0f %.0f' "$run_ns / $samples, $run_ns / $run_cnt"
}

# profile OUT HPROF_OPTION...: hprof with the options on two copies of CMD, summary in OUT.err.
profile() {
	local out=$1; shift
	BPF_STATS=1 "$HPROF" -v -F "$FREQ" "$@" --folded /dev/null -- bash "$TMP/run.sh" "$out" 2 "${CMD[@]}" \
		>/dev/null 2>"$out.err" || { echo "$name: hprof $* failed: $(tail -1 "$out.err")"; return 1; }
}

echo "== 1. bytes, BPF time and the profiler's own cost per sample at $FREQ Hz, two copies of each workload"
printf '%-8s | %6s %6s %6s | %6s %7s | %6s %6s %6s %6s | %10s %10s\n' workload hprof live hp/liv \
	"perf" perf/hp "BPF ns" "no-dw" ratio "run" "hprof CPU" "perf CPU"
printf '%-8s | %6s %6s %6s | %6s %7s | %6s %6s %6s %6s | %10s %10s\n' "" "B/smp" "B/smp" "" \
	"B/smp" "" "/smp" "/smp" "" "/run" "ms/s MB" "ms/s MB"
hprof_bytes=() live_ratios=() met=1
for name in recurse threads cc1 fp_chain xz; do
	workload $name
	h=$TMP/$name.h n=$TMP/$name.n p=$TMP/$name.p
	profile "$h" --raw "$h.raw" && profile "$n" --no-dwarf || { met=0; continue; }
	perf record -q -F "$FREQ" --call-graph dwarf -o "$p.data" -- \
		bash "$TMP/run.sh" "$p" 2 "${CMD[@]}" >/dev/null 2>"$p.err" ||
		{ echo "$name: perf record failed: $(head -c 300 "$p.err")"; met=0; continue; }
	hb=$(summary_bytes "$h.err")
	read -r _ _ samples _ live _ rec _ copy _ lbytes _ < <(build/tools/livestack "$h.raw")
	read -r pn pbytes < <(perf_sample_bytes "$p.data")
	rm -f "$p.data" "$h.raw"
	read -r hns hrun < <(bpf_ns "$h")
	read -r nns _ < <(bpf_ns "$n")
	pb=$(calc %.0f "$pbytes / $pn")
	hprof_bytes+=("$hb")
	live_ratios+=("$(calc %.3f "$rec / $lbytes")")
	printf '%-8s | %6s %6.0f %5.2fx | %6s %6.1fx | %6s %6s %5.2fx %6s | %4s %5s %4s %5s\n' "$name" "$hb" \
		"$(calc %.1f "$lbytes / $live")" "$(calc %.3f "$rec / $lbytes")" "$pb" "$(calc %.2f "$pb / $hb")" \
		"$hns" "$nns" "$(calc %.2f "$hns / $nns")" "$hrun" $(own "$h") $(own "$p")
	echo "$name $hb $pb $hns" >>"$TMP/part1"
	echo "  $name: live stack known for $live of $samples samples; their copies $(calc %.0f "$copy / $live") B/smp, $(calc %.2f "$copy / $lbytes")x the live stack; perf $pn samples" >>"$TMP/notes"
done
cat "$TMP/notes"
echo "hprof B/smp: bytes received per sample (hprof's summary); live: sp to the outermost frame's"
echo "CFA (livestack); hp/liv: record bytes over live bytes, same samples; perf: mean"
echo "PERF_RECORD_SAMPLE size; BPF ns/smp: run_time_ns over hprof's recorded samples, by default"
echo "and with --no-dwarf (the anchor: FP walk and record only), /run: over every run, idle CPUs"
echo "and other processes' filtered samples included; CPU: the profiler's own user+sys ms per"
echo "wall second while the workload ran (not its start-up or report), and its peak RSS."
med=$(median "${hprof_bytes[@]}")
mean_live=$(printf '%s\n' "${live_ratios[@]}" | awk '{ s += $1 } END { printf "%.2f", s / NR }')
goal() { if [ "$2" = 1 ]; then echo "goal: $1 -> met"; else echo "goal: $1 -> MISSED"; met=0; fi; }
goal "median bytes per sample <= 1024 ($med)" "$(calc %d "$med <= 1024")"
goal "mean of record/live <= 1.25x ($mean_live)" "$(calc %d "$mean_live <= 1.25")"
goal "perf dwarf sends >= 8x the bytes on every workload ($(awk '{ printf "%s %.1fx ", $1, $3 / $2 }' "$TMP/part1"))" \
	"$(awk '$3 < 8 * $2 { bad = 1 } END { print bad ? 0 : 1 }' "$TMP/part1")"
goal "BPF <= 5 us a sample without frame pointers ($(awk '$1 != "fp_chain" { printf "%s %.1f ", $1, $4 / 1000 }' "$TMP/part1")us)" \
	"$(awk '$1 != "fp_chain" && $4 > 5000 { bad = 1 } END { print bad ? 0 : 1 }' "$TMP/part1")"
goal "BPF <= 2 us a sample where frame pointers suffice (fp_chain $(awk '$1 == "fp_chain" { printf "%.1f", $4 / 1000 }' "$TMP/part1") us)" \
	"$(awk '$1 == "fp_chain" && $4 > 2000 { bad = 1 } END { print bad ? 0 : 1 }' "$TMP/part1")"

# ROUNDS=0: part 1 only
[ "$ROUNDS" -gt 0 ] || exit 0
echo "== 2. slowdown of fixed work: median over $ROUNDS rounds of (profiled / the round's unprofiled), wall and CPU"
variants="bare hprof@99 dwarf@99 g@99 hprof@999 dwarf@999 g@999"
# run_variant VARIANT OUT: one run of CMD under VARIANT.
run_variant() {
	local v=${1%@*} f=${1#*@}
	case $v in
	bare)  bash "$TMP/run.sh" "$2" 1 "${CMD[@]}" ;;
	hprof) "$HPROF" -F "$f" --folded /dev/null -- bash "$TMP/run.sh" "$2" 1 "${CMD[@]}" 2>/dev/null ;;
	dwarf) perf record -q -F "$f" --call-graph dwarf -o "$TMP/s.data" -- bash "$TMP/run.sh" "$2" 1 "${CMD[@]}" 2>/dev/null ;;
	g)     perf record -q -F "$f" -g -o "$TMP/s.data" -- bash "$TMP/run.sh" "$2" 1 "${CMD[@]}" 2>/dev/null ;;
	esac >/dev/null
	rm -f "$TMP/s.data"
}
# slow NAME VARIANT KIND: the median slowdown in percent, then every round's on a second
# line, by KIND (ns: wall time, cpu: the workload's user+sys).
slow() {
	local r ratios=()
	for r in $(seq "$ROUNDS"); do
		ratios+=("$(calc %.5f "$(cat "$TMP/sd.$1.$2.$r.$3") / $(cat "$TMP/sd.$1.bare.$r.$3")")")
	done
	calc '%.2f\n' "($(median "${ratios[@]}") - 1) * 100"
	printf '%s\n' "${ratios[@]}" | awk '{ printf " %+.1f", ($1 - 1) * 100 } END { print "" }'
}
printf '%-8s %-10s | %8s %-32s | %8s %-32s | %s\n' workload variant "wall" "(each round)" \
	"CPU" "(each round)" "own ms/s, MB"
for name in xz cc1; do
	workload $name
	for r in $(seq "$ROUNDS"); do
		for v in $(printf '%s\n' $variants | shuf); do
			run_variant "$v" "$TMP/sd.$name.$v.$r"
		done
	done
	for v in $variants; do
		[ "$v" = bare ] && continue
		own_cpu=() own_mb=()
		for r in $(seq "$ROUNDS"); do
			read -r c m < <(own "$TMP/sd.$name.$v.$r")
			own_cpu+=("$c") own_mb+=("$m")
		done
		{ read -r wall; read -r wall_rounds; } < <(slow $name $v ns)
		{ read -r cpu; read -r cpu_rounds; } < <(slow $name $v cpu)
		echo "$name $v $wall $cpu" >>"$TMP/part2"
		printf '%-8s %-10s | %7s%% %-32s | %7s%% %-32s | %s %s\n' "$name" "$v" "$wall" "$wall_rounds" \
			"$cpu" "$cpu_rounds" "$(median "${own_cpu[@]}")" "$(median "${own_mb[@]}")"
	done
done
echo "wall: the workload's elapsed time; CPU: its own user+sys, which holds the sampling"
echo "interrupts and BPF program run on its CPU (this kernel has no IRQ time accounting) but not"
echo "the time it waited for a CPU; own: the profiler's user+sys ms per wall second, peak RSS."
# The goals are judged on CPU time: on a shared machine the wall time mostly measures the
# waits for a CPU.
slowdown() { awk -v w="$1" -v v="$2" '$1 == w && $2 == v { print $4 }' "$TMP/part2"; }
for name in xz cc1; do
	h=$(slowdown $name hprof@999) d=$(slowdown $name dwarf@999) h99=$(slowdown $name hprof@99)
	goal "$name at 999 Hz: hprof's CPU slowdown at most half of perf dwarf's ($h% vs $d%)" \
		"$(calc %d "$h <= $d / 2")"
	goal "$name at 99 Hz: hprof's CPU slowdown <= 0.3% ($h99%)" "$(calc %d "$h99 <= 0.3")"
done
[ "$met" = 1 ] && echo "every goal met" || echo "some goals MISSED"
exit 0
