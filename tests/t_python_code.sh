#!/usr/bin/env bash
# hprof's CPython layouts and code object reader (user/python/) on live processes: every
# installed CPython 3.8-3.13 (pyenv's under /root/.pyenv/versions, Debian's python3.11) runs
# tests/workloads/python/codes.py, which prints what CPython says of some code objects and
# of its threads' stacks, then blocks on stdin; build/tools/pycode reads the same from
# outside (process_vm_readv): each code object's name, module, file, first line and the
# line of an instruction, and every thread's frames followed from _PyRuntime through the
# offsets the BPF program is given. A version not installed is skipped.
source "$(dirname "$0")/lib.sh"

PYCODE=${PYCODE:-build/tools/pycode}
PROG=tests/workloads/python/codes.py

if [ "$(id -u)" -ne 0 ]; then
	skip "python code" "not root: process_vm_readv of another process's memory"
	exit 0
fi

pythons=()
for v in 3.8 3.9 3.10 3.11 3.12 3.13; do
	bin=$(ls -d /root/.pyenv/versions/$v.*/bin/python$v 2>/dev/null | head -1)
	if [ -n "$bin" ]; then
		pythons+=("$v=$bin")
	else
		skip "python code $v" "no CPython $v under /root/.pyenv/versions"
	fi
done
if [ -x /usr/bin/python3.11 ]; then
	pythons+=("3.11=/usr/bin/python3.11")
else
	skip "python code 3.11 (Debian)" "no /usr/bin/python3.11"
fi

for entry in "${pythons[@]}"; do
	v=${entry%%=*} bin=${entry#*=}
	label="$v ($bin)"
	mkfifo "$TMP/in" "$TMP/out"
	"$bin" "$PROG" <"$TMP/in" >"$TMP/out" 2>"$TMP/err" &
	pid=$!
	exec 3>"$TMP/in" 4<"$TMP/out"
	: >"$TMP/said"
	while IFS= read -r line <&4; do
		[ "$line" = ready ] && break
		echo "$line" >>"$TMP/said"
	done
	if [ "$line" != ready ]; then
		fail "python code $label: the program never got ready: $(head -3 "$TMP/err")"
		exec 3>&- 4<&-
		wait "$pid"
		rm -f "$TMP/in" "$TMP/out"
		continue
	fi
	runtime=$(awk '$1 == "runtime" { print $2 }' "$TMP/said")
	codetype=$(awk '$1 == "codetype" { print $2 }' "$TMP/said")
	mapfile -t codes < <(awk '$1 == "code" { print $2 }' "$TMP/said")

	"$PYCODE" "$pid" "$v" "$runtime" "$codetype" code "${codes[@]}" "$codetype:0" \
		>"$TMP/read" 2>&1
	awk '$1 == "code" { sub(/:[0-9]+$/, "", $2); print }' "$TMP/said" >"$TMP/want"
	head -n "${#codes[@]}" "$TMP/read" >"$TMP/got"
	if diff "$TMP/want" "$TMP/got" >"$TMP/diff"; then
		ok "python code $label: ${#codes[@]} code objects read as CPython names them (qualname, module, file, first line, an instruction's line)"
	else
		fail "python code $label: code objects read unlike CPython: $(head -6 "$TMP/diff" | tr '\n' '|')"
	fi
	check "python code $label: a type object is not taken for a code object" \
		grep -qx "code $codetype error -22" "$TMP/read"

	"$PYCODE" "$pid" "$v" "$runtime" "$codetype" walk >"$TMP/walk" 2>&1
	# per thread: "ID name:line name name ..." (the innermost frame's line), and the
	# names of the entry frames
	awk '$1 == "thread" { if (t) print t s; t = $2; s = ""; n = 0; next }
	     $1 == "frame" { s = s (n++ ? " " $2 : " " $2 ":" $3) }
	     END { if (t) print t s }' "$TMP/walk" >"$TMP/stacks"
	want_main=$(awk '$1 == "thread" && $3 ~ /^waiter/ { $1 = ""; print substr($0, 2) }' "$TMP/said")
	main_id=${want_main%% *}
	got_main=$(awk -v id="$main_id" '$1 == id' "$TMP/stacks")
	check "python code $label: the main thread's frames followed from _PyRuntime: $got_main (CPython: $want_main)" \
		[ "$got_main" = "$want_main" ]
	worker_id=$(awk '$1 == "thread" && $3 == "worker_loop" { print $2 }' "$TMP/said")
	check "python code $label: the second thread's frames hold worker_loop" \
		grep -qE "^$worker_id .* ([A-Za-z.]*)?worker_loop( |$)" "$TMP/stacks"
	entries=$(awk -v id="$main_id" '$1 == "thread" { on = $2 == id; next }
		on && $1 == "frame" && $4 == "+" { printf "%s%s", n++ ? " " : "", $2 }' "$TMP/walk")
	case $v in
	3.8 | 3.9 | 3.10) want_entries="waiter outer <module>" ;;
	*) want_entries="<module>" ;;
	esac
	check "python code $label: entry frames of the main thread: $entries (want $want_entries)" \
		[ "$entries" = "$want_entries" ]

	echo >&3
	exec 3>&- 4<&-
	wait "$pid"
	rm -f "$TMP/in" "$TMP/out"
done
