#!/usr/bin/env bash
# hprof serve as an always-on agent: its memory and CPU over SERVE_SECONDS (default 1200)
# at its default rate, system-wide, under the soak's process and thread churn (a shell loop
# starting /bin/true and python3 -c pass; a python3 starting and joining four short threads
# at a time), with a scraper pulling a 10-second profile back to back (as Parca or
# Pyroscope would) and /metrics every INTERVAL (default 10) s. Every INTERVAL: hprof's
# VmRSS, its own CPU (user + system), and the CPU of its BPF programs (run_time_ns with
# kernel.bpf_stats_enabled, on for the run). Goals: RSS flat by the soak's rule (the second
# half's least-squares slope below 1% of the mid-run RSS per minute); hprof's CPU, its BPF
# time and its process together, at most 0.5% of one core over the run (the OpenTelemetry
# profiler states 1%). Every profile pulled must be 200 and read by go tool pprof.
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh
SECONDS_TOTAL=${SERVE_SECONDS:-1200}
INTERVAL=${INTERVAL:-10}
export HOME=$TMP GOCACHE=$TMP/go-cache GOFLAGS=

if ! bpf_available 2>/dev/null; then
	echo "skip: b_serve needs root and a BTF kernel (BPF recording)"
	exit 0
fi
for tool in bpftool curl python3; do
	command -v $tool >/dev/null || { echo "skip: b_serve needs $tool (scripts/install-deps.sh)"; exit 0; }
done

stats_before=$(sysctl -n kernel.bpf_stats_enabled)
churn=()
stop_all() {
	local pid
	for pid in "${churn[@]}" ${scraper:-} ${hprof_pid:-}; do
		kill -- "-$pid" 2>/dev/null
	done
	wait 2>/dev/null
	sysctl -q -w kernel.bpf_stats_enabled="$stats_before"
	rm -rf "$TMP"
}
trap stop_all EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

churn_start
setsid "$HPROF" serve --listen 127.0.0.1:0 >/dev/null 2>"$TMP/serve.err" &
hprof_pid=$!
wait_for "$TMP/serve.err" || { echo "hprof serve did not start"; exit 1; }
port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$TMP/serve.err" | head -1)
URL=http://127.0.0.1:$port
# the scraper: one 10-s window after another, each checked
setsid bash -c "n=0; while :; do
	code=\$(curl -s -o '$TMP/p.pb.gz' -w '%{http_code}' --max-time 30 '$URL/debug/pprof/profile?seconds=10')
	if [ \"\$code\" = 200 ] && go tool pprof -top '$TMP/p.pb.gz' >/dev/null 2>&1; then
		echo ok >>'$TMP/pulls'; else echo \"bad \$code\" >>'$TMP/pulls'; fi
done" >/dev/null 2>&1 &
scraper=$!

TICK=$(getconf CLK_TCK)
ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }'; }
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }
# bpf_ns PID: run time of the BPF programs PID holds (their ids in its fds' fdinfo), in ns.
bpf_ns() {
	bpftool -j prog show 2>/dev/null | python3 -c "
import glob, json, sys
ids = set()
for info in glob.glob('/proc/%s/fdinfo/*' % sys.argv[1]):
    try:
        for line in open(info):
            if line.startswith('prog_id:'):
                ids.add(int(line.split()[1]))
    except OSError:
        pass
print(sum(p.get('run_time_ns', 0) for p in json.load(sys.stdin) if p.get('id') in ids))" "$1"
}

echo "hprof serve at its default rate, system-wide, ${SECONDS_TOTAL}s of churn and back-to-back 10-s pulls; every ${INTERVAL}s:"
printf '%6s %10s %10s %10s\n' "t (s)" "VmRSS KB" "CPU %" "BPF %"
t=0 last=$(ticks $hprof_pid) last_bpf=$(bpf_ns $hprof_pid) first_ticks=$last first_bpf=$last_bpf
while kill -0 $hprof_pid 2>/dev/null && [ $t -lt "$SECONDS_TOTAL" ]; do
	sleep "$INTERVAL"
	t=$((t + INTERVAL))
	curl -s -o /dev/null --max-time 10 "$URL/metrics"
	rss=$(status_kb $hprof_pid VmRSS) now=$(ticks $hprof_pid) bpf=$(bpf_ns $hprof_pid)
	[ -n "$rss" ] && [ -n "$now" ] || break
	printf '%6d %10d %10.2f %10.2f\n' $t "$rss" "$(calc %.2f "($now - $last) * 100 / $TICK / $INTERVAL")" \
		"$(calc %.2f "($bpf - $last_bpf) / 1e7 / $INTERVAL")"
	echo "$t $rss" >>"$TMP/series"
	last=$now last_bpf=$bpf
done
kill -- "-$scraper" 2>/dev/null
wait "$scraper" 2>/dev/null
scraper=
kill -TERM $hprof_pid
wait $hprof_pid
echo "hprof serve exited with status $? on SIGTERM"

slope() { awk -v from="$1" '$1 >= from { n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
	END { d = n * sxx - sx * sx; printf "%.1f", d ? 60 * (n * sxy - sx * sy) / d : 0 }' "$TMP/series"; }
[ -s "$TMP/series" ] || { echo "no RSS samples"; exit 1; }
half=$((SECONDS_TOTAL / 2))
mid=$(awk -v h="$half" '$1 >= h { print $2; exit }' "$TMP/series")
second=$(slope "$half")
echo "RSS slope: $(slope 0) KB/min over the run, $second KB/min over its second half (mid-run RSS $mid KB)"
cpu=$(calc %.3f "($last - $first_ticks) * 100 / $TICK / $t")
bpf_cpu=$(calc %.3f "($last_bpf - $first_bpf) / 1e7 / $t")
total=$(calc %.3f "$cpu + $bpf_cpu")
pulls=$(grep -c '^ok$' "$TMP/pulls" 2>/dev/null) bad=$(grep -vc '^ok$' "$TMP/pulls" 2>/dev/null)
echo "CPU of one core over the run: hprof $cpu%, its BPF programs $bpf_cpu%, together $total%"
echo "profiles pulled: ${pulls:-0} read by go tool pprof, ${bad:-0} not"
if [ "$(calc %d "$second < 0.01 * $mid")" = 1 ]; then
	echo "goal: flat RSS (second half's slope < 1% of the mid-run RSS a minute) -> met"
else
	echo "goal: flat RSS (second half's slope < 1% of the mid-run RSS a minute) -> MISSED"
fi
if [ "$(calc %d "$total <= 0.5")" = 1 ]; then
	echo "goal: CPU <= 0.5% of one core (hprof and its BPF programs) -> met ($total%)"
else
	echo "goal: CPU <= 0.5% of one core (hprof and its BPF programs) -> MISSED ($total%)"
fi
