#!/usr/bin/env bash
# JIT code: frames in anonymous executable memory are named from perf's map file,
# /tmp/perf-PID.map, when the profiled process writes one that hprof may trust; else
# [jit], never an address. fp_jit writes x86-64 code into an anonymous mapping and calls
# it from main -> run_jit; of its two functions only the first has a map entry.
source "$(dirname "$0")/lib.sh"
require_bpf "jit"

# fp_jit prints "map /tmp/perf-PID.map": remove every one this test made.
trap 'rm -f $(sed -n "s|^map \(/tmp/perf-[0-9]*\.map\)$|\1|p" "$TMP"/*.out 2>/dev/null); rm -rf "$TMP"' EXIT

KERNEL='(;[^;]*_\[k\])*'
START='_start;__libc_start_main;__libc_start_call_main;main'
JIT='(jit_hot_loop|\[jit\])'

lacks() { ! grep -q "$1" "$2"; }

# jit NAME [hprof options] -- [fp_jit options]: profiles fp_jit for 2 s, keeping the raw
# samples and the summary as JSON, and as text with every figure (-v).
jit() {
	local name=$1; shift
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	timeout 60 "$HPROF" -v "${opts[@]}" --folded "$TMP/$name.folded" --raw "$TMP/$name.raw" \
		--json "$TMP/$name.json" -- "$WL/fp_jit" 2 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ fail "$name: hprof failed: $(tail -1 "$TMP/$name.err")"; return 1; }
}

# called NAME REGEX: "matched/total" over fp_jit's samples in the JIT code, those in which
# run_jit has a callee (run_jit calls nothing but the JIT code); matched when the callee's
# name matches REGEX. Where else the program spends its time (its clock, its start) is
# the machine's business.
called() {
	awk -v re="^($2)\$" '
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
		  n = split(stack, f, ";"); if (f[1] != "fp_jit") next
		  for (i = 2; i < n; i++) if (f[i] == "run_jit") break
		  if (i >= n || f[i + 1] ~ /_\[k\]$/) next
		  total += count; if (f[i + 1] ~ re) matched += count }
		END { printf "%d/%d\n", matched, total }' "$TMP/$1.folded"
}

# many "matched/total": at least 20 samples in the JIT code (2 s at 99 Hz is ~200; a
# loaded machine gives the program less of a CPU).
many() { [ "${1#*/}" -ge 20 ]; }

if jit map -- --perf-map; then
	named=$(called map jit_hot_loop) unnamed=$(called map '\[jit\]') both=$(called map "$JIT")
	echo "# map: jit_hot_loop $named, [jit] $unnamed"
	check "map file: every JIT frame is jit_hot_loop or [jit] ($both)" eval 'many "$both" && at_least 99 "$both"'
	# The two functions are called in turn for the same work on average: half of the
	# samples in the JIT code each, give or take what the sampling's randomness gives.
	check "map file: the mapped function is named jit_hot_loop ($named)" at_least 25 "$named"
	check "map file: the function without an entry is [jit] ($unnamed)" at_least 25 "$unnamed"
	stale=$(share_matching "$TMP/map.folded" fp_jit stale_name)
	# user frames only: a kernel address kallsyms does not name is "[kernel]+0x..._[k]"
	bare=$(share_matching "$TMP/map.folded" fp_jit '\]\+0x[0-9a-f]+(;| )')
	check "map file: the later entry for the range wins over the stale one (${stale%/*})" [ "${stale%/*}" -eq 0 ]
	check "map file: no frame is a bare address (${bare%/*})" [ "${bare%/*}" -eq 0 ]
	grep -E '\]\+0x[0-9a-f]+(;| )' "$TMP/map.folded" | head -3 | cut -c1-300 | sed 's/^/#   /'
	check "map file: the summary counts the entries and the bad line" \
		grep -q "perf map files: 2 entries, 1 bad lines skipped; 1 files read, 0 refused" "$TMP/map.err"
fi

# A map file written only as the program ends (HotSpot's -XX:+DumpPerfMapAtExit): every
# sample in the JIT code came before its name, and the frames are named all the same when
# the process exits.
if jit atexit -- --perf-map-at-exit; then
	named=$(called atexit jit_hot_loop) unnamed=$(called atexit '\[jit\]')
	echo "# map at exit: jit_hot_loop $named, [jit] $unnamed"
	check "map file written at exit: the mapped function is named jit_hot_loop ($named)" \
		eval 'many "$named" && at_least 25 "$named"'
	check "map file written at exit: the function without an entry stays [jit] ($unnamed)" \
		at_least 25 "$unnamed"
fi

# The JIT code keeps frame pointers: the kernel's chain gives its callers. Judged over the
# samples whose leaf is JIT code, wherever else the program spent its time.
if jit callers --no-dwarf -- --perf-map; then
	callers=$(share_among "$TMP/callers.folded" fp_jit ";jit_hot_loop$KERNEL\$" ";main;run_jit;jit_hot_loop$KERNEL\$")
	both=$(share_among "$TMP/callers.folded" fp_jit ";$JIT$KERNEL\$" ";main;run_jit;$JIT$KERNEL\$")
	echo "# callers: main;run_jit;jit_hot_loop $callers, main;run_jit;JIT code $both"
	check "map file: jit_hot_loop's callers run_jit;main are there ($callers)" \
		eval 'at_least 99 "$callers" && [ "${callers#*/}" -ge 10 ]'
	# the others, if any
	grep '^fp_jit;.*;jit_hot_loop' "$TMP/callers.folded" | grep -v ';main;run_jit;jit_hot_loop' |
		head -3 | cut -c1-300 | sed 's/^/#   /'
	check "map file: JIT code's callers are run_jit;main ($both)" eval 'many "$both" && at_least 99 "$both"'
fi

if jit nomap -- ; then
	unnamed=$(called nomap '\[jit\]')
	check "no map file: JIT frames are [jit] ($unnamed)" eval 'many "$unnamed" && at_least 99 "$unnamed"'
	check "no map file: no perf map line in the summary" lacks "perf map files" "$TMP/nomap.err"
fi

# Anyone can write to /tmp: a map file owned by another user is not the process's.
if jit stranger -- --perf-map-owner 65534; then
	unnamed=$(called stranger '\[jit\]')
	check "stranger's map file: ignored, frames are [jit] ($unnamed)" eval 'many "$unnamed" && at_least 99 "$unnamed"'
	check "stranger's map file: the summary counts it refused" \
		grep -q "perf map files: 0 entries, 0 bad lines skipped; 0 files read, 1 refused" "$TMP/stranger.err"
fi

# A FIFO would block a plain open and read forever.
if jit fifo -- --perf-map-fifo; then
	unnamed=$(called fifo '\[jit\]')
	check "FIFO as map file: hprof finishes, frames are [jit] ($unnamed)" eval 'many "$unnamed" && at_least 99 "$unnamed"'
	check "FIFO as map file: the summary counts it refused" grep -q "1 refused" "$TMP/fifo.err"
fi

# The hybrid is never worse than either of its parts: JIT code has no CFI, so the DWARF
# walk cannot start there; the FP chain carries the stack from the JIT frame to main, and
# the DWARF walk finishes it from there through libc's start-up code to _start. Frame
# pointers alone: the same samples replayed with hprof report --no-dwarf.
if jit hybrid -- --perf-map &&
	"$HPROF" report --no-dwarf "$TMP/hybrid.raw" --folded "$TMP/fponly.folded" 2>"$TMP/fponly.err"; then
	# In its own code (own_share), the program's stacks are main's (its clock, its set-up
	# calls into libc) or run_jit's, down to the JIT code.
	hybrid=$(own_share "$TMP/hybrid.folded" fp_jit "main|run_jit|$JIT|workload_.*" \
		"^fp_jit;$START(;run_jit(;$JIT)?|;workload_now(;[^;]+)*)?$KERNEL\$" "^fp_jit;$START\$")
	in_jit=$(share_matching "$TMP/hybrid.folded" fp_jit "^fp_jit;$START;run_jit;$JIT$KERNEL\$")
	fponly=$(share_matching "$TMP/fponly.folded" fp_jit ";main;run_jit;$JIT$KERNEL\$")
	echo "# hybrid $hybrid; in the JIT code, complete: hybrid ${in_jit%/*}, frame pointers only ${fponly%/*}"
	if at_least 99 "$hybrid"; then
		ok "hybrid: >= 99% of samples complete from _start, through the JIT code ($hybrid)"
	else
		fail "hybrid: complete from _start in $hybrid samples; the others:"
		own_others "$TMP/hybrid.folded" fp_jit "main|run_jit|$JIT|workload_.*" \
			"^fp_jit;$START(;run_jit(;$JIT)?|;workload_now(;[^;]+)*)?$KERNEL\$" "^fp_jit;$START\$" |
			cut -c1-300 | sed 's/^/#   /'
	fi
	check "hybrid: at least as complete as frame pointers alone on the same samples (${in_jit%/*} vs ${fponly%/*} in the JIT code)" \
		[ "${in_jit%/*}" -gt 0 -a "${in_jit%/*}" -ge "${fponly%/*}" ]
	# Each of them went through code without CFI: the summary counts it so (dwarf+fp when the
	# FP chain was stitched, analysis or scan when the walk went through the JIT code itself),
	# never as an exact dwarf or fp walk, nor truncated.
	through=$(python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))["user_stacks_by_method"]
print(sum(m.get(k, {}).get("count", 0) for k in ("dwarf+fp", "analysis", "scan")))' "$TMP/hybrid.json" 2>/dev/null)
	check "hybrid: the summary counts them as walked through code without CFI (${through:-?} dwarf+fp, analysis or scan for ${in_jit%/*})" \
		[ "${in_jit%/*}" -gt 0 -a "${through:-0}" -ge "${in_jit%/*}" ]
elif [ -s "$TMP/fponly.err" ]; then
	fail "hybrid: hprof report --no-dwarf failed: $(tail -1 "$TMP/fponly.err")"
fi

# A process in a container, a pid and mount namespace of its own, names its map after its
# pid there in its own /tmp: fp_jit is pid 1 and writes /tmp/perf-1.map on a tmpfs only it
# sees, which hprof must find under that name in the process's root.
in_container='mount -t tmpfs hprof-test /tmp && exec "$0" "$@"'
if unshare --pid --fork --mount-proc sh -c "$in_container" true 2>"$TMP/unshare.err"; then
	if timeout 60 "$HPROF" -v --folded "$TMP/pidns.folded" -- unshare --pid --fork --mount-proc \
		sh -c "$in_container" "$WL/fp_jit" 2 --perf-map >"$TMP/pidns.out" 2>"$TMP/pidns.err"; then
		named=$(called pidns jit_hot_loop)
		check "pid namespace: the map it wrote as perf-1.map names jit_hot_loop ($named)" \
			at_least 25 "$named"
		check "pid namespace: the summary counts the map read" \
			grep -q "perf map files: 2 entries, 1 bad lines skipped; 1 files read, 0 refused" \
			"$TMP/pidns.err"
	else
		fail "pid namespace: hprof failed: $(tail -1 "$TMP/pidns.err")"
	fi
else
	skip "pid namespace" "unshare --pid cannot run here: $(tail -1 "$TMP/unshare.err")"
fi
