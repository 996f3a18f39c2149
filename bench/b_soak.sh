#!/usr/bin/env bash
# Memory over a long run: hprof system-wide at 999 Hz for SOAK_SECONDS (default 600) while
# processes and threads come and go all the time (a shell loop starting /bin/true and
# python3 -c pass; a python3 starting and joining four short threads at a time). hprof's
# VmRSS (/proc/PID/status) and CPU every SOAK_INTERVAL (default 10) s while it records, and
# what it holds (HPROF_DEBUG=memory: distinct stacks and the profile's bytes, binaries'
# symbols and tables, processes, threads); the RSS series, its least-squares slope over the
# whole run and over its second half, the same for the RSS less the profile (what grows with
# distinct stacks, the one thing a profile must keep), the bytes per distinct stack, and the
# peak (VmHWM) including the writing of the outputs. Goal: flat, the second half's slope
# below 1% of the mid-run RSS per minute. System-wide, every other job on the machine is
# profiled too: its binaries come and go (their symbols and tables dropped once idle for a
# minute), its new code paths stay. SOAK_SCOPE=command profiles only the churn, run as
# hprof's command (-- COMMAND: its children followed, every process's mapping events still
# handled), so that other jobs' binaries and code paths stay out of the figures.
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh
SECONDS_TOTAL=${SOAK_SECONDS:-600}
INTERVAL=${SOAK_INTERVAL:-10}
SCOPE=${SOAK_SCOPE:-system}
case "$SCOPE" in
system | command) ;;
*) echo "SOAK_SCOPE is system or command, not $SCOPE"; exit 2 ;;
esac

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


# hprof records one interval longer than the series runs, so that no point of the series
# falls while it writes its outputs (the peak of that is given apart).
hprof_args=(-v -F 999 --time $(((SECONDS_TOTAL + INTERVAL) * 1000)) --folded "$TMP/soak.folded")
if [ "$SCOPE" = system ]; then
	churn_start
	HPROF_DEBUG=memory:1 setsid "$HPROF" "${hprof_args[@]}" >/dev/null 2>"$TMP/soak.err" &
	hprof_pid=$!
else
	# The command leads a process group of its own (setsid execs in place: it stays hprof's
	# child), stopped once the series is done; hprof then writes its outputs.
	HPROF_DEBUG=memory:1 setsid "$HPROF" "${hprof_args[@]}" -- setsid sh -c \
		"/usr/bin/python3 -c \"\$THREADS\" & $PROCESSES" >/dev/null 2>"$TMP/soak.err" &
	hprof_pid=$!
	command_pid=
	for ((i = 0; i < 100; i++)); do
		command_pid=$(ps -o pid= --ppid $hprof_pid | tr -d ' ')
		[ -n "$command_pid" ] && [ "$(ps -o pgid= -p "$command_pid" | tr -d ' ')" = "$command_pid" ] &&
			break
		sleep 0.1
	done
	[ -n "$command_pid" ] || { echo "the churn did not start under hprof"; exit 1; }
	churn+=($command_pid)
fi
TICK=$(getconf CLK_TCK)
ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'; }
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }
# The profile's bytes in hprof's latest memory line, in KB.
profile_kb() {
	sed -n 's/^hprof: memory: .* distinct stacks (.*) in \([0-9.]*\) MiB;.*/\1/p' "$TMP/soak.err" |
		tail -1 | awk '{ printf "%d", $1 * 1024 }'
}

if [ "$SCOPE" = system ]; then
	echo "hprof system-wide at 999 Hz for ${SECONDS_TOTAL}s with process and thread churn; every ${INTERVAL}s:"
else
	echo "hprof at 999 Hz on the process and thread churn only (-- COMMAND) for ${SECONDS_TOTAL}s; every ${INTERVAL}s:"
fi
printf '%6s %10s %10s %8s\n' "t (s)" "VmRSS KB" "stacks KB" "CPU %"
t=0 last=$(ticks $hprof_pid)
while kill -0 $hprof_pid 2>/dev/null && [ $t -lt "$SECONDS_TOTAL" ]; do
	sleep "$INTERVAL"
	t=$((t + INTERVAL))
	rss=$(status_kb $hprof_pid VmRSS) || break
	now=$(ticks $hprof_pid)
	[ -n "$rss" ] && [ -n "$now" ] || break
	prof=$(profile_kb)
	printf '%6d %10d %10d %8.1f\n' $t "$rss" "${prof:-0}" "$(calc %.1f "($now - $last) * 100 / $TICK / $INTERVAL")"
	echo "$t $rss ${prof:-0}" >>"$TMP/series"
	last=$now
done
[ "$SCOPE" = command ] && kill -- "-$command_pid" 2>/dev/null
hwm=0
while kill -0 $hprof_pid 2>/dev/null; do
	h=$(status_kb $hprof_pid VmHWM)
	[ -n "$h" ] && hwm=$h
	sleep 0.2
done
wait $hprof_pid
# with SOAK_SCOPE=command, hprof exits as its command did, killed: 128 + 15
echo "hprof exited with status $?"
grep -E '^hprof: ([0-9.]+ s,|lost|mappings)' "$TMP/soak.err"
grep '^hprof: memory:' "$TMP/soak.err" | tail -1

# slope FROM COLUMN: least-squares KB per minute of the series from t >= FROM, of column 2
# (RSS) or of column 2 less column 3 (RSS less the profile).
slope() { awk -v from="$1" -v col="$2" '$1 >= from { y = col == 2 ? $2 : $2 - $3
		n++; sx += $1; sy += y; sxx += $1 * $1; sxy += $1 * y }
	END { d = n * sxx - sx * sx; printf "%.1f", d ? 60 * (n * sxy - sx * sy) / d : 0 }' "$TMP/series"; }
[ -s "$TMP/series" ] || { echo "no RSS samples"; exit 1; }
half=$((SECONDS_TOTAL / 2))
mid=$(awk -v h="$half" '$1 >= h { print $2; exit }' "$TMP/series")
all=$(slope 0 2) second=$(slope "$half" 2)
echo "RSS slope: $all KB/min over the run, $second KB/min over its second half (mid-run RSS $mid KB)"
echo "RSS less the profile: $(slope 0 3) KB/min over the run, $(slope "$half" 3) KB/min over its second half"
stacks=$(sed -n 's/^hprof: [0-9.]* s, .* \([0-9]*\) distinct stacks$/\1/p' "$TMP/soak.err")
first=$(head -1 "$TMP/series") last=$(tail -1 "$TMP/series")
read -r t0 rss0 prof0 <<<"$first"
read -r t1 rss1 prof1 <<<"$last"
echo "RSS growth from $t0 s to $t1 s: $((rss1 - rss0)) KB over ${stacks:-?} distinct stacks:" \
	"$(calc %.0f "($rss1 - $rss0) * 1024 / (${stacks:-0} + 1)") bytes per stack" \
	"(the profile: $(calc %.0f "$prof1 * 1024 / (${stacks:-0} + 1)") bytes per stack)"
echo "peak RSS (VmHWM), writing the outputs included: $hwm KB"
if [ "$(calc %d "$second < 0.01 * $mid")" = 1 ]; then
	echo "goal: flat RSS (second half's slope < 1% of the mid-run RSS a minute) -> met"
else
	echo "goal: flat RSS (second half's slope < 1% of the mid-run RSS a minute) -> MISSED"
fi
