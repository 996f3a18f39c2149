#!/usr/bin/env bash
# --top N: the table of the functions with the most self samples, on a recording and on a
# capture replayed by hprof report. Its shares are go tool pprof -top's (flat%, cum%) on the
# pprof profile of the same run and hprof diff's on its folded stacks, to 0.01 points; a
# recursive function counts once per sample; the capture's table is the recording's; bad
# values are refused before anything is written; where the table goes when folded stacks
# go to stdout.
source "$(dirname "$0")/lib.sh"

FIVE=$WL/nofp_five
RECURSE=$WL/nofp_recurse
export HOME=$TMP GOCACHE=$TMP/go-cache GOFLAGS=

# table FILE: the table in a recording's stdout, after the command's own output.
table() { sed -n '/^top [0-9]* of [0-9]* functions by self samples, of [0-9]* samples$/,$p' "$1"; }
# rows FILE: the table's rows.
rows() { table "$1" | tail -n +3; }

# -- bad values: one line on stderr, exit 2, nothing written (no BPF needed: refused first)
for bad in 0 abc -3 '' 5x; do
	rm -f "$TMP"/bad.*
	"$HPROF" --top "$bad" --folded "$TMP/bad.folded" --svg "$TMP/bad.svg" -- true \
		>"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$? good=false
	[ $rc -eq 2 ] && [ "$(wc -l <"$TMP/bad.err")" -eq 1 ] && grep -q -- "--top" "$TMP/bad.err" &&
		[ ! -s "$TMP/bad.out" ] && [ ! -e "$TMP/bad.folded" ] && [ ! -e "$TMP/bad.svg" ] && good=true
	check "bad value: --top '$bad' refused, exit 2, one line, nothing written ($rc: $(head -1 "$TMP/bad.err"))" $good
done
"$HPROF" --help >"$TMP/help"
check "--help describes --top" grep -q -- "--top N " "$TMP/help"
"$HPROF" report --help >"$TMP/help"
check "report --help describes --top" grep -q -- "--top N " "$TMP/help"

require_bpf "top"

# -- a recording with every output: the table on stdout after the command's own output
"$HPROF" -F 999 --top 10 --raw "$TMP/five.raw" --pprof "$TMP/five.pb.gz" --folded "$TMP/five.folded" \
	-- "$FIVE" 2 >"$TMP/five.out" 2>"$TMP/five.err"
rc=$?
check "record: exit 0 ($rc)" [ "$rc" -eq 0 ]
table "$TMP/five.out" | sed 's/^/# /'
check "record: the command's output, then the table, on stdout" \
	[ "$(head -1 "$TMP/five.out" | cut -d: -f1)" = nofp_five -a "$(sed -n 2p "$TMP/five.out" | cut -c1-4)" = "top " ]
table "$TMP/five.out" >"$TMP/five.top"
python3 tests/top_compare.py check "$TMP/five.top" 10
check "record: header, 10 rows, sorted by self samples then name, inclusive >= self" [ $? -eq 0 ]
# Each work_ function spins in its own body: between them they take ~98% of the samples,
# the least of them 10% by design; nothing else the process runs comes near.
got=$(rows "$TMP/five.out" | head -5 | awk '{ print $4 ":" $5 }' | sort | tr '\n' ' ')
check "record: the five first rows are the workload's work_a..work_e, in nofp_five ($got)" \
	[ "$got" = "nofp_five:work_a nofp_five:work_b nofp_five:work_c nofp_five:work_d nofp_five:work_e " ]

# -- the same shares as go tool pprof -top (samples, not CPU time: the same quantity) and
# hprof diff. All three tell functions apart by name.
if go tool pprof -top -sample_index=samples -nodefraction=0 "$TMP/five.pb.gz" >"$TMP/five.pprof" \
	2>"$TMP/pprof.err"; then
	python3 tests/top_compare.py pprof "$TMP/five.top" "$TMP/five.pprof"
	check "pprof: every row's self and inclusive share is go tool pprof -top's flat% and cum%" [ $? -eq 0 ]
else
	fail "pprof: go tool pprof -top failed: $(head -3 "$TMP/pprof.err")"
fi
"$HPROF" diff "$TMP/five.folded" "$TMP/five.folded" --json "$TMP/five.diff.json" >/dev/null
python3 tests/top_compare.py diff "$TMP/five.top" "$TMP/five.diff.json"
check "diff: every row's self and inclusive share is hprof diff's" [ $? -eq 0 ]

# -- the capture replayed: the recording's table, byte for byte
"$HPROF" report "$TMP/five.raw" --top 10 >"$TMP/report.top" 2>"$TMP/report.err"
rc=$?
check "report: exit 0 ($rc)" [ "$rc" -eq 0 ]
check "report --top on the --raw capture: the recording's table" cmp -s "$TMP/report.top" "$TMP/five.top"
"$HPROF" report "$TMP/five.raw" --top 100000 >"$TMP/all.top" 2>/dev/null
python3 tests/top_compare.py check "$TMP/all.top" 100000
check "report: --top beyond the number of functions lists each once" [ $? -eq 0 ]
"$HPROF" report "$TMP/five.raw" --pprof "$TMP/report.pb.gz" --top 10 >"$TMP/report_pprof.top" 2>/dev/null
check "report: the same table when --pprof keeps every address apart" cmp -s "$TMP/report_pprof.top" "$TMP/five.top"
for bad in 0 abc -3; do
	rm -f "$TMP/bad.folded"
	"$HPROF" report "$TMP/five.raw" --top "$bad" --folded "$TMP/bad.folded" >"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$? good=false
	[ $rc -eq 2 ] && [ "$(wc -l <"$TMP/bad.err")" -eq 1 ] && grep -q -- "--top" "$TMP/bad.err" &&
		[ ! -s "$TMP/bad.out" ] && [ ! -e "$TMP/bad.folded" ] && good=true
	check "report: --top '$bad' refused, exit 2, one line, nothing written ($rc: $(head -1 "$TMP/bad.err"))" $good
done

# -- where the table goes: with no output named, only the table (no folded stacks) on
# stdout; with --folded -, folded stacks on stdout and the table on stderr
"$HPROF" report "$TMP/five.raw" --top 3 >"$TMP/alone.out" 2>/dev/null
python3 tests/top_compare.py check "$TMP/alone.out" 3 && [ "$(wc -l <"$TMP/alone.out")" -eq 5 ]
check "report --top alone: stdout holds the table only, no folded stacks" [ $? -eq 0 ]
"$HPROF" report "$TMP/five.raw" --top 3 --folded - >"$TMP/both.out" 2>"$TMP/both.err"
good=false
cmp -s "$TMP/both.out" <("$HPROF" report "$TMP/five.raw" 2>/dev/null) &&
	python3 tests/top_compare.py check "$TMP/both.err" 3 && good=true
check "report --top --folded -: folded stacks alone on stdout, the table on stderr" $good

# -- recursion: recurse is on every stack 40 times, counted once: its inclusive share is the
# share of the stacks that hold it
"$HPROF" -F 999 --top 1000 --pprof "$TMP/rec.pb.gz" --folded "$TMP/rec.folded" \
	-- "$RECURSE" 1 40 >"$TMP/rec.out" 2>"$TMP/rec.err"
table "$TMP/rec.out" >"$TMP/rec.top"
read -r self incl <<<"$(python3 tests/top_compare.py share "$TMP/rec.top" recurse)"
want=$(awk '{ c = $NF; t += c; sub(/ [0-9]+$/, ""); if ($0 ~ /;recurse(;|$)/) m += c }
	END { printf "%.2f", 100 * m / t }' "$TMP/rec.folded")
echo "# recurse: self ${self:-?}%, inclusive ${incl:-?}%; stacks holding it: $want%"
check "recursion: recurse's inclusive share is the share of stacks holding it, once each (${incl:-?}% vs $want%)" \
	[ "${incl:-x}" = "$want" ]
go tool pprof -top -sample_index=samples -nodefraction=0 "$TMP/rec.pb.gz" >"$TMP/rec.pprof" 2>/dev/null
python3 tests/top_compare.py pprof "$TMP/rec.top" "$TMP/rec.pprof"
check "recursion: every row is go tool pprof -top's (cum% counts a recursive function once)" [ $? -eq 0 ]
"$HPROF" diff "$TMP/rec.folded" "$TMP/rec.folded" --json "$TMP/rec.diff.json" >/dev/null
python3 tests/top_compare.py diff "$TMP/rec.top" "$TMP/rec.diff.json"
check "recursion: every row is hprof diff's" [ $? -eq 0 ]

# -- --time on a running process: the table when sampling stops
"$FIVE" 60 >/dev/null &
wl=$!
wait_exec "$wl" "$FIVE"
"$HPROF" -F 999 --top 5 --pid "$wl" --time 1000 >"$TMP/pid.out" 2>"$TMP/pid.err"
rc=$?
kill "$wl" 2>/dev/null
wait "$wl" 2>/dev/null
python3 tests/top_compare.py check "$TMP/pid.out" 5
good=$?
got=$(rows "$TMP/pid.out" | awk '{ print $5 }' | sort | tr '\n' ' ')
check "--pid --time: exit 0, the table alone on stdout, work_a..work_e ($rc; $got)" \
	[ "$rc" -eq 0 -a "$good" -eq 0 -a "$(wc -l <"$TMP/pid.out")" -eq 7 -a "$got" = "work_a work_b work_c work_d work_e " ]
