#!/usr/bin/env bash
# The kernel copies each sample's live stack only: from sp to the thread's learned base (the
# outermost frame's CFA, once a complete walk taught it), else to the end of the stack's
# mapping (for the main thread, the start of argv's strings), within the --stack-size
# ceiling (128 KiB), a stack deeper than that with the window below its learned base; only
# the leaf's 1 KiB when a thread's FP chains proved right.
# Stacks must stay complete however deep they get within the ceiling, on whichever stack
# the sample ran (a coroutine's, a signal handler's alternate stack, from which the copy
# goes on to the interrupted stack), and past pages the kernel cannot read (never touched);
# argv's and the environment's strings are never copied; the bytes per sample stay far
# below the old fixed 16 KiB copy. Copies to a learned base go as deltas: only the chunks
# that changed since the thread's previous copy, rebuilt whole by hprof before anything
# reads them.
source "$(dirname "$0")/lib.sh"
require_bpf "stackcopy"

START='_start;__libc_start_main;__libc_start_call_main;main'
KERNEL='(;[^;]*_\[k\])*'
HOST='(;[^;]+)*'
# Below workload_now, libc's and the vDSO's frames, named as the host names them.
CLOCK="(;workload_now$HOST)?"

# either RE1 RE2: one extended regex matching what either does.
either() { echo "($1)|($2)"; }

# copies FILE KIND: the summary's count of stack copies of KIND ("to the thread's learned
# base", "to the end of the stack", "of the leaf only", "with unreadable pages left as
# holes", "from a signal's alternate stack", "of them without the interrupted stack").
copies() { sed -n "s/.*[ (]\([0-9]*\) $2.*/\1/p" "$1"; }

# record NAME ARGS...: profiles build/workloads/NAME ARGS at 499 Hz, default copy settings,
# into $TMP/NAME.folded and the capture $TMP/NAME.raw (the summary with every figure, -v, in
# $TMP/NAME.err, output in $TMP/NAME.out).
record() {
	local name=$1; shift
	"$HPROF" -v -F 499 --raw "$TMP/$name.raw" --folded "$TMP/$name.folded" -- "$WL/$name" "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ fail "$name: hprof failed: $(tail -1 "$TMP/$name.err")"; return 1; }
}

# same_report NAME WHAT: hprof report on $TMP/NAME.raw gives the recorded stacks.
same_report() {
	if ! "$HPROF" report "$TMP/$1.raw" --folded "$TMP/$1.report.folded" 2>"$TMP/$1.report.err"; then
		fail "$1: hprof report failed: $(tail -1 "$TMP/$1.report.err")"
	elif ! cmp -s <(sort "$TMP/$1.folded") <(sort "$TMP/$1.report.folded"); then
		fail "$1: the capture's report differs from the recording: $2"
		diff <(sort "$TMP/$1.folded") <(sort "$TMP/$1.report.folded") | head -5 | cut -c1-300 |
			sed 's/^/#   /'
	else
		ok "$1: the capture's report gives the recorded stacks: $2"
	fi
}

# expect NAME COMM OWN WHAT RE: >= 99% of at least 200 of COMM's samples in its own code
# (own_share: OWN names its functions; main may call into libc, as it does to set up and
# to print) in $TMP/NAME.folded match RE; else the commonest others.
expect() {
	local share
	share=$(own_share "$TMP/$1.folded" "$2" "$3" "$5" "^$2;$START\$")
	if at_least 99 "$share" && [ "${share#*/}" -ge 200 ]; then
		ok "$1: $4 ($share)"
	else
		fail "$1: $4 ($share); the commonest others:"
		own_others "$TMP/$1.folded" "$2" "$3" "$5" "^$2;$START\$" | cut -c1-400 | sed 's/^/#   /'
	fi
}

# --- Deep stacks in a real compiler: cc1 on blocks nested 60 deep (nested_blocks_c in lib.sh:
# ~45 KiB of stack, beyond the old 16 KiB copy, within the 128 KiB ceiling). Deeper nesting,
# or nested parentheses at ~1.7 KiB a level, goes past the ceiling, where no copy can be
# complete: cc1 keeps no frame pointers.
nested_blocks_c 200 60 >"$TMP/nested.c"
if "$HPROF" -F 499 --raw "$TMP/cc1.raw" --folded "$TMP/gcc.folded" -- \
	gcc -O2 -c "$TMP/nested.c" -o "$TMP/nested.o" >/dev/null 2>"$TMP/gcc.err"; then
	grep '^cc1;' "$TMP/gcc.folded" >"$TMP/cc1.folded"
	share=$(complete_share "$TMP/cc1.folded")
	false=$(false_complete "$TMP/cc1.folded")
	check "cc1: no stack passes for complete short of an entry ($false samples)" [ "$false" = 0 ]
	if at_least 99 "$share" && [ "${share#*/}" -ge 200 ]; then
		ok "cc1: >= 99% of samples have a complete user stack at default settings ($share)"
	else
		fail "cc1: complete user stacks in $share samples; the others:"
		incomplete_why "$TMP/cc1.folded" | sed 's/^/#   /'
	fi
	live=$(build/tools/livestack "$TMP/cc1.raw" cc1 | sed -n 's/.* max_live \([0-9]*\)$/\1/p')
	check "cc1: the deepest live stack is beyond the old 16 KiB copy (${live:-?} bytes)" \
		[ "${live:-0}" -gt 16384 ]
else
	fail "cc1: hprof or gcc failed: $(tail -1 "$TMP/gcc.err")"
fi

# --- A recursion deepening to 1500 frames (~48 KiB) over the run: the copy to the learned
# base grows with it. Samples in the recursion's calls and returns have no leaf.
if record nofp_deepen 3 1500; then
	re="^nofp_deepen;$START((;deepen)+(;leaf)?|$CLOCK)$KERNEL\$"
	expect nofp_deepen nofp_deepen 'main|deepen|leaf|workload_.*' \
		">= 99% of samples complete with the exact chain" "$re"
	deepest=$(awk '{ n = gsub(/;deepen/, ""); if (n > m) m = n } END { print m + 0 }' "$TMP/nofp_deepen.folded")
	check "nofp_deepen: the deepest stack holds >= 1400 deepen frames ($deepest)" [ "$deepest" -ge 1400 ]
	learned=$(copies "$TMP/nofp_deepen.err" "to the thread's learned base")
	check "nofp_deepen: copies end at the learned base (${learned:-?} samples)" \
		[ "${learned:-0}" -ge 200 ]
fi

# --- A signal handler on an alternate stack (mmap'd, far from the thread's stack): the
# walk goes from the handler through the signal frame onto the interrupted code's stack.
if record nofp_altstack 3; then
	check "nofp_altstack: the handler ran on the alternate stack" \
		grep -q "on the alternate stack 1" "$TMP/nofp_altstack.out"
	handler=';__restore_rt;on_alarm;busy_in_handler'
	own='main|wait_for_signals|on_alarm|busy_in_handler|workload_.*'
	exact="^nofp_altstack;$START(;wait_for_signals$CLOCK($handler$CLOCK)?)?$KERNEL\$"
	# A stack cut at the signal frame: the interrupted pc (from the signal frame) at most.
	cut="^nofp_altstack;\\[truncated: copy too short\\](;[^;]+)?$handler$CLOCK$KERNEL\$"
	in_handler=$(share_matching "$TMP/nofp_altstack.folded" nofp_altstack "$handler")
	check "nofp_altstack: most samples run in the handler ($in_handler)" at_least 80 "$in_handler"
	expect nofp_altstack nofp_altstack "$own" \
		"stacks are exact, or cut at the signal frame under a named root with the handler's frames exact" \
		"$(either "$exact" "$cut")"
	share=$(own_share "$TMP/nofp_altstack.folded" nofp_altstack "$own" "$exact" "^nofp_altstack;$START\$")
	check "nofp_altstack: >= 99% of samples complete with the exact chain through the signal frame ($share)" \
		at_least 99 "$share"
	alt=$(copies "$TMP/nofp_altstack.err" "from a signal's alternate stack")
	lost=$(copies "$TMP/nofp_altstack.err" "of them without the interrupted stack")
	check "nofp_altstack: the handler's samples copy the alternate stack, then the interrupted one (${alt:-?} copies for ${in_handler%/*} samples in the handler, ${lost:-?} without a signal frame)" \
		eval '[ "${alt:-0}" -ge "${in_handler%/*}" ] && [ "${lost:-1}" -le $((${alt:-0} / 100)) ]'
	same_report nofp_altstack "it carries the interrupted stacks"
	# Replayed as if copies had been 1 KiB, less than the signal frame and the FPU state
	# saved above it (at least 1 KiB with SSE alone): none reaches the interrupted stack.
	"$HPROF" report "$TMP/nofp_altstack.raw" --stack-size 1024 --folded "$TMP/altstack_1k.folded" \
		2>"$TMP/altstack_1k.err"
	short=$(share_among "$TMP/altstack_1k.folded" nofp_altstack "$handler" "$exact")
	check "nofp_altstack: replayed with a 1 KiB copy, no stack in the handler is complete ($short)" \
		[ "${short%/*}" -eq 0 -a "${short#*/}" -ge 200 ]
fi

# --- A makecontext/swapcontext coroutine. Its stack is complete when it reaches the
# coroutine's outermost frame: the function makecontext started (coro_entry), whose return
# address is glibc's __start_context (which never returns: it switches to uc_link or exits).
# On the mmap'd stack the thread's learned base lies elsewhere: the copy ends with the
# coroutine's own stack, and the window below the base follows; on a stack inside main's
# frame (onstack) it lies within the ceiling, and the copy up to it holds the whole coroutine.
for where in mmap onstack; do
	name=nofp_coro
	record nofp_coro 3 "$where" || continue
	mv "$TMP/nofp_coro.folded" "$TMP/coro_$where.folded"
	mv "$TMP/nofp_coro.err" "$TMP/coro_$where.err"
	f=$TMP/coro_$where.folded
	main_re="^$name;$START(;run_$where(;drive(;main_spin|$CLOCK|;swapcontext$HOST)?)?)?$KERNEL\$"
	coro="__start_context;coro_entry(;coro_work(;coro_spin)?|;swapcontext$HOST)?$KERNEL\$"
	coro_any="^$name(;\\[truncated: [^]]*\\])?;$coro"
	coro_complete="^$name;$coro"
	own='main|run_(mmap|onstack)|drive|main_spin|coro_entry|coro_work|coro_spin|workload_.*'
	# main and run_* call into libc to set up (mmap, memset), drive to switch (swapcontext).
	callers="^$name;$START(;run_$where(;drive)?)?\$"
	all=$(own_share "$f" $name "$own" "$(either "$main_re" "$coro_any")" "$callers")
	if at_least 99 "$all" && [ "${all#*/}" -ge 200 ]; then
		ok "nofp_coro ($where): >= 99% of samples hold the exact frames of main or of the coroutine ($all)"
	else
		fail "nofp_coro ($where): exact frames of main or of the coroutine in $all samples; the others:"
		own_others "$f" $name "$own" "$(either "$main_re" "$coro_any")" "$callers" | cut -c1-400 | sed 's/^/#   /'
	fi
	in_coro=$(share_matching "$f" $name ';coro_entry')
	check "nofp_coro ($where): most samples run in the coroutine ($in_coro)" at_least 50 "$in_coro"
	mine=$(share_among "$f" $name ';drive(;|$| )' "$main_re")
	check "nofp_coro ($where): main's own samples are complete with the exact chain ($mine)" \
		at_least 99 "$mine"
	if [ $where = onstack ]; then
		n=$(copies "$TMP/coro_$where.err" "to the thread's learned base")
		check "nofp_coro (onstack): the coroutine's copies end at the thread's learned base (${n:-?} of ${in_coro#*/} samples)" \
			[ "${n:-0}" -ge $((${in_coro%/*} / 2)) ]
	else
		# sp off the thread's stack: the copy ends with the coroutine's own stack, the
		# window below the thread's base follows (code that moved rsp away finds its
		# callers there)
		n=$(copies "$TMP/coro_$where.err" "off it")
		check "nofp_coro (mmap): the coroutine's copies are off the thread's stack, with the window below its base (${n:-?} of ${in_coro#*/} samples)" \
			[ "${n:-0}" -ge $((${in_coro%/*} / 2)) ]
	fi
	strict=$(share_among "$f" $name ';coro_entry' "$coro_complete")
	echo "# nofp_coro ($where): coroutine samples complete: $strict"
	check "nofp_coro ($where): the coroutine's samples are complete, ending at __start_context ($strict)" \
		at_least 99 "$strict"
done

# --- No argv or environment strings in any copy: the main thread's copy ends where argv's
# strings begin. Short processes, so that many samples copy to the end of the stack before
# a base is learned, each with a marker in its environment and in its arguments; nofp_mmap's
# samples mostly land in mmap and munmap, which hold the process's mapping lock. The shell
# that starts them handles the markers as data: the strict checks search the workloads'
# samples only.
marker=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
cat >"$TMP/short.sh" <<'EOF'
for i in $(seq 20); do
	"$1" 0.05 15 "$2" >/dev/null
	"$3" 0.05 "$2" >/dev/null
done
EOF
if HPROF_TEST_MARKER=$(printf "hprof-env-$marker%.0s" $(seq 64)) "$HPROF" -v -F 499 --raw "$TMP/env.raw" \
	--folded /dev/null -- sh "$TMP/short.sh" "$WL/nofp_recurse" "hprof-argv-$marker" "$WL/nofp_mmap" \
	>/dev/null 2>"$TMP/env.err"; then
	ends=$(copies "$TMP/env.err" "to the end of the stack")
	check "environment: samples copied to the end of the main thread's stack (${ends:-?})" \
		[ "${ends:-0}" -ge 20 ]
	for what in env argv; do
		build/tools/capgrep "$TMP/env.raw" "hprof-$what-$marker" >"$TMP/$what.grep"
		build/tools/capgrep --user "$TMP/env.raw" "hprof-$what-$marker" >"$TMP/$what.user.grep"
		grep -v '^capgrep:' "$TMP/$what.grep" | sed "s/^/# $what marker found in samples of: /"
		for w in nofp_recurse nofp_mmap; do
			n=$(awk -v w=$w '$1 == w { print $2 }' "$TMP/$what.user.grep")
			check "$what: no sample of $w interrupting user mode holds the marker (${n:-0})" [ -z "$n" ]
		done
		n=$(awk '$1 ~ /^nofp_(recurse|mmap)$/ { n += $2 } END { print n + 0 }' "$TMP/$what.grep")
		check "$what: no sample of the workloads holds the marker, kernel-mode ones included ($n)" \
			[ "$n" -eq 0 ]
	done
else
	fail "environment: hprof failed: $(tail -1 "$TMP/env.err")"
fi

# --- Delta copies. With HPROF_DEBUG=delta-verify the kernel sends each copy whole along
# with its delta: every copy hprof rebuilt must equal it, on a deep recursion, on threads
# and in a real program. The exact chains stay complete, and the deltas carry fewer bytes
# than whole copies of the same workload.
# deltas_field ERR N: the Nth number of the summary's "stack deltas:" line (1 rebuilt, 2
# whole copies, 3 lost for a missing base, 4 malformed, then the HPROF_DEBUG figures).
deltas_field() {
	sed -n 's/^hprof: stack deltas: //p' "$1" | grep -o '[0-9]\+' | sed -n "${2}p"
}
verified() { sed -n 's/.*checked against the whole copy: \([0-9]*\), \([0-9]*\) differed.*/\1 \2/p' "$1"; }
# xz works through the text for as long as the machine's CPU takes: ~4.6 MB keeps it busy
# for a second or more on a fast CPU, some 500 samples at 499 Hz.
text_lines 200000 >"$TMP/text"
for name in nofp_recurse nofp_threads xz; do
	case $name in
	nofp_recurse) cmd=("$WL/nofp_recurse" 3 30) ;;
	nofp_threads) cmd=("$WL/nofp_threads" 3) ;;
	xz)           cmd=(xz -9 -T1 -c "$TMP/text") ;;
	esac
	if ! HPROF_DEBUG=delta-verify "$HPROF" -v -F 499 --folded "$TMP/$name.verify.folded" -- "${cmd[@]}" \
		>/dev/null 2>"$TMP/$name.verify.err"; then
		fail "$name (delta-verify): hprof failed: $(tail -1 "$TMP/$name.verify.err")"
		continue
	fi
	read -r checked differed < <(verified "$TMP/$name.verify.err")
	rebuilt=$(deltas_field "$TMP/$name.verify.err" 1)
	lost=$(deltas_field "$TMP/$name.verify.err" 3)
	check "$name: rebuilt copies equal the whole copies sent along (${checked:-?} checked, ${differed:-?} differed)" \
		[ "${checked:-0}" -ge 200 -a "${differed:-1}" -eq 0 ]
	check "$name: most copies to the learned base were deltas (${rebuilt:-?} of ${checked:-?})" \
		[ "${rebuilt:-0}" -ge $((${checked:-0} * 9 / 10)) ]
	check "$name: no delta lost its base (${lost:-?})" [ "${lost:-1}" -eq 0 ]
done
# nofp_recurse: main -> recurse x 30 -> leaf, main reading the clock between two calls.
RECURSE_OWN='main|recurse|leaf|workload_.*'
RECURSE30="^nofp_recurse;$START($(printf ';recurse%.0s' $(seq 30))(;leaf)?|$CLOCK)$KERNEL\$"
THREADS_OWN='main|thread_main|worker_[0-3]|stage_[0-3]|spin|workload_.*'
cp "$TMP/nofp_recurse.verify.folded" "$TMP/recurse_delta.folded"
expect recurse_delta nofp_recurse "$RECURSE_OWN" \
	">= 99% of samples complete with the exact chain, copies rebuilt from deltas" "$RECURSE30"
cp "$TMP/nofp_threads.verify.folded" "$TMP/threads_delta.folded"
re="^nofp_threads;clone3;start_thread;thread_main(;worker_[0-3](;stage_[0-3](;spin)?|$CLOCK))?$KERNEL\$"
expect threads_delta nofp_threads "$THREADS_OWN" \
	">= 99% of samples complete with the exact chain, copies rebuilt from deltas" "$re"
crossed=$(awk '{ if (match($0, /worker_[0-3];stage_[0-3]/)) { p = substr($0, RSTART, RLENGTH);
	if (substr(p, 8, 1) != substr(p, 16, 1)) n += $NF } } END { print n + 0 }' "$TMP/threads_delta.folded")
check "nofp_threads: no thread's stack rebuilt with another's frames ($crossed samples)" [ "$crossed" -eq 0 ]

bytes() { sed -n 's/^hprof: \([0-9]*\) bytes received per sample.*/\1/p' "$1"; }
"$HPROF" -v -F 499 --folded /dev/null -- "$WL/nofp_recurse" 3 30 >/dev/null 2>"$TMP/delta_on.err"
"$HPROF" -v -F 499 --no-stack-delta --folded /dev/null -- "$WL/nofp_recurse" 3 30 >/dev/null 2>"$TMP/delta_off.err"
on=$(bytes "$TMP/delta_on.err") off=$(bytes "$TMP/delta_off.err")
check "nofp_recurse: deltas receive less than half the bytes of whole copies (${on:-?} < ${off:-?} / 2)" \
	[ "${on:-99999}" -lt $((${off:-0} / 2)) ]
check "nofp_recurse: --no-stack-delta sends no delta" \
	eval '! grep -q "^hprof: stack deltas:" "$TMP/delta_off.err"'
# A thread's copies run to the end of its stack only until its first walk has taught the
# kernel its base: the kernel wakes hprof for such copies, so that takes a few samples, not
# the 45 or more (at 499 Hz) of a reader that waits for its 100-ms poll and the 10-ms
# reorder window; 40 leaves a loaded machine 80 ms to answer the wakeups (~12 when idle).
to_end=$(sed -n 's/.* \([0-9]*\) to the end of the stack,.*/\1/p' "$TMP/delta_on.err")
check "nofp_recurse: at most 40 copies to the end of the stack before the base is known (${to_end:-?})" \
	[ "${to_end:-99}" -le 40 ]

# A delta against a copy hprof no longer holds cannot be rebuilt: HPROF_DEBUG=delta-drop:N
# drops every Nth copy hprof keeps, unknown to the kernel. The deltas after it lose their
# stacks under a named root, counted in the summary; hprof has the kernel send the
# thread's next copy whole, and its later samples are exact again.
if HPROF_DEBUG=delta-drop:40 "$HPROF" -v -F 499 --folded "$TMP/drop.folded" -- "$WL/nofp_recurse" 3 30 \
	>/dev/null 2>"$TMP/drop.err"; then
	dropped=$(sed -n 's/.*; \([0-9]*\) images dropped.*/\1/p' "$TMP/drop.err")
	lost=$(deltas_field "$TMP/drop.err" 3)
	whole=$(deltas_field "$TMP/drop.err" 2)
	named=$(awk '/\[truncated: delta base missing\]/ { n += $NF } END { print n + 0 }' "$TMP/drop.folded")
	summary=$(sed -n 's/.*\[truncated: delta base missing\] \([0-9]*\);.*/\1/p' "$TMP/drop.err")
	check "delta-drop: images were dropped (${dropped:-0})" [ "${dropped:-0}" -ge 3 ]
	check "delta-drop: deltas after a dropped image are counted lost (${lost:-?} >= ${dropped:-?})" \
		[ "${lost:-0}" -ge "${dropped:-1}" ]
	check "delta-drop: their samples are named [truncated: delta base missing] (${named} in the folded stacks, ${summary:-?} in the summary, ${lost:-?} lost)" \
		[ "$named" -eq "${lost:-0}" -a "${summary:-0}" -eq "${lost:-0}" ]
	check "delta-drop: each loss had the thread start again with a whole copy (${whole:-?} whole copies)" \
		[ "${whole:-0}" -ge "${dropped:-1}" ]
	exact=$(own_share "$TMP/drop.folded" nofp_recurse "$RECURSE_OWN" \
		"$(either "$RECURSE30" '^nofp_recurse;\[truncated: delta base missing\];')" "^nofp_recurse;$START\$")
	check "delta-drop: every other sample is exact ($exact, $named of them lost)" at_least 99 "$exact"
else
	fail "delta-drop: hprof failed: $(tail -1 "$TMP/drop.err")"
fi

# --- Bytes per sample: four threads whose stacks are a few hundred bytes deep.
"$HPROF" -v -F 499 --folded /dev/null -- "$WL/nofp_threads" 2 >/dev/null 2>"$TMP/bytes.err"
"$HPROF" -v -F 499 --no-dwarf --folded /dev/null -- "$WL/nofp_threads" 2 >/dev/null 2>"$TMP/bytes_fp.err"
b=$(bytes "$TMP/bytes.err") bfp=$(bytes "$TMP/bytes_fp.err")
check "nofp_threads: <= 4 KiB received per sample by default, not the old 16 KiB copy (${b:-?})" \
	[ "${b:-99999}" -le 4096 ]
check "nofp_threads: --no-dwarf receives fewer bytes still (${bfp:-?} < ${b:-?})" \
	[ "${bfp:-99999}" -lt "${b:-0}" ]

# --- A function that keeps a frame pointer (a VLA) in a program without them: its frame
# record is the thread's FP chain end only where the frames beyond are the same. Each of
# two callers, at the same stack depth, must get its own samples, complete.
for how in same other; do
	record nofp_fpframe 3 $how || continue
	f=$TMP/nofp_fpframe.folded
	[ $how = same ] && callers='outer_(a|b);mid' || callers='caller_(a|b)'
	re="^nofp_fpframe;$START(;$callers;with_vla|$CLOCK)$KERNEL\$"
	own='main|outer_(a|b)|mid|caller_(a|b)|with_vla|workload_.*'
	share=$(own_share "$f" nofp_fpframe "$own" "$re" "^nofp_fpframe;$START\$")
	# Both callers do the same work in turn: half the samples each.
	a=$(own_share "$f" nofp_fpframe "$own" ";${callers/(a|b)/a};with_vla")
	b=$(own_share "$f" nofp_fpframe "$own" ";${callers/(a|b)/b};with_vla")
	echo "# nofp_fpframe ($how): exact $share, under a: $a, under b: $b"
	check "nofp_fpframe ($how): >= 99% of samples complete with the exact chain ($share)" \
		at_least 99 "$share"
	check "nofp_fpframe ($how): each caller gets its own samples (a $a, b $b)" \
		eval 'at_least 30 "$a" && at_least 30 "$b"'
done

# --- A frame whose buffer's upper pages were never touched: the copy must get past them.
if record nofp_bigframe 3; then
	re="^nofp_bigframe;$START(;with_buffer(;leaf|$CLOCK))?$KERNEL\$"
	share=$(own_share "$TMP/nofp_bigframe.folded" nofp_bigframe 'main|with_buffer|leaf|workload_.*' "$re" \
		"^nofp_bigframe;$START\$")
	check "nofp_bigframe: >= 99% of samples complete past the untouched pages ($share)" \
		at_least 99 "$share"
	holes=$(copies "$TMP/nofp_bigframe.err" "with unreadable pages left as holes")
	check "nofp_bigframe: the copies went past unreadable pages, marked as holes (${holes:-?} of ${share#*/})" \
		[ "${holes:-0}" -ge $((${share#*/} / 2)) ]
	same_report nofp_bigframe "it carries the copies' holes"
fi

# --- A thread whose leaf runs with sp 4 bytes off a word boundary, in turn under its start
# routine and under ~136 KiB of frames that hold buffers: deeper than the largest copy.
# A copy to the learned base must reach the base's last word (start_thread's return
# address) however sp lies; a stack deeper than the ceiling goes with the window below the
# base, and the walk gets past the buffers between the two.
DEEP_OWN='main|worker|shallow|deep_[abc]|touch|odd_sp_spin|workload_.*'
DEEP_RE="^nofp_deepstack;clone3;start_thread;worker(;shallow;odd_sp_spin|;deep_a;deep_b;deep_c;odd_sp_spin|;workload_cpu_now$HOST)$KERNEL\$"
if record nofp_deepstack 3; then
	f="$TMP/nofp_deepstack.folded"
	expect nofp_deepstack nofp_deepstack "$DEEP_OWN" \
		">= 99% of samples complete with the exact chain, sp off a word boundary" "$DEEP_RE"
	deep=$(share_among "$f" nofp_deepstack ';deep_c(;|$)' "$DEEP_RE")
	check "nofp_deepstack: >= 99% of the samples ~136 KiB deep are complete ($deep)" \
		eval 'at_least 99 "$deep" && [ "${deep#*/}" -ge 100 ]'
	windows=$(copies "$TMP/nofp_deepstack.err" "deeper than the copy")
	check "nofp_deepstack: those went with the window below the base (${windows:-?} copies)" \
		[ "${windows:-0}" -ge $((${deep#*/} / 2)) ]
	same_report nofp_deepstack "it carries the windows below the base"
fi
# --- A stack deeper than the ceiling whose gap, between the copy from sp and the window
# below the base, holds return addresses: a dozen 3-KiB descend frames lie there. The walk
# crosses it by the frames the thread's shallower stacks (copied whole) showed at those sps,
# where the code agrees, and where it cannot it says so: no stack passes for complete short
# of main, and the deep leaf's stacks hold exactly its 52 descend frames.
descends() { printf 'descend;%.0s' $(seq "$1"); }
GAP_DEEP="^nofp_gap;$START;$(descends 52)spin_deep$KERNEL\$"
GAP_SHALLOW="^nofp_gap;$START;$(descends 24)spin_shallow$KERNEL\$"
if record nofp_gap 3; then
	f="$TMP/nofp_gap.folded"
	deep=$(share_among "$f" nofp_gap ';spin_deep(;|$)' "$GAP_DEEP")
	check "nofp_gap: >= 99% of the samples ~165 KiB deep are complete, 52 descend frames ($deep)" \
		eval 'at_least 99 "$deep" && [ "${deep#*/}" -ge 300 ]'
	wrong=$(awk -v deep="$GAP_DEEP" -v shallow="$GAP_SHALLOW" '/;spin_(deep|shallow)(;|$)/ &&
		!/\[truncated/ { s = $0; sub(/ [0-9]+$/, "", s); if (s !~ deep && s !~ shallow) n += $NF }
		END { print n + 0 }' "$f")
	check "nofp_gap: no stack of either leaf has another chain, short of truncated ($wrong samples)" \
		[ "$wrong" = 0 ]
	false=$(false_complete "$f")
	check "nofp_gap: no stack passes for complete short of an entry ($false samples)" [ "$false" = 0 ]
	crossed=$(sed -n "s/.*across their copy's gap by learned frames: \([0-9]*\)).*/\1/p" "$TMP/nofp_gap.err")
	check "nofp_gap: the deep walks crossed the gap by learned frames (${crossed:-?} in -v)" \
		[ "${crossed:-0}" -ge $((${deep#*/} / 2)) ]
	same_report nofp_gap "its deep stacks cross the gap the same way"
fi

# With a 8-KiB copy the deep samples cannot be walked: they must say so, not pass for stacks
# that end at odd_sp_spin. odd_sp_spin, the first function of the workload's .text, lies
# within the 256 bytes past the entry point that hprof takes for start-up code where no
# symbol or FDE says otherwise (240 bytes past it with Debian 12's gcc, binutils and crt
# files).
entry=$(readelf -h "$WL/nofp_deepstack" | awk '/Entry point/ { print $NF }')
spin=$(nm "$WL/nofp_deepstack" | awk '$3 == "odd_sp_spin" { print "0x" $1 }')
check "nofp_deepstack: odd_sp_spin lies within 256 bytes past the entry point ($spin, entry $entry)" \
	eval '[ -n "$spin" ] && [ -n "$entry" ] && [ $((spin - entry)) -ge 0 ] && [ $((spin - entry)) -lt 256 ]'
if "$HPROF" -F 499 --stack-size 8192 --folded "$TMP/deep_short.folded" -- "$WL/nofp_deepstack" 2 \
	>/dev/null 2>"$TMP/deep_short.err"; then
	short=$(share_among "$TMP/deep_short.folded" nofp_deepstack ';odd_sp_spin(;|$)' \
		'^nofp_deepstack;(clone3;start_thread;worker;|\[truncated: copy too short\];)')
	check "nofp_deepstack --stack-size 8192: every stack through odd_sp_spin is whole or truncated, none ends at it ($short)" \
		eval '[ "${short%/*}" = "${short#*/}" ] && [ "${short#*/}" -ge 200 ]'
	truncated=$(awk '/^nofp_deepstack;\[truncated: copy too short\];/ { n += $NF } END { print n + 0 }' \
		"$TMP/deep_short.folded")
	check "nofp_deepstack --stack-size 8192: the deep samples are truncated, copy too short ($truncated samples)" \
		[ "$truncated" -ge 100 ]
else
	fail "nofp_deepstack --stack-size 8192: hprof failed: $(tail -1 "$TMP/deep_short.err")"
fi
