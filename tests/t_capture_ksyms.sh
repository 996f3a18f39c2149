#!/usr/bin/env bash
# A raw capture carries the kernel symbols its samples use, so that hprof report names kernel
# frames as the recording's machine did: on another machine, after other BPF programs
# loaded, or where kallsyms hides addresses. HPROF_KALLSYMS stands for the report's machine:
# an empty file (no kernel symbols at all) and one whose names are all wrong.
source "$(dirname "$0")/lib.sh"
require_bpf "capture kernel symbols"

# kernel_frames FILE: "count name" per kernel frame name, summed over stacks.
kernel_frames() {
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		for (i = 2; i <= k; i++) if (f[i] ~ /_\[k\]$/) c[f[i]] += n }
		END { for (x in c) print c[x], x }' "$1" | sort -k2
}

# dd spends its time in the kernel: reading /dev/zero, writing /dev/null.
"$HPROF" -F 999 --raw "$TMP/cap.raw" --folded "$TMP/live.folded" -- \
	dd if=/dev/zero of=/dev/null bs=64k count=300000 >/dev/null 2>"$TMP/live.err"
kernel_frames "$TMP/live.folded" >"$TMP/live.k"
n=$(awk '{ s += $1 } END { print s + 0 }' "$TMP/live.k")
named=$(grep -vc '\[kernel\]+0x' "$TMP/live.k")
check "recording: kernel frames, named ($n frames, $named names)" [ "$n" -ge 100 -a "$named" -ge 5 ]

: >"$TMP/empty"
HPROF_KALLSYMS=$TMP/empty "$HPROF" report "$TMP/cap.raw" --folded "$TMP/empty.folded" 2>"$TMP/empty.err"
kernel_frames "$TMP/empty.folded" >"$TMP/empty.k"
check "report with no kernel symbols: kernel frames named as recorded" cmp -s "$TMP/live.k" "$TMP/empty.k"
diff "$TMP/live.k" "$TMP/empty.k" | head -5 | sed 's/^/#   /'

# every function of this machine renamed: what the report's machine would say is wrong
awk '{ print $1, $2, "wrong_" NR }' /proc/kallsyms >"$TMP/wrong"
HPROF_KALLSYMS=$TMP/wrong "$HPROF" report "$TMP/cap.raw" --folded "$TMP/wrong.folded" 2>"$TMP/wrong.err"
kernel_frames "$TMP/wrong.folded" >"$TMP/wrong.k"
check "report with other kernel symbols: kernel frames named as recorded" cmp -s "$TMP/live.k" "$TMP/wrong.k"
check "report with other kernel symbols: none of them used" [ "$(grep -c 'wrong_' "$TMP/wrong.folded")" = 0 ]

# the test hook is what it says: a live run with no kernel symbols names kernel frames by
# address (so the report's names can only have come from the capture)
HPROF_KALLSYMS=$TMP/empty "$HPROF" -F 999 --folded "$TMP/nosyms.folded" -- \
	dd if=/dev/zero of=/dev/null bs=64k count=100000 >/dev/null 2>&1
check "HPROF_KALLSYMS empty: a recording's kernel frames are addresses" \
	[ "$(kernel_frames "$TMP/nosyms.folded" | grep -vc '\[kernel\]+0x')" = 0 ]
