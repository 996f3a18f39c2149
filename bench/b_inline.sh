#!/usr/bin/env bash
# Inline frames and source lines on a 10,000-sample profile of the largest binary with
# DWARF here: Debian's /usr/bin/python3.11 (LTO, its DWARF in python3.11-dbg's build-id
# file, 11 MB of compressed sections), running a dict-heavy loop, profiled --python off so
# that its own frames are the ones expanded.
# 1. hprof report of a --raw capture: with inline frames and lines (the default), and with
#    --no-inline --no-lines; the anchor: perf script --inline with srcline on a perf -g
#    recording of the same loop, cut (--time 0%-P%) to as many samples as hprof's capture
#    holds (perf reads perf.data, hprof its capture: the same workload, not the same bytes;
#    the machine's load decides how many samples a run gets). Goal: >= 50x faster.
# 2. The DWARF index on that binary (tests/tools/inline_chain --time, at the pcs the
#    capture sampled in it): first use (open, the first chain) and each pc cold and warm.
# 3. Peak RSS of each.
# Timings on a shared 2-core machine: run it when nothing else does.
set -u
cd "$(dirname "$0")/.."
PY=/usr/bin/python3.11
SAMPLES=${SAMPLES:-10000}
HZ=999
TMP=$(mktemp -d /tmp/hprof-bench-inline.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

id=$(readelf -n "$PY" 2>/dev/null | awk '/Build ID/ { print $3 }')
DEBUG=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
for need in "$PY" "$DEBUG" build/hprof build/tools/inline_chain; do
	if [ ! -e "$need" ]; then
		echo "skip: $need is missing (scripts/install-deps.sh, make)"
		exit 0
	fi
done
if ! command -v perf >/dev/null; then
	echo "skip: perf is missing"
	exit 0
fi

cat >"$TMP/loop.py" <<'EOF'
import sys, time
end = time.time() + float(sys.argv[1])
d, n = {}, 0
while time.time() < end:
    for i in range(1000):
        d[str(i)] = [i, i * 2, "x" * (i % 7)]
        n += len(d[str(i % 97)])
EOF
seconds=$(awk -v s="$SAMPLES" -v hz=$HZ 'BEGIN { printf "%.1f", s / hz + 0.5 }')

# best_of N CMD...: the least wall seconds and the peak RSS (KiB) of N runs, "SECONDS KIB"
best_of() {
	local n=$1 best="" rss=0 t m; shift
	for ((i = 0; i < n; i++)); do
		/usr/bin/time -f "%e %M" -o "$TMP/time" "$@" >/dev/null 2>&1
		read -r t m <"$TMP/time"
		best=$(awk -v a="${best:-1e9}" -v b="$t" 'BEGIN { print (b < a ? b : a) }')
		[ "$m" -gt "$rss" ] && rss=$m
	done
	echo "$best $rss"
}

echo "== recording $seconds s of $PY at $HZ Hz, hprof (--python off) and perf -g"
build/hprof -q -F $HZ --python off --raw "$TMP/cap.raw" -- "$PY" "$TMP/loop.py" "$seconds"
perf record -q -F $HZ -g -o "$TMP/perf.data" -- "$PY" "$TMP/loop.py" "$seconds" >/dev/null 2>&1
build/hprof report "$TMP/cap.raw" -v --pprof "$TMP/cap.pb.gz" --folded "$TMP/cap.folded" \
	2>"$TMP/report.err"
h_samples=$(awk '{ s += $NF } END { print s }' "$TMP/cap.folded")
all_samples=$(perf script -i "$TMP/perf.data" -F ip 2>/dev/null | grep -c '^$')
pct=$(awk -v h="$h_samples" -v p="$all_samples" 'BEGIN { x = 100 * h / p; printf "%.1f", (x > 100 ? 100 : x) }')
CUT=(--time "0%-$pct%")
p_samples=$(perf script -i "$TMP/perf.data" "${CUT[@]}" -F ip 2>/dev/null | grep -c '^$')
inline=$(grep -o '_\[i\]' "$TMP/cap.folded" | wc -l)
echo "samples: hprof $h_samples, perf $p_samples (the first $pct% of its $all_samples);" \
	"inline frames in hprof's folded stacks: $inline"
grep 'inline frames and lines' "$TMP/report.err"

echo
echo "== naming them (best of 3 runs; seconds, peak RSS)"
read -r h_t h_m < <(best_of 3 build/hprof report -q "$TMP/cap.raw" --folded /dev/null --pprof "$TMP/o.pb.gz")
read -r n_t n_m < <(best_of 3 build/hprof report -q "$TMP/cap.raw" --folded /dev/null --pprof "$TMP/o.pb.gz" --no-inline --no-lines)
read -r p_t p_m < <(best_of 1 perf script -i "$TMP/perf.data" "${CUT[@]}" --inline -F comm,ip,sym,srcline)
read -r q_t q_m < <(best_of 3 perf script -i "$TMP/perf.data" "${CUT[@]}" -F comm,ip,sym)
printf '%-58s %8s %10s\n' "" seconds "RSS MiB"
printf '%-58s %8.2f %10.1f\n' "hprof report (inline frames, lines)" "$h_t" "$(echo "$h_m/1024" | bc -l)"
printf '%-58s %8.2f %10.1f\n' "hprof report --no-inline --no-lines" "$n_t" "$(echo "$n_m/1024" | bc -l)"
printf '%-58s %8.2f %10.1f\n' "perf script --inline -F comm,ip,sym,srcline (anchor)" "$p_t" "$(echo "$p_m/1024" | bc -l)"
printf '%-58s %8.2f %10.1f\n' "perf script -F comm,ip,sym" "$q_t" "$(echo "$q_m/1024" | bc -l)"
ratio=$(awk -v p="$p_t" -v h="$h_t" 'BEGIN { printf "%.1f", p / (h > 0.01 ? h : 0.01) }')
echo "hprof with inline frames and lines: ${ratio}x faster than perf script --inline" \
	"(goal >= 50x: $(awk -v r="$ratio" 'BEGIN { print (r >= 50 ? "met" : "NOT met") }'))," \
	"$(awk -v h="$h_t" -v n="$n_t" 'BEGIN { printf "%.2f", h / (n > 0.01 ? n : 0.01) }')x its own time without them"

echo
echo "== the DWARF index on $(basename "$PY") at the pcs the capture sampled in it"
python3 - "$TMP/cap.pb.gz" "$(readlink -f "$PY")" >"$TMP/pcs" <<'EOF'
import sys
sys.path.insert(0, "tests")
from inline_compare import read_profile
locations, leaves = read_profile(sys.argv[1])
pcs = sorted({a if lid in leaves else a - 1 for lid, (m, a, _) in locations.items()
              if m == sys.argv[2]})
print("\n".join("0x%x" % pc for pc in pcs))
EOF
for run in 1 2 3; do
	/usr/bin/time -f "rss_mib %M" -o "$TMP/time" build/tools/inline_chain --time "$DEBUG" <"$TMP/pcs"
	awk '{ printf "  (%s %.1f)\n", $1, $2 / 1024 }' "$TMP/time"
done
