#!/usr/bin/env bash
# CPython frames from hostile processes (kernel/python.bpf.h, user/python/): whatever a
# process that passes for CPython holds, hprof must not crash or hang, must keep the native
# stacks of the samples it cannot read and count why, and must never show a Python frame it
# did not read from a real code object.
# 1. tests/workloads/python_fake.c (pyfake_311, pyfake_312): _PyRuntime, PyCode_Type and
#    Py_Version claiming 3.11 / 3.12, its interpreter, thread list, frame chain and code
#    objects garbage, looping or unmapped, the thread spinning in its own
#    _PyEval_EvalFrameDefault: no Python frame, every such sample with its evaluator frame,
#    and the summary's reasons.
# 2. CPythons with frames made and freed all the time (tests/workloads/python/churn.py):
#    every Python frame shown is one the program has, in the order it calls them
#    (tests/python_churn.py).
# 3. CPythons hprof does not know: the fake claiming 3.99, the fake (no Py_Version) run as
#    python3.7, pyenv's real 3.7: native stacks, counted as "unknown version".
source "$(dirname "$0")/lib.sh"
require_bpf "python hostile"

# python_line ERR: the summary's line of Python frames.
python_line() { grep '^hprof: Python frames in ' "$1"; }
# python_share ERR: "with/total" from it.
python_share() { sed -n 's/^hprof: Python frames in \([0-9]*\) of \([0-9]*\) samples.*/\1\/\2/p' "$1"; }

# profile OUT CMD...: hprof on CMD, bounded (a hang fails), folded to OUT.folded, stderr to
# OUT.err; its exit status in OUT.rc.
profile() {
	local out=$1; shift
	timeout -k 5 120 "$HPROF" -F 999 --folded "$out.folded" -- "$@" >"$out.out" 2>"$out.err"
	echo $? >"$out.rc"
}

# evaluator_kept FOLDED COMM: every stack of COMM through phase_run (the fake's caller of
# its evaluator) still holds _PyEval_EvalFrameDefault right under it; prints "kept/total".
evaluator_kept() {
	awk -v comm="$2" '
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
		  split(stack, f, ";"); if (f[1] != comm || stack !~ /;phase_run;/) next
		  total += count; if (stack ~ /;phase_run;_PyEval_EvalFrameDefault(;|$)/) kept += count }
		END { printf "%d/%d\n", kept, total }' "$1"
}

# 1. the fakes
for v in 311 312; do
	bin=$WL/pyfake_$v out=$TMP/fake$v
	comm=$(basename "$bin")
	profile "$out" "$bin" 0.4
	rc=$(cat "$out.rc")
	check "python fake $v: hprof exits 0, no hang (rc $rc)" test "$rc" = 0
	line=$(python_line "$out.err")
	echo "# $line"
	share=$(python_share "$out.err")
	check "python fake $v: Python frames in 0 of its samples ($share)" \
		awk -v s="$share" 'BEGIN { split(s, p, "/"); exit !(p[1] == 0 && p[2] > 100) }'
	for reason in "frames unreadable" "frame chain looped" "code object unreadable" \
		"thread unknown to the interpreter"; do
		check "python fake $v: counted as \"$reason\"" grep -q "[:,] $reason [1-9]" <<<"$line"
	done
	kept=$(evaluator_kept "$out.folded" "$comm")
	check "python fake $v: every sample in its evaluator keeps that native frame ($kept)" \
		awk -v s="$kept" 'BEGIN { split(s, p, "/"); exit !(p[2] > 100 && p[1] == p[2]) }'
	check "python fake $v: it ran to its end" grep -q '^idle ' "$out.out"
done

# 2. frames freed mid-walk
pythons=()
[ -x /usr/bin/python3.11 ] && pythons+=(/usr/bin/python3.11)
for minor in 8 9 10 11 12 13; do
	for py in /root/.pyenv/versions/3.$minor.*/bin/python3.$minor; do
		[ -x "$py" ] && pythons+=("$py")
	done
done
[ ${#pythons[@]} -gt 0 ] || skip "python churn" "no CPython 3.8-3.13 installed"
for py in "${pythons[@]}"; do
	name=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	[ "$py" = /usr/bin/python3.11 ] && name="$name-debian"
	out=$TMP/churn-$name
	profile "$out" "$py" tests/workloads/python/churn.py "$out.names" 2
	if [ "$(cat "$out.rc")" != 0 ] || [ ! -s "$out.names" ]; then
		fail "python churn $name: hprof and the program ran (rc $(cat "$out.rc"))"
		tail -3 "$out.err"
		continue
	fi
	if python3 tests/python_churn.py "$out.folded" "$out.names" "$(basename "$py")" >"$out.check"; then
		ok "python churn $name: every Python frame one the program has, in its order ($(head -1 "$out.check"))"
	else
		fail "python churn $name: every Python frame one the program has, in its order"
		cat "$out.check"
	fi
	echo "# $(python_line "$out.err")"
done

# 3. versions hprof does not know
unknown_version() {
	local label=$1 comm=$2 out=$TMP/unknown-$1; shift 2
	profile "$out" "$@"
	local line share
	line=$(python_line "$out.err")
	share=$(python_share "$out.err")
	echo "# $line"
	check "python $label: hprof exits 0 (rc $(cat "$out.rc"))" test "$(cat "$out.rc")" = 0
	check "python $label: no Python frame, every sample \"unknown version\" ($share)" \
		awk -v s="$share" -v l="$line" 'BEGIN { split(s, p, "/")
			exit !(p[1] == 0 && p[2] > 0 && l ~ ("the others: unknown version " p[2] "$")) }'
	check "python $label: native stacks (_PyEval_EvalFrameDefault)" \
		grep -q "^$comm;.*_PyEval_EvalFrameDefault" "$out.folded"
}
unknown_version "fake 3.99" pyfake_399 "$WL/pyfake_399" 0.2
cp "$WL/pyfake_noversion" "$TMP/python3.7"
unknown_version "fake python3.7" python3.7 "$TMP/python3.7" 0.2
for py in /root/.pyenv/versions/3.7.*/bin/python3.7; do
	[ -x "$py" ] || continue
	unknown_version "pyenv 3.7" python3.7 "$py" -c '
import time
def spin(end):
    while time.monotonic() < end:
        sum(i * i for i in range(1000))
spin(time.monotonic() + 1)'
done
