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

lacks() { ! grep -q "$1" "$2"; }

# jit NAME [hprof options] -- [fp_jit options]: profiles fp_jit for 2 s.
jit() {
	local name=$1; shift
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	timeout 60 "$HPROF" "${opts[@]}" --folded "$TMP/$name.folded" -- "$WL/fp_jit" 2 "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ fail "$name: hprof failed: $(tail -1 "$TMP/$name.err")"; return 1; }
}

# leaf NAME REGEX: share of fp_jit's samples whose innermost user frame matches REGEX.
leaf() {
	share_matching "$TMP/$1.folded" fp_jit ";$2$KERNEL\$"
}

if jit map -- --perf-map; then
	named=$(leaf map jit_hot_loop) unnamed=$(leaf map '\[jit\]')
	echo "# map: jit_hot_loop $named, [jit] $unnamed"
	# Half the time goes to each function; allow for a loaded machine.
	check "map file: the mapped function is named jit_hot_loop ($named)" at_least 25 "$named"
	check "map file: the function without an entry is [jit] ($unnamed)" at_least 25 "$unnamed"
	check "map file: the later entry for the range wins over the stale one" \
		[ "$(share_matching "$TMP/map.folded" fp_jit stale_name)" = "0/${named#*/}" ]
	check "map file: no frame is a bare address" \
		[ "$(share_matching "$TMP/map.folded" fp_jit '\]\+0x')" = "0/${named#*/}" ]
	check "map file: the summary counts the entries and the bad line" \
		grep -q "perf map files: 2 entries, 1 bad lines skipped; 1 files read, 0 refused" "$TMP/map.err"
fi

# The JIT code keeps frame pointers: the kernel's chain gives its callers.
if jit callers --no-dwarf -- --perf-map; then
	callers=$(share_matching "$TMP/callers.folded" fp_jit ";main;run_jit;jit_hot_loop$KERNEL\$")
	both=$(share_matching "$TMP/callers.folded" fp_jit ";main;run_jit;(jit_hot_loop|\\[jit\\])$KERNEL\$")
	echo "# callers: main;run_jit;jit_hot_loop $callers, main;run_jit;JIT code $both"
	check "map file: jit_hot_loop's callers run_jit;main are there ($callers)" at_least 25 "$callers"
	check "map file: JIT code's callers are run_jit;main ($both)" at_least 80 "$both"
fi

if jit nomap -- ; then
	unnamed=$(leaf nomap '\[jit\]')
	check "no map file: JIT frames are [jit] ($unnamed)" at_least 80 "$unnamed"
	check "no map file: no perf map line in the summary" lacks "perf map files" "$TMP/nomap.err"
fi

# Anyone can write to /tmp: a map file owned by another user is not the process's.
if jit stranger -- --perf-map-owner 65534; then
	unnamed=$(leaf stranger '\[jit\]')
	check "stranger's map file: ignored, frames are [jit] ($unnamed)" at_least 80 "$unnamed"
	check "stranger's map file: the summary counts it refused" \
		grep -q "perf map files: 0 entries, 0 bad lines skipped; 0 files read, 1 refused" "$TMP/stranger.err"
fi

# A FIFO would block a plain open and read forever.
if jit fifo -- --perf-map-fifo; then
	unnamed=$(leaf fifo '\[jit\]')
	check "FIFO as map file: hprof finishes, frames are [jit] ($unnamed)" at_least 80 "$unnamed"
	check "FIFO as map file: the summary counts it refused" grep -q "1 refused" "$TMP/fifo.err"
fi

# The hybrid is never worse than either of its parts: JIT code has no CFI, so the DWARF
# walk cannot start there; the FP chain carries the stack from the JIT frame to main, and
# the DWARF walk finishes it from there through libc's start-up code to _start.
START='^fp_jit;_start;__libc_start_main;__libc_start_call_main;main;run_jit;(jit_hot_loop|\[jit\])'
if jit hybrid -- --perf-map && jit fponly --no-dwarf -- --perf-map; then
	hybrid=$(share_matching "$TMP/hybrid.folded" fp_jit "$START$KERNEL\$")
	fponly=$(share_matching "$TMP/fponly.folded" fp_jit ';main;run_jit;(jit_hot_loop|\[jit\])'"$KERNEL\$")
	echo "# complete: hybrid $hybrid, frame pointers only $fponly"
	check "hybrid: >= 99% of samples complete from _start through the JIT code ($hybrid)" \
		at_least 99 "$hybrid"
	check "hybrid: at least as complete as frame pointers alone ($hybrid vs $fponly)" \
		[ $((${hybrid%/*} * ${fponly#*/})) -ge $((${fponly%/*} * ${hybrid#*/})) ]
	check "hybrid: the summary counts the stacks as dwarf+fp" \
		grep -Eq "dwarf\\+fp (99|100)\\.[0-9]%" "$TMP/hybrid.err"
fi
