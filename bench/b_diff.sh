#!/usr/bin/env bash
# hprof diff against FlameGraph's difffolded.pl | flamegraph.pl on the same two folded files
# of 100,000 distinct stacks each (generated here, the same bytes every run): wall time and
# peak memory (/usr/bin/time -v), best of RUNS, the two tools' runs alternating so a slow
# spell of a shared host hits both. Goal: hprof >= 20x faster. The anchor scripts are found
# through FLAMEGRAPH_DIR (default ../shared/anchors/FlameGraph) and never copied.
set -u
cd "$(dirname "$0")/.."
HPROF=build/hprof
RUNS=${RUNS:-3}
FLAMEGRAPH_DIR=${FLAMEGRAPH_DIR:-../shared/anchors/FlameGraph}
TMP=$(mktemp -d /tmp/hprof-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# gen SEED SHIFT: 100,000 stacks 5 to 34 frames deep over a few hundred names, each ending in
# a leaf of its own. The Park-Miller generator keeps awk's arithmetic exact (products < 2^53),
# so every awk writes the same file. SHIFT moves work between the profiles: the stacks through
# fn7 at depth 5 weigh SHIFT times more.
gen() {
	awk -v seed="$1" -v shift="$2" 'function r(n) { x = (x * 16807) % 2147483647; return x % n }
	BEGIN {
		x = 12345
		for (i = 0; i < 100000; i++) {
			depth = 5 + r(30); line = "app"; hot = 0
			for (d = 0; d < depth; d++) {
				f = r(d < 4 ? 3 : 400); line = line ";fn" f
				if (d == 5 && f == 7) hot = 1
			}
			count = 1 + r(100)
			# the second profile perturbs every count a little, deterministically
			y = (i * 7919 + seed) % 13
			if (seed) count = count + y - 6 > 0 ? count + y - 6 : 1
			if (hot) count *= shift
			printf "%s;leaf%d %d\n", line, i, count
		}
	}'
}
gen 0 1 >"$TMP/base.folded"
gen 1 4 >"$TMP/new.folded"
echo "inputs: $(wc -l <"$TMP/base.folded") + $(wc -l <"$TMP/new.folded") stacks, $(($(stat -c %s "$TMP/base.folded") / 1024)) + $(($(stat -c %s "$TMP/new.folded") / 1024)) KiB"

# measure NAME COMMAND: appends "seconds kilobytes" of one run of the shell COMMAND to $TMP/NAME.
measure() {
	/usr/bin/time -f '%e %M' -o "$TMP/time" bash -c "$2" || { echo "$1 failed"; exit 1; }
	cat "$TMP/time" >>"$TMP/$1"
}
hprof_cmd="'$HPROF' diff '$TMP/base.folded' '$TMP/new.folded' --svg '$TMP/hprof.svg' >'$TMP/hprof.txt'"
anchor_cmd="perl '$FLAMEGRAPH_DIR/difffolded.pl' '$TMP/base.folded' '$TMP/new.folded' |
	perl '$FLAMEGRAPH_DIR/flamegraph.pl' >'$TMP/anchor.svg'"
have_anchor=true
if [ ! -f "$FLAMEGRAPH_DIR/difffolded.pl" ] || [ ! -f "$FLAMEGRAPH_DIR/flamegraph.pl" ]; then
	echo "anchor: no difffolded.pl and flamegraph.pl in $FLAMEGRAPH_DIR (set FLAMEGRAPH_DIR): hprof alone"
	have_anchor=false
fi
for run in $(seq "$RUNS"); do
	measure hprof "$hprof_cmd"
	$have_anchor && measure anchor "$anchor_cmd"
done
# best NAME: the fastest run's seconds and that run's peak MiB.
best() { sort -n "$TMP/$1" | head -1 | awk '{ printf "%.2f s, %.0f MiB peak", $1, $2 / 1024 }'; }
echo "hprof diff --svg:                 $(best hprof) (best of $RUNS; table $(wc -l <"$TMP/hprof.txt") lines, SVG $(($(stat -c %s "$TMP/hprof.svg") / 1024)) KiB)"
if $have_anchor; then
	echo "difffolded.pl | flamegraph.pl:    $(best anchor) (best of $RUNS; SVG $(($(stat -c %s "$TMP/anchor.svg") / 1024)) KiB)"
	paste <(sort -n "$TMP/hprof" | head -1) <(sort -n "$TMP/anchor" | head -1) |
		awk '{ r = $3 / ($1 > 0.005 ? $1 : 0.005); printf "ratio: hprof %.1fx faster, %.1fx less memory (goal >= 20x faster: %s)\n", r, $4 / $2, (r >= 20 ? "met" : "NOT met") }'
fi
