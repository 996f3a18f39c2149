#!/usr/bin/env bash
# JIT names that arrive after the samples they name: V8's jitdump (node --perf-prof), whose
# records may be written after the code first ran, HotSpot's perf map written only at exit
# (-XX:+DumpPerfMapAtExit) and CPython 3.13's buffered jitdump (-X perf_jit). A JIT frame
# is named provisionally while its process lives and for good at its exit or the run's end:
# at least 99% of the samples in JIT code must carry the JIT's names, not [jit]. (fp_jit's
# map written at exit is in t_jit.sh.)
source "$(dirname "$0")/lib.sh"
require_bpf "late JIT names"

JAVA_PID_FILE=$TMP/java.pid
cleanup() {
	# only the map this test's HotSpot wrote: other runs' maps are theirs
	if [ -s "$JAVA_PID_FILE" ]; then rm -f "/tmp/perf-$(cat "$JAVA_PID_FILE").map"; fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# leaves FILE COMM: "count name" for COMM's samples by their innermost user frame.
leaves() {
	awk -v comm="$2" '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		if (f[1] != comm) next
		while (k > 1 && f[k] ~ /_\[k\]$/) k--
		print n, f[k] }' "$1"
}

# jit_named FILE COMM JITRE: "named/total" over COMM's samples whose leaf is JIT code: a
# name matching the extended regex JITRE (the JIT's own names), or [jit].
jit_named() {
	leaves "$1" "$2" | awk -v re="$3" '{ n = $1; $1 = ""; sub(/^ /, "")
		if ($0 ~ re) { named += n; total += n } else if ($0 ~ /^\[jit\]$|^\[anon:/) total += n }
		END { printf "%d/%d\n", named, total }'
}

if command -v node >/dev/null; then
	cat >"$TMP/hot.js" <<'EOF'
function inner(n) { let s = 0; for (let i = 0; i < n; i++) s = (s * 31 + i) | 0; return s; }
function outer() { let t = 0; for (let k = 0; k < 200; k++) t ^= inner(20000); return t; }
const end = Date.now() + 2000; let x = 0; while (Date.now() < end) x ^= outer();
console.log(x);
EOF
	# node writes its jit-PID.dump into its working directory: $TMP
	(cd "$TMP" && timeout 120 "$OLDPWD/$HPROF" -F 499 --folded "$TMP/node.folded" -- \
		node --perf-prof "$TMP/hot.js" >/dev/null 2>"$TMP/node.err")
	share=$(jit_named "$TMP/node.folded" node '^(JS|Builtin|Stub|BytecodeHandler|RegExp):')
	leaves "$TMP/node.folded" node | sort -rn | head -3 | cut -c1-200 | sed 's/^/#   /'
	check "node --perf-prof: >= 99% of the samples in JIT code named from its jitdump ($share)" \
		eval '[ "${share#*/}" -ge 50 ] && at_least 99 "$share"'
else
	skip "node --perf-prof" "no node (Debian's nodejs)"
fi

if command -v java >/dev/null && command -v javac >/dev/null &&
	javac -d "$TMP" tests/workloads/java/Work.java 2>"$TMP/javac.err"; then
	timeout 120 "$HPROF" -F 499 --folded "$TMP/java.folded" -- bash -c \
		'echo $$ >"$1"; exec java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp "$2" Work 2' \
		sh "$JAVA_PID_FILE" "$TMP" >/dev/null 2>"$TMP/java.err"
	# HotSpot's names for the program's methods ("int Work.fib(int)") and its interpreter
	share=$(jit_named "$TMP/java.folded" java 'Work\.|^Interpreter$')
	leaves "$TMP/java.folded" java | sort -rn | head -3 | cut -c1-200 | sed 's/^/#   /'
	check "HotSpot -XX:+DumpPerfMapAtExit: >= 99% of the samples in JIT code named from the map written at exit ($share)" \
		eval '[ "${share#*/}" -ge 50 ] && at_least 99 "$share"'
	check "HotSpot: Work.fib named, written only at exit" grep -q 'Work\.fib' "$TMP/java.folded"
else
	skip "HotSpot -XX:+DumpPerfMapAtExit" "no java and javac (Debian's default-jdk)"
fi

# CPython 3.13's -X perf_jit: its trampolines are named from the jitdump records it buffers.
# With --python native the interpreter's frames stay, each trampoline (py::...) among them.
py313=$(cpythons | grep 'python3\.13$' | head -1)
if [ -n "$py313" ]; then
	printf '%s\n' 'import time' 'def inner(n):' '    s = 0' '    for i in range(n):' \
		'        s = (s * 31 + i) & 0xffffffff' '    return s' 'end = time.time() + 2' \
		'x = 0' 'while time.time() < end:' '    x ^= inner(2000)' 'print(x)' >"$TMP/hot.py"
	# it writes /tmp/jit-PID.dump, PID the shell's that execs it: removed once read
	timeout 120 "$HPROF" -F 499 --python native --folded "$TMP/py.folded" -- bash -c \
		'echo $$ >"$1"; exec "$2" -X perf_jit "$3"' sh "$TMP/py.pid" "$py313" "$TMP/hot.py" \
		>/dev/null 2>"$TMP/py.err"
	if [ -s "$TMP/py.pid" ]; then rm -f "/tmp/jit-$(cat "$TMP/py.pid").dump"; fi
	share=$(awk '{ n = $NF; sub(/ [0-9]+$/, ""); if ($0 ~ /\[jit\]|\[anon:/) total += n
		else if ($0 ~ /;py::/) { named += n; total += n } }
		END { printf "%d/%d\n", named, total }' "$TMP/py.folded")
	check "CPython -X perf_jit: >= 99% of the samples through its trampolines named ($share)" \
		eval '[ "${share#*/}" -ge 50 ] && at_least 99 "$share"'
else
	skip "CPython -X perf_jit" "no CPython 3.13"
fi
