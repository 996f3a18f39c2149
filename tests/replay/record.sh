#!/usr/bin/env bash
# Records cases of the replay corpus from live runs: tests/replay/record.sh CASE... (all of
# them with no CASE; "list" names them). Needs root and BPF, as hprof does, and the
# binaries the case runs; the corpus it writes needs neither (build/tests/test_replay).
#
# For each case: hprof samples the command (a few hundred samples, into a raw capture and
# folded stacks); the case's checks (tests/unit/replay_case.h: chains of known frames, the
# share of complete stacks; the same that tests/t_nocfi.sh and tests/t_realprog.sh judge)
# must hold on the live run's stacks, so that a refresh cannot bless a wrong stack; then
# build/tools/replay_case makes slices of the binaries (binary/slice_writer.h), replays the
# capture from them and from the files, and writes the expectation only when both agree;
# the checks must hold on it too. Only then does tests/replay/CASE/ take the capture, the
# slices, the expected folded stacks and the checks; a case that fails leaves it as it was.
source "$(dirname "$0")/../lib.sh"

TOOL=build/tools/replay_case
CORPUS=tests/replay

# A complete stack (stack_completeness in tests/lib.sh): its outermost user frame is an
# entry (the program's, the loader's, a thread's, libc's start routine where an FP chain
# ends, where Go's traceback ends, BEAM's exit), or an unnamed frame calling
# __libc_start_main or _dl_start.
ENTRY='(_start|_dl_start_user|__clone3|clone3|__clone|clone|__libc_start_call_main|__libc_start_main|start_thread|runtime\.(goexit|mstart|rt0_go|sigtramp|systemstack|mcall|morestack|asmcgocall|callCgo[A-Za-z]*|nanotime1|walltime1?|vgetrandom1)(\.abi0)?(\+0x[0-9a-f]+)?|\$erts_beamasm:normal_exit/0[^;]*)'
COMPLETE="re ^[^;]+;($ENTRY(;|$)|[^[;][^;]*;(__libc_start_main|_dl_start)(;|$))"
# Every stack not cut with a named reason reaches an entry: none passes for complete short
# of it (a zero read mid-stack, a chain through code without frame pointers).
NOT_FALSE_COMPLETE="# a stack not cut with a reason reaches an entry: none passes for complete short of it
100 re ^[^;]+;\\[truncated:[^;]*\\](;|$)|${COMPLETE#re }"

# A case: its command (CMD), sampling (FREQ Hz for TIME ms) and checks (CHECKS, one a line).
WORKLOAD_CASES="nofp_asm nofp_realign nofp_jumpframe nofp_decoys nofp_drap nofp_trampoline nofp_gdbjit nofp_jitdump nofp_signal nofp_cxx nofp_gap"
REALPROG_CASES="x264 tjbench pcre2grep luajit java java_interp onednn onednn_avx2 qemu lli mkl php mono erl shellcheck esbuild sbcl"

define_case() {
	FREQ=199 TIME=1500 CHECKS="99 $COMPLETE"$'\n'"$NOT_FALSE_COMPLETE"
	case $1 in
	nofp_asm)
		CMD=("$WL/nofp_asm" 1.5)
		CHECKS+=$'\n'"$(printf '2 %s\n' 'main;call_direct_leaf;asm_leaf' 'main;call_via_ptr_leaf;asm_leaf' \
			'main;call_direct_pushes;asm_pushes;c_callee' 'main;call_via_ptr_pushes;asm_pushes;c_callee' \
			'main;call_direct_multiret;asm_multiret' 'main;call_via_ptr_multiret;asm_multiret' \
			'main;call_direct_savedsp;asm_savedsp;c_callee' 'main;call_via_ptr_savedsp;asm_savedsp;c_callee' \
			'main;call_direct_pushjmp;asm_pushjmp;asm_jumped' 'main;call_via_ptr_pushjmp;asm_pushjmp;asm_jumped' \
			'main;call_direct_movsaves;asm_movsaves' 'main;call_via_ptr_movsaves;asm_movsaves')" ;;
	nofp_realign)
		CMD=("$WL/nofp_realign" 1.5)
		CHECKS+=$'\n''90 re ;main;call_(direct|via_ptr)_realign;asm_realign_big;c_callee$' ;;
	nofp_jumpframe)
		CMD=("$WL/nofp_jumpframe" 1.5)
		CHECKS+=$'\n''10 main;run_jump;jumped_spin'$'\n''10 main;run_jump;jumped_more;jumped_c_work' ;;
	nofp_decoys)
		CMD=("$WL/nofp_decoys" 1.5)
		CHECKS+=$'\n''90 main;decoy_caller;asm_decoy_leaf' ;;
	nofp_drap)
		CMD=("$WL/nofp_drap" 1.5)
		CHECKS+=$'\n''30 main;drap_loop;drap_realigned'$'\n''15 main;drap_loop;drap_realigned;drap_leaf' ;;
	nofp_trampoline)
		CMD=("$WL/nofp_trampoline" 1.5)
		CHECKS+=$'\n''90 main;eval_caller;[jit];py_eval_like' ;;
	nofp_gdbjit)
		CMD=("$WL/nofp_gdbjit" 1.5)
		CHECKS+=$'\n''90 main;run_block;gdbjit_block' ;;
	nofp_jitdump)
		CMD=("$WL/nofp_jitgen" 1.5 --jitdump)
		CHECKS+=$'\n''60 main;run_generated;jitgen_a;jitgen_b' ;;
	nofp_signal)
		CMD=("$WL/nofp_signal" 1.5)
		CHECKS+=$'\n''80 __restore_rt;on_alarm;busy_in_handler' ;;
	nofp_gap)
		# its deep stacks cross the gap between a copy's two parts by learned frames:
		# 52 descend frames under spin_deep, exactly
		CMD=("$WL/nofp_gap" 3)
		FREQ=99 TIME=3000
		CHECKS+=$'\n'"10 re ;main;$(printf 'descend;%.0s' $(seq 52))spin_deep\$" ;;
	nofp_cxx)
		CMD=("$WL/nofp_cxx" 1.5)
		CHECKS+=$'\n''50 main;run(Shape&, std::vector<Point, std::allocator<Point> >&)'
		CHECKS+=$'\n''1 run(Shape&, std::vector<Point, std::allocator<Point> >&);throw_and_catch();thrower(int)' ;;
	*)
		case " $REALPROG_CASES " in
		*" $1 "*) ;;
		*) echo "unknown case $1 (tests/replay/record.sh list)" >&2; return 1 ;;
		esac
		[ -n "${PREPARED:-}" ] || { realprog_nocfi_prepare "$TMP"; PREPARED=1; }
		realprog_command "$1" "$TMP" || return 1
		CHECKS=$(realprog_checks "$1")
		# deep stacks of varied data (x264's, Go's), or much code without CFI read for
		# each sampled address (GHC's): fewer samples keep the case small
		case $1 in x264) FREQ=99 TIME=1000 ;; esbuild|shellcheck) FREQ=99 TIME=2000 ;; esac ;;
	esac
}

# What tests/t_realprog.sh checks of each program, as replay_case checks.
realprog_checks() {
	echo "99 $COMPLETE"
	echo "$NOT_FALSE_COMPLETE"
	case $1 in
	java_interp) echo '99 among ;JavaCalls::call_helper[^;]*(;\[jit\])+$ re ;JavaCalls::call_helper[^;]*;\[jit\];\[jit\];\[jit\];\[jit\];\[jit\];\[jit\]$' ;;
	onednn|onednn_avx2) echo '99 among ;\[jit\](;|$) re ;libdnnl[^;]*;\[jit\](;|$)' ;;
	qemu) echo '99 among ;code_gen_buffer(;|$) re ;cpu_exec;([^;]*;)*code_gen_buffer(;|$)' ;;
	lli) echo '99 among ;leaf_work(;|$) re runAsMain[^;]*;main;middle;leaf_work(;|$)' ;;
	mkl) echo '99 among ;mkl_blas_[a-z0-9]*_sgemm_kernel[^;]*$ re ;[^;]*omp_driver[^;]*;([^;]*;)*mkl_blas_[a-z0-9]*_sgemm_kernel[^;]*$' ;;
	php) echo '99 among ;\[jit\](;|$) re ;zend_execute;\[jit\](;|$)' ;;
	mono) echo '95 among ;\[jit\]$ re ;\[jit\];\[jit\];\[jit\]$' ;;
	luajit) echo '99 among ;\[jit\] re ;lua_pcall;' ;;
	sbcl) echo '99 among \[sbcl\.core\] re ;call_into_lisp_;\[sbcl\.core\]' ;;
	esac
}

record_case() {
	local name=$1 dir="$TMP/case.$1" out="$CORPUS/$1"
	define_case "$name" || return 1
	mkdir -p "$dir"
	printf '%s\n' "$CHECKS" >"$dir/checks"
	if ! timeout 120 "$HPROF" -q -F "$FREQ" --time "$TIME" --raw "$dir/capture.raw" \
		--folded "$dir/live.folded" -- "${CMD[@]}" >"$dir/stdout" 2>"$dir/hprof.err"; then
		echo "$name: hprof or the program failed: $(tail -1 "$dir/hprof.err")" >&2
		return 1
	fi
	# nofp_jitgen says which perf map or jitdump it wrote
	rm -f $(sed -n 's,^\(map\|jitdump\) \(/tmp/\(perf\|jit\)-[0-9]*\.\(map\|dump\)\)$,\2,p' "$dir/stdout")
	"$TOOL" check "$dir/live.folded" "$dir/checks" ||
		{ echo "$name: the live run fails the checks: not recorded" >&2; return 1; }
	"$TOOL" record "$dir/capture.raw" "$dir" || { echo "$name: not recorded" >&2; return 1; }
	"$TOOL" check "$dir/expected.folded" "$dir/checks" ||
		{ echo "$name: the replay fails the checks: not recorded" >&2; return 1; }
	rm -rf "$out"
	mkdir -p "$out"
	gzip -9 -n -c "$dir/capture.raw" >"$out/capture.raw.gz"
	cp "$dir/slices.gz" "$dir/expected.folded" "$dir/checks" "$out/"
	chmod 0644 "$out"/*
	echo "$name: recorded ($(du -sh "$out" | cut -f1), $(awk '{ n += $NF } END { print n }' \
		"$out/expected.folded") samples)"
}

[ -x "$TOOL" ] || { echo "build first: make" >&2; exit 1; }
if [ "${1:-}" = list ]; then
	echo $WORKLOAD_CASES $REALPROG_CASES
	exit 0
fi
bpf_available || exit 1
status=0
for name in "${@:-$WORKLOAD_CASES $REALPROG_CASES}"; do
	for one in $name; do
		record_case "$one" || status=1
	done
done
exit $status
