#!/usr/bin/env bash
# Memory over a long run: hprof system-wide at 999 Hz for SOAK_SECONDS (default 600) while
# processes and threads come and go all the time (a shell loop starting /bin/true and
# python3 -c pass; a python3 starting and joining four short threads at a time). hprof's
# VmRSS (/proc/PID/status) and CPU every SOAK_INTERVAL (default 10) s; the RSS series, its
# least-squares slope over the whole run and over its second half. Goal: flat, the second
# half's slope below 1% of the mid-run RSS per minute. The profile itself grows with every
# distinct stack (stacks are told apart by address), so the end also gives the RSS growth
# per distinct stack: ~1 KB of it is the stack's entry and its frames' names.
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh
SECONDS_TOTAL=${SOAK_SECONDS:-600}
INTERVAL=${SOAK_INTERVAL:-10}

if ! bpf_available 2>/dev/null; then
	echo "skip: b_soak needs root and a BTF kernel (BPF recording)"
	exit 0
fi

churn=()
stop_all() {
	local pid
	for pid in "${churn[@]}" ${hprof_pid:-}; do
		kill -- "-$pid" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap stop_all EXIT

# Each churn loop leads its own process group, so that it goes with everything it started.
setsid sh -c 'while :; do /bin/true; /usr/bin/python3 -c pass; done' >/dev/null 2>&1 &
churn+=($!)
setsid /usr/bin/python3 -c '
import threading
def work():
    sum(range(20000))
while True:
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts: t.start()
    for t in ts: t.join()' >/dev/null 2>&1 &
churn+=($!)

setsid "$HPROF" -F 999 --time $((SECONDS_TOTAL * 1000)) --folded "$TMP/soak.folded" \
	>/dev/null 2>"$TMP/soak.err" &
hprof_pid=$!
TICK=$(getconf CLK_TCK)
ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'; }

echo "hprof system-wide at 999 Hz for ${SECONDS_TOTAL}s with process and thread churn; every ${INTERVAL}s:"
printf '%6s %10s %8s\n' "t (s)" "VmRSS KB" "CPU %"
t=0 last=$(ticks $hprof_pid)
while kill -0 $hprof_pid 2>/dev/null && [ $t -lt "$SECONDS_TOTAL" ]; do
	sleep "$INTERVAL"
	t=$((t + INTERVAL))
	rss=$(awk '/^VmRSS/ { print $2 }' /proc/$hprof_pid/status 2>/dev/null) || break
	now=$(ticks $hprof_pid)
	[ -n "$rss" ] && [ -n "$now" ] || break
	printf '%6d %10d %8.1f\n' $t "$rss" "$(calc %.1f "($now - $last) * 100 / $TICK / $INTERVAL")"
	echo "$t $rss" >>"$TMP/series"
	last=$now
done
wait $hprof_pid
echo "hprof exited with status $?"
grep -E '^hprof: ([0-9.]+ s,|lost|mappings)' "$TMP/soak.err"

# slope FROM: least-squares KB per minute of the series from t >= FROM.
slope() { awk -v from="$1" '$1 >= from { n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
	END { d = n * sxx - sx * sx; printf "%.1f", d ? 60 * (n * sxy - sx * sy) / d : 0 }' "$TMP/series"; }
[ -s "$TMP/series" ] || { echo "no RSS samples"; exit 1; }
half=$((SECONDS_TOTAL / 2))
mid=$(awk -v h="$half" '$1 >= h { print $2; exit }' "$TMP/series")
all=$(slope 0) second=$(slope "$half")
echo "RSS slope: $all KB/min over the run, $second KB/min over its second half (mid-run RSS $mid KB)"
stacks=$(sed -n 's/^hprof: [0-9.]* s, .* \([0-9]*\) distinct stacks$/\1/p' "$TMP/soak.err")
first=$(head -1 "$TMP/series") last=$(tail -1 "$TMP/series")
echo "RSS growth from ${first%% *} s to ${last%% *} s: $(((${last#* } - ${first#* }))) KB over ${stacks:-?} distinct stacks:" \
	"$(calc %.0f "(${last#* } - ${first#* }) * 1024 / (${stacks:-0} + 1)") bytes per stack"
if [ "$(calc %d "$second < 0.01 * $mid")" = 1 ]; then
	echo "goal: flat RSS (second half's slope < 1% of the mid-run RSS a minute) -> met"
else
	echo "goal: flat RSS (second half's slope < 1% of the mid-run RSS a minute) -> MISSED"
fi
