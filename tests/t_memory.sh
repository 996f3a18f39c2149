#!/usr/bin/env bash
# What hprof holds goes with what it followed: once a command's processes and threads have
# all exited, hprof holds none of them, nor does its kernel pid filter (the last
# HPROF_DEBUG=memory line, printed when the recording ends, after every mapping event
# before the command's exit was handled).
source "$(dirname "$0")/lib.sh"
require_bpf "memory"

# nofp_threads: four threads that spin for a second, their stacks complete from clone3 (a
# complete walk is what teaches hprof about a thread); then 200 short processes and 200
# short threads.
HPROF_DEBUG=memory "$HPROF" -F 999 --folded "$TMP/churn.folded" -- sh -c \
	"$WL/nofp_threads 1 && $WL/nofp_churn 200 200" >"$TMP/churn.out" 2>"$TMP/churn.err"
rc=$?
last=$(grep '^hprof: memory:' "$TMP/churn.err" | tail -1)
echo "# $last"
processes=$(sed -n 's/.* processes (\([0-9]*\) with samples),.*/\1/p' <<<"$last")
threads=$(sed -n 's/.*, \([0-9]*\) threads,.*/\1/p' <<<"$last")
filtered=$(sed -n "s/.*, \([0-9]*\) pids in the kernel's filter;.*/\1/p" <<<"$last")
walked=$(awk '/^nofp_threads;/ && !/truncated/ && /;start_thread;/ { n++ } END { print n + 0 }' \
	"$TMP/churn.folded")
check "churn: hprof exits with the command's status, 0 ($rc)" [ "$rc" -eq 0 ]
check "churn: the command ran" grep -qx "done 200 200" "$TMP/churn.out"
check "churn: threads were walked from their start ($walked distinct stacks)" [ "$walked" -gt 0 ]
check "churn: no process with samples is held once all exited (${processes:-none})" \
	[ "${processes:-x}" = 0 ]
check "churn: no thread is held once all exited (${threads:-none})" [ "${threads:-x}" = 0 ]
# The kernel's pid filter drops a process when its last task is freed, which follows its
# reaping by an RCU grace period: the last ones reaped may still be there, never most of
# the 203 processes the command ran (sh, nofp_threads, nofp_churn and its 200).
check "churn: the kernel's pid filter holds fewer than half of them (${filtered:-none})" \
	[ "${filtered:-1000}" -lt 100 ]

# A child the kernel's pid filter has no room for is not followed, and counted. The filter is
# cut to 4 processes (HPROF_DEBUG=pid-filter:4); the command's sh starts 8 cats that stay
# until the test closes the fifo they read, so that at least 5 of them find it full.
mkfifo "$TMP/gate"
HPROF_DEBUG=pid-filter:4 "$HPROF" -v -F 99 --json "$TMP/full.json" -- sh -c \
	'for i in 1 2 3 4 5 6 7 8; do cat <"$0" >/dev/null & done; wait' "$TMP/gate" \
	>/dev/null 2>"$TMP/full.err" &
hprof_pid=$!
exec 4>"$TMP/gate"
# a cat is named cat once its shell opened the fifo and exec'd it
for ((i = 0; i < 1200; i++)); do
	[ "$(pgrep -x cat -P "$(pgrep -d, -f 'for i in 1 2 3 4 5 6 7 8' || echo 0)" | wc -l)" -ge 8 ] && break
	sleep 0.05
done
exec 4>&-
wait $hprof_pid
rc=$?
not_followed=$(sed -n 's/.*"children_not_followed": *\([0-9]*\).*/\1/p' "$TMP/full.json")
check "full pid filter: hprof exits with the command's status, 0 ($rc)" [ "$rc" -eq 0 ]
check "full pid filter: at least 5 of the 8 children counted not followed (${not_followed:-none})" \
	[ "${not_followed:-0}" -ge 5 ] 2>/dev/null
check "full pid filter: the summary says so" grep -q 'children of profiled processes not followed' "$TMP/full.err"
