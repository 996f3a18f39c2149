#!/usr/bin/env bash
# A CI-like job of ~1000 short processes, in one run under hprof (-F 499, -- sh job.sh) and
# under perf record --call-graph dwarf,16384 -F 499 (then perf script, folded as
# bench/b_realprog.sh folds it): CIJOB_FILES (default 30) times, gcc -O2 -c on a generated
# file (gcc, cc1, as), a python3 -c, an xz -9 and 25 sh pipelines of sed and grep.
# Per program (command name): the share of samples with a complete user stack
# (stack_completeness in tests/lib.sh) and the samples with a frame in no known mapping
# (hprof: a [truncated: pc outside any known mapping] root or an [unmapped] frame; perf: an
# [unknown] frame). Goals, judged on programs with >= 100 samples: >= 99% complete each,
# <= 0.1% of samples with an unknown mapping, hprof ahead of perf on every program. Samples
# taken in exit or execve have no user stack and count as incomplete; perf's per-task events
# record none there, hprof's per-CPU ones do, so the table also gives each share over the
# samples with a user stack ("user"), which is the fair comparison. CIJOB_KEEP=DIR keeps
# both folded profiles there.
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh
FILES=${CIJOB_FILES:-30}

if ! bpf_available 2>/dev/null; then
	echo "skip: b_cijob needs root and a BTF kernel (BPF recording)"
	exit 0
fi
if ! command -v perf >/dev/null; then
	echo "skip: b_cijob needs perf (linux-perf; scripts/install-deps.sh)"
	exit 0
fi

mkdir -p "$TMP/job/src" "$TMP/job/out"
for i in $(seq "$FILES"); do nested_blocks_c 12 30 "$i" >"$TMP/job/src/f$i.c"; done
text_lines 15000 >"$TMP/job/data"
cat >"$TMP/job/job.sh" <<'EOF'
cd "$(dirname "$0")"
for i in $(seq "$1"); do
	/usr/bin/gcc -O2 -c "src/f$i.c" -o "out/f$i.o"
	/usr/bin/python3 -c "import json; print(len(json.dumps({'i': $i, 'v': [x * x % 7 for x in range(200000)]})))" >/dev/null
	/usr/bin/xz -9 -T1 -c data >"out/data$i.xz"
	for j in $(seq 25); do echo "$i $j" | sed 's/1/2/' | grep -c 2 >/dev/null; done
done
EOF

start=$(date +%s)
"$HPROF" -v -F 499 --folded "$TMP/hprof.folded" -- sh "$TMP/job/job.sh" "$FILES" >/dev/null 2>"$TMP/hprof.err" ||
	{ echo "hprof failed: $(tail -1 "$TMP/hprof.err")"; exit 1; }
hprof_s=$(($(date +%s) - start))
start=$(date +%s)
perf record -q -F 499 --call-graph dwarf,16384 -o "$TMP/perf.data" -- sh "$TMP/job/job.sh" "$FILES" \
	>/dev/null 2>"$TMP/perf.err" || { echo "perf record failed: $(head -c 300 "$TMP/perf.err")"; exit 1; }
perf_s=$(($(date +%s) - start))
perf script --no-inline -F comm,ip,sym,dso -i "$TMP/perf.data" 2>/dev/null | perf_folded >"$TMP/perf.folded"
rm -f "$TMP/perf.data"
[ -n "${CIJOB_KEEP:-}" ] && cp "$TMP/hprof.folded" "$TMP/perf.folded" "$CIJOB_KEEP"/
procs=$(sed -n 's/^hprof: [0-9.]* s, [0-9]* samples at [0-9]* Hz, \([0-9]*\) processes.*/\1/p' "$TMP/hprof.err")
echo "job: $FILES files, $procs processes; hprof run ${hprof_s}s, perf run ${perf_s}s"
grep -E '^hprof: (mappings|lost)' "$TMP/hprof.err"

# by_comm FOLDED DIR: one folded file per command name in DIR.
by_comm() { mkdir -p "$2"; awk -v dir="$2" '{ split($0, f, ";"); print > (dir "/" f[1]) }' "$1"; }
# unknown FILE RE: samples with a frame matching RE.
unknown() { awk -v re="$2" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); if (s ~ re) u += n } END { print u + 0 }' "$1"; }
by_comm "$TMP/hprof.folded" "$TMP/h"
by_comm "$TMP/perf.folded" "$TMP/p"

# user_share FILE: stack_completeness over the samples that have a user stack.
user_share() { stack_completeness "$1" | awk 'NR == 1 { split($1, a, "/"); m = a[1]; t = a[2] }
	$2 " " $3 " " $4 == "no user stack" { t -= $1 } END { printf "%d/%d\n", m, t }'; }
met=1 met_user=1
printf '%-8s | %-16s %-16s %5s | %-16s %-16s %5s\n' program "hprof complete" "(user)" unkn \
	"perf complete" "(user)" unkn
printf '%-8s-|-%-16s-%-16s-%5s-|-%-16s-%-16s-%5s\n' -------- ---------------- ---------------- ----- \
	---------------- ---------------- -----
total=0 hunk=0
for comm in $(ls "$TMP/h" "$TMP/p" | grep -v ':$' | sort -u); do
	h=0/0 hu=0/0 hx=0 p=0/0 pu=0/0 px=0
	if [ -f "$TMP/h/$comm" ]; then
		h=$(complete_share "$TMP/h/$comm") hu=$(user_share "$TMP/h/$comm")
		hx=$(unknown "$TMP/h/$comm" ';(\[truncated: pc outside any known mapping\]|\[unmapped\]\+0x)')
	fi
	if [ -f "$TMP/p/$comm" ]; then
		p=$(complete_share "$TMP/p/$comm") pu=$(user_share "$TMP/p/$comm")
		px=$(unknown "$TMP/p/$comm" ';\[unknown\]\+0x')
	fi
	total=$((total + ${h#*/})) hunk=$((hunk + hx))
	judged=""
	# below 99%, or below perf's share (a_m / a_t < b_m / b_t)
	behind() { ! at_least 99 "$1" || [ $((${1%/*} * ${2#*/})) -lt $((${2%/*} * ${1#*/})) ]; }
	if [ "${h#*/}" -lt 100 ]; then
		judged=" (< 100 samples: not judged)"
	else
		behind "$h" "$p" && met=0 judged=" <- missed"
		behind "$hu" "$pu" && met_user=0 judged="$judged <- missed (user)"
	fi
	printf '%-8s | %6s %-9s %6s %-9s %5s | %6s %-9s %6s %-9s %5s%s\n' "$comm" \
		"$(pct "$h")" "$h" "$(pct "$hu")" "$hu" "$hx" "$(pct "$p")" "$p" "$(pct "$pu")" "$pu" "$px" "$judged"
done
echo "incomplete stacks, commonest ways (hprof; perf dwarf,16384):"
for comm in cc1 as python3 xz sh gcc sed grep; do
	[ -f "$TMP/h/$comm" ] && incomplete_why "$TMP/h/$comm" 3 | sed "s/^/  $comm hprof: /"
	[ -f "$TMP/p/$comm" ] && incomplete_why "$TMP/p/$comm" 3 | sed "s/^/  $comm perf: /"
done
share=$(calc %.3f "100 * $hunk / ($total > 0 ? $total : 1)")
if [ "$(calc %d "$share <= 0.1")" = 1 ]; then
	echo "goal: <= 0.1% of hprof's samples with an unknown mapping ($hunk of $total, $share%) -> met"
else
	echo "goal: <= 0.1% of hprof's samples with an unknown mapping ($hunk of $total, $share%) -> MISSED"
	met=0
fi
for m in "$met all samples" "$met_user samples with a user stack"; do
	if [ "${m%% *}" = 1 ]; then
		echo "goal: >= 99% complete and ahead of perf on every program, over ${m#* } -> met"
	else
		echo "goal: >= 99% complete and ahead of perf on every program, over ${m#* } -> MISSED"
	fi
done
