#!/usr/bin/env bash
# hprof stack of a CPython process: each thread's Python frames in place of the evaluator's
# native ones, as a recording has them. For Debian's python3.11 and every pyenv CPython
# 3.8-3.13 present, tests/workloads/python/blocked.py blocks two threads in known chains,
# which it writes down itself (sys._getframe): the Python frames hprof prints for each
# thread, names and lines, must be that chain. --python native keeps the interpreter's
# frames, --python off prints native frames only. For Debian's python3.11, against gdb
# (python3.11-dbg's py-bt): the same Python functions and lines, frame for frame, and
# hprof's native frames among gdb's, in order, named alike.
source "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "python stack" "not root (ptrace of other processes needs it here)"
	exit 0
fi

WORKLOAD=tests/workloads/python/blocked.py
mapfile -t pythons < <(cpythons)
if [ ${#pythons[@]} -eq 0 ]; then
	skip "python stack" "no CPython 3.8-3.13 installed"
	exit 0
fi

pids=()
cleanup_workloads() {
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup_workloads EXIT

state() { awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null; }

# stopped PID: SIGSTOP sent, until the process is in its group-stop (a bounded wait on
# /proc, no sleep: the stop takes effect at once).
stopped() {
	local i
	for ((i = 0; i < 200000; i++)); do
		[ "$(state "$1")" = T ] && return 0
	done
	return 1
}

# python_chains STACK: each thread's Python frames hprof printed, as blocked.py writes its
# chains: "TID module.function:line;..." outermost first, sorted by TID.
python_chains() {
	awk '/^Thread [0-9]+ / { if (tid != "") print tid, chain; tid = $2; chain = ""; next }
	     /^#[0-9]+ +[^0 ].* \(.*:[0-9]+\)$/ { line = $NF; sub(/.*:/, "", line); sub(/\)$/, "", line)
	             chain = $2 ":" line (chain == "" ? "" : ";" chain) }
	     END { if (tid != "") print tid, chain }' "$1" | awk '$2 != ""' | sort
}

# native_frames STACK: hprof's native frames as "TID PC NAME" lines.
native_frames() {
	awk '/^Thread [0-9]+ / { tid = $2; next }
	     /^#[0-9]+ +0x/ { name = $0; sub(/^#[0-9]+ +0x[0-9a-f]+ /, "", name)
	                      sub(/ \([^()]*\)$/, "", name); print tid, $2, name }' "$1"
}

# gdb's py-bt of each thread ("TID py function:line;..." outermost first, function as
# co_name), and whether hprof's native frames (HPROF_NATIVE) are among gdb's frames found
# on the stack (not inlined ones), in order, named by the same ELF symbol or an alias of
# it ("TID native N same", or what differs).
cat >"$TMP/gdb_check.py" <<'EOF'
import gdb, os, re, sys

sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
from gdb_symbols import address, symbol

gdb.execute("set backtrace past-main on")
FILE = re.compile(r'^\s*File "(.*)", line (\d+), in (\S+)$')
SUFFIX = re.compile(r"(\.(part|isra|constprop|cold|lto_priv)(\.[0-9]+)?)+$")

hprof = {}
with open(os.environ["HPROF_NATIVE"]) as f:
    for line in f:
        tid, pc, name = line.rstrip("\n").split(" ", 2)
        hprof.setdefault(int(tid), []).append((int(pc, 16), name))

with open(os.environ["GDB_OUT"], "w") as out:
    for th in sorted(gdb.selected_inferior().threads(), key=lambda t: t.ptid[1]):
        th.switch()
        tid = th.ptid[1]
        try:
            text = gdb.execute("py-bt", to_string=True)
        except gdb.error as e:
            text = ""
            out.write("%d error %s\n" % (tid, e))
        py = [m.group(3) + ":" + m.group(2) for m in map(FILE.match, text.splitlines()) if m]
        out.write("%d py %s\n" % (tid, ";".join(reversed(py))))
        frames, f, exact = [], gdb.newest_frame(), True
        while f is not None:
            if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
                sigtramp = f.type() == gdb.SIGTRAMP_FRAME
                frames.append((f.pc(), symbol(f.pc() if exact or sigtramp else f.pc() - 1)))
                exact = sigtramp
            f = f.older()
        bad, j = [], 0
        for pc, name in hprof.get(tid, []):
            while j < len(frames) and frames[j][0] != pc:
                j += 1
            if j == len(frames):
                bad.append("0x%x %s: not among gdb's frames (after the ones before it)" % (pc, name))
                break
            sym, start = frames[j][1]
            unnamed = sym == "??" or re.search(r"\+0x[0-9a-f]+$", name)
            if not unnamed and SUFFIX.sub("", sym) != SUFFIX.sub("", name) and address(name) != start:
                bad.append("0x%x: hprof %s, gdb %s" % (pc, name, sym))
            j += 1
        out.write("%d native %d %s\n" % (tid, len(hprof.get(tid, [])), "; ".join(bad) or "same"))
EOF

for py in "${pythons[@]}"; do
	name=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	out="$TMP/$name"
	[ "$py" = /usr/bin/python3.11 ] && name="$name (Debian)" && out="$out-debian"
	mkdir -p "$out.fifo"
	mkfifo "$out.fifo/main" "$out.fifo/worker"
	# held open read-write: the workload's opens do not wait, and the test reads with a
	# timeout rather than hanging on a workload that failed
	exec 3<>"$out.fifo/main" 4<>"$out.fifo/worker"
	"$py" "$WORKLOAD" "$out.chains" "$out.fifo" 2>"$out.err" &
	pid=$!
	pids+=("$pid")
	if ! read -r -t 60 -N 1 -u 3 _ || ! read -r -t 60 -N 1 -u 4 _; then
		fail "python $name: the workload's threads blocked where they should"
		sed 's/^/# /' "$out.err" | tail -5
		exec 3>&- 4>&-
		continue
	fi
	sort "$out.chains" >"$out.want"
	kill -STOP "$pid"
	if ! stopped "$pid"; then
		fail "python $name: stops on SIGSTOP"
		exec 3>&- 4>&-
		continue
	fi

	"$HPROF" stack --no-inline --no-lines "$pid" >"$out.stack" 2>"$out.stack.err"
	rc=$?
	check "python $name: hprof stack exits 0 ($rc)" [ "$rc" -eq 0 ]
	sed 's/^/# stderr: /' "$out.stack.err"
	check "python $name: a stopped process stays stopped" [ "$(state "$pid")" = T ]
	python_chains "$out.stack" >"$out.got"
	if [ "$(wc -l <"$out.want")" -eq 2 ] && diff "$out.want" "$out.got" >"$out.diff"; then
		ok "python $name: each thread's Python frames are the chain it recorded, names and lines"
	else
		fail "python $name: each thread's Python frames are the chain it recorded, names and lines"
		sed 's/^/# /' "$out.diff"
		sed 's/^/# /' "$out.stack" | head -60
	fi
	check "python $name: native frames kept around them" \
		grep -qE '^#[0-9]+ +0x[0-9a-f]+ .*write' "$out.stack"
	check "python $name: no evaluator frame left" bash -c "! grep -q _PyEval_EvalFrameDefault '$out.stack'"

	# inline frames and source lines, on by default, change neither the Python frames nor
	# their lines (the checks here and against gdb compare frames without them)
	"$HPROF" stack "$pid" >"$out.inline" 2>/dev/null
	python_chains "$out.inline" >"$out.inline.got"
	check "python $name: with inline frames and source lines, the same Python frames" \
		cmp -s "$out.want" "$out.inline.got"

	"$HPROF" stack --no-inline --no-lines --python native "$pid" >"$out.native" 2>/dev/null
	python_chains "$out.native" >"$out.native.got"
	on=$(grep -c '^#[0-9]* *0x' "$out.stack")
	native=$(grep -c '^#[0-9]* *0x' "$out.native")
	check "python $name: --python native: the same Python frames, the interpreter's frames kept ($on -> $native native frames)" \
		bash -c "cmp -s '$out.want' '$out.native.got' && [ $native -gt $on ]"
	"$HPROF" stack --no-inline --no-lines --python off "$pid" >"$out.off" 2>/dev/null
	check "python $name: --python off: no Python frame, the evaluator's instead" \
		bash -c "! grep -qE '^#[0-9]+ +[^0 ]' '$out.off' && grep -q _PyEval_EvalFrameDefault '$out.off'"

	# gdb reads the release binary's frames through python3.11-dbg's extension
	gdbext=/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py
	if [ "$py" = /usr/bin/python3.11 ] && ! command -v gdb >/dev/null; then
		skip "python $name: against gdb" "gdb not installed (scripts/install-deps.sh installs it)"
	elif [ "$py" = /usr/bin/python3.11 ] && [ ! -r "$gdbext" ]; then
		skip "python $name: against gdb" "no $gdbext (python3.11-dbg; scripts/install-deps.sh installs it)"
	elif [ "$py" = /usr/bin/python3.11 ]; then
		native_frames "$out.stack" >"$out.hprof_native"
		HPROF_NATIVE="$out.hprof_native" GDB_OUT="$out.gdb" timeout 120 gdb -nx -batch -p "$pid" \
			-iex 'set debuginfod enabled off' -iex 'set auto-load safe-path /' \
			-x "$TMP/gdb_check.py" >"$out.gdb.log" 2>&1
		# hprof's function as gdb names it: co_name, the last part of the qualified name
		awk '{ n = split($2, f, ";"); s = ""
		       for (i = 1; i <= n; i++) { sub(/.*\./, "", f[i]); s = s (i > 1 ? ";" : "") f[i] }
		       print $1, s }' "$out.got" >"$out.got.short"
		awk '$2 == "py" && $3 != "" { print $1, $3 }' "$out.gdb" | sort >"$out.gdb.py"
		if [ -s "$out.gdb.py" ] && diff "$out.gdb.py" "$out.got.short" >"$out.gdb.diff"; then
			ok "python $name: the Python frames of gdb's py-bt, function and line, frame for frame"
		else
			fail "python $name: the Python frames of gdb's py-bt, function and line, frame for frame"
			sed 's/^/# /' "$out.gdb.diff" "$out.gdb" | head -20
			grep -v '^\[' "$out.gdb.log" | sed 's/^/# gdb: /' | tail -5
		fi
		threads=$(awk '$2 == "native"' "$out.gdb" | wc -l)
		same=$(awk '$2 == "native" && $3 > 0 && $4 == "same"' "$out.gdb" | wc -l)
		if [ "$threads" -eq 2 ] && [ "$same" -eq 2 ]; then
			ok "python $name: hprof's native frames among gdb's, in order, named alike"
		else
			fail "python $name: hprof's native frames among gdb's, in order, named alike ($same of $threads threads)"
			grep ' native ' "$out.gdb" | sed 's/^/# /'
		fi
	fi
	exec 3>&- 4>&-
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
done

check "python stack: --python takes on, native or off" \
	bash -c "! '$HPROF' stack --python maybe 1 2>'$TMP/bad.err' && grep -q -- '--python takes on, native or off' '$TMP/bad.err'"
