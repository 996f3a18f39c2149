#!/usr/bin/env bash
# What reading CPython's frames costs, against --python off in the same run:
# 1. BPF time per sample (kernel.bpf_stats_enabled, bpftool's run_time_ns of hprof's
#    on_cpu_sample over the samples it recorded) of a CPython recursing DEPTH (default 50)
#    deep and spinning at the leaf, with Python frames (the default) and with --python off,
#    ROUNDS (default 5) rounds, the two alternating, their order changing each round;
#    medians. Goal: <= 1.5x off.
# 2. Bytes per sample (hprof's summary), on against off, per Python frame the samples
#    carried (counted in the folded output). Goal: <= 16 bytes a frame.
# 3. Warm naming per Python frame: build/bench/bench_pynames (code cache hit and name
#    interned, as user/python/stack.c does). Goal: <= 100 ns.
# 4. hprof's memory on a CPython exec'ing freshly compiled code in a loop for EXEC_SECONDS
#    (default 60; 0 skips it): RSS and heap from HPROF_DEBUG=memory:5 lines, the first
#    against the last. Goal: flat (the code cache is bounded; names are interned by content).
# 0. This machine's floor (build/bench/bench_bpf_floor): a bpf_loop iteration (the floor
#    of the walk's step per frame), a helper call, and a read of user memory (a word, a
#    block); where the CPU's mitigations make each call and return dear, the walk's share
#    of the ratio grows with them.
# PYTHON (default /usr/bin/python3.11, else python3). Timings on a shared machine are
# noisy: read the ratios, taken in the same run.
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh
ROUNDS=${ROUNDS:-5}
DEPTH=${DEPTH:-50}
RUN_SECONDS=${RUN_SECONDS:-3}
EXEC_SECONDS=${EXEC_SECONDS:-60}
FREQ=${FREQ:-999}
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
# the interpreter itself, not a launcher (pyenv's shims are shell scripts)
[ -n "$PYTHON" ] && PYTHON=$("$PYTHON" -c 'import sys; print(sys.executable)')

if ! bpf_available 2>/dev/null; then
	echo "skip: b_python needs root and a BTF kernel (BPF recording)"
	exit 0
fi
for tool in bpftool jq; do
	if ! command -v $tool >/dev/null; then
		echo "skip: b_python needs $tool (scripts/install-deps.sh)"
		exit 0
	fi
done
if [ -z "$PYTHON" ]; then
	echo "skip: b_python needs a CPython 3.8-3.13 (PYTHON)"
	exit 0
fi

stats_was=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q -w kernel.bpf_stats_enabled="$stats_was"; rm -rf "$TMP"' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

cat >"$TMP/deep.py" <<'EOF'
import sys, time
def down(n, end):
    if n:
        return down(n - 1, end)
    s = 0
    while time.monotonic() < end:
        for i in range(2000):
            s += i * i % 7
    return s
down(int(sys.argv[1]) - 2, time.monotonic() + float(sys.argv[2]))
EOF
cat >"$TMP/execloop.py" <<'EOF'
import sys, time
SRC = """
def work(k):
    s = %d
    for i in range(k):
        s += i * i %% 7
    return s
total = work(2000)
"""
end = time.monotonic() + float(sys.argv[1])
n = 0
while time.monotonic() < end:
    space = {}
    exec(compile(SRC % n, "<exec>", "exec"), space)
    n += 1
print(n)
EOF

# The profiled command: CMD, then the BPF statistics of the profiler's (the parent's)
# programs, read before it exits.
cat >"$TMP/run.sh" <<'EOF'
out=$1; shift
"$@" >/dev/null 2>&1
cat /proc/$PPID/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' >"$out.progs"
bpftool -j prog show >"$out.bpf"
EOF

# bpf_ns OUT: ns of on_cpu_sample per sample hprof recorded.
bpf_ns() {
	local samples run_ns
	samples=$(sed -n 's/^hprof: [0-9.]* s, \([0-9]*\) samples.*/\1/p' "$1.err")
	run_ns=$(jq -r --argjson ids "[$(paste -sd, "$1.progs")]" '[.[] |
		select(.name == "on_cpu_sample" and (.id | IN($ids[]))) | .run_time_ns // 0] | add' "$1.bpf")
	calc '%.0f' "$run_ns / $samples"
}

# py_frames FOLDED: Python frames (deep.*) per sample of the workload.
py_frames() {
	awk '{ n = $NF; k = gsub(/;deep\./, "&"); f += k * n; s += n } END { printf "%.1f\n", s ? f / s : 0 }' "$1"
}

profile() {
	local out=$1; shift
	"$HPROF" -v -F "$FREQ" "$@" --folded "$out.folded" -- bash "$TMP/run.sh" "$out" \
		"$PYTHON" "$TMP/deep.py" "$DEPTH" "$RUN_SECONDS" >/dev/null 2>"$out.err" ||
		{ echo "hprof $* failed: $(tail -1 "$out.err")"; return 1; }
}

echo "== 0. this machine's floor: a BPF call and return, a user read (bench_bpf_floor)"
build/bench/bench_bpf_floor || echo "(not measured)"

echo "== 1-2. BPF time and bytes per sample: $PYTHON, $DEPTH frames deep, $FREQ Hz, $ROUNDS rounds"
printf '%-5s | %8s %8s %6s | %7s %7s %8s %9s\n' round "on ns" "off ns" ratio "on B" "off B" "py/smp" "B/pyframe"
on_ns=() off_ns=() ratios=() per_frame=()
for ((r = 1; r <= ROUNDS; r++)); do
	on=$TMP/on$r off=$TMP/off$r
	if ((r % 2)); then
		profile "$on" || exit 1
		profile "$off" --python off || exit 1
	else
		profile "$off" --python off || exit 1
		profile "$on" || exit 1
	fi
	a=$(bpf_ns "$on") b=$(bpf_ns "$off")
	ab=$(summary_bytes "$on.err") bb=$(summary_bytes "$off.err")
	pf=$(py_frames "$on.folded")
	on_ns+=("$a") off_ns+=("$b") ratios+=("$(calc %.3f "$a / $b")")
	per_frame+=("$(calc %.2f "($ab - $bb) / $pf")")
	printf '%-5s | %8s %8s %5.2fx | %7s %7s %8s %9s\n' "$r" "$a" "$b" "${ratios[-1]}" "$ab" "$bb" "$pf" "${per_frame[-1]}"
	grep '^hprof: Python frames' "$on.err" | sed 's/^/      /' | cut -c1-160
done
m_on=$(median "${on_ns[@]}") m_off=$(median "${off_ns[@]}") m_ratio=$(median "${ratios[@]}")
m_pf=$(median "${per_frame[@]}")
echo "median: on $(calc %.2f "$m_on / 1000") us/sample, off $(calc %.2f "$m_off / 1000") us/sample, ratio ${m_ratio}x (goal <= 1.5x: $(awk -v r="$m_ratio" 'BEGIN { print (r <= 1.5 ? "met" : "missed") }'))"
echo "bytes per Python frame: $m_pf (goal <= 16: $(awk -v r="$m_pf" 'BEGIN { print (r <= 16 ? "met" : "missed") }'))"

echo "== 3. warm naming per Python frame (bench_pynames, synthetic 3.12 image)"
build/bench/bench_pynames -f "$DEPTH" -d 10 -n 500
build/bench/bench_pynames -f "$DEPTH" -d "$DEPTH" -n 500

[ "$EXEC_SECONDS" = 0 ] && exit 0
echo "== 4. hprof's memory over ${EXEC_SECONDS} s of exec in a loop ($PYTHON)"
HPROF_DEBUG=memory:5 "$HPROF" -F "$FREQ" --folded "$TMP/exec.folded" -- \
	"$PYTHON" "$TMP/execloop.py" "$EXEC_SECONDS" >"$TMP/exec.out" 2>"$TMP/exec.err"
grep '^hprof: memory:' "$TMP/exec.err" | sed 's/^hprof: memory: rss \([0-9]*\) KiB, heap in use \([0-9.]*\) MiB.*/\1 \2/' >"$TMP/mem"
lines=$(wc -l <"$TMP/mem")
if [ "$lines" -lt 3 ]; then
	echo "too few memory lines ($lines): $(tail -2 "$TMP/exec.err")"
	exit 1
fi
read -r rss0 heap0 < <(head -1 "$TMP/mem")
# the last periodic line (the final one is taken after the profile is written)
read -r rss1 heap1 < <(tail -2 "$TMP/mem" | head -1)
echo "code objects compiled: $(cat "$TMP/exec.out"); memory lines: $lines"
echo "RSS at 5 s $(calc %.1f "$rss0 / 1024") MiB, at the end $(calc %.1f "$rss1 / 1024") MiB ($(calc %+.1f "($rss1 - $rss0) / 1024") MiB); heap in use $heap0 -> $heap1 MiB"
grep '^hprof: Python frames' "$TMP/exec.err" | cut -c1-200
