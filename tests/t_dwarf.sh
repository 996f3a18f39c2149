#!/usr/bin/env bash
# Hybrid unwinding on real processes built -O2 -fomit-frame-pointer: at least 99% of each
# workload's samples in its own code (own_share in lib.sh: the dynamic loader's and exit's
# are left out, whatever the leaf is counted) must be complete and hold exactly the expected
# chain. The same samples replayed with frame pointers only (hprof report --no-dwarf) must
# do far worse.
source "$(dirname "$0")/lib.sh"
require_bpf "dwarf"

START='_start;__libc_start_main;__libc_start_call_main;main'
KERNEL='(;[^;]*_\[k\])*'
# Below the frames the workloads' own code controls, libc and the vDSO pick their own
# functions (__memset_avx512_unaligned_erms, an unnamed vDSO-internal frame): any user
# frames are allowed there.
HOST='(;[^;]+)*'
CLOCK="(;workload_now$HOST)?"

# record NAME [hprof options] -- [workload args]: profiles build/workloads/NAME for 3 s,
# keeping the raw samples for the FP-only replay and the summary as JSON.
record() {
	local name=$1; shift
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	"$HPROF" "${opts[@]}" --raw "$TMP/$name.raw" --folded "$TMP/$name.folded" --json "$TMP/$name.json" \
		-- "$WL/$name" 3 "$@" >/dev/null 2>"$TMP/$name.err" ||
		{ fail "$name: hprof failed: $(tail -1 "$TMP/$name.err")"; return 1; }
	"$HPROF" report --no-dwarf "$TMP/$name.raw" --folded "$TMP/$name.fp.folded" 2>"$TMP/$name.fp.err" ||
		{ fail "$name: hprof report --no-dwarf failed: $(tail -1 "$TMP/$name.fp.err")"; return 1; }
}

# expect_chain NAME OWN REGEX: >= 99% of NAME's samples in its own code (own_share: OWN
# names its functions; main may call into libc, as it does to set up and to print) match;
# the FP-only replay of the same samples matches at most half as often.
expect_chain() {
	local name=$1 own=$2 re=$3 share fp
	share=$(own_share "$TMP/$name.folded" "$name" "$own" "$re" "^$name;$START\$")
	fp=$(own_share "$TMP/$name.fp.folded" "$name" "$own" "$re" "^$name;$START\$")
	echo "# $name: hybrid $share, frame pointers only $fp"
	# 3 s at 99 Hz is ~300 samples; ask for a sixth of that, for a loaded machine.
	if at_least 99 "$share" && [ "${share#*/}" -ge 50 ]; then
		ok "$name: >= 99% of samples complete with the exact chain ($share)"
	else
		fail "$name: exact chain in $share samples; the others:"
		own_others "$TMP/$name.folded" "$name" "$own" "$re" "^$name;$START\$" | cut -c1-600
	fi
	if ! at_least 50 "$fp"; then
		ok "$name: frame pointers alone get it right far less often ($fp)"
	else
		fail "$name: frame pointers alone do as well ($fp): the test shows nothing"
	fi
}

# 300 frames of ~48 bytes need ~15 KiB of stack below main; 32 KiB leaves room.
# (mawk has no {300} intervals: spell the 300 frames out.) Between two calls of leaf the
# recursion returns to main, reads the clock and goes down again: a sample taken on the
# way, in recurse itself, is right with fewer frames (a loaded machine catches a few).
record nofp_recurse --stack-size 32768 -- 300 &&
	expect_chain nofp_recurse 'main|recurse|leaf|workload_.*' \
		"^nofp_recurse;$START($(printf ';recurse%.0s' $(seq 300));leaf|(;recurse)+|$CLOCK)$KERNEL\$"

record nofp_qsort -- &&
	expect_chain nofp_qsort 'main|sort_many|compare_slowly|workload_.*' \
		"^nofp_qsort;$START(;sort_many(;qsort_r((;msort_with_tmp(\\.part\\.0|_\\[i\\]))+(;compare_slowly|;[^;]*mem[^;]*$HOST)?|;(malloc|free)$HOST)?)?|$CLOCK)$KERNEL\$"

record nofp_signal -- &&
	expect_chain nofp_signal 'main|wait_for_signals|on_alarm|busy_in_handler|workload_.*' \
		"^nofp_signal;$START(;wait_for_signals$CLOCK(;__restore_rt;on_alarm;busy_in_handler$CLOCK)?)?$KERNEL\$"
in_handler=$(share_matching "$TMP/nofp_signal.folded" nofp_signal ';__restore_rt;on_alarm;busy_in_handler')
check "nofp_signal: most samples run in the handler, through the signal frame ($in_handler)" at_least 80 "$in_handler"

# Samples inside rt_sigreturn have their user ip just past __restore_rt's syscall, where
# its CFI ends; the walk must take the syscall instruction's signal-frame rules.
record nofp_sigstorm -- &&
	expect_chain nofp_sigstorm 'main|storm|on_signal|workload_.*' "^nofp_sigstorm;$START(;storm(;[^;]+)*)?$KERNEL\$"
in_sigreturn=$(share_matching "$TMP/nofp_sigstorm.folded" nofp_sigstorm \
	"^nofp_sigstorm;$START;storm;raise(;[^;]+)*;__restore_rt(;[^;]*_\\[k\\])+\$")
check "nofp_sigstorm: samples inside rt_sigreturn are unwound through __restore_rt ($in_sigreturn)" \
	[ "${in_sigreturn%/*}" -ge 1 ]

# The main thread only starts the four and waits for them.
record nofp_threads -- &&
	expect_chain nofp_threads 'main|thread_main|worker_[0-3]|stage_[0-3]|spin|workload_.*' \
		"^nofp_threads;clone3;start_thread;thread_main(;worker_[0-3](;stage_[0-3](;spin)?|$CLOCK))?$KERNEL\$"
for n in 0 1 2 3; do
	# Each thread's own chain: worker_N calls stage_N only. How the scheduler shares the
	# CPUs out among the four is the machine's: each must only be seen with its chain.
	mixed=$(share_matching "$TMP/nofp_threads.folded" nofp_threads "worker_$n;stage_[^$n]")
	mine=$(share_matching "$TMP/nofp_threads.folded" nofp_threads "thread_main;worker_$n;stage_$n;spin")
	check "nofp_threads: thread $n has its own chain ($mine, crossed ${mixed%/*})" \
		[ "${mine%/*}" -ge 5 -a "${mixed%/*}" -eq 0 ]
done

# While _Unwind_RaiseException installs the handler's context, its CFI (libgcc's, not the
# workload's) no longer describes the frame: hprof reads no return address there and marks
# the few samples taken then truncated. They are left out of the exact-chain share, and
# must stay rare.
INSTALL='^nofp_cxx;\[truncated: pc outside any known mapping\];\[unmapped\]\+0x[0-9a-f]+;throw_and_catch\(\);_Unwind_RaiseException'
record nofp_cxx -- &&
	install=$(share_matching "$TMP/nofp_cxx.folded" nofp_cxx "$INSTALL") &&
	check "nofp_cxx: samples truncated in libgcc's context install are rare ($install)" \
		[ $((${install%/*} * 100)) -le $((3 * ${install#*/})) ] &&
	grep -Ev "$INSTALL" "$TMP/nofp_cxx.folded" >"$TMP/nofp_cxx.kept" &&
	mv "$TMP/nofp_cxx.kept" "$TMP/nofp_cxx.folded" &&
	expect_chain nofp_cxx 'main|run\(.*|throw_and_catch\(.*|thrower\(.*|Square::.*|sort_points.*|workload_.*' \
		"^nofp_cxx;$START(;run\\(Shape&, [^;]*\\)(;Square::work\\([^;]*\\)(;[^;]+)*|;throw_and_catch\\(\\)[^;]*(;[^;]+)*)?|$CLOCK)$KERNEL\$"
lambda=$(share_matching "$TMP/nofp_cxx.folded" nofp_cxx 'sort_points\(std::vector<Point, std::allocator<Point> >&\)::\{lambda\(Point const&, Point const&\)#1\}::operator\(\)')
check "nofp_cxx: the std::sort lambda is reached ($lambda)" [ "${lambda%/*}" -gt 0 ]
thrower=$(share_matching "$TMP/nofp_cxx.folded" nofp_cxx ';throw_and_catch\(\);thrower\(int\)[^;]*;__cxa_throw')
check "nofp_cxx: samples inside a throw are unwound through it ($thrower)" [ "${thrower%/*}" -gt 0 ]

# Stitching: a 1 KiB copy holds ~60 of fp_deep's 200 frames; the walk must go on along the
# FP chain, and from the chain's end (libc keeps no frame pointers) through libc's start-up
# code to _start, over the window the kernel copies there. Frame pointers alone skip
# copy_block, the caller of the rbp-preserving memset/memcpy. Samples in the recursion's
# calls and returns, in deep itself, are right with fewer frames.
DEEP="$START$(printf ';deep%.0s' $(seq 200));copy_block"
record fp_deep --stack-size 1024 -- 200 &&
	expect_chain fp_deep 'main|deep|copy_block|workload_.*' \
		"^fp_deep;($START(;deep)*$KERNEL|$DEEP$HOST|$START;workload_now$HOST)\$"
# Every sample complete with the 200 frames was stitched: the summary counts it dwarf+fp.
stitched=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["user_stacks_by_method"]["dwarf+fp"]["count"])' \
	"$TMP/fp_deep.json" 2>/dev/null)
deep=$(share_matching "$TMP/fp_deep.folded" fp_deep "^fp_deep;$DEEP(;|\$)")
check "fp_deep: the summary counts the stitched stacks as dwarf+fp (${stitched:-?} for ${deep%/*} samples with the 200 frames)" \
	[ "${deep%/*}" -gt 0 -a "${stitched:-0}" -ge "${deep%/*}" ]

# Truncated stacks sit under a root frame naming the reason, and the summary counts them:
# every sample in leaf, 300 frames (~15 KiB) down, has a stack that no 1 KiB copy holds.
"$HPROF" -v --stack-size 1024 --folded "$TMP/short.folded" -- "$WL/nofp_recurse" 1 300 >/dev/null 2>"$TMP/short.err"
short=$(share_among "$TMP/short.folded" nofp_recurse ';leaf(;|$)' '^nofp_recurse;\[truncated: copy too short\];')
check "a 1 KiB copy truncates the deep stack under a named root ($short of the samples in leaf)" \
	eval 'at_least 99 "$short" && [ "${short#*/}" -ge 20 ]'
check "the summary gives the share of each method" grep -Eq "user stacks by method: fp [0-9.]+% dwarf [0-9.]+% dwarf\\+fp [0-9.]+% analysis [0-9.]+% scan [0-9.]+% truncated [0-9.]+%" "$TMP/short.err"
check "the summary counts truncation reasons" grep -q "\\[truncated: copy too short\\] [0-9]" "$TMP/short.err"

# Raw captures: private, and a report replays exactly what the recording wrote.
check "raw capture is mode 0600" [ "$(stat -c %a "$TMP/nofp_qsort.raw")" = 600 ]
"$HPROF" report "$TMP/nofp_qsort.raw" --folded "$TMP/replay.folded" 2>/dev/null
check "hprof report reproduces the recording's folded stacks" cmp -s "$TMP/nofp_qsort.folded" "$TMP/replay.folded"
