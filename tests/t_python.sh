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
	"$HPROF" -F 999 --folded "$out.folded" -- "$py" "$WORKLOAD" "$out.chains" 5 "$out.ready" \
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
	share=$(share_of_python "$out.err")
	check "python $name: Python frames in >= 97% of samples ($share)" \
		awk -v s="$share" 'BEGIN { split(s, p, "/"); exit !(p[2] > 0 && p[1] >= 0.97 * p[2]) }'
	grep 'Python frames' "$out.err"
done

# --python off: no Python frame, the evaluator's native frames instead
py=${pythons[0]}
comm=$(basename "$py")
"$HPROF" -F 499 --python off --folded "$TMP/off.folded" -- "$py" "$WORKLOAD" "$TMP/off.chains" 1 \
	"$TMP/off.ready" >/dev/null 2>"$TMP/off.err"
check "python off: no Python frame, the evaluator's instead" \
	bash -c "! grep -q 'chain\.spin' '$TMP/off.folded' && grep -q '_PyEval_EvalFrameDefault' '$TMP/off.folded' && ! grep -q 'Python frames' '$TMP/off.err'"
check "python: --python takes on, native or off" \
	bash -c "! '$HPROF' --python maybe --time 10 2>'$TMP/bad.err' && grep -q -- '--python takes on, native or off' '$TMP/bad.err'"
