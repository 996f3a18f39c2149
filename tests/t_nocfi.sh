#!/usr/bin/env bash
# Code without CFI, on real processes under the real BPF program: hand-written assembly
# (nofp_asm), JIT code with and without frame records, named by a perf map or a jitdump or
# not at all, in anonymous memory, shared memory or a file of no ELF format (nofp_jitgen),
# JIT code registered through gdb's JIT interface
# (nofp_gdbjit), callees run on a heap workspace that code without CFI moved rsp to
# (nofp_switch), a CPython-like trampoline copied into executable memory or in place
# (nofp_trampoline), code a trampoline jumps to and runs in its own frame (nofp_jumpframe),
# gcc's stack realignment through a DRAP sampled in its prologue
# and epilogue (nofp_drap), and a leaf whose frame holds planted decoys for a stack scan
# (nofp_decoys). Every workload has known call chains (expect_chains below); each sampled
# stack of the workload is judged frame by frame against them:
#   right      the program's start-up frames (whatever hprof names above main in most
#              stacks: libc's, not written here), then exactly a prefix of a true chain
#   truncated  under a [truncated: ...] root, and its frames are a run of a true chain
#   wrong      any other stack: a frame that is not on the stack, or a frame missing
# Stacks with none of the chains' frames (the dynamic loader's start-up, exit, kernel-only
# samples) and other processes' are not judged. Each run must be >= 99% right with no wrong
# stack at all. Frames below workload_cpu_now, the workloads' clock, are the host's (libc,
# the vDSO): any are allowed there. The workloads run for so many seconds of CPU time, so
# that a busy machine makes the runs longer rather than poorer in samples.
source "$(dirname "$0")/lib.sh"

# nofp_jitgen prints "map PATH" and "jitdump PATH": remove every file this test made.
trap 'rm -f $(sed -n "s,^\(map\|jitdump\) \(/tmp/\(perf\|jit\)-[0-9]*\.\(map\|dump\)\)$,\2,p" \
	"$TMP"/*.out 2>/dev/null); rm -rf "$TMP"' EXIT

KERNEL='(;[^;]*_\[k\])*'
# The least a judged run must hold; a run of S seconds at 999 Hz takes ~999 * S.
MIN_SAMPLES=500

source "$(dirname "$0")/judge.sh"

# judge_selftest: the judge on a folded file made by hand, whose answers are known.
judge_selftest() {
	local out
	expect_chains selftest 'main;f;g'
	cat >"$TMP/selftest.folded" <<-'EOF'
	w;_start;libc_start;main;f;g 10
	w;_start;libc_start;main;f;g;irq_[k];tick_[k] 4
	w;_start;libc_start;main;f 3
	w;_start;libc_start;main;f.constprop.0;g 1
	w;_start;libc_start;main;workload_cpu_now;clock_gettime;[vdso]+0x780 2
	w;_start;libc_start;main;g 1
	w;_start;libc_start;main;workload_cpu_now;g 1
	w;main;f;g 1
	w;[truncated: no CFI for pc];f;g 2
	w;[truncated: no CFI for pc];g;f 3
	w;_start;libc_start;exit;_IO_cleanup 5
	w;entry_SYSCALL_64_[k];do_exit_[k] 1
	other;_start;libc_start;main;x 7
	EOF
	out=$(judge "$TMP/selftest.folded" w "$(chains_of selftest)")
	# right 10 + 4 + 3 + 1 + 2; wrong: main;g, g below workload_cpu_now, no start-up, g;f
	# under the truncated root; truncated f;g; not judged: exit's and the kernel-only sample.
	[ "$(grep '^counts ' <<<"$out")" = "counts 20 6 2 6" ] &&
		[ "$(grep '^startup ' <<<"$out")" = "startup _start;libc_start" ] &&
		[ "$(grep -c '^wrong ' <<<"$out")" -eq 4 ]
}

check "the judge classifies a hand-made folded file as known" judge_selftest
require_bpf "nocfi"

# ---- what the workloads are built as ----

check "nofp_asm: no FDE covers asm_leaf, asm_pushes, asm_multiret, asm_savedsp, asm_pushjmp, asm_jumped, asm_movsaves (readelf -wF)" \
	uncovered "$WL/nofp_asm" asm_leaf asm_pushes asm_multiret asm_savedsp asm_pushjmp asm_jumped asm_movsaves
check "nofp_switch: no FDE covers switch_reg, switch_area, switch_frame (readelf -wF)" \
	uncovered "$WL/nofp_switch" switch_reg switch_area switch_frame
for fn in call_direct_movsaves call_via_ptr_movsaves; do
	check "nofp_asm: $fn's CFA is rbp + 16 in its body (readelf -wF)" \
		grep -q '^[0-9a-f]* rbp+16 ' <(fde_rows "$WL/nofp_asm" "$fn")
done
check "nofp_realign: no FDE covers asm_realign_big (readelf -wF)" \
	uncovered "$WL/nofp_realign" asm_realign_big
check "nofp_jumpframe: no FDE covers jumped_spin, jumped_more (readelf -wF)" \
	uncovered "$WL/nofp_jumpframe" jumped_spin jumped_more
check "nofp_trampoline: no FDE covers py_trampoline (readelf -wF)" \
	uncovered "$WL/nofp_trampoline" py_trampoline
check "nofp_decoys: no FDE covers asm_decoy_leaf, decoy_stale, decoy_unused (readelf -wF)" \
	uncovered "$WL/nofp_decoys" asm_decoy_leaf decoy_stale decoy_unused
check "nofp_drap: drap_realigned's CFA is r10 in the prologue (DRAP) (readelf -wF)" \
	grep -q '^[0-9a-f]* r10+0 ' <(fde_rows "$WL/nofp_drap" drap_realigned)
check "nofp_drap: drap_realigned's CFA is an expression in the body (readelf -wF)" \
	grep -q '^[0-9a-f]* exp ' <(fde_rows "$WL/nofp_drap" drap_realigned)

# ---- the runs ----

# record NAME [hprof options] -- WORKLOAD SECONDS [args]: profiles the workload at 999 Hz,
# the summary with every figure (-v).
record() {
	local name=$1; shift
	local opts=() workload
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	workload=$2
	shift 2
	timeout 60 "$HPROF" -v -F 999 "${opts[@]}" --folded "$TMP/$name.folded" -- "$WL/$workload" "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ fail "$name: hprof failed: $(tail -1 "$TMP/$name.err")"; return 1; }
}

# leaf_share NAME COMM REGEX: share of COMM's samples in run NAME whose innermost user
# frame matches REGEX (what the workload spends its time in: no unwinding involved).
leaf_share() { share_matching "$TMP/$1.folded" "$2" ";($3)$KERNEL\$"; }

# expect_leaves NAME COMM PCT FUNCTION...: each FUNCTION is the leaf of >= PCT% of samples.
expect_leaves() {
	local name=$1 comm=$2 pct=$3 fn share
	shift 3
	for fn in "$@"; do
		share=$(leaf_share "$name" "$comm" "$fn")
		check "$name: the workload runs in $fn ($share samples its leaf)" at_least "$pct" "$share"
	done
}

# Assembly without CFI called from C (with CFI), directly and through pointers.
ASM_CHAINS=('main;call_direct_leaf;asm_leaf' 'main;call_via_ptr_leaf;asm_leaf'
	'main;call_direct_pushes;asm_pushes;c_callee' 'main;call_via_ptr_pushes;asm_pushes;c_callee'
	'main;call_direct_multiret;asm_multiret' 'main;call_via_ptr_multiret;asm_multiret'
	'main;call_direct_savedsp;asm_savedsp;c_callee' 'main;call_via_ptr_savedsp;asm_savedsp;c_callee'
	'main;call_direct_pushjmp;asm_pushjmp;asm_jumped' 'main;call_via_ptr_pushjmp;asm_pushjmp;asm_jumped'
	'main;call_direct_movsaves;asm_movsaves' 'main;call_via_ptr_movsaves;asm_movsaves')
ASM_FUNCTIONS=(asm_leaf asm_pushes asm_multiret asm_savedsp asm_jumped asm_movsaves)
expect_chains asm "${ASM_CHAINS[@]}"
if record asm -- nofp_asm 3; then
	expect_leaves asm nofp_asm 5 "${ASM_FUNCTIONS[@]}" c_callee
	report_judged asm nofp_asm
fi

# The same without scanning: each function's own instructions give its caller, asm_savedsp's
# too (CFA = *(rbp) + 16, the caller's rsp kept in memory), and asm_jumped's return address,
# which follows no call, is taken because the walk from it reaches the start.
expect_chains asm_noscan "${ASM_CHAINS[@]}"
if record asm_noscan --no-scan -- nofp_asm 3; then
	expect_leaves asm_noscan nofp_asm 5 "${ASM_FUNCTIONS[@]}" c_callee
	report_judged asm_noscan nofp_asm
fi

# Callees run on a workspace on the heap: code without CFI moves rsp there and keeps the way
# back in a register, at the workspace's top, or in its frame found by rbp, in the main
# thread and in one more (nofp_switch.S). The callers' frames stay on the thread's stack,
# which the kernel copies a window of, below the thread's learned base (or where glibc puts
# a new thread's first frames). Every sample in the workspace must carry its whole chain.
switch_chains() {
	awk -v comm=nofp_switch '
		{ split($0, f, ";"); if (f[1] != comm) next
		  count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack); gsub(/;[^;]*_\[k\]/, "", stack)
		  if (stack !~ /;on_workspace$/) next
		  total += count
		  if (stack ~ /;\[truncated:/) truncated += count
		  else if (stack ~ /;(main|thread_main);run_phases;phase_(reg;switch_reg|area;switch_area|frame;switch_frame);on_workspace$/) right += count
		  else { wrong += count; if (shown++ < 5) print "#   wrong: " substr(stack, 1, 300) > "/dev/stderr" } }
		END { printf "%d %d %d %d\n", total, right + 0, wrong + 0, truncated + 0 }' "$1"
}
if record switch -F 4999 -- nofp_switch 2.4; then
	read -r total right wrong truncated < <(switch_chains "$TMP/switch.folded")
	echo "# switch: $total samples on the workspace: right $right, wrong $wrong, truncated $truncated"
	check "switch: >= 10000 samples on the workspace ($total)" test "$total" -ge 10000
	check "switch: >= 99% of them carry their whole chain back to the thread's stack ($right of $total)" \
		at_least 99 "$right/$total"
	check "switch: no stack with a wrong frame ($wrong)" test "$wrong" -eq 0
	check "switch: no stack passes for complete short of an entry ($(false_complete "$TMP/switch.folded"))" \
		test "$(false_complete "$TMP/switch.folded")" -eq 0
fi

# A frame laid out as BEAM's process_main's: 16.5 KiB reserved below a realigned rsp and
# never touched, the caller's rsp in rbx. Only a scan finds its return address: one that
# reads past the pages the kernel could not copy, further than 4 KiB, and passes over the
# stale return addresses main's clock reads left there (their walks reach the start too,
# but main's return address on them follows the call of call_*_realign).
expect_chains realign 'main;call_direct_realign;asm_realign_big;c_callee' \
	'main;call_via_ptr_realign;asm_realign_big;c_callee'
if record realign -- nofp_realign 3; then
	expect_leaves realign nofp_realign 90 c_callee
	report_judged realign nofp_realign
	passed_over=$(sed -n 's/.* \([0-9]*\) scans passed over one for a later candidate.*/\1/p' "$TMP/realign.err")
	echo "# realign: ${passed_over:-?} scans passed over a stale return address whose walk reached the start"
fi
# Without scanning, nothing finds that return address: the stacks are truncated, not wrong.
expect_chains realign_noscan 'main;call_direct_realign;asm_realign_big;c_callee' \
	'main;call_via_ptr_realign;asm_realign_big;c_callee'
if record realign_noscan --no-scan -- nofp_realign 2; then
	judged=$(judge "$TMP/realign_noscan.folded" nofp_realign "$(chains_of realign_noscan)")
	read -r _ right wrong truncated _ < <(grep '^counts ' <<<"$judged")
	check "realign_noscan: truncated, never wrong, without scanning ($right right, $wrong wrong, $truncated truncated)" \
		eval '[ "$wrong" -eq 0 ] && [ "$truncated" -gt "$right" ]'
fi

# Code run in the frame of a trampoline that jumped to it, as GHC's StgRun runs Haskell
# code: the one return address over it is jump_enter's, after a direct call of jump_enter,
# not of jumped_spin or jumped_more. A scan takes it because jump_enter jumps at exactly
# that depth below the code as it jumps on (jumped_more's call is 8 bytes lower); the stack
# then shows run_jump calling the code (a tail jump, shown as a tail call is). Decoys are
# planted every other round: copies of that return address at other depths, and of main's
# after its call through a pointer; in the other rounds that one, whose walk reaches the
# start too, is the only candidate of its kind, and taking it loses run_jump.
JUMP_CHAINS=('main;run_jump;jumped_spin' 'main;run_jump;jumped_more;jumped_c_work'
	'main;run_jump;jump_enter' 'main;run_jump;plant_decoys')
expect_chains jumpframe "${JUMP_CHAINS[@]}"
if record jumpframe -- nofp_jumpframe 3; then
	expect_leaves jumpframe nofp_jumpframe 20 jumped_spin jumped_c_work
	report_judged jumpframe nofp_jumpframe
	through=$(sed -n 's/.* \([0-9]*\) taken after a call of a function that jumped to the code.*/\1/p' \
		"$TMP/jumpframe.err")
	check "jumpframe: the summary counts frames found after a call of the trampoline (${through:-?})" \
		test "${through:-0}" -ge "$MIN_SAMPLES"
fi
expect_chains jumpframe_noscan "${JUMP_CHAINS[@]}"
if record jumpframe_noscan --no-scan -- nofp_jumpframe 2; then
	judged=$(judge "$TMP/jumpframe_noscan.folded" nofp_jumpframe "$(chains_of jumpframe_noscan)")
	read -r _ right wrong truncated _ < <(grep '^counts ' <<<"$judged")
	check "jumpframe_noscan: truncated, never wrong, without scanning ($right right, $wrong wrong, $truncated truncated)" \
		eval '[ "$wrong" -eq 0 ] && [ "$truncated" -gt "$right" ]'
fi

# The same, stripped of its symbols: the assembly has neither symbols nor CFI, so its frames
# are named after the starts its code shows (binary/code_starts.h), once per function. Each
# name "nofp_asm_s+0xADDR" is mapped back to the function the unstripped binary's symbols
# start at ADDR (nm), and the stacks are judged as above: a name at an address inside a
# function, or after the wrong one, makes the stack wrong.
# names_from_symbols BIN FOLDED COPY: FOLDED with COPY+0xADDR renamed after BIN's symbol at ADDR.
names_from_symbols() {
	awk -v copy="$3" '
	function hex(a) { sub(/^0+/, "", a); return a }
	NR == FNR { if ($2 ~ /^[tT]$/) name[hex($1)] = $3; next }
	{
		count = $NF
		sub(/ [0-9]+$/, "")
		n = split($0, f, ";")
		line = ""
		for (i = 1; i <= n; i++) {
			if (index(f[i], copy "+0x") == 1 && (hex(substr(f[i], length(copy) + 4)) in name))
				f[i] = name[hex(substr(f[i], length(copy) + 4))]
			line = line (i > 1 ? ";" : "") f[i]
		}
		print line, count
	}' <(nm "$1") "$2"
}
# no_asm_symbols BIN: nm finds no symbol of the assembly in BIN.
no_asm_symbols() { ! { nm "$1"; nm -D "$1"; } 2>/dev/null | grep -qE 'asm_(leaf|pushes|multiret|savedsp|pushjmp|jumped|movsaves)'; }
cp "$WL/nofp_asm" "$TMP/nofp_asm_s" && strip --strip-all "$TMP/nofp_asm_s"
check "nofp_asm stripped: no symbol names ${ASM_FUNCTIONS[*]}" \
	no_asm_symbols "$TMP/nofp_asm_s"
expect_chains asm_stripped "${ASM_CHAINS[@]}"
if WL=$TMP record asm_stripped_raw -- nofp_asm_s 3; then
	names_from_symbols "$WL/nofp_asm" "$TMP/asm_stripped_raw.folded" nofp_asm_s \
		>"$TMP/asm_stripped.folded"
	# in the assembly's code: what no symbol but a PLT stub's CFI names (the lazy binding
	# of a first call) is not the assembly's
	asm_lo=-1 asm_hi=0
	while read -r start size _ name; do
		((asm_lo < 0 || 16#$start < asm_lo)) && asm_lo=$((16#$start))
		((16#$start + 16#$size > asm_hi)) && asm_hi=$((16#$start + 16#$size))
	done < <(nm -S "$WL/nofp_asm" | grep -E ' asm_(leaf|pushes|multiret|savedsp|pushjmp|jumped|movsaves)$')
	unnamed=$(grep -o 'nofp_asm_s+0x[0-9a-f]*' "$TMP/asm_stripped.folded" | sort -u |
		while read -r frame; do
			addr=$((16#${frame#nofp_asm_s+0x}))
			((addr >= asm_lo && addr < asm_hi)) && echo "$frame"
		done | tr '\n' ' ')
	check "asm_stripped: every frame of the stripped copy's assembly is named after a function's start (${unnamed:-all})" \
		test -z "$unnamed"
	expect_leaves asm_stripped nofp_asm_s 5 "${ASM_FUNCTIONS[@]}" c_callee
	report_judged asm_stripped nofp_asm_s
fi

# JIT code: jitgen_a calls jitgen_b; both are [jit] unless a perf map names them.
jit_chains() {
	expect_chains "$1" "main;run_generated;$2;$3" 'main;setup;*' 'main;parse_options;*'
}
jit_chains jit_nofp '[jit]' '[jit]'
if record jit_nofp -- nofp_jitgen 1.5; then
	expect_leaves jit_nofp nofp_jitgen 90 '\[jit\]'
	report_judged jit_nofp nofp_jitgen
fi
jit_chains jit_fp '[jit]' '[jit]'
record jit_fp -- nofp_jitgen 1 --fp && report_judged jit_fp nofp_jitgen
jit_chains jit_map jitgen_a jitgen_b
if record jit_map -- nofp_jitgen 1 --perf-map; then
	expect_leaves jit_map nofp_jitgen 5 jitgen_a jitgen_b
	report_judged jit_map nofp_jitgen
fi
# A jitdump file names the functions; its first page is mapped executable (perf's marker),
# a mapping of a file that is no ELF. Unnamed JIT frames are judged as the unwinding's, the
# names apart.
expect_chains jit_dump 'main;run_generated;jitgen_a;jitgen_b' 'main;run_generated;[jit];[jit]' \
	'main;setup;*' 'main;parse_options;*'
if record jit_dump -- nofp_jitgen 1 --jitdump; then
	named=$(leaf_share jit_dump nofp_jitgen 'jitgen_a|jitgen_b')
	check "jit_dump: the JIT code is named from the dump (jitgen_a or jitgen_b is the leaf of $named samples)" \
		at_least 90 "$named"
	report_judged jit_dump nofp_jitgen
fi

# Functions longer than the code an analysis reads at first (oneDNN's JIT GEMM kernels): an
# epilogue 32 KiB past the loop, and jitgen_b's loop unrolled over 4 KiB, so that samples
# fall on many pcs. Without scanning, only the analysis finds the callers: it reads the
# code again further on. The process's last samples are walked after it exited, some at
# pcs not analysed before: their code comes from the copies of what was read while it
# lived, so no analysis goes without its code. With a perf map, the analysis traces from
# the entry's start and needs no more code.
jit_chains jit_long '[jit]' '[jit]'
if record jit_long --no-scan -- nofp_jitgen 1.5 --long; then
	expect_leaves jit_long nofp_jitgen 90 '\[jit\]'
	report_judged jit_long nofp_jitgen
	check "jit_long: the summary counts analyses that read the code again further on" \
		grep -Eq 'regions analysed \([1-9][0-9]* read again further on\)' "$TMP/jit_long.err"
	check "jit_long: every analysis had the code, also after the process exited (0 unreadable)" \
		grep -q ' 0 unreadable,' "$TMP/jit_long.err"
fi
# Code first run in a process's last moments (HotSpot compiles a method's loop as the
# program ends): the late pair, written 32 KiB past the first once its second is up, runs
# for 60 ms of CPU and the process exits. A sample is walked ~15 ms after it was taken while
# a process with JIT code is sampled (RECORDER_JIT_POLL_MS), so the late pair's first
# samples read its code while the process lives, and its last ones, walked after it exited,
# have it from the copies of that read. Read every 100 ms, a run in five lost the code
# and scanned past jitgen_late_a.
expect_chains jit_late 'main;run_generated;jitgen_a;jitgen_b' \
	'main;run_late_pair;run_generated;jitgen_late_a;jitgen_late_b' \
	'main;run_late_pair;workload_cpu_now;*' 'main;setup;*' 'main;parse_options;*'
if record jit_late -- nofp_jitgen 1 --late --perf-map; then
	report_judged jit_late nofp_jitgen
	late=$(leaf_share jit_late nofp_jitgen 'jitgen_late_a|jitgen_late_b')
	check "jit_late: the late pair is the leaf of >= 30 samples ($late)" [ "${late%/*}" -ge 30 ]
	check "jit_late: every analysis had the code, also after the process exited (0 unreadable)" \
		grep -q ' 0 unreadable,' "$TMP/jit_late.err"
fi
# The late pair for 4 ms: walked after the process exited, its code never read. A stack
# there stops where a scan meets a return address into that code ("JIT code gone"), none
# skips a frame: read every 100 ms, one run in five scanned past jitgen_late_a to
# run_generated, and the build before any took the code's return address for no call.
expect_chains jit_gone 'main;run_generated;jitgen_a;jitgen_b' \
	'main;run_late_pair;run_generated;jitgen_late_a;jitgen_late_b' \
	'main;run_late_pair;workload_cpu_now;*' 'main;setup;*' 'main;parse_options;*'
if record jit_gone -F 4999 -- nofp_jitgen 1 --late-brief --perf-map; then
	report_judged jit_gone nofp_jitgen
	# (a loaded machine that keeps the process from exiting ~10 ms walks some of the late
	# samples while it lives, and then every one: right, none gone)
	late=$(share_matching "$TMP/jit_gone.folded" nofp_jitgen ';jitgen_late_[ab]'"$KERNEL"'$')
	gone=$(share_matching "$TMP/jit_gone.folded" nofp_jitgen \
		';\[truncated: JIT code gone\];jitgen_late_[ab]'"$KERNEL"'$')
	right=$(share_matching "$TMP/jit_gone.folded" nofp_jitgen \
		';main;run_late_pair;run_generated;jitgen_late_a(;jitgen_late_b)?'"$KERNEL"'$')
	check "jit_gone: each of the late pair's ${late%/*} samples is right (${right%/*}) or ends as 'JIT code gone' (${gone%/*})" \
		[ "${late%/*}" -ge 1 -a $((${right%/*} + ${gone%/*})) -eq "${late%/*}" ]
fi
jit_chains jit_long_map jitgen_a jitgen_b
if record jit_long_map --no-scan -- nofp_jitgen 1 --long --perf-map; then
	report_judged jit_long_map nofp_jitgen
	check "jit_long_map: from the perf map's start, no analysis read the code again" \
		grep -q 'regions analysed (0 read again further on)' "$TMP/jit_long_map.err"
fi

# Code written through one mapping of a memfd and run from another (BEAM's and .NET's JITs),
# or kept in shared anonymous memory ("/dev/zero (deleted)": PHP's opcache JIT): a file
# mapping, but no ELF file, so JIT code as if anonymous: analysed from the process's memory,
# named by the perf map. The build before took it for a file without CFI: its stacks
# skipped jitgen_a (memfd) or stopped there (shared memory, without scanning).
jit_chains jit_memfd '[jit]' '[jit]'
if record jit_memfd -- nofp_jitgen 1.5 --memfd; then
	expect_leaves jit_memfd nofp_jitgen 90 '\[jit\]'
	report_judged jit_memfd nofp_jitgen
fi
jit_chains jit_shared '[jit]' '[jit]'
if record jit_shared --no-scan -- nofp_jitgen 1 --shared; then
	expect_leaves jit_shared nofp_jitgen 90 '\[jit\]'
	report_judged jit_shared nofp_jitgen
fi
jit_chains jit_memfd_map jitgen_a jitgen_b
if record jit_memfd_map --no-scan -- nofp_jitgen 1 --memfd --perf-map; then
	expect_leaves jit_memfd_map nofp_jitgen 5 jitgen_a jitgen_b
	report_judged jit_memfd_map nofp_jitgen
fi

# Code compiled into a private, writable and executable mapping of a file that is no ELF
# (SBCL's core): JIT code too, read from the process, named after its file. The build
# before took it for a file without CFI whose code it could not read.
jit_chains jit_image '[jitgen.img]' '[jitgen.img]'
if record jit_image -- nofp_jitgen 1.5 --image "$TMP/jitgen.img"; then
	expect_leaves jit_image nofp_jitgen 90 '\[jitgen\.img\]'
	report_judged jit_image nofp_jitgen
fi

# JIT code on a stack of its own, as BEAM runs each Erlang process: nothing on it leads to
# main, and its first frame returns to the address the program's beam_normal_exit holds,
# where hprof ends the walk as at a thread's start. Each stack through the JIT code is
# [jit];[jit];[jit] (exit_stub, green_outer, green_inner), complete, with scanning or
# without. The build before stopped at exit_stub: 1.6% complete.
green_stacks() {
	share_among "$TMP/$1.folded" nofp_greenstack ';\[jit\]$' \
		'^nofp_greenstack;\[jit\];\[jit\](;\[jit\])?$'
}
for run in green green_noscan; do
	opts=()
	[ "$run" = green_noscan ] && opts=(--no-scan)
	if record "$run" "${opts[@]}" -- nofp_greenstack 1.5; then
		expect_leaves "$run" nofp_greenstack 90 '\[jit\]'
		through=$(green_stacks "$run")
		check "$run: stacks through the JIT code end at the program's beam_normal_exit, complete ($through)" \
			eval 'at_least 99 "$through" && [ "${through#*/}" -ge 500 ]'
	fi
done

# JIT code described through gdb's JIT interface, laid out as QEMU's TCG lays it out: a
# block that runs in its prologue's frame and whose code shows no return. Without
# scanning, only the CFI the program registered finds its caller.
expect_chains gdbjit 'main;run_block;gdbjit_block' 'main;run_block;[jit]' 'main;setup;*' \
	'main;parse_options;*'
if record gdbjit --no-scan -- nofp_gdbjit 1.5; then
	expect_leaves gdbjit nofp_gdbjit 90 gdbjit_block
	report_judged gdbjit nofp_gdbjit
	check "gdbjit: the summary counts the registration and its object" \
		grep -q 'gdb JIT interface: 1 processes, 1 objects with CFI' "$TMP/gdbjit.err"
fi

# A trampoline between two C functions: a copy in executable memory ([jit]), or in place.
expect_chains tramp 'main;eval_caller;[jit];py_eval_like' 'main;setup;*' 'main;parse_options;*'
if record tramp -- nofp_trampoline 1.5; then
	expect_leaves tramp nofp_trampoline 90 py_eval_like
	report_judged tramp nofp_trampoline
fi
expect_chains tramp_in_place 'main;eval_caller;py_trampoline;py_eval_like' 'main;setup;*' \
	'main;parse_options;*'
record tramp_in_place -- nofp_trampoline 1 --in-place && report_judged tramp_in_place nofp_trampoline

# drap_leaf_pcs PROFILE: "ADDRESS COUNT" for each pc (hex, as nm prints them) at which
# nofp_drap's samples had drap_realigned as their innermost user frame (go tool pprof -raw
# lists every sample's locations, leaf first, then the locations' addresses).
drap_leaf_pcs() {
	go tool pprof -raw "$1" 2>/dev/null | awk '
		/^Samples:/ { part = "samples"; next }
		/^Locations/ { part = "locations"; next }
		/^Mappings/ { part = "" }
		part == "samples" && /^ +[0-9]+ +[0-9]+: / {
			n++; count[n] = $1; ids[n] = $0; sub(/^[^:]*: */, "", ids[n]); next }
		part == "samples" && /comm:\[/ { comm[n] = $0 ~ /comm:\[nofp_drap\]/ }
		part == "locations" && /^ +[0-9]+: 0x/ {
			id = $1; sub(/:$/, "", id); addr[id] = $2; fn[id] = $4; kernel[id] = $0 ~ /kallsyms/ }
		END {
			for (i = 1; i <= n; i++) {
				if (!comm[i])
					continue
				k = split(ids[i], loc, " ")
				for (j = 1; j <= k && kernel[loc[j]]; j++)
					;
				if (j <= k && fn[loc[j]] == "drap_realigned")
					at[addr[loc[j]]] += count[i]
			}
			for (a in at)
				print a, at[a]
		}'
}

# drap_regions PROFILE: "PROLOGUE BODY EPILOGUE": samples in drap_realigned before, in and
# after the rows whose CFA is an expression (readelf -wF), where rsp is realigned.
drap_regions() {
	local body_from body_to addr count pro=0 body=0 epi=0
	read -r body_from body_to < <(fde_rows "$WL/nofp_drap" drap_realigned |
		awk '$2 == "exp" && !from { from = $1 } from && $2 != "exp" && !to { to = $1 } END { print from, to }')
	while read -r addr count; do
		if ((addr < 16#$body_from)); then
			pro=$((pro + count))
		elif ((addr < 16#$body_to)); then
			body=$((body + count))
		else
			epi=$((epi + count))
		fi
	done < <(drap_leaf_pcs "$1")
	echo "$pro $body $epi"
}

# gcc's stack realignment through a DRAP (r10), with CFI: the rows where only r10 gives the
# CFA (the prologue and the epilogue) are sampled too, not only the body. They are counted
# together: the epilogue is two instructions after the body's last row (lea, ret), and how
# many samples land there is the CPU's and the hypervisor's doing (from a tenth of the
# function's samples on one machine to none on another); the CFA = r10 rule is the same.
expect_chains drap 'main;drap_loop;drap_realigned;drap_leaf'
if record drap --pprof "$TMP/drap.pb.gz" -- nofp_drap 2.5; then
	expect_leaves drap nofp_drap 10 drap_realigned drap_leaf
	if command -v go >/dev/null; then
		read -r pro body epi < <(drap_regions "$TMP/drap.pb.gz")
		echo "# drap: drap_realigned's own samples: prologue $pro, body $body, epilogue $epi"
		check "drap: samples where the CFA is r10, in drap_realigned's prologue and epilogue ($pro + $epi), and in its body ($body)" \
			[ $((pro + epi)) -ge 10 -a "$body" -ge 10 ]
	else
		skip "drap: samples in the prologue, body and epilogue" "no go tool pprof (scripts/install-deps.sh)"
	fi
	report_judged drap nofp_drap
fi

# A leaf without CFI whose frame holds a function's first address, a stale return address,
# a fake frame record (where rbp points) and a return address whose frame's own return
# address is 0, before its true return address.
expect_chains decoys 'main;decoy_caller;asm_decoy_leaf' 'main;parse_options;*'
if record decoys -- nofp_decoys 2.5; then
	expect_leaves decoys nofp_decoys 90 asm_decoy_leaf
	report_judged decoys nofp_decoys
	check "decoys: no stack names decoy_zero, decoy_stale or decoy_unused, which never run" \
		[ "$(share_matching "$TMP/decoys.folded" nofp_decoys ';decoy_(zero|stale|unused)(;|$)')" = \
		  "0/$(share_matching "$TMP/decoys.folded" nofp_decoys . | cut -d/ -f2)" ]
fi

# Scanning alone against the decoys (HPROF_DEBUG=scan: no analysis, no frame records): the
# leaf's caller is found only by a scan, which must pass over the code pointer after no call
# and the stale return address (and follow no fake frame record). Its false-positive rate
# is the share of scanned stacks with a wrong frame.
expect_chains decoys_scan 'main;decoy_caller;asm_decoy_leaf' 'main;parse_options;*'
if HPROF_DEBUG=scan record decoys_scan -- nofp_decoys 2.5; then
	report_judged decoys_scan nofp_decoys
	scanned=$(sed -n 's/.*frames found by frame records [0-9]*, by scanning \([0-9]*\) (candidates rejected: \([0-9]*\) by their code, \([0-9]*\) by a walk, \([0-9]*\) as stale;.*/\1 \2 \3 \4/p' \
		"$TMP/decoys_scan.err")
	read -r scan_frames rejected_code rejected_walk rejected_stale <<<"${scanned:-0 0 0 0}"
	echo "# decoys_scan: $scan_frames frames found by scanning; candidates rejected: $rejected_code by their code, $rejected_walk by a walk, $rejected_stale as stale"
	check "decoys_scan: the leaf's callers were found by scanning ($scan_frames frames)" \
		[ "$scan_frames" -ge "$MIN_SAMPLES" ]
	# A sample taken before the leaf wrote its decoys (its first instructions) meets none:
	# where samples land is the CPU's doing, so 99% of scans, not every one.
	check "decoys_scan: 99% of scans passed over both decoys ($rejected_code rejected by their code, $rejected_walk by a walk, $rejected_stale as stale, $scan_frames scans)" \
		[ $((100 * rejected_code)) -ge $((99 * scan_frames)) ] &&
		[ $((100 * (rejected_code + rejected_walk + rejected_stale))) -ge $((198 * scan_frames)) ]
fi

# The same by scanning alone, the leaf called through a pointer: the true return address
# is then of the kind decoy (d) is (after an indirect call), and (d) comes first. A walk
# from (d) ends on a zero return address in decoy_zero's frame: no entry of the program or
# a thread, so the scan passes over it, always. Without a return address the scan is sure
# of, a sample taken before the leaf wrote its frame can meet what an earlier indirect call
# left there (main's clock read through the vDSO's pointer, whose walk reaches main too):
# that rate is scanning's false positives, bounded here at 5 per mille (seen: 0-1 of 2,500).
expect_chains decoys_ptr 'main;decoy_caller;asm_decoy_leaf' 'main;parse_options;*'
if HPROF_DEBUG=scan record decoys_ptr -- nofp_decoys 2.5 --via-pointer; then
	report_judged decoys_ptr nofp_decoys 5
	check "decoys_ptr: no stack names decoy_zero, decoy_stale or decoy_unused, which never run" \
		[ "$(share_matching "$TMP/decoys_ptr.folded" nofp_decoys ';decoy_(zero|stale|unused)(;|$)' | cut -d/ -f1)" = 0 ]
fi

echo "# all runs: $TOTAL_SAMPLES stacks judged"
check "all runs together judge >= 10000 stacks ($TOTAL_SAMPLES)" [ "$TOTAL_SAMPLES" -ge 10000 ]
