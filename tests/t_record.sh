#!/usr/bin/env bash
# End to end: the real BPF program sampling real processes built with frame pointers.
source "$(dirname "$0")/lib.sh"
require_bpf "record"

# main -> a -> b -> c, the hot loop in c; main reads the clock (elapsed_since) between two
# calls of a. Kernel frames may follow the leaf: an interrupt or a page fault taken in it.
# Whatever the leaf, the program's own frames are main's chain (frame pointers alone end it
# in libc's start-up code, __libc_start_call_main, hence any frames above main).
CHAIN='^fp_chain;([^;]*;)*main(;a(;b(;c)?)?|;elapsed_since(;[^;]+)*)?(;[^;]*_\[k\])*$'
OWN='main|a|b|c|elapsed_since'
# chain_share FILE: own_share of the samples holding main's chain (main may call into libc).
chain_share() { own_share "$1" fp_chain "$OWN" "$CHAIN" '^fp_chain;([^;]*;)*main$'; }

# -- COMMAND: the workload's samples carry main -> a -> b -> c, symbolized (-v: the summary's
# every figure).
"$HPROF" -v --folded "$TMP/cmd.folded" --svg "$TMP/cmd.svg" -- "$WL/fp_chain" 3 >"$TMP/cmd.out" 2>"$TMP/cmd.err"
rc=$?
check "command: exits with the command's status (0)" [ "$rc" -eq 0 ]
share=$(chain_share "$TMP/cmd.folded")
echo "# command: $share samples carry main's chain"
check "command: >= 90% of the program's samples carry its chain, main;a;b;c ($share)" at_least 90 "$share"
check "command: the command's output passes through" grep -qx "done [01]" "$TMP/cmd.out"
check "command: summary names lost samples" grep -q "lost samples:" "$TMP/cmd.err"
check "command: summary gives the FP-complete share" grep -Eq "FP-complete: [0-9.]+%" "$TMP/cmd.err"
check "command: summary says where the flamegraph is" grep -q "wrote flamegraph to $TMP/cmd.svg" "$TMP/cmd.err"
check "command: SVG holds the hot frame" grep -q ">c<\|>c \|\"c\"\|<title>c " "$TMP/cmd.svg"
check "command: no temporary files left" [ -z "$(ls "$TMP" | grep '\.tmp\.')" ]

# The command's exit status is hprof's.
"$HPROF" --folded "$TMP/status.folded" -- sh -c 'exit 7' 2>/dev/null
check "command: exit status 7 passes through" [ $? -eq 7 ]

# Children are followed: the workload runs under a shell, which writes down the CPU time
# the workload had (its cutime and cstime, in 1/100 s). Every 1/99 s of it is a sample; a
# loaded machine gives the workload less CPU, not fewer samples for its CPU time.
"$HPROF" --folded "$TMP/child.folded" -- sh -c '"$0" 2; cat /proc/$$/stat >"$1"' "$WL/fp_chain" \
	"$TMP/child.stat" >/dev/null 2>&1
share=$(chain_share "$TMP/child.folded")
check "command: a child process is profiled too ($share)" at_least 90 "$share"
ticks=$(awk '{ sub(/.*\) /, ""); print $14 + $15 }' "$TMP/child.stat" 2>/dev/null)
samples=$(share_matching "$TMP/child.folded" fp_chain .)
check "command: at least half a sample per 1/99 s of the workload's CPU time (${samples#*/} samples for ${ticks:-?}/100 s)" \
	[ "${ticks:-0}" -ge 20 -a $((${samples#*/} * 100 * 2)) -ge $((${ticks:-0} * 99)) ]

# --pid attaches to a running process; other processes are filtered out in the kernel.
"$WL/fp_chain" 6 >/dev/null &
wl=$!
cp "$WL/fp_chain" "$TMP/bystander"
"$TMP/bystander" 6 >/dev/null &
other=$!
wait_exec "$wl" "$WL/fp_chain" && wait_exec "$other" "$TMP/bystander"
"$HPROF" -v --pid "$wl" --time 2000 --folded "$TMP/pid.folded" 2>"$TMP/pid.err"
rc=$?
kill "$wl" "$other" 2>/dev/null; wait "$wl" "$other" 2>/dev/null
check "pid: exits 0" [ "$rc" -eq 0 ]
share=$(chain_share "$TMP/pid.folded")
check "pid: >= 90% of the program's samples carry its chain, main;a;b;c ($share)" at_least 90 "$share"
check "pid: the busy bystander is not sampled" bash -c "! grep -q '^bystander;' '$TMP/pid.folded'"
check "pid: one process in the summary" grep -q " 1 processes" "$TMP/pid.err"

# System-wide: no filter, the workload shows up among everything else.
"$WL/fp_chain" 3 >/dev/null &
wl=$!
wait_exec "$wl" "$WL/fp_chain"
"$HPROF" --time 1500 --folded "$TMP/all.folded" 2>"$TMP/all.err"
rc=$?
wait "$wl"
check "system-wide: exits 0" [ "$rc" -eq 0 ]
share=$(chain_share "$TMP/all.folded")
check "system-wide: the workload is sampled with its chain ($share)" at_least 90 "$share"
at_least 90 "$share" ||
	own_others "$TMP/all.folded" fp_chain "$OWN" "$CHAIN" '^fp_chain;([^;]*;)*main$' | cut -c1-300 | sed 's/^/# /'

# Ctrl-C stops sampling and still writes every output (a workload keeps the idle machine
# busy): sent once hprof samples and the workload has run a fifth of a second since.
"$WL/fp_chain" 30 >/dev/null &
wl=$!
"$HPROF" --folded "$TMP/int.folded" --svg "$TMP/int.svg" 2>"$TMP/int.err" &
hp=$!
wait_sampling "$hp" && ran_for "$wl" $(($(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$wl/stat") + 20))
kill -INT "$hp"
wait "$hp"
rc=$?
kill "$wl" 2>/dev/null
wait "$wl" 2>/dev/null
check "SIGINT: exits 0" [ "$rc" -eq 0 ]
check "SIGINT: folded stacks written" [ -s "$TMP/int.folded" ]
check "SIGINT: flamegraph written" [ -s "$TMP/int.svg" ]

# --no-dwarf copies no stack: fewer bytes per sample.
"$HPROF" -v --no-dwarf --folded "$TMP/nd.folded" -- "$WL/fp_chain" 1 >/dev/null 2>"$TMP/nd.err"
share=$(chain_share "$TMP/nd.folded")
check "no-dwarf: FP chains still complete ($share)" at_least 90 "$share"
bytes_per_sample() { sed -n 's/^hprof: \([0-9]*\) bytes received per sample.*/\1/p' "$1"; }
nd=$(bytes_per_sample "$TMP/nd.err") full=$(bytes_per_sample "$TMP/cmd.err")
echo "# bytes per sample: --no-dwarf $nd, default $full"
less_than() { [ -n "$1" ] && [ -n "$2" ] && [ "$1" -lt "$2" ]; }
check "no-dwarf: fewer bytes per sample ($nd < $full)" less_than "$nd" "$full"

# A device as output is written to, never replaced (hprof runs as root).
"$HPROF" --time 300 --folded /dev/null --svg /dev/null 2>/dev/null
check "outputs to /dev/null leave it a character device" [ -c /dev/null ]
