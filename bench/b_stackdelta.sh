#!/usr/bin/env bash
# Delta copies, in one run: each workload of b_stackcopy.sh (two copies at once) recorded
# at FREQ Hz (default 499) with deltas (hprof's default) and with --no-stack-delta, in
# alternating order over ROUNDS rounds (default 1): bytes received per sample (hprof's
# summary), BPF time per recorded sample (kernel.bpf_stats_enabled, bpftool's run_time_ns
# of hprof's own on_cpu_sample), the deltas' counts, and the share of user stacks complete.
# Then one run of each with HPROF_DEBUG=delta-verify: every rebuilt copy compared with the
# whole copy the kernel sent along. Goals (issue 11): median <= 1 KiB a sample, >= 8x fewer
# bytes than perf --call-graph dwarf (8.4 KiB a sample in b_stackcopy.sh), BPF <= 5 us a
# sample without frame pointers, <= 2 us where they suffice. Timings on a shared machine
# are noisy: compare the two columns of a round, not runs on different days.
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh
FREQ=${FREQ:-499}
ROUNDS=${ROUNDS:-1}

if ! bpf_available 2>/dev/null; then
	echo "skip: b_stackdelta needs root and a BTF kernel (BPF recording)"
	exit 0
fi
for tool in bpftool jq; do
	if ! command -v $tool >/dev/null; then
		echo "skip: b_stackdelta needs $tool (scripts/install-deps.sh)"
		exit 0
	fi
done

stats_was=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q -w kernel.bpf_stats_enabled="$stats_was"; rm -rf "$TMP"' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

nested_blocks_c 100 60 >"$TMP/nested.c"
text_lines 130000 >"$TMP/text"

# The profiled command (bash): COPIES copies of the workload at once, then the statistics
# of the profiler's (the parent's) BPF programs.
cat >"$TMP/run.sh" <<'EOF'
out=$1 copies=$2; shift 2
for ((i = 1; i < copies; i++)); do "$@" >/dev/null 2>&1 & done
"$@" >/dev/null 2>&1
wait
cat /proc/$PPID/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' >"$out.progs"
bpftool -j prog show >"$out.bpf"
EOF

workload() {
	case $1 in
	recurse)  CMD=("$WL/nofp_recurse" 3 30) ;;
	threads)  CMD=("$WL/nofp_threads" 3) ;;
	cc1)      CMD=(gcc -O2 -c "$TMP/nested.c" -o /dev/null) ;;
	fp_chain) CMD=("$WL/fp_chain" 3) ;;
	xz)       CMD=(xz -9 -T1 -c "$TMP/text") ;;
	esac
}

# bpf_ns OUT: ns of hprof's on_cpu_sample per recorded sample.
bpf_ns() {
	local samples run_ns
	samples=$(sed -n 's/^hprof: [0-9.]* s, \([0-9]*\) samples.*/\1/p' "$1.err")
	run_ns=$(jq -r --argjson ids "[$(paste -sd, "$1.progs")]" '.[] |
		select(.name == "on_cpu_sample" and (.id | IN($ids[]))) | .run_time_ns // 0' "$1.bpf")
	calc %.0f "$run_ns / $samples"
}

# profile OUT HPROF_OPTION...: hprof with the options on two copies of CMD.
profile() {
	local out=$1; shift
	"$HPROF" -v -F "$FREQ" "$@" --folded "$out.folded" -- bash "$TMP/run.sh" "$out" 2 "${CMD[@]}" \
		>/dev/null 2>"$out.err" || { echo "hprof $* failed: $(tail -1 "$out.err")"; return 1; }
}

# deltas ERR: "rebuilt whole lost" from the summary's stack deltas line.
deltas() {
	sed -n 's/^hprof: stack deltas: \([0-9]*\) rebuilt, \([0-9]*\) whole copies, \([0-9]*\) lost.*/\1 \2 \3/p' "$1"
}

# complete FOLDED: the share of samples with a user stack that is not truncated.
complete() {
	awk '{ n = $NF; t += n; if ($0 ~ /\[truncated/) bad += n } END { printf "%.1f%%", t ? 100 * (t - bad) / t : 0 }' "$1"
}

echo "== bytes and BPF time per sample at $FREQ Hz, two copies of each workload, deltas on / off"
printf '%-8s %5s | %7s %7s %6s | %7s %7s | %8s %6s %5s | %8s %8s\n' workload round "B/smp" "off" "ratio" \
	"BPF ns" "off" "deltas" "whole" "lost" complete "off"
declare -A bytes_sum
for name in recurse threads cc1 fp_chain xz; do
	workload $name
	for r in $(seq "$ROUNDS"); do
		on=$TMP/$name.$r.on off=$TMP/$name.$r.off
		if [ $((r % 2)) = 1 ]; then
			profile "$on" && profile "$off" --no-stack-delta || continue
		else
			profile "$off" --no-stack-delta && profile "$on" || continue
		fi
		b=$(summary_bytes "$on.err") bo=$(summary_bytes "$off.err")
		read -r rebuilt whole lost < <(deltas "$on.err")
		printf '%-8s %5s | %7s %7s %5.2fx | %7s %7s | %8s %6s %5s | %8s %8s\n' $name $r "$b" "$bo" \
			"$(calc %.2f "$bo / $b")" "$(bpf_ns "$on")" "$(bpf_ns "$off")" "$rebuilt" "$whole" "$lost" \
			"$(complete "$on.folded")" "$(complete "$off.folded")"
		bytes_sum[$name]="${bytes_sum[$name]:-} $b"
	done
done
meds=()
for name in "${!bytes_sum[@]}"; do meds+=("$(median ${bytes_sum[$name]})"); done
echo "median over workloads of bytes per sample with deltas: $(median "${meds[@]}")"

echo "== HPROF_DEBUG=delta-verify: rebuilt copies against the whole copy sent along"
for name in recurse threads cc1 xz; do
	workload $name
	HPROF_DEBUG=delta-verify profile "$TMP/$name.verify" || continue
	echo "$name: $(sed -n 's/^hprof: stack deltas: //p' "$TMP/$name.verify.err")"
done
exit 0
