#!/usr/bin/env bash
# Go programs, on real processes under the real BPF program: go_frames (tests/workloads/go/
# frames.go) as Debian ships Go programs, stripped of .symtab and DWARF so that only Go's
# own .gopclntab describes its code, go_frames_debug as go build leaves it, and
# go_frames_pie stripped and position-independent (.data.rel.ro.gopclntab). Their
# goroutines run worker -> level1 -> level2 -> level3 -> spin and allocate, so that the
# garbage collector runs on the threads' g0 stacks. Each run must have:
#   - >= 99% of its user stacks complete by hprof's own count;
#   - every stack through main.spin exactly runtime.goexit, the closures of main that
#     start the goroutine, then main.worker .. main.spin: nothing skipped, nothing added;
#   - every Go function named (no go_frames+0x... frame);
#   - nothing above a stack switch (systemstack, mcall, morestack: Go's traceback ends there):
#     the word above one is another stack's or a stale one.
source "$(dirname "$0")/lib.sh"
require_bpf "go"

# not_grep PATTERN FILE: no line of FILE matches the extended regular expression.
not_grep() { ! grep -qE -- "$1" "$2"; }

GO_CHAIN='main\.worker;main\.level1;main\.level2;main\.level3;main\.spin'

# spin_chains FILE: "right/total" over FILE's stacks through main.spin.
spin_chains() {
	awk -v chain="$GO_CHAIN" '
		/;main\.spin/ { count = $NF; total += count
			stack = $0; sub(/ [0-9]+$/, "", stack); sub(/^[^;]*;/, "", stack)
			sub(/;main\.spin;.*$/, ";main.spin", stack)
			if (stack ~ ("^runtime\\.goexit(\\.abi0)?(;main\\.main\\.[^;]*)+;" chain "$"))
				right += count
			else if (bad++ < 3) print "#   wrong: " stack > "/dev/stderr" }
		END { printf "%d/%d\n", right, total }' "$1"
}

# above_switch FILE: stacks with a frame between the root and a Go stack switch that called
# on (one sampled in its own code, on the goroutine's stack, is the leaf).
above_switch() {
	awk '{ stack = $0; sub(/ [0-9]+$/, "", stack); n = split(stack, f, ";")
	       for (i = 3; i < n; i++)
		       if (f[i] ~ /^runtime\.(systemstack|mcall|morestack)(\.abi0)?$/ &&
			   f[i + 1] !~ /_\[k\]$/) {
			       count++; if (count < 4) print "#   " $0 > "/dev/stderr" } }
	     END { print count + 0 }' "$1"
}

# complete_count ERR: "complete/total" from hprof's summary in ERR.
complete_count() {
	sed -n 's/^hprof: \([0-9]*\) of \([0-9]*\) user stacks complete.*/\1\/\2/p
		s/^hprof: all \([0-9]*\) user stacks complete.*/\1\/\1/p' "$1"
}

for name in go_frames go_frames_debug go_frames_pie; do
	bin="$WL/$name"
	if ! "$HPROF" -F 999 --folded "$TMP/$name.folded" -- "$bin" 150 >/dev/null 2>"$TMP/$name.err"; then
		fail "$name: hprof or the program failed: $(tail -1 "$TMP/$name.err")"
		continue
	fi
	complete=$(complete_count "$TMP/$name.err")
	if at_least 99 "${complete:-0/0}" && [ "${complete#*/}" -ge 500 ]; then
		ok "$name: >= 99% of user stacks complete ($complete)"
	else
		fail "$name: $complete user stacks complete (want >= 99% of >= 500)"
		grep "^hprof:" "$TMP/$name.err" | sed 's/^/#   /'
	fi
	chains=$(spin_chains "$TMP/$name.folded")
	if [ "${chains%/*}" = "${chains#*/}" ] && [ "${chains#*/}" -ge 300 ]; then
		ok "$name: every stack through main.spin is goexit, main's closures, worker .. spin ($chains)"
	else
		fail "$name: $chains stacks through main.spin right (want all of >= 300)"
	fi
	check "$name: every Go function named, none by its address" \
		not_grep "$name+0x" "$TMP/$name.folded"
	above=$(above_switch "$TMP/$name.folded")
	check "$name: no frame above a Go stack switch ($above stacks)" [ "$above" = 0 ]
done

# The stripped binary has no CFI section at all: its rows are Go's.
check "go_frames has no .eh_frame or .debug_frame" \
	not_grep '\.(eh_frame|debug_frame)' <(readelf -SW "$WL/go_frames")
