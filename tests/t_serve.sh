#!/usr/bin/env bash
# hprof serve, with real clients: go tool pprof reads a window pulled over HTTP (the
# workload's functions, its labels), and the window matches a --pprof recording of the same
# seconds function by function; curl for every endpoint and every bad request (unknown path,
# wrong method, bad seconds, an overlong query, a second window from one client, 100
# connections at once, a client that never finishes its request), the agent serving on
# after each; promtool checks /metrics, and a real Prometheus server scrapes it; --every
# writes whole files and keeps --keep of them; SIGTERM cuts an open window and serves it.
source "$(dirname "$0")/lib.sh"
require_bpf "serve"

FIVE=$WL/nofp_five
export HOME=$TMP GOCACHE=$TMP/go-cache GOFLAGS=
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT

# start_serve NAME ARGS...: starts hprof serve on a free loopback port; sets SERVE_PID and
# URL once it listens and samples (its first line names the port).
start_serve() {
	local name=$1 port
	shift
	"$HPROF" serve --listen 127.0.0.1:0 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	SERVE_PID=$!
	PIDS+=("$SERVE_PID")
	wait_for "$TMP/$name.err" || return 1
	port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$TMP/$name.err" | head -1)
	[ -n "$port" ] || return 1
	URL=http://127.0.0.1:$port
}

# status PATH [CURL-ARGS...]: the HTTP status of a request (000: no response).
status() {
	local path=$1
	shift
	curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$@" "$URL$path"
}

# metric NAME: its value in /metrics (0 when absent).
metric() {
	curl -s --max-time 10 "$URL/metrics" | awk -v n="$1" '$1 == n { print int($2); f = 1 } END { if (!f) print 0 }'
}

# wait_metric NAME MIN: until /metrics shows NAME >= MIN, at most 60 s.
wait_metric() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(metric "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# shares FILE [PPROF-ARGS...]: "function percent" for the workload's work_*: each one's
# samples (go tool pprof -top's flat) as a share of the five's.
shares() {
	local file=$1
	shift
	go tool pprof -top -nodecount=200 -sample_index=samples "$@" "$file" 2>/dev/null |
		awk '$NF ~ /^work_[a-e]$/ { n[$NF] = $1; t += $1 }
		     END { for (f in n) printf "%s %.1f\n", f, t ? 100 * n[f] / t : 0 }' | sort
}

if ! start_serve main -F 499; then
	fail "serve: starts and listens ($(head -3 "$TMP/main.err"))"
	exit 0
fi
ok "serve: starts and listens on a port of its own ($URL)"
check "serve: listens on loopback only by default" \
	bash -c "'$HPROF' serve --help | grep -q 'default 127.0.0.1:6060'"

# -- a window over HTTP, beside a --pprof recording of the same seconds
"$FIVE" 8 >/dev/null &
five=$!
PIDS+=("$five")
ran_for "$five" 20
"$HPROF" -F 499 -p "$five" --time 3000 --pprof "$TMP/rec.pb.gz" -q &
rec=$!
curl -s --max-time 30 -o "$TMP/win.pb.gz" -w '%{http_code}' "$URL/debug/pprof/profile?seconds=3" >"$TMP/win.code"
wait "$rec"
check "profile: 200 for a 3-second window ($(cat "$TMP/win.code"))" grep -qx 200 "$TMP/win.code"
go tool pprof -top -nodecount=50 "$TMP/win.pb.gz" >"$TMP/win.top" 2>&1
check "profile: go tool pprof -top reads it and names the workload's functions" \
	grep -q ' work_e$' "$TMP/win.top"
go tool pprof -tags "$TMP/win.pb.gz" >"$TMP/win.tags" 2>&1
check "profile: labels pid, tid, comm, thread_name (go tool pprof -tags)" \
	bash -c "grep -q '^ *pid:' '$TMP/win.tags' && grep -q '^ *tid:' '$TMP/win.tags' &&
		 grep -q '^ *comm:' '$TMP/win.tags' && grep -q '^ *thread_name:' '$TMP/win.tags'"
check "profile: the workload's pid and name among the labels" \
	bash -c "grep -q ': $five\$' '$TMP/win.tags' && grep -q ': nofp_five\$' '$TMP/win.tags'"
if [ -n "$(awk -F:: '$1 == "0" && $2 != "/" { print $2 }' "/proc/$five/cgroup" 2>/dev/null)" ]; then
	check "profile: the cgroup label (the workload runs in one)" grep -q '^ *cgroup:' "$TMP/win.tags"
fi
# the window is the whole host's: the workload's samples, by its pid label
shares "$TMP/win.pb.gz" -tagfocus="pid=^$five\$" >"$TMP/win.shares"
shares "$TMP/rec.pb.gz" >"$TMP/rec.shares"
far=$(join "$TMP/win.shares" "$TMP/rec.shares" | awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > 6) print $1, $2, $3 }')
check "profile: the window's work_* shares are the --pprof recording's within 6 points ($(paste -sd' ' "$TMP/win.shares") vs $(paste -sd' ' "$TMP/rec.shares"))" \
	bash -c "[ \$(wc -l <'$TMP/win.shares') -eq 5 ] && [ \$(wc -l <'$TMP/rec.shares') -eq 5 ] && [ -z '$far' ]"
kill "$five" 2>/dev/null

# -- the other endpoints
check "index: 200 on /" [ "$(status /)" = 200 ]
curl -s "$URL/" >"$TMP/index"
check "index: lists the endpoints" \
	bash -c "grep -q /debug/pprof/profile '$TMP/index' && grep -q /metrics '$TMP/index'"
curl -s "$URL/metrics" >"$TMP/metrics"
check "metrics: hprof's counters (samples, lost samples by reason, stacks by method, RSS)" \
	bash -c "grep -q '^hprof_samples_total ' '$TMP/metrics' &&
		 grep -q '^hprof_lost_samples_total{reason=\"ring_buffer_full\"}' '$TMP/metrics' &&
		 grep -q '^hprof_user_stacks_total{method=\"dwarf\"}' '$TMP/metrics' &&
		 grep -q '^hprof_resident_memory_bytes ' '$TMP/metrics'"
if command -v promtool >/dev/null; then
	promtool check metrics <"$TMP/metrics" >"$TMP/promtool.out" 2>&1
	check "metrics: promtool check metrics finds nothing ($(head -2 "$TMP/promtool.out" | paste -sd' '))" \
		[ $? -eq 0 ] && [ ! -s "$TMP/promtool.out" ]
else
	fail "metrics: promtool missing (prometheus; scripts/install-deps.sh)"
fi

# -- bad requests: a 4xx each, and the agent goes on serving
check "bad request: unknown path is 404" [ "$(status /nope)" = 404 ]
check "bad request: POST is 405" [ "$(status /metrics -X POST)" = 405 ]
check "bad request: seconds=abc is 400" [ "$(status '/debug/pprof/profile?seconds=abc')" = 400 ]
check "bad request: seconds=100000 is 400" [ "$(status '/debug/pprof/profile?seconds=100000')" = 400 ]
check "bad request: seconds=0 is 400" [ "$(status '/debug/pprof/profile?seconds=0')" = 400 ]
long=$(printf 'x%.0s' $(seq 1 2000))
check "bad request: an overlong query is 400" [ "$(status "/debug/pprof/profile?seconds=1&pad=$long")" = 400 ]
curl -s -o /dev/null --max-time 30 "$URL/debug/pprof/profile?seconds=4" &
first=$!
wait_metric hprof_profile_windows_open 1
check "bad request: a second window from the same client while one is open is 429" \
	[ "$(status '/debug/pprof/profile?seconds=1')" = 429 ]
wait "$first"
for i in $(seq 1 100); do
	curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 "$URL/metrics" >>"$TMP/many" &
done
wait_n=0
while [ "$(wc -l <"$TMP/many")" -lt 100 ] && [ $wait_n -lt 400 ]; do sleep 0.05; wait_n=$((wait_n + 1)); done
served=$(grep -c '^200$' "$TMP/many")
check "100 connections at once: each answered or refused, $served served, the agent alive" \
	bash -c "[ \$(wc -l <'$TMP/many') -eq 100 ] && [ $served -ge 1 ] && kill -0 $SERVE_PID"
exec 5<>"/dev/tcp/127.0.0.1/${URL##*:}"
printf 'GET /metr' >&5
check "a client that never finishes its request holds no one up" [ "$(status /metrics)" = 200 ]
exec 5>&-
check "the agent still serves after every bad request" [ "$(status /)" = 200 ]

# -- a real Prometheus server scrapes it
if command -v prometheus >/dev/null; then
	cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: hprof
    static_configs:
      - targets: ['${URL#http://}']
EOF
	prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
		--web.listen-address=127.0.0.1:0 >"$TMP/prom.log" 2>&1 &
	prom=$!
	PIDS+=("$prom")
	found=0
	for ((i = 0; i < 600 && !found; i++)); do
		addr=$(sed -n 's/.*msg="Listening on" address=\([0-9.:]*\).*/\1/p' "$TMP/prom.log" | head -1)
		if [ -n "$addr" ] && curl -s "http://$addr/api/v1/query?query=hprof_samples_total" |
			grep -q '"job":"hprof"'; then
			found=1
		else
			sleep 0.1
		fi
	done
	check "prometheus: scrapes hprof serve and answers hprof_samples_total{job=\"hprof\"}" [ $found -eq 1 ]
	kill "$prom" 2>/dev/null
	wait "$prom" 2>/dev/null
else
	fail "prometheus: not installed (scripts/install-deps.sh)"
fi

# -- SIGTERM: an open window is cut and served, hprof exits 0
curl -s --max-time 30 -o "$TMP/cut.pb.gz" -w '%{http_code}' "$URL/debug/pprof/profile?seconds=30" >"$TMP/cut.code" &
cut=$!
wait_metric hprof_profile_windows_open 1
kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
rc=$?
wait "$cut"
check "SIGTERM: hprof serve exits 0 ($rc)" [ "$rc" -eq 0 ]
check "SIGTERM: the open window is served, cut short ($(cat "$TMP/cut.code"))" \
	bash -c "grep -qx 200 '$TMP/cut.code' && go tool pprof -top '$TMP/cut.pb.gz' >/dev/null 2>&1"

# -- --every 2s --keep 3: whole files, never more than 3
mkdir -p "$TMP/every"
if start_serve every --every 2s --keep 3 --folded "$TMP/every/win.folded" \
	--json "$TMP/every/win.json"; then
	most=0
	for ((i = 0; i < 600; i++)); do
		n=$(find "$TMP/every" -name 'win.*.folded' | wc -l)
		[ "$n" -gt "$most" ] && most=$n
		[ "$(metric hprof_profile_files_written_total)" -ge 5 ] && break
		sleep 0.1
	done
	written=$(metric hprof_profile_files_written_total)
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID"
	rc=$?
	n=$(find "$TMP/every" -name 'win.*.folded' | wc -l)
	bad=$(cat "$TMP/every"/win.*.folded | awk '!/^.+ [0-9]+$/' | wc -l)
	check "--every 2s --keep 3: $written windows written, never more than 3 files ($most), 3 at the end ($n)" \
		bash -c "[ $written -ge 5 ] && [ $most -le 3 ] && [ $n -eq 3 ]"
	check "--every: every file whole (folded lines only; $bad others)" [ "$bad" -eq 0 ]
	nj=$(find "$TMP/every" -name 'win.*.json' | wc -l)
	check "--every --json: 3 JSON summaries kept, each whole, of its window's seconds ($nj)" \
		python3 -c "
import glob, json, sys
files = glob.glob('$TMP/every/win.*.json')
ok = len(files) == 3
for f in files:
    d = json.load(open(f))
    ok = ok and 'samples' in d and 0 < d['duration_s'] < 10
sys.exit(0 if ok else 1)"
	check "--every: no temporary files left" \
		bash -c "[ -z \"\$(find '$TMP/every' -type f ! -name 'win.*.folded' ! -name 'win.*.json')\" ]"
	check "--every: SIGTERM writes the window in progress, exit 0 ($rc)" [ "$rc" -eq 0 ]
else
	fail "--every: hprof serve starts ($(head -3 "$TMP/every.err"))"
fi

# -- usage errors: one line, exit 2
for bad in "--every 2s" "--keep 3" "--listen nowhere" "--every 0s --folded x" "--pprof x" "-F 0"; do
	# shellcheck disable=SC2086
	"$HPROF" serve $bad >"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$?
	check "usage: 'hprof serve $bad' refused with one line, exit 2 or 1 ($rc: $(head -1 "$TMP/bad.err"))" \
		bash -c "[ $rc -ne 0 ] && [ \$(wc -l <'$TMP/bad.err') -eq 1 ]"
done
