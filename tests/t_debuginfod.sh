#!/usr/bin/env bash
# Debug files fetched through debuginfod. elfutils' own server, on loopback, serves the debug
# files of stripped programs this test builds (and the dwz supplementary file of two): hprof names the program's functions through
# it, then from its cache (a private DEBUGINFOD_CACHE_PATH) with the server stopped. With no
# server, a server that drips a byte at a time, or one that sends garbage, the run still ends
# within its timeout, with addresses for names, and the summary says why.
source "$(dirname "$0")/lib.sh"

require_bpf "debuginfod"
if ! command -v debuginfod >/dev/null; then
	skip "debuginfod" "no debuginfod server (Debian's debuginfod package)"
	exit 0
fi

SERVER_PID=""
STUB_PID=""
stop_servers() {
	if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; fi
	if [ -n "$STUB_PID" ]; then kill "$STUB_PID" 2>/dev/null; wait "$STUB_PID" 2>/dev/null; fi
	SERVER_PID="" STUB_PID=""
}
trap 'stop_servers; rm -rf "$TMP"' EXIT

cat >"$TMP/prog.c" <<'EOF'
/* Spins in two functions no exported symbol names, for SECONDS seconds of CPU. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noipa)) static void dbgi_alpha(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		sink += i * i;
}

__attribute__((noipa)) static void dbgi_beta(void)
{
	for (unsigned long i = 0; i < 300000; i++)
		sink ^= i + sink;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1;
	struct timespec t0, t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		dbgi_alpha();
		dbgi_beta();
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}
EOF
# split DIR NAME: DIR/NAME's debug file into the server's directory, then DIR/NAME stripped.
split() { objcopy --only-keep-debug "$1/$2" "$TMP/srv/$2.debug" && strip "$1/$2"; }

# p_dwz and p_dwz2 (builds of their own: build-ids of their own) as Debian's debug packages are: dwz moved what their
# debug files share into a supplementary file, named by a path that is nowhere here.
mkdir -p "$TMP/srv" "$TMP/dwz"
if ! { gcc -O2 -g "$TMP/prog.c" -o "$TMP/p_dbgi" && split "$TMP" p_dbgi &&
	gcc -O2 -g -fno-omit-frame-pointer "$TMP/prog.c" -o "$TMP/dwz/p_dwz" && gcc -O1 -g "$TMP/prog.c" -o "$TMP/dwz/p_dwz2" &&
	dwz -m "$TMP/srv/common.debug" -M "/usr/lib/debug/.dwz/hprof-test-$$/common.debug" \
		"$TMP/dwz/p_dwz" "$TMP/dwz/p_dwz2" &&
	split "$TMP/dwz" p_dwz && split "$TMP/dwz" p_dwz2; } >"$TMP/build.log" 2>&1; then
	fail "build the stripped programs: $(tail -3 "$TMP/build.log")"
	exit 1
fi
ok "build stripped programs and their debug files, two of them dwz'd"
# p_inline: tests/workloads/inline_work.c, functions forced inline at known lines; ref keeps
# its DWARF for eu-addr2line
mkdir -p "$TMP/inl"
if ! { gcc -O2 -g -o "$TMP/inl/p_inline" tests/workloads/inline_work.c &&
	cp "$TMP/inl/p_inline" "$TMP/inl/ref" && split "$TMP/inl" p_inline; } >"$TMP/build.log" 2>&1; then
	fail "build the stripped inline program: $(tail -3 "$TMP/build.log")"
	exit 1
fi
DEBUG_FILES=5

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_debuginfod: elfutils' server on a free loopback port, ready once it has recorded
# every debug file (read from its log as it writes it).
start_debuginfod() {
	local line
	PORT=$(free_port)
	coproc SRV { exec debuginfod -F "$TMP/srv" -p "$PORT" -d "$TMP/db.sqlite" -vvv 2>&1; }
	SERVER_PID=$SRV_PID
	local recorded=0
	while [ "$recorded" -lt "$DEBUG_FILES" ] && IFS= read -r -t 60 -u "${SRV[0]}" line; do
		[[ $line == *"atype=D"* ]] && recorded=$((recorded + 1))
	done
	# its log keeps coming as it serves: drained so that it never blocks on it (a copy of
	# the descriptor: a background job does not inherit a coprocess's)
	exec {log_fd}<&"${SRV[0]}"
	cat <&"$log_fd" >/dev/null &
	exec {log_fd}<&-
	[ "$recorded" -eq "$DEBUG_FILES" ]
}

# start_stub MODE: tests/debuginfod_stub.py MODE (drip or garbage) on a free port.
start_stub() {
	local line
	coproc STUB { exec python3 tests/debuginfod_stub.py "$1"; }
	STUB_PID=$STUB_PID
	IFS= read -r -t 60 -u "${STUB[0]}" line
	PORT=${line#listening }
	[[ $line == listening* ]]
}

# run NAME [hprof options]: profiles the program for 1 s into $TMP/NAME.folded, its stderr
# in $TMP/NAME.err and its wall time in seconds in $TMP/NAME.secs.
run() {
	local name=$1 start end
	shift
	start=$(date +%s%N)
	"$HPROF" -F 499 --folded "$TMP/$name.folded" "$@" -- "$TMP/p_dbgi" 1 >/dev/null 2>"$TMP/$name.err"
	end=$(date +%s%N)
	echo $(((end - start) / 1000000000)) >"$TMP/$name.secs"
}

# named NAME [COMM]: the program's samples in both functions by name, "matched/total".
named() { share_matching "$TMP/$1.folded" "${2:-p_dbgi}" ';dbgi_(alpha|beta)$'; }
# addressed NAME: its samples whose leaf is an address in the program.
addressed() { share_matching "$TMP/$1.folded" p_dbgi ';p_dbgi\+0x[0-9a-f]+$'; }
summary_line() { grep 'hprof: debuginfod' "$TMP/$1.err" | head -1; }

export DEBUGINFOD_CACHE_PATH=$TMP/cache
export DEBUGINFOD_TIMEOUT=2

if ! start_debuginfod; then
	fail "debuginfod serves the debug file"
	exit 1
fi
ok "debuginfod serves the debug file on port $PORT"

export DEBUGINFOD_URLS=http://127.0.0.1:$PORT
run server
check "through the server: the program's functions named ($(named server))" at_least 95 "$(named server)"
check "summary: fetched from the server ($(summary_line server))" \
	grep -q "1 of 1 debug file fetched (1 from the server, 0 from the cache)" "$TMP/server.err"

# the dwz'd program: its debug file, then the supplementary file it names
"$HPROF" -v -F 499 --folded "$TMP/dwz.folded" -- "$TMP/dwz/p_dwz" 1 >/dev/null 2>"$TMP/dwz.err"
check "dwz'd debug file: the functions named ($(named dwz p_dwz))" at_least 95 "$(named dwz p_dwz)"
check "dwz'd debug file: its supplementary file fetched too ($(summary_line dwz))" \
	grep -q "hprof: debuginfod:   p_dwz (dwz) [0-9a-f]*: from the server" "$TMP/dwz.err"

# inline frames and lines of the fetched debug file: every sampled pc's chain is
# eu-addr2line's, when recorded (pprof, folded) and when a capture is reported
# matched RC FILE: tests/inline_compare.py exited 0, no pc where eu-addr2line differs.
matched() { [ "$1" -eq 0 ] && grep -q "(0 where" "$2"; }
# most M/T: M is more than half of T.
most() { [ "${1%/*}" -gt 0 ] && [ $((${1%/*} * 2)) -gt "${1#*/}" ]; }
DEBUGINFOD_CACHE_PATH=$TMP/cache_inline "$HPROF" -F 1999 --pprof "$TMP/inl/p.pb.gz" \
	--folded "$TMP/inl/p.folded" --svg "$TMP/inl/p.svg" --top 20 --raw "$TMP/inl/p.raw" \
	-- "$TMP/inl/p_inline" 40000000 >"$TMP/inl/top" 2>"$TMP/inl/err"
python3 tests/inline_compare.py pprof "$TMP/inl/p.pb.gz" "$TMP/inl/p_inline" "$TMP/inl/ref" \
	"step|mix|scale" >"$TMP/inl/cmp" 2>&1
rc=$?
check "fetched DWARF: every sampled pc's inline chain and lines are eu-addr2line's ($(grep '^#' "$TMP/inl/cmp" | tail -1))" \
	matched $rc "$TMP/inl/cmp"
grep -v '^#' "$TMP/inl/cmp" | head -4
r=$(share_matching "$TMP/inl/p.folded" p_inline ';spin;step_\[i\];(mix|scale)_\[i\]$')
check "fetched DWARF: folded spin;step_[i];mix_[i] or scale_[i] in most samples ($r)" most "$r"
top_and_svg() {
	grep -q ' mix_\[i\]$' "$TMP/inl/top" &&
		grep -q '<title>mix_\[i\] [^<]*inline_work\.c' "$TMP/inl/p.svg"
}
check "fetched DWARF: --top counts the inlined functions, the SVG gives them their file" top_and_svg
DEBUGINFOD_CACHE_PATH=$TMP/cache_inline_report "$HPROF" report "$TMP/inl/p.raw" \
	--pprof "$TMP/inl/r.pb.gz" >/dev/null 2>"$TMP/inl/report.err"
python3 tests/inline_compare.py pprof "$TMP/inl/r.pb.gz" "$TMP/inl/p_inline" "$TMP/inl/ref" \
	"step|mix|scale" >"$TMP/inl/rcmp" 2>&1
rc=$?
check "report, fetched DWARF: fetched from the server ($(summary_line inl/report))" \
	grep -q "fetched (1 from the server" "$TMP/inl/report.err"
check "report, fetched DWARF: every pc's inline chain and lines are eu-addr2line's ($(grep '^#' "$TMP/inl/rcmp" | tail -1))" \
	matched $rc "$TMP/inl/rcmp"

run cached
check "from the cache: the functions named ($(named cached))" at_least 95 "$(named cached)"
check "summary: fetched from the cache ($(summary_line cached))" \
	grep -q "1 of 1 debug file fetched (0 from the server, 1 from the cache)" "$TMP/cached.err"

run off --no-debuginfod
check "--no-debuginfod: addresses ($(addressed off))" at_least 95 "$(addressed off)"
check "--no-debuginfod: no debuginfod line" [ "$(grep -c debuginfod "$TMP/off.err")" = 0 ]
DEBUGINFOD_URLS="" run empty
check "DEBUGINFOD_URLS empty: addresses ($(addressed empty))" at_least 95 "$(addressed empty)"

# A capture recorded without fetching, reported with the server: fetched when reported.
run raw --no-debuginfod --raw "$TMP/p.raw"
DEBUGINFOD_CACHE_PATH=$TMP/cache_report "$HPROF" report "$TMP/p.raw" --folded "$TMP/report.folded" \
	>/dev/null 2>"$TMP/report.err"
check "report: the functions named through the server ($(named report))" at_least 95 "$(named report)"
check "report: fetched from the server ($(summary_line report))" \
	grep -q "1 of 1 debug file fetched (1 from the server" "$TMP/report.err"

# hprof diff replays captures as report does: their debug files fetched, --no-debuginfod not
DEBUGINFOD_CACHE_PATH=$TMP/cache_diff "$HPROF" diff "$TMP/p.raw" "$TMP/p.raw" >"$TMP/diff.out" 2>"$TMP/diff.err"
diff_named() {
	grep -q ' dbgi_alpha$' "$TMP/diff.out" && grep -q ' dbgi_beta$' "$TMP/diff.out" &&
		grep -q "fetched (1 from the server" "$TMP/diff.err"
}
check "diff: a capture's functions named through the server ($(grep -c 'dbgi_' "$TMP/diff.out") rows)" diff_named
DEBUGINFOD_CACHE_PATH=$TMP/cache_diff_off "$HPROF" diff --no-debuginfod "$TMP/p.raw" "$TMP/p.raw" \
	>"$TMP/diff-off.out" 2>"$TMP/diff-off.err"
check "diff --no-debuginfod: addresses, no debuginfod line" \
	bash -c "! grep -q dbgi_ '$TMP/diff-off.out' && grep -q 'p_dbgi+0x' '$TMP/diff-off.out' && ! grep -q debuginfod '$TMP/diff-off.err'"

# hprof serve fetches on a thread of its own after a window: a later window names the
# program's functions, with their inline frames; --no-debuginfod never does
# serve_windows NAME OPTIONS...: serves p_inline's samples in 1 s windows into $TMP/NAME/,
# until a window shows spin;step_[i] or 30 windows were written.
serve_windows() {
	local name=$1 pid spid i
	shift
	mkdir -p "$TMP/$name"
	"$TMP/inl/p_inline" 100000000000 &
	pid=$!
	"$HPROF" serve --listen 127.0.0.1:0 -F 499 --pid "$pid" --every 1s \
		--folded "$TMP/$name/win.folded" "$@" >/dev/null 2>"$TMP/$name.err" &
	spid=$!
	for ((i = 0; i < 600; i++)); do
		grep -qs ';spin;step_\[i\]' "$TMP/$name"/win.*.folded && break
		[ "$(find "$TMP/$name" -name 'win.*.folded' | wc -l)" -ge 30 ] && break
		[ "${1:-}" = --no-debuginfod ] && [ "$(find "$TMP/$name" -name 'win.*.folded' | wc -l)" -ge 3 ] && break
		sleep 0.1
	done
	kill -TERM "$spid"
	wait "$spid"
	echo $? >"$TMP/$name.rc"
	kill "$pid"
	wait "$pid" 2>/dev/null
}
DEBUGINFOD_CACHE_PATH=$TMP/cache_serve serve_windows serve
check "serve: a later window names the functions with inline frames ($(ls "$TMP/serve" | wc -l) windows, exit $(cat "$TMP/serve.rc"))" \
	grep -qs ';spin;step_\[i\];\(mix\|scale\)_\[i\] ' "$TMP/serve"/win.*.folded
check "serve: the fetch in its summary ($(summary_line serve))" \
	grep -q "1 of 1 debug file fetched (1 from the server" "$TMP/serve.err"
DEBUGINFOD_CACHE_PATH=$TMP/cache_serve_off serve_windows serve_off --no-debuginfod
check "serve --no-debuginfod: addresses in every window ($(cat "$TMP/serve_off"/win.*.folded | grep -c 'p_inline+0x') lines)" \
	bash -c "! grep -qs ';spin' '$TMP/serve_off'/win.*.folded && grep -qs 'p_inline+0x' '$TMP/serve_off'/win.*.folded && ! grep -q debuginfod '$TMP/serve_off.err'"

stop_servers
export DEBUGINFOD_CACHE_PATH=$TMP/cache_stopped
run stopped
check "server stopped: addresses ($(addressed stopped))" at_least 95 "$(addressed stopped)"
check "server stopped: the summary says why ($(summary_line stopped))" \
	grep -q "none for 1: p_dbgi (" "$TMP/stopped.err"
# within_timeout NAME: the run took at most the timeout (2 s) and 3 s more than the first.
within_timeout() { [ "$(cat "$TMP/$1.secs")" -le $(($(cat "$TMP/server.secs") + 2 + 3)) ]; }
check "server stopped: over as soon ($(cat "$TMP/stopped.secs") s, $(cat "$TMP/server.secs") s with it)" \
	within_timeout stopped

if start_stub drip; then
	export DEBUGINFOD_URLS=http://127.0.0.1:$PORT DEBUGINFOD_CACHE_PATH=$TMP/cache_drip
	run drip
	check "slow server: addresses ($(addressed drip))" at_least 95 "$(addressed drip)"
	check "slow server: timed out, and the summary says so ($(summary_line drip))" \
		grep -q "p_dbgi (timed out after 2 s)" "$TMP/drip.err"
	check "slow server: over within the timeout ($(cat "$TMP/drip.secs") s, $(cat "$TMP/server.secs") s with the real one)" \
		within_timeout drip
	# on a terminal (script(1) gives one), a fetch that takes over a second shows progress
	DEBUGINFOD_CACHE_PATH=$TMP/cache_tty script -qec \
		"'$HPROF' -F 99 --folded '$TMP/tty.folded' -- '$TMP/p_dbgi' 0.2" /dev/null \
		>"$TMP/tty.out" 2>&1 </dev/null
	check "slow server, on a terminal: progress shown" \
		grep -q "hprof: fetching debug info for p_dbgi: " "$TMP/tty.out"
	# hprof serve while a file drips for up to 60 s: windows keep coming (its thread
	# fetches, not the recorder's), and SIGTERM ends the fetch and the agent at once
	mkdir -p "$TMP/sdrip"
	"$TMP/inl/p_inline" 100000000000 &
	ppid=$!
	DEBUGINFOD_TIMEOUT=60 DEBUGINFOD_CACHE_PATH=$TMP/cache_serve_drip "$HPROF" serve \
		--listen 127.0.0.1:0 -F 499 --pid "$ppid" --every 1s --folded "$TMP/sdrip/win.folded" \
		>/dev/null 2>"$TMP/sdrip.err" &
	spid=$!
	windows() { find "$TMP/sdrip" -name 'win.*.folded' | wc -l; }
	# the fetch is asked for after the first window; 4 more must come while it drips
	for ((i = 0; i < 300; i++)); do [ "$(windows)" -ge 5 ] && break; sleep 0.1; done
	n=$(windows)
	start=$(date +%s%N)
	kill -TERM "$spid"
	wait "$spid"
	rc=$?
	stop_ms=$((($(date +%s%N) - start) / 1000000))
	kill "$ppid"
	wait "$ppid" 2>/dev/null
	check "serve, slow server: windows keep coming while it drips ($n within 30 s)" [ "$n" -ge 5 ]
	stopped_at_once() {
		[ "$stop_ms" -le 5000 ] && [ "$rc" -eq 0 ] && grep -q "p_inline (hprof stopped first)" "$TMP/sdrip.err"
	}
	check "serve, slow server: SIGTERM ends the fetch and the agent ($stop_ms ms, exit $rc; $(summary_line sdrip))" \
		stopped_at_once
	sed 's/^/# /' "$TMP/sdrip.err" | tail -3
	stop_servers
else
	fail "start a server that drips"
fi

if start_stub garbage; then
	export DEBUGINFOD_URLS=http://127.0.0.1:$PORT DEBUGINFOD_CACHE_PATH=$TMP/cache_garbage
	run garbage
	check "garbage: addresses ($(addressed garbage))" at_least 95 "$(addressed garbage)"
	check "garbage: a reason, no crash ($(summary_line garbage))" \
		grep -q "p_dbgi (the server sent a file that is not ELF)" "$TMP/garbage.err"
	stop_servers
else
	fail "start a server that sends garbage"
fi
