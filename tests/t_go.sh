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
#   - above a stack switch (systemstack, mcall, morestack) nothing but the goroutine the
#     thread's g0 ran for, joined by its g.m.curg.sched: the stack starts at runtime.goexit.
# go_assist (tests/workloads/go/assist.go), built the same three ways, makes its goroutines
# assist the collector all the time. Over >= 10,000 samples of GC work under
# runtime.systemstack in all (gcAssistAlloc.func1's, gcBgMarkWorker.func2's):
#   - none charged to a wrong goroutine or with a frame of its chain missing or added:
#     an assist's stack is exactly goexit, main.main.func1, worker, churn, grow, newobject,
#     mallocgc, gcAssistAlloc, systemstack, gcAssistAlloc.func1; a mark worker's goexit,
#     gcBgMarkWorker, systemstack, gcBgMarkWorker.func2;
#   - >= 99% of them charged so (the others end at runtime.systemstack, as before).
# build/tools/golayout's offsets for the Go installed here are checked against its DWARF.
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
# on (one sampled in its own code, on the goroutine's stack, is the leaf), other than a
# goroutine's (from runtime.goexit) joined under the thread's g0 stack.
above_switch() {
	awk '{ stack = $0; sub(/ [0-9]+$/, "", stack); n = split(stack, f, ";")
	       if (f[2] ~ /^runtime\.goexit(\.abi0)?$/) next
	       for (i = 3; i < n; i++)
		       if (f[i] ~ /^runtime\.(systemstack|mcall|morestack)(\.abi0)?$/ &&
			   f[i + 1] !~ /_\[k\]$/) {
			       count++; if (count < 4) print "#   " $0 > "/dev/stderr" } }
	     END { print count + 0 }' "$1"
}

# gc_chains FILE: "right unjoined wrong" over FILE's samples of GC work under systemstack.
gc_chains() {
	awk '
		{ stack = $0; sub(/ [0-9]+$/, "", stack); sub(/^[^;]*;/, "", stack) }
		stack ~ /(^|;)runtime\.systemstack(\.abi0)?;runtime\.(gcAssistAlloc\.func1|gcBgMarkWorker\.func2)(;|$)/ {
			count = $NF
			if (stack ~ /^runtime\.goexit(\.abi0)?;main\.main\.func1;main\.worker;main\.churn;main\.grow;runtime\.newobject;runtime\.mallocgc;runtime\.gcAssistAlloc;runtime\.systemstack(\.abi0)?;runtime\.gcAssistAlloc\.func1(;|$)/ ||
			    stack ~ /^runtime\.goexit(\.abi0)?;runtime\.gcBgMarkWorker;runtime\.systemstack(\.abi0)?;runtime\.gcBgMarkWorker\.func2(;|$)/)
				right += count
			else if (stack ~ /^runtime\.systemstack(\.abi0)?;/)
				unjoined += count
			else {
				wrong += count
				if (bad++ < 3) print "#   wrong: " stack > "/dev/stderr"
			}
		}
		END { printf "%d %d %d\n", right, unjoined, wrong }' "$1"
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
	check "$name: no frame above a Go stack switch but its goroutine's ($above stacks)" \
		[ "$above" = 0 ]
done

# GC work under systemstack, charged to the goroutine that caused it.
gc_total=0
for name in go_assist go_assist_debug go_assist_pie; do
	bin="$WL/$name"
	if ! "$HPROF" -v -F 4999 --folded "$TMP/$name.folded" --json "$TMP/$name.json" -- "$bin" 400 \
		>/dev/null 2>"$TMP/$name.err"; then
		fail "$name: hprof or the program failed: $(tail -1 "$TMP/$name.err")"
		continue
	fi
	read -r right unjoined wrong < <(gc_chains "$TMP/$name.folded")
	all=$((right + unjoined + wrong))
	gc_total=$((gc_total + all))
	check "$name: no sample of GC work charged to a wrong chain ($wrong of $all)" [ "$wrong" = 0 ]
	if at_least 99 "$right/$all" && [ "$all" -ge 2000 ]; then
		ok "$name: >= 99% of GC work under systemstack under its goroutine ($right of $all)"
	else
		fail "$name: $right of $all samples of GC work under their goroutine (want >= 99% of >= 2000)"
		grep "^hprof: Go" "$TMP/$name.err" | sed 's/^/#   /'
	fi
	check "$name: -v counts the joins" grep -qE "^hprof: Go stack switches: [1-9][0-9]* samples" \
		"$TMP/$name.err"
	joined=$(sed -n 's/^hprof: Go stack switches: \([0-9]*\) samples.*/\1/p' "$TMP/$name.err")
	check "$name: the JSON summary's Go joins are -v's (${joined:-none})" \
		[ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["go"]["stack_switches"]["joined"])' "$TMP/$name.json")" = "${joined:-none}" ]
done
check "GC work under systemstack: >= 10,000 samples in all ($gc_total)" [ "$gc_total" -ge 10000 ]

# hprof's table of offsets against the DWARF of the Go installed here.
dwarf_offset() { # STRUCT MEMBER: its data_member_location in go_frames_debug's DWARF
	llvm-dwarfdump --name="$1" --show-children "$WL/go_frames_debug" |
		awk -v m="$2" '/DW_AT_name/ { name = $2 }
			/DW_AT_data_member_location/ && name == "(\"" m "\")" { gsub(/[()]/, "", $2); print $2; exit }'
}
if ! command -v llvm-dwarfdump >/dev/null; then
	skip "Go layout against DWARF" "no llvm-dwarfdump"
else
	layout=$(build/tools/golayout "$WL/go_frames_debug")
	want="g.m $(dwarf_offset runtime.g m)
g.sched $(dwarf_offset runtime.g sched)
gobuf.bp $(dwarf_offset runtime.gobuf bp)
g.stack.hi $(( $(dwarf_offset runtime.g stack) + $(dwarf_offset runtime.stack hi) ))
m.g0 $(dwarf_offset runtime.m g0)
m.curg $(dwarf_offset runtime.m curg)"
	got=$(grep -E '^(g|gobuf|m)\.' <<<"$layout")
	if [ "$got" = "$want" ]; then
		ok "Go layout of $(sed -n 's/^version //p' <<<"$layout") is its DWARF's"
	else
		fail "Go layout differs from the DWARF"
		diff <(echo "$want") <(echo "$got") | sed 's/^/#   /'
	fi
	check "gobuf.sp and gobuf.pc lead it, as the kernel reads them" \
		[ "$(dwarf_offset runtime.gobuf sp) $(dwarf_offset runtime.gobuf pc)" = "0 8" ]
	check "g's TLS slot is -8 where Go links itself" grep -qx "tls_g -8" <<<"$layout"
fi

# The stripped binary has no CFI section at all: its rows are Go's.
check "go_frames has no .eh_frame or .debug_frame" \
	not_grep '\.(eh_frame|debug_frame)' <(readelf -SW "$WL/go_frames")
