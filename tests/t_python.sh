#!/usr/bin/env bash
# CPython frames read at sample time (kernel/python.bpf.h, user/python/): for Debian's
# python3 and every pyenv CPython 3.8-3.13 present, tests/workloads/python/chain.py's
# stacks must hold exactly the chains the program recorded of itself (tests/python_chains.py),
# and nearly every sample of it Python frames.
source "$(dirname "$0")/lib.sh"

if ! bpf_available 2>"$TMP/why"; then
	skip "python frames" "$(cat "$TMP/why")"
	exit 0
fi

WORKLOAD=tests/workloads/python/chain.py
mapfile -t pythons < <(cpythons)
[ ${#pythons[@]} -gt 0 ] || skip "python frames" "no CPython 3.8-3.13 installed"

# share_of_python ERR: "with/total" from the summary's line of Python frames.
share_of_python() {
	sed -n 's/^hprof: Python frames in \([0-9]*\) of \([0-9]*\) samples.*/\1\/\2/p' "$1"
}

for py in "${pythons[@]}"; do
	name=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	[ "$py" = /usr/bin/python3.11 ] && name="$name (Debian)"
	comm=$(basename "$py")
	out="$TMP/$comm-${name%% *}"
	# 4999 Hz for 7 s: over 10,000 samples of each version judged (issue 34), with room
	# for a loaded machine (9,400 in 5 s beside a fuzzer)
	"$HPROF" -F 4999 --folded "$out.folded" -- "$py" "$WORKLOAD" "$out.chains" 7 "$out.ready" \
		>/dev/null 2>"$out.err"
	if [ ! -s "$out.chains" ]; then
		fail "python $name: the workload ran"
		tail -5 "$out.err"
		continue
	fi
	if python3 tests/python_chains.py "$out.folded" "$out.chains" "$comm" >"$out.check"; then
		ok "python $name: every stack through a leaf holds its recorded chain ($(head -1 "$out.check"))"
	else
		fail "python $name: every stack through a leaf holds its recorded chain"
		cat "$out.check"
	fi
	judged=$(sed -n 's/^judged \([0-9]*\) .*/\1/p' "$out.check")
	check "python $name: >= 10,000 samples judged (${judged:-none})" test "${judged:-0}" -ge 10000
	share=$(share_of_python "$out.err")
	check "python $name: Python frames in >= 97% of samples ($share)" \
		awk -v s="$share" 'BEGIN { split(s, p, "/"); exit !(p[2] > 0 && p[1] >= 0.97 * p[2]) }'
	grep 'Python frames' "$out.err"
done

# Python frames in each output, one CPython: pprof (a location per line, in its function's
# body, the file of its code), --top, the SVG (greens, the file in tooltips), the JSON
# summary, hprof diff of the pprof. pprof turns keying by name off (record.c): two runs.
py=${pythons[0]}
out="$TMP/outputs"
"$HPROF" -F 999 --pprof "$out.pb.gz" -- "$py" "$WORKLOAD" "$out.a.chains" 1.5 "$out.a.ready" \
	>/dev/null 2>"$out.a.err"
"$HPROF" -F 999 --svg "$out.svg" --json "$out.json" --folded "$out.folded" --top 5 -- \
	"$py" "$WORKLOAD" "$out.b.chains" 1.5 "$out.b.ready" >"$out.top" 2>"$out.b.err"
if python3 tests/python_outputs.py pprof "$out.pb.gz" "$WORKLOAD" >"$out.check"; then
	ok "python outputs: pprof locations per line, in their function's body and file ($(head -1 "$out.check"))"
else
	fail "python outputs: pprof locations per line, in their function's body and file"
	cat "$out.check"
fi
if command -v go >/dev/null; then
	check "python outputs: go tool pprof -lines shows chain.spin at chain.py:LINE" \
		bash -c "go tool pprof -lines -top '$out.pb.gz' 2>/dev/null | grep -Eq ' chain\.spin [^ ]*/chain\.py:[0-9]+\$'"
fi
if python3 tests/python_outputs.py svg "$out.svg" >"$out.check"; then
	ok "python outputs: SVG Python frames green, chain.spin's tooltip names its file ($(head -1 "$out.check"))"
else
	fail "python outputs: SVG Python frames green, chain.spin's tooltip names its file"
	cat "$out.check"
fi
check "python outputs: --top counts chain.spin, module [python]" \
	grep -Eq '^ *[0-9.]+% +[0-9.]+% +[0-9]+ +\[python\] +chain\.spin$' "$out.top"
check "python outputs: the JSON summary's top_self names chain.spin" \
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1]));
sys.exit(not any(f["function"] == "chain.spin" for f in d["top_self"]))' "$out.json"
check "python outputs: hprof diff of the pprof and the folded stacks names chain.spin" \
	bash -c "'$HPROF' diff '$out.pb.gz' '$out.folded' 2>&1 | grep -q ' chain\.spin\$'"

# hprof serve reads Python frames too: a window of a running chain.py names chain.spin. The
# program runs until a window has it (or 60 s): a loaded machine starts serve later.
"$py" "$WORKLOAD" "$out.s.chains" 60 "$out.s.ready" >/dev/null 2>&1 &
py_pid=$!
for ((i = 0; i < 1200; i++)); do [ -s "$out.s.ready" ] && break; sleep 0.05; done
mkdir -p "$TMP/serve"
"$HPROF" serve -F 499 --listen 127.0.0.1:0 -p "$py_pid" --every 1s --folded "$TMP/serve/w.folded" \
	>/dev/null 2>"$out.s.err" &
serve_pid=$!
serve_named() { cat "$TMP"/serve/w.*.folded 2>/dev/null | grep -q ';chain\.spin[; ]'; }
for ((i = 0; i < 1200; i++)); do serve_named && break; sleep 0.05; done
kill -TERM "$py_pid" 2>/dev/null
wait "$py_pid" 2>/dev/null
kill -TERM "$serve_pid"
wait "$serve_pid"
check "python outputs: hprof serve's windows name chain.spin" serve_named

# --python off: no Python frame, the evaluator's native frames instead
py=${pythons[0]}
comm=$(basename "$py")
"$HPROF" -F 499 --python off --folded "$TMP/off.folded" -- "$py" "$WORKLOAD" "$TMP/off.chains" 1 \
	"$TMP/off.ready" >/dev/null 2>"$TMP/off.err"
check "python off: no Python frame, the evaluator's instead" \
	bash -c "! grep -q 'chain\.spin' '$TMP/off.folded' && grep -q '_PyEval_EvalFrameDefault' '$TMP/off.folded' && ! grep -q 'Python frames' '$TMP/off.err'"
check "python: --python takes on, native or off" \
	bash -c "! '$HPROF' --python maybe --time 10 2>'$TMP/bad.err' && grep -q -- '--python takes on, native or off' '$TMP/bad.err'"

# Shares against the program's own sampler (a thread reading sys._current_frames() every
# millisecond): light, medium and heavy's shares of the main thread's time within 2 points.
"$HPROF" -F 999 --folded "$TMP/shares.folded" -- "$py" tests/workloads/python/shares.py \
	"$TMP/shares.own" 5 >/dev/null 2>"$TMP/shares.err"
awk -v own="$TMP/shares.own" '
	FILENAME == own { mine[$1] = $2; mine_total += $2; next }
	{ count = $NF; for (f in mine) if ($0 ~ ("[;]shares[.]" f "[; ]")) { seen[f] += count; total += count } }
	END {
		worst = 0
		for (f in mine) {
			d = 100 * seen[f] / (total ? total : 1) - 100 * mine[f] / (mine_total ? mine_total : 1)
			if (d < 0) d = -d
			if (d > worst) worst = d
			printf "%s hprof %d/%d own %d/%d\n", f, seen[f], total, mine[f], mine_total
		}
		printf "worst %.1f\n", worst
		exit !(total >= 1000 && mine_total >= 1000 && worst <= 2)
	}' "$TMP/shares.own" "$TMP/shares.folded" >"$TMP/shares.cmp"
shares_rc=$?
check "python: shares within 2 points of the program's own sampler, over >= 1000 samples each ($(paste -sd' ' "$TMP/shares.cmp"))" \
	test "$shares_rc" -eq 0

# A --raw capture keeps what was read of the processes: hprof report names the same Python
# frames, with no process to read (the recorded one is gone; its pid may be another's).
"$HPROF" -F 499 --raw "$TMP/py.raw" --folded "$TMP/py_rec.folded" -- "$py" "$WORKLOAD" \
	"$TMP/raw.chains" 2 "$TMP/raw.ready" >/dev/null 2>"$TMP/py_rec.err"
"$HPROF" report "$TMP/py.raw" --folded "$TMP/py_rep.folded" >/dev/null 2>"$TMP/py_rep.err"
check "python: hprof report of a capture gives the recording's stacks, Python frames and all ($(grep -c 'chain\.spin' "$TMP/py_rep.folded") stacks through chain.spin)" \
	bash -c "cmp -s '$TMP/py_rec.folded' '$TMP/py_rep.folded' && grep -q 'chain\.spin' '$TMP/py_rep.folded'"
