#!/usr/bin/env bash
# hprof stack PID against gdb: on stopped workloads built without frame pointers, every
# thread's frames must be the ones gdb's backtrace finds, pc for pc and name for name.
# Also: a running process runs on afterwards, a stopped one stays stopped, and a pid that
# does not exist is a one-line error.
source "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "stack" "not root (ptrace of other processes needs it here)"
	exit 0
fi
if ! command -v gdb >/dev/null; then
	skip "stack" "gdb not installed (scripts/install-deps.sh installs it)"
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

# started PID THREADS: until PID runs its workload with THREADS threads and has had a tenth
# of a second of CPU (its threads are in their hot loops), at most a minute.
started() {
	local i wl
	wl=$(readlink -f "$WL")
	for ((i = 0; i < 1200; i++)); do
		case $(readlink "/proc/$1/exe" 2>/dev/null) in "$wl"/*) break ;; esac
		sleep 0.05
	done
	for ((; i < 1200; i++)); do
		[ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -ge "$2" ] && break
		sleep 0.05
	done
	ran_for "$1" $(($(ticks "$1") + 10))
}

ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# wait_state PID STATE: up to 5 s for the process to reach STATE.
wait_state() {
	for _ in $(seq 50); do
		[ "$(state "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# gdb's view of every thread as "TID PC NAME SYMBOL ALIAS" lines, innermost frame first:
# NAME is gdb's function (from debug info), SYMBOL the ELF symbol gdb finds at the pc
# looked up (pc-1 for a return address). One function often has several names (an alias
# like __libc_start_main for __libc_start_main_impl, __vdso_clock_gettime for
# clock_gettime), so ALIAS is hprof's name for the same frame when gdb places that name
# at SYMBOL's very address ("-" when not); hprof's name must be one of the three. GCC's
# clone suffixes (msort_with_tmp.part.0 is a part of msort_with_tmp) are dropped from
# hprof's name before comparing with NAME. Frames gdb makes up from debug info rather than
# finds on the stack (inlined calls, tail calls reconstructed from call-site records)
# are left out: no unwinder working from the stack alone can see them.
cat >"$TMP/frames.py" <<'EOF'
import gdb, os, sys

sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
from gdb_symbols import address, symbol

gdb.execute("set backtrace past-main on")
gdb.execute("set backtrace past-entry on")

hprof = {}
with open(os.environ["HPROF_FRAMES"]) as f:
    for line in f:
        tid, pc, name = line.rstrip("\n").split(" ", 2)
        hprof.setdefault(int(tid), []).append(name)

with open(os.environ["FRAMES_OUT"], "w") as out:
    for th in sorted(gdb.selected_inferior().threads(), key=lambda t: t.ptid[1]):
        th.switch()
        f = gdb.newest_frame()
        names = hprof.get(th.ptid[1], [])
        n = 0
        exact = True  # the innermost frame, or one a signal interrupted
        while f is not None:
            kind = f.type()
            if kind not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
                # __restore_rt starts right at the return address the handler got.
                sigtramp = kind == gdb.SIGTRAMP_FRAME
                sym, start = symbol(f.pc() if exact or sigtramp else f.pc() - 1)
                name = f.name() or "??"
                alias = names[n] if n < len(names) else "-"
                if start is None or address(alias) != start:
                    alias = "-"
                out.write("%d 0x%x %s %s %s\n" % (th.ptid[1], f.pc(), name, sym, alias))
                exact = sigtramp
                n += 1
            f = f.older()
EOF

# gdb_frames PID OUT HPROF_FRAMES
gdb_frames() {
	FRAMES_OUT="$2" HPROF_FRAMES="$3" timeout 120 gdb -nx -batch -p "$1" -iex 'set debuginfod enabled off' \
		-x "$TMP/frames.py" >"$2.log" 2>&1
}

# hprof stack's output as the same "TID PC NAME" lines.
hprof_frames() {
	awk '/^Thread [0-9]+ / { tid = $2; next }
	     /^#[0-9]+ / { name = $0; sub(/^#[0-9]+ +0x[0-9a-f]+ /, "", name)
	                   sub(/ \([^()]*\)$/, "", name)
	                   pc = $2; sub(/^0x0*/, "0x", pc); print tid, pc, name }' "$1"
}

# same_frames GDB HPROF: the same frames in the same order, hprof naming each by gdb's
# function, gdb's symbol or an alias gdb confirmed (a frame gdb cannot name either may be
# module+0xADDR); prints the differences.
same_frames() {
	awk 'NR == FNR { g[FNR] = $0; n = FNR; next }
	     { split(g[FNR], a, " "); m = FNR; name = $3
	       while (sub(/\.(part|isra|constprop|cold|lto_priv)(\.[0-9]+)?$/, "", name)) {}
	       # A frame neither names (a vDSO-internal function): gdb says ??, hprof module+0xADDR.
	       unnamed = a[3] == "??" && a[4] == "??" && $3 ~ /^[^ ]+\+0x[0-9a-f]+$/
	       if (!(FNR in g) || a[1] != $1 || a[2] != $2 || (name != a[3] && $3 != a[4] && $3 != a[5] && !unnamed)) {
	               print "gdb:   " g[FNR]; print "hprof: " $0; bad++ } }
	     END { if (m != n) { print "gdb has " n " frames, hprof " m; bad++ }
	           exit bad > 0 }' "$1" "$2"
}

# A process we may not trace means the checks below cannot run at all.
"$WL/nofp_recurse" 60 >/dev/null &
probe=$!
pids+=("$probe")
wait_exec "$probe" "$WL/nofp_recurse"
if ! "$HPROF" stack "$probe" >"$TMP/probe.out" 2>"$TMP/probe.err" &&
	grep -q "not permitted" "$TMP/probe.err"; then
	skip "stack" "ptrace not permitted here: $(cat "$TMP/probe.err")"
	exit 0
fi
kill -KILL "$probe"

for w in nofp_threads nofp_recurse nofp_qsort nofp_signal nofp_cxx; do
	"$WL/$w" 60 >/dev/null &
	pid=$!
	pids+=("$pid")
	# threads started, each in its hot loop
	if [ $w = nofp_threads ]; then started "$pid" 5; else started "$pid" 1; fi
	kill -STOP "$pid"
	if ! wait_state "$pid" T; then
		fail "$w: stops on SIGSTOP"
		continue
	fi
	# the frames the walk found, as gdb's frames are compared (inline frames and lines
	# from DWARF are tests/t_inline.sh's)
	"$HPROF" stack --no-inline --no-lines "$pid" >"$TMP/$w.stack" 2>"$TMP/$w.err"
	rc=$?
	check "$w: hprof stack exits 0 ($rc)" [ "$rc" -eq 0 ]
	sed 's/^/# stderr: /' "$TMP/$w.err"
	check "$w: a stopped process stays stopped" [ "$(state "$pid")" = T ]
	hprof_frames "$TMP/$w.stack" >"$TMP/$w.hprof"
	gdb_frames "$pid" "$TMP/$w.gdb" "$TMP/$w.hprof"
	threads=$(ls "/proc/$pid/task" | wc -l)
	check "$w: every thread printed ($threads)" \
		[ "$(grep -c '^Thread ' "$TMP/$w.stack")" -eq "$threads" ]
	check "$w: every walk complete" [ -z "$(grep truncated "$TMP/$w.stack")" ]
	if [ ! -s "$TMP/$w.gdb" ]; then
		fail "$w: gdb gave no frames"
		sed 's/^/# gdb: /' "$TMP/$w.gdb.log" | tail -5
	elif [ "$w" = nofp_cxx ]; then
		# gdb names C++ functions without return type and parameters: compare pcs.
		if diff <(cut -d' ' -f1,2 "$TMP/$w.gdb") <(cut -d' ' -f1,2 "$TMP/$w.hprof") >"$TMP/$w.diff"; then
			ok "$w: same pcs as gdb, frame by frame ($(wc -l <"$TMP/$w.gdb") frames)"
		else
			fail "$w: same pcs as gdb, frame by frame"
			sed 's/^/# /' "$TMP/$w.diff" | head -20
		fi
	elif same_frames "$TMP/$w.gdb" "$TMP/$w.hprof" >"$TMP/$w.diff"; then
		ok "$w: same pcs and functions as gdb, frame by frame ($(wc -l <"$TMP/$w.gdb") frames)"
	else
		fail "$w: same pcs and functions as gdb, frame by frame"
		sed 's/^/# /' "$TMP/$w.diff" | head -20
	fi
	kill -KILL "$pid"
done

# A running process is stopped only while it is copied, then runs on.
"$WL/nofp_threads" 60 >/dev/null &
pid=$!
pids+=("$pid")
started "$pid" 5
"$HPROF" stack --no-inline --no-lines "$pid" >"$TMP/running.stack" 2>"$TMP/running.err"
check "running: hprof stack exits 0" [ $? -eq 0 ]
check "running: all five threads printed" [ "$(grep -c '^Thread ' "$TMP/running.stack")" -eq 5 ]
check "running: a worker is in spin" grep -q ' spin (nofp_threads)$' "$TMP/running.stack"
before=$(ticks "$pid")
ran_for "$pid" $((before + 1))
after=$(ticks "$pid")
stopped=$(cat /proc/"$pid"/task/*/stat | awk '{ sub(/.*\) /, ""); print $1 }' | grep -c '[Tt]')
check "running: no thread left stopped ($stopped)" [ "$stopped" -eq 0 ]
check "running: uses CPU afterwards ($before -> $after ticks)" [ "$after" -gt "$before" ]
kill -KILL "$pid"

# Errors are one line on stderr and a non-zero status.
missing=$(($(cat /proc/sys/kernel/pid_max) + 1))
"$HPROF" stack "$missing" >"$TMP/missing.out" 2>"$TMP/missing.err"
rc=$?
check "missing pid: non-zero exit ($rc)" [ "$rc" -ne 0 ]
check "missing pid: one line on stderr" [ "$(wc -l <"$TMP/missing.err")" -eq 1 ]
check "missing pid: says so" grep -q "no process $missing" "$TMP/missing.err"
check "missing pid: nothing on stdout" [ ! -s "$TMP/missing.out" ]
"$HPROF" stack notapid >/dev/null 2>"$TMP/bad.err"
rc=$?
check "bad argument: non-zero exit ($rc)" [ "$rc" -ne 0 ]
check "bad argument: one line on stderr" [ "$(wc -l <"$TMP/bad.err")" -eq 1 ]

# HPROF_DEBUG=unwind prints each walk step by step: a line per frame with the rules used
# and what they gave, then why the walk stopped.
"$WL/nofp_recurse" 60 3 >/dev/null &
pid=$!
pids+=("$pid")
started "$pid" 1
HPROF_DEBUG=unwind "$HPROF" stack "$pid" >"$TMP/trace.out" 2>"$TMP/trace.err"
frames=$(grep -c '^#[0-9]' "$TMP/trace.out")
steps=$(grep -c '^unwind: #[0-9]* pc 0x[0-9a-f]* .*cfa=' "$TMP/trace.err")
check "HPROF_DEBUG=unwind: one traced step per frame ($steps for $frames frames)" \
	[ "$frames" -gt 5 -a "$steps" -eq "$frames" ]
check "HPROF_DEBUG=unwind: the walk's end is named" grep -q '^unwind: stopped: complete$' "$TMP/trace.err"
kill -KILL "$pid"
