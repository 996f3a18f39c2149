#!/usr/bin/env bash
# Code without CFI, in one run:
# 1. Warm walk cost: a frame whose caller is found by the analysis of its code (cached,
#    as a session caches it) against a frame with CFI, on the same pinned stack
#    (bench/bench_nocfi.c). Goal: <= 2x.
# 2. The analysis checked against the CFI of code that has it, at every return address of
#    real libraries (bench/bench_analyze.c): agreement forward from the pc alone (a stripped
#    function) and from a symbol's start; time per new code region analysed, and per trace
#    of a function for the depths it jumps on at (what a scan asks of a direct call's
#    target). Goals: no wrong rule from a symbol's start; <= 50 us mean per region.
# Timings on a shared 2-core machine: run it when nothing else does (no helpers, no tests).
set -u
cd "$(dirname "$0")/.."
LIBDIR=/usr/lib/x86_64-linux-gnu

echo "== warm walk: a frame without CFI against a frame with CFI (best of 20 blocks)"
for run in 1 2 3; do
	build/bench/bench_nocfi 2000000 | sed -n 's/^bench: //p' | paste -sd' '
done

echo
echo "== the analysis against the CFI, at every return address of each library"
printf '%-22s %7s | %-24s | %-24s | %-26s | %s\n' library sites "forward: agree/differ/none" \
	"from start: agree/differ/none" "us per region: mean p99 max" \
	"jump traces (scan): functions, with jumps, us mean p99 max"
for lib in libc.so.6 libsqlite3.so.0 liblzma.so.5 libzstd.so.1 libcrypto.so.3 libstdc++.so.6; do
	[ -e "$LIBDIR/$lib" ] || continue
	out=$(build/bench/bench_analyze "$LIBDIR/$lib") || continue
	awk -v lib="$lib" '
		$3 == "forward" { sites = $5; fa = $7; fd = $9; ff = $11 }
		$3 == "from-start" { sa = $7; sd = $9; sf = $11 }
		$3 == "time" && $4 == "analyses" { mean = $7; p99 = $9; max = $11 }
		$3 == "time" && $4 == "jump_traces" { jn = $5; jw = $7; jmean = $9; jp99 = $11; jmax = $13 }
		END { printf "%-22s %7d | %7d %7d %7d  | %7d %7d %7d  | %8.1f %8.1f %8.1f | %7d %6d %6.1f %6.1f %6.1f\n",
			lib, sites, fa, fd, ff, sa, sd, sf, mean, p99, max, jn, jw, jmean, jp99, jmax }' <<<"$out"
done

# 3. Names of code with neither CFI nor symbols: the function starts binary/code_starts.c
#    finds, judged against the symbols of code that has them (bench/bench_code_starts.c):
#    GMP's assembly without CFI as it ships, and whole libraries as if they had no CFI.
echo
echo "== function starts of code without CFI or symbols, against the symbols"
gmp=$(ls "$LIBDIR"/libgmp.so.10.* 2>/dev/null | head -1)
[ -n "$gmp" ] && build/bench/bench_code_starts "$gmp" | sed -n 's/^bench: //p'
[ -n "$gmp" ] && build/bench/bench_code_starts --as-if-no-cfi "$gmp" | sed -n 's/^bench: //p'
libc=$LIBDIR/libc.so.6
libc_id=$(readelf -n "$libc" | awk '/Build ID/ { print $3 }')
libc_debug=/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug
[ -e "$libc_debug" ] && build/bench/bench_code_starts --as-if-no-cfi "$libc" "$libc_debug" |
	sed -n 's/^bench: //p'
