#!/usr/bin/env bash
# Bad input: one clear line on stderr naming what was wrong, a non-zero exit, and no
# output file (not even a temporary one) left behind.
source "$(dirname "$0")/lib.sh"

# expect_error NAME PATTERN [hprof args...]: runs ${PREFIX[@]} hprof writing to $TMP/out.*; checks the
# exit status, that stderr is one line matching PATTERN, and that no output exists.
expect_error() {
	local name=$1 pattern=$2; shift 2
	rm -f "$TMP"/out.*
	"${PREFIX[@]}" "$HPROF" "$@" >"$TMP/stdout" 2>"$TMP/stderr"
	local rc=$? lines
	lines=$(wc -l <"$TMP/stderr")
	if [ "$rc" -eq 0 ]; then
		fail "$name: exit status 0"
	elif [ "$lines" -ne 1 ]; then
		fail "$name: $lines lines on stderr"; cat "$TMP/stderr"
	elif ! grep -Eq "^hprof: .*($pattern)" "$TMP/stderr"; then
		fail "$name: message does not match /$pattern/: $(cat "$TMP/stderr")"
	elif compgen -G "$TMP/out.*" >/dev/null; then
		fail "$name: left $(ls "$TMP"/out.*)"
	else
		ok "$name ($(cat "$TMP/stderr"))"
	fi
}

PREFIX=()
out=(--svg "$TMP/out.svg" --folded "$TMP/out.folded")
max_rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate)

expect_error "unknown option" "unknown.*--bogus" --bogus "${out[@]}" --time 100
expect_error "frequency 0" "frequency.*between 1 and $max_rate" -F 0 "${out[@]}" --time 100
expect_error "frequency above the kernel's limit" "frequency.*perf_event_max_sample_rate" \
	-F $((max_rate + 1)) "${out[@]}" --time 100
expect_error "frequency not a number" "frequency" --frequency fast "${out[@]}" --time 100
expect_error "time 0" "--time takes a positive number" --time 0 "${out[@]}"
expect_error "time negative" "--time takes a positive number" --time -5 "${out[@]}"
expect_error "time not a number" "--time takes a positive number" --time 5s "${out[@]}"
expect_error "missing option value" "needs a value|missing value" "${out[@]}" -F
expect_error "stack size not a multiple of 8" "--stack-size" --stack-size 1001 "${out[@]}"

true &
gone=$!
wait "$gone"
expect_error "unknown pid" "no process with pid $gone" --pid "$gone" "${out[@]}" --time 100
expect_error "pid not a number" "--pid takes a process id" --pid abc "${out[@]}" --time 100

expect_error "output directory missing" "cannot write $TMP/nodir/x.svg" \
	--svg "$TMP/nodir/x.svg" --time 100
mkdir "$TMP/adir"
expect_error "output is a directory" "cannot write $TMP/adir: Is a directory" --folded "$TMP/adir" --time 100

if bpf_available 2>/dev/null; then
	expect_error "command not found" "cannot run '/nonexistent/cmd'" "${out[@]}" -- /nonexistent/cmd
	# Root without the capabilities BPF profiling needs (dropped from the bounding set).
	if command -v setpriv >/dev/null; then
		PREFIX=(setpriv --bounding-set=-bpf,-perfmon,-sys_admin)
		expect_error "capabilities dropped" "missing capability CAP_BPF and CAP_PERFMON" \
			"${out[@]}" --time 100
		PREFIX=()
	else
		skip "capabilities dropped" "setpriv (util-linux) not installed"
	fi
	# Not root at all: the output directory must be writable by that user.
	chmod 1777 "$TMP"
	HPROF_ABS=$(realpath "$HPROF")
	if command -v setpriv >/dev/null; then
		rm -f "$TMP"/out.*
		setpriv --reuid=65534 --regid=65534 --clear-groups "$HPROF_ABS" "${out[@]}" --time 100 \
			>"$TMP/stdout" 2>"$TMP/stderr"
		rc=$?
		if [ "$rc" -ne 0 ] && grep -q "missing capability CAP_BPF" "$TMP/stderr" &&
		   [ "$(wc -l <"$TMP/stderr")" -eq 1 ] && ! compgen -G "$TMP/out.*" >/dev/null; then
			ok "not root ($(cat "$TMP/stderr"))"
		else
			fail "not root: rc=$rc $(cat "$TMP/stderr")"
		fi
	fi
else
	skip "privilege errors" "needs root to drop privileges from"
fi

# The usage output and version exit 0.
check "--help exits 0 and shows usage" bash -c "'$HPROF' --help | grep -q '^Usage: hprof'"
check "--version exits 0" bash -c "'$HPROF' --version | grep -q '^hprof [0-9]'"
