#!/usr/bin/env bash
# What a run prints on stderr. On a terminal, a status line rewritten in place while it
# records, taken off before the summary; in a pipe or a file, none. By default a summary of
# at most 5 lines whose figures are the JSON's; -v every figure; --quiet nothing but errors.
# The JSON summary is the same whatever the text.
source "$(dirname "$0")/lib.sh"
require_bpf "status"

# on_terminal OUT ARGS...: hprof ARGS with stdin, stdout and stderr on a pseudo-terminal
# (util-linux script), the command's output to /dev/null; what the terminal received in OUT,
# newlines as written (stty -onlcr), TERM=$TTY_TERM (default xterm). Returns hprof's status.
on_terminal() {
	local out=$1; shift
	TERM=${TTY_TERM:-xterm} script -q -e -c "stty -onlcr; $(printf '%q ' "$HPROF" "$@") >/dev/null" /dev/null \
		</dev/null >"$out"
}

# controls FILE: true when FILE holds a carriage return or an escape sequence.
controls() { grep -q $'[\r\033]' "$1"; }

# summary_lines FILE: the number of lines in FILE, 99 when one does not start with "hprof: ".
summary_lines() {
	if grep -qv "^hprof: " "$1"; then echo 99; return; fi
	wc -l <"$1"
}

# json_keys FILE: every key path of a JSON file, one a line (list items as []).
json_keys() {
	python3 -c 'import json, sys
def walk(v, path):
    if isinstance(v, dict):
        for k, x in v.items():
            print(path + "/" + k)
            walk(x, path + "/" + k)
    elif isinstance(v, list):
        for x in v:
            walk(x, path + "[]")
walk(json.load(open(sys.argv[1])), "")' "$1" | sort -u
}

# 1. On a terminal: the workload runs 3 s (by the clock), so the line, first drawn after 1 s,
# is rewritten every half second until the command exits (4 times, 2 at least on a machine
# too busy to run hprof for a second); --time says what is left.
if ! command -v script >/dev/null; then
	skip "terminal" "no script (util-linux)"
elif on_terminal "$TMP/tty.out" --time 60000 --json "$TMP/tty.json" --folded "$TMP/tty.folded" \
	-- "$WL/fp_chain" 3; then
	verdict=$(python3 - "$TMP/tty.out" 2>&1 <<'EOF'
import re, sys
text = open(sys.argv[1], "rb").read().decode()
CLEAR = "\r\x1b[K"
status = re.compile(r"hprof: ([0-9.]+) s \(([0-9.]+) s left\), \d+ samples(, [0-9.]+% complete)?, "
                    r"\d+ lost$")
start = text.find("hprof: profiled ")
if start < 0:
    sys.exit("no summary")
live, summary = text[:start], text[start:]
if "\n" in live:
    sys.exit("the status line is not one line: %r" % live[:200])
if not live.startswith(CLEAR) or not live.endswith(CLEAR):
    sys.exit("the line is not drawn and taken off in place: %r" % live[:200])
updates = [u for u in live.split(CLEAR) if u]
bad = [u for u in updates if not status.match(u)]
if bad:
    sys.exit("not a status: %r" % bad[0])
elapsed = [float(status.match(u)[1]) for u in updates]
if len(updates) < 2 or elapsed != sorted(elapsed) or elapsed[0] < 1.0:
    sys.exit("updates at %s s" % elapsed)
if "\r" in summary or "\x1b" in summary:
    sys.exit("control characters in the summary")
print("%d updates at %s s" % (len(updates), " ".join(map(str, elapsed))))
EOF
)
	rc=$?
	check "terminal: one status line rewritten in place, then taken off before the summary ($verdict)" \
		[ $rc -eq 0 ]
	check "terminal: the summary that follows has at most 5 lines ($(grep -c '' "$TMP/tty.out"))" \
		[ "$(grep -c '' "$TMP/tty.out")" -le 5 ]
else
	fail "terminal: hprof failed: $(tail -c 300 "$TMP/tty.out")"
fi

# A run over within a second shows no status line, even on a terminal.
if command -v script >/dev/null; then
	on_terminal "$TMP/short.out" --time 300 --folded "$TMP/short.folded" -- "$WL/fp_chain" 0.3
	check "terminal: a run of 0.3 s draws no status line" \
		eval '! controls "$TMP/short.out" && grep -q "^hprof: profiled " "$TMP/short.out"'
	TTY_TERM=dumb on_terminal "$TMP/dumb.out" --time 60000 --folded "$TMP/dumb.folded" -- "$WL/fp_chain" 2
	check "terminal: a dumb terminal (TERM=dumb) gets no status line" \
		eval '! controls "$TMP/dumb.out" && grep -q "^hprof: profiled " "$TMP/dumb.out"'
	on_terminal "$TMP/quiet_tty.out" --quiet --time 60000 --folded "$TMP/quiet_tty.folded" -- "$WL/fp_chain" 2
	check "terminal: --quiet draws no status line and prints no summary ($(wc -c <"$TMP/quiet_tty.out") bytes)" \
		[ ! -s "$TMP/quiet_tty.out" -a -s "$TMP/quiet_tty.folded" ]
fi

# 2. stderr a pipe: no status line, the default summary, its figures the JSON's.
"$HPROF" --time 60000 --json "$TMP/pipe.json" --folded "$TMP/pipe.folded" -- "$WL/fp_chain" 2 \
	2>&1 >/dev/null | cat >"$TMP/pipe.err"
sed 's/^/# /' "$TMP/pipe.err"
check "pipe: no carriage return, no escape sequence, no status line" \
	eval '! controls "$TMP/pipe.err" && ! grep -Eq "^hprof: [0-9.]+ s( \(|,)" "$TMP/pipe.err"'
check "pipe: the default summary has at most 5 lines ($(summary_lines "$TMP/pipe.err"))" \
	[ "$(summary_lines "$TMP/pipe.err")" -le 5 ]
check "pipe: the default summary names no method (FP-complete and the like are -v's)" \
	eval '! grep -Eq "FP-complete|by method|mappings:" "$TMP/pipe.err"'
check "pipe: the summary says what ran, and where the outputs are" \
	eval 'grep -q "^hprof: profiled $WL/fp_chain for " "$TMP/pipe.err" &&
	      grep -qx "hprof: wrote $TMP/pipe.folded (folded stacks), $TMP/pipe.json (JSON summary)" "$TMP/pipe.err"'
python3 tests/summary_compare.py --brief "$TMP/pipe.json" "$TMP/pipe.err" >"$TMP/cmp.out"
rc=$?
check "pipe: the default summary's figures are the JSON's ($(grep -c '^ok' "$TMP/cmp.out") compared)" [ $rc -eq 0 ]
grep '^not ok' "$TMP/cmp.out" | sed 's/^/# /'

# Stacks cut short: the share complete and the reason for the others. A ring buffer too
# small for the stack copies: the samples lost, and why.
"$HPROF" --stack-size 1024 --json "$TMP/short_copy.json" --folded /dev/null \
	-- "$WL/nofp_recurse" 1 300 >/dev/null 2>"$TMP/short_copy.err"
sed 's/^/# /' "$TMP/short_copy.err"
python3 tests/summary_compare.py --brief "$TMP/short_copy.json" "$TMP/short_copy.err" >"$TMP/cmp.out"
rc=$?
check "1 KiB copies: the summary names copy too short as the reason, as the JSON counts ($(grep -c '^ok' "$TMP/cmp.out") compared)" \
	eval '[ $rc -eq 0 ] && grep -Eq "^hprof: [0-9]+ of [0-9]+ user stacks complete \([0-9.]+%\); the others: copy too short [0-9]+" "$TMP/short_copy.err"'
grep '^not ok' "$TMP/cmp.out" | sed 's/^/# /'
"$HPROF" --ring-size 4096 -F 499 --json "$TMP/ring.json" --folded /dev/null \
	-- "$WL/nofp_recurse" 1 >/dev/null 2>"$TMP/ring.err"
sed 's/^/# /' "$TMP/ring.err"
python3 tests/summary_compare.py --brief "$TMP/ring.json" "$TMP/ring.err" >"$TMP/cmp.out"
rc=$?
check "ring buffer overflow: one line says how many samples were lost and why, as the JSON counts" \
	eval '[ $rc -eq 0 ] && grep -Eq "^hprof: lost [0-9]+ samples? \(ring buffer full [0-9]+" "$TMP/ring.err"'
grep '^not ok' "$TMP/cmp.out" | sed 's/^/# /'
check "ring buffer overflow: at most 5 lines ($(summary_lines "$TMP/ring.err"))" \
	[ "$(summary_lines "$TMP/ring.err")" -le 5 ]

# 3. -v: every figure, as the JSON has them; the JSON the same whatever the text.
"$HPROF" -v --raw "$TMP/v.raw" --json "$TMP/v.json" --folded "$TMP/v.folded" -- "$WL/fp_chain" 1 \
	>/dev/null 2>"$TMP/v.err"
check "-v: the detailed lines" eval 'grep -q "^hprof: FP-complete: " "$TMP/v.err" &&
	grep -q "^hprof: user stacks by method: " "$TMP/v.err" && grep -q "^hprof: lost samples: " "$TMP/v.err" &&
	grep -q "^hprof: lost frames: " "$TMP/v.err" && grep -q "^hprof: mappings: " "$TMP/v.err" &&
	grep -q "^hprof: wrote JSON summary to $TMP/v.json$" "$TMP/v.err"'
python3 tests/summary_compare.py "$TMP/v.json" "$TMP/v.err" >"$TMP/cmp.out"
rc=$?
check "-v: every figure is the JSON's ($(grep -c '^ok' "$TMP/cmp.out") compared)" [ $rc -eq 0 ]
grep '^not ok' "$TMP/cmp.out" | sed 's/^/# /'
check "json: the same keys with -v as without" cmp -s <(json_keys "$TMP/v.json") <(json_keys "$TMP/pipe.json")

# 4. --quiet: nothing on stderr when all goes well, the outputs all the same; errors still.
"$HPROF" --quiet --json "$TMP/q.json" --folded "$TMP/q.folded" -- "$WL/fp_chain" 1 >/dev/null 2>"$TMP/q.err"
rc=$?
check "--quiet: exit 0, nothing on stderr ($(wc -c <"$TMP/q.err") bytes), the outputs written" \
	[ "$rc" -eq 0 -a ! -s "$TMP/q.err" -a -s "$TMP/q.folded" ]
check "json: the same keys with --quiet" cmp -s <(json_keys "$TMP/q.json") <(json_keys "$TMP/pipe.json")
"$HPROF" -q --no-such-option >/dev/null 2>"$TMP/q_usage.err"
rc=$?
check "-q: a bad option is still an error, exit 2 ($(cat "$TMP/q_usage.err"))" \
	eval '[ $rc -eq 2 ] && grep -q "^hprof: unknown option" "$TMP/q_usage.err"'
"$HPROF" --quiet --svg "$TMP/no/such/dir/out.svg" -- "$WL/fp_chain" 0.1 >/dev/null 2>"$TMP/q_fail.err"
rc=$?
check "--quiet: an output that cannot be written is still an error, exit 1 ($(cat "$TMP/q_fail.err"))" \
	eval '[ $rc -eq 1 ] && grep -q "^hprof: cannot write $TMP/no/such/dir/out.svg" "$TMP/q_fail.err"'

# 5. hprof report: the same three levels for the summary of a replayed capture.
"$HPROF" report "$TMP/v.raw" --json "$TMP/r.json" --folded /dev/null 2>"$TMP/r.err"
sed 's/^/# /' "$TMP/r.err"
python3 tests/summary_compare.py --brief "$TMP/r.json" "$TMP/r.err" >"$TMP/cmp.out"
rc=$?
check "report: at most 5 lines ($(summary_lines "$TMP/r.err")), the figures the JSON's ($(grep -c '^ok' "$TMP/cmp.out") compared)" \
	eval '[ $rc -eq 0 ] && [ "$(summary_lines "$TMP/r.err")" -le 5 ] && grep -q "^hprof: replayed $TMP/v.raw" "$TMP/r.err"'
grep '^not ok' "$TMP/cmp.out" | sed 's/^/# /'
"$HPROF" report -v "$TMP/v.raw" --json "$TMP/rv.json" --folded /dev/null 2>"$TMP/rv.err"
python3 tests/summary_compare.py "$TMP/rv.json" "$TMP/rv.err" >"$TMP/cmp.out"
rc=$?
check "report -v: every figure is the JSON's ($(grep -c '^ok' "$TMP/cmp.out") compared)" [ $rc -eq 0 ]
grep '^not ok' "$TMP/cmp.out" | sed 's/^/# /'
check "report: the JSON the same with -v as without" cmp -s <(json_keys "$TMP/r.json") <(json_keys "$TMP/rv.json")
"$HPROF" report --quiet "$TMP/v.raw" --folded /dev/null 2>"$TMP/rq.err"
rc=$?
check "report --quiet: exit 0, nothing on stderr ($(wc -c <"$TMP/rq.err") bytes)" [ "$rc" -eq 0 -a ! -s "$TMP/rq.err" ]
