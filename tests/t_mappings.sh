#!/usr/bin/env bash
# Each sample is resolved against the mappings its process had when it was taken: from a
# program's first milliseconds, across hundreds of short-lived processes (under a command
# and system-wide), across a library closed and another loaded at its address, across an
# exec, and across a pid that a second process takes over.
source "$(dirname "$0")/lib.sh"
require_bpf "mappings"

START='_start;__libc_start_main;__libc_start_call_main;main'
KERNEL='(;[^;]*_\[k\])*'
# Below the workloads' own frames, libc and the vDSO pick their own functions.
HOST='(;[^;]+)*'
# nofp_brief's own code: main -> brief_burst -> brief_spin, the clock, its argument.
BRIEF_MAIN="^nofp_brief;$START(;brief_burst(;brief_spin$KERNEL|;workload_now$HOST)?|;workload_seconds[^;]*$HOST)?$KERNEL\$"
BRIEF_HOT="^nofp_brief;$START;brief_burst(;brief_spin|;workload_now$HOST)?$KERNEL\$"
BRIEF_OWN='main|brief_burst|brief_spin|workload_.*'
# Frames of /bin/sh's own (stripped) binary are named after it: dash+0x4580.
SH_MOD=$(basename "$(readlink -f /bin/sh)")

# user_share FILE COMM REGEX: like share_matching, over COMM's samples that have user
# frames (a sample taken while the kernel tears down the address space has none).
user_share() {
	awk -v comm="$2" -v re="$3" '
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
		  n = split(stack, f, ";"); if (f[1] != comm || n < 2 || f[2] ~ /_\[k\]$/) next
		  total += count; if (stack ~ re) matched += count }
		END { printf "%d/%d\n", matched, total }' "$1"
}

# complete FILE COMM: COMM's user stacks that reached the entry: not under a [truncated]
# root, no [unmapped] frame. A vDSO function the vDSO does not name ([vdso]+0x780, which
# the kernel and its clock source decide) is a frame like any other.
COMPLETE='(;(\[vdso\][^;]*|[^[;][^;]*))+$'
complete() {
	user_share "$1" "$2" "^$2$COMPLETE"
}

# unmapped_pc FILE COMM: COMM's samples whose sampled pc (the innermost user frame) is in no
# known mapping. Callers can be anything when a chain of frame pointers through code without
# them is all there is (the stack copy failed), but the pc itself was always mapped.
unmapped_pc() {
	awk -v comm="$2" '
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
		  n = split(stack, f, ";"); if (f[1] != comm) next
		  while (n > 1 && f[n] ~ /_\[k\]$/) n--
		  if (n > 1 && f[n] ~ /^\[unmapped\]/) bad += count }
		END { print bad + 0 }' "$1"
}

# outside FILE [COMM]: samples (of COMM, else of anyone) under the unknown-pc root.
outside() {
	awk -v comm="${2:-}" '
		index($0, ";[truncated: pc outside any known mapping];") &&
		(comm == "" || index($0, comm ";") == 1) { n += $NF }
		END { print n + 0 }' "$1"
}

# many N PCT "matched/total": at least N matched, and at least PCT percent.
many() {
	[ "${3%/*}" -ge "$1" ] && at_least "$2" "$3"
}

# none FILE COMM REGEX: no sample of COMM matches REGEX.
none() {
	[ "$(user_share "$1" "$2" "$3" | cut -d/ -f1)" -eq 0 ]
}

# show FILE COMM REGEX [SELECT]: COMM's five most frequent stacks (of those matching SELECT)
# that do not match REGEX.
show() {
	awk -v comm="$2" -v re="$3" -v select="${4:-.}" '
		{ s = $0; sub(/ [0-9]+$/, "", s); split(s, f, ";")
		  if (f[1] == comm && s ~ select && s !~ re) print }' "$1" |
		sort -t' ' -k2 -rn | head -5 | cut -c1-400
}

# profile NAME [hprof options] -- COMMAND...: hprof at 999 Hz into $TMP/NAME.*, the summary
# with every figure (-v).
profile() {
	local name=$1; shift
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	timeout 120 "$HPROF" -v -F 999 "${opts[@]}" --folded "$TMP/$name.folded" -- "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ fail "$name: hprof failed: $(tail -1 "$TMP/$name.err")"; return 1; }
}

# no_events_lost NAME: a lost mapping event would make the rest of the checks meaningless.
no_events_lost() {
	check "$1: no mapping event lost" grep -q "; 0 mapping events lost" "$TMP/$1.err"
}

# resolved NAME COMM: every pc of COMM is in a known mapping.
resolved() {
	local name=$1 comm=$2 out bad
	out=$(outside "$TMP/$name.folded" "$comm") bad=$(unmapped_pc "$TMP/$name.folded" "$comm")
	if [ "$out" -eq 0 ] && [ "$bad" -eq 0 ]; then
		ok "$name: every $comm pc is in a known mapping"
	else
		fail "$name: $out $comm samples under [truncated: pc outside any known mapping], $bad with an [unmapped] pc:"
		show "$TMP/$name.folded" "$comm" '^$' '\[unmapped\]|\[truncated: pc outside'
	fi
}

# nowhere_outside NAME: no sample of any process under the unknown-pc root.
nowhere_outside() {
	local f="$TMP/$1.folded" n
	n=$(outside "$f")
	if [ "$n" -eq 0 ]; then
		ok "$1: no sample anywhere under [truncated: pc outside any known mapping]"
	else
		fail "$1: $n samples under [truncated: pc outside any known mapping]:"
		grep -F ';[truncated: pc outside any known mapping];' "$f" | sort -t' ' -k2 -rn |
			head -5 | cut -c1-400
	fi
}

# brief_checks NAME MIN_SAMPLES: nofp_brief's samples are its own, named after its own
# code, nearly all complete. The workloads run for wall-clock time: a loaded machine gives
# them a fraction of a CPU, and of the samples, hence the low minimums.
brief_checks() {
	local name=$1 min=$2 f="$TMP/$1.folded" done hot own foreign
	done=$(complete "$f" nofp_brief)
	# Of its samples in its own code (own_share: the loader's and exit's, which take a
	# share of a 10 ms run that depends on the machine, are left out).
	hot=$(own_share "$f" nofp_brief "$BRIEF_OWN" "$BRIEF_HOT")
	own=$(user_share "$f" nofp_brief ";main(;|\$)")
	foreign=$(user_share "$f" nofp_brief "$BRIEF_MAIN")
	echo "# $name: complete $done, main;brief_burst $hot, under main ${own%/*}, of them as expected ${foreign%/*}"
	check "$name: at least $min samples of nofp_brief (${done#*/})" [ "${done#*/}" -ge "$min" ]
	resolved "$name" nofp_brief
	if at_least 99 "$done"; then
		ok "$name: >= 99% of nofp_brief's stacks complete ($done)"
	else
		fail "$name: complete stacks $done; the others:"
		show "$f" nofp_brief "^nofp_brief$COMPLETE"
	fi
	# main's own work is reading its argument: nearly all of the program's time is brief_burst's.
	check "$name: >= 80% of its samples in its own code in main;brief_burst ($hot)" at_least 80 "$hot"
	if [ "${own%/*}" = "${foreign%/*}" ]; then
		ok "$name: every sample under main names nofp_brief's own functions (${own%/*})"
	else
		fail "$name: samples under main with other frames:"
		show "$f" nofp_brief "$BRIEF_MAIN" ";main(;|\$)"
	fi
	check "$name: no nofp_brief sample holds a frame of $SH_MOD" \
		none "$f" nofp_brief "(^|;)$SH_MOD\\+0x"
}

# 1. Start-up: the first milliseconds of a program, once and then 20 times under a shell.
BRIEF="$WL/nofp_brief"
if profile start1 -- "$BRIEF" 0.02; then
	no_events_lost start1
	nowhere_outside start1
	resolved start1 nofp_brief
	hot=$(user_share "$TMP/start1.folded" nofp_brief "$BRIEF_HOT")
	echo "# start1: 20 ms: main;brief_burst $hot"
	check "start1: the first 20 ms reach main;brief_burst ($hot)" [ "${hot%/*}" -ge 1 ]
fi
if profile start20 -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		"$0" 0.03; done' "$BRIEF"; then
	no_events_lost start20
	nowhere_outside start20
	brief_checks start20 50
fi

# 2. Short-lived: 300 processes of 10 ms, (a) under the command, (b) system-wide.
if profile short -- sh -c 'i=0; while [ "$i" -lt 300 ]; do "$0"; i=$((i + 1)); done' "$BRIEF"; then
	no_events_lost short
	nowhere_outside short
	check "short: the summary counts >= 300 exec events" \
		grep -Eq "mappings: [0-9]+ mmap, ([3-9][0-9]{2}|[0-9]{4,}) exec" "$TMP/short.err"
	brief_checks short 300
fi

"$HPROF" -v -F 999 --time 120000 --folded "$TMP/system.folded" 2>"$TMP/system.err" &
hprof_pid=$!
if wait_sampling "$hprof_pid"; then
	sh -c 'i=0; while [ "$i" -lt 300 ]; do "$0"; i=$((i + 1)); done' "$BRIEF" &
	wait $!
	kill -INT "$hprof_pid"
	if wait "$hprof_pid"; then
		no_events_lost system
		brief_checks system 300
	else
		fail "system: hprof failed: $(tail -1 "$TMP/system.err")"
	fi
else
	kill "$hprof_pid" 2>/dev/null
	wait "$hprof_pid"
	fail "system: hprof did not start sampling: $(tail -1 "$TMP/system.err")"
fi

# 3. dlopen: libmaps_b.so is loaded where libmaps_a.so was; each phase's samples are named
# after its own library's function.
DL_A="^nofp_dlopen;$START;phase_a;run_phase;lib_a_hot$KERNEL\$"
DL_B="^nofp_dlopen;$START;phase_b;run_phase;lib_b_hot$KERNEL\$"
if profile dlopen -- "$WL/nofp_dlopen" 1 "$WL"; then
	no_events_lost dlopen
	f="$TMP/dlopen.folded"
	if grep -qx "same address: yes" "$TMP/dlopen.out"; then
		ok "dlopen: libmaps_b.so loaded at libmaps_a.so's address"
	else
		fail "dlopen: libmaps_b.so is not where libmaps_a.so was: the check shows nothing"
		cat "$TMP/dlopen.out"
	fi
	a=$(user_share "$f" nofp_dlopen ";lib_a_hot$KERNEL\$")
	b=$(user_share "$f" nofp_dlopen ";lib_b_hot$KERNEL\$")
	exact_a=$(user_share "$f" nofp_dlopen "$DL_A")
	exact_b=$(user_share "$f" nofp_dlopen "$DL_B")
	crossed=$(user_share "$f" nofp_dlopen ";phase_a;.*lib_b_hot|;phase_b;.*lib_a_hot")
	done=$(complete "$f" nofp_dlopen)
	echo "# dlopen: lib_a_hot ${a%/*} (${exact_a%/*} in phase_a), lib_b_hot ${b%/*} (${exact_b%/*} in phase_b), crossed ${crossed%/*}, complete $done"
	check "dlopen: >= 50 samples in each library (${a%/*}, ${b%/*})" \
		[ "${a%/*}" -ge 50 -a "${b%/*}" -ge 50 ]
	check "dlopen: no phase has the other library's function (${crossed%/*})" [ "${crossed%/*}" -eq 0 ]
	check "dlopen: >= 99% of lib_a_hot's samples are main;phase_a;run_phase;lib_a_hot (${exact_a%/*}/${a%/*})" \
		at_least 99 "${exact_a%/*}/${a%/*}"
	check "dlopen: >= 99% of lib_b_hot's samples are main;phase_b;run_phase;lib_b_hot (${exact_b%/*}/${b%/*})" \
		at_least 99 "${exact_b%/*}/${b%/*}"
	check "dlopen: >= 99% of stacks complete ($done)" at_least 99 "$done"
	resolved dlopen nofp_dlopen
fi

# 4. exec: the shell's samples are the shell's, the program's after the exec are the
# program's.
if profile exec -- sh -c 'i=0; while [ "$i" -lt 300000 ]; do i=$((i + 1)); done; exec "$0" 0.5' \
	"$BRIEF"; then
	no_events_lost exec
	f="$TMP/exec.folded"
	sh_own=$(user_share "$f" sh "(^|;)$SH_MOD\\+0x")
	sh_brief=$(user_share "$f" sh "brief_|nofp_brief")
	echo "# exec: sh samples with $SH_MOD's frames $sh_own, with nofp_brief's ${sh_brief%/*}"
	# The shell's own code, so that the reverse check below means something.
	check "exec: >= 20 samples of sh, most in $SH_MOD's own code ($sh_own)" \
		many 20 50 "$sh_own"
	check "exec: no sh sample holds nofp_brief's frames (${sh_brief%/*})" [ "${sh_brief%/*}" -eq 0 ]
	nowhere_outside exec
	resolved exec sh
	brief_checks exec 30
fi

# 5. pid reuse: nofp_brief runs, exits, and a forked child of nofp_pidreuse takes its pid.
REUSE="^nofp_pidreuse;$START;reuse_child(;reuse_spin|;workload_now$HOST)?$KERNEL\$"
if profile pidreuse -- "$WL/nofp_pidreuse" 0.5 "$BRIEF" 0.5; then
	no_events_lost pidreuse
	f="$TMP/pidreuse.folded"
	if grep -q "^pid reused: " "$TMP/pidreuse.out"; then
		ok "pidreuse: the second process has the first one's pid"
	else
		fail "pidreuse: $(cat "$TMP/pidreuse.out"): the check shows nothing"
	fi
	child=$(user_share "$f" nofp_pidreuse ";reuse_child(;|\$)")
	exact=$(user_share "$f" nofp_pidreuse "$REUSE")
	echo "# pidreuse: reuse_child ${child%/*}, as expected ${exact%/*}"
	check "pidreuse: >= 30 samples of the second process (${child%/*})" [ "${child%/*}" -ge 30 ]
	check "pidreuse: >= 99% of them are main;reuse_child (${exact%/*}/${child%/*})" \
		at_least 99 "${exact%/*}/${child%/*}"
	check "pidreuse: no frame of nofp_brief in nofp_pidreuse's samples" none "$f" nofp_pidreuse brief_
	check "pidreuse: no frame of nofp_pidreuse in nofp_brief's samples" none "$f" nofp_brief reuse_
	brief_checks pidreuse 30
	resolved pidreuse nofp_pidreuse
fi
