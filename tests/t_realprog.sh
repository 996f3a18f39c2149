#!/usr/bin/env bash
# Real programs from Debian's packages (compressors, interpreters, sqlite3, openssl, node),
# the LLD-linked binaries of t_layouts, and programs whose hot code has no CFI (x264, dav1d, rav1e, aomenc
# and libjpeg-turbo's assembly, MKL's kernels; PCRE2's, LuaJIT's, HotSpot's, oneDNN's,
# QEMU's, LLVM's, PHP's, Mono's and BEAM's JIT code, GHC's Haskell code in shellcheck and
# pandoc, Go code described by .gopclntab alone in esbuild, Lisp in SBCL's core): at least
# 99% of each program's samples must come back with a complete user stack, one reaching the
# program's or thread's entry (stack_completeness in lib.sh), and none may pass for complete
# short of an entry (false_complete).
source "$(dirname "$0")/lib.sh"
require_bpf "realprog"

# same_frames_after FILE COMM FRAME N: "matched/total" over COMM's stacks in FILE that hold
# FRAME: matched, those whose N frames after it are the ones most of them have.
same_frames_after() {
	awk -v comm="$2" -v frame="$3" -v n="$4" '
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack); k = split(stack, f, ";")
		  if (f[1] != comm) next
		  for (i = 2; i <= k && f[i] != frame; i++) ;
		  if (i > k) next
		  total += count
		  key = "(fewer)"
		  if (i + n <= k) { key = f[i + 1]; for (j = 2; j <= n; j++) key = key ";" f[i + j] }
		  after[key] += count }
		END { for (a in after) if (after[a] > best) best = after[a]
		      printf "%d/%d\n", best, total }' "$1"
}

# among_check LABEL MIN FILE COMM WITHIN REGEX: >= 99% of COMM's stacks in FILE that match
# WITHIN (at least MIN of them) match REGEX too (share_among); on failure, the stacks that
# did not.
among_check() {
	local label=$1 min=$2 through
	shift 2
	through=$(share_among "$@")
	if at_least 99 "$through" && [ "${through#*/}" -ge "$min" ]; then
		ok "$label ($through)"
	else
		fail "$label ($through)"
		among_misses "$@" | sed 's/^/#   /'
	fi
}

# not_grep PATTERN FILE: no line of FILE matches PATTERN.
not_grep() { ! grep -q -- "$1" "$2"; }

realprog_prepare "$TMP"
realprog_nocfi_prepare "$TMP"
for name in $REALPROGS $REALPROGS_NOCFI; do
	if ! realprog_command "$name" "$TMP" 2>"$TMP/why"; then
		skip "$name" "$(cat "$TMP/why")"
		continue
	fi
	if ! "$HPROF" -v -F 499 --folded "$TMP/$name.folded" -- "${CMD[@]}" >/dev/null 2>"$TMP/$name.err"; then
		fail "$name: hprof or the program failed: $(tail -1 "$TMP/$name.err")"
		continue
	fi
	share=$(complete_share "$TMP/$name.folded")
	echo "# $name: complete $share"
	# For code without CFI: how the stacks were found and what the analysis made of the code.
	case " $REALPROGS_NOCFI " in *" $name "*)
		sed -n 's/^hprof: \(user stacks by method: [^(]*\).*/\1/p; s/^hprof: \(code without CFI: .*\)/\1/p' \
			"$TMP/$name.err" | sed "s/^/#   /" ;;
	esac
	false=$(false_complete "$TMP/$name.folded")
	check "$name: no stack passes for complete short of an entry ($false samples)" [ "$false" = 0 ]
	if [ "$false" != 0 ]; then
		stack_completeness "$TMP/$name.folded" | grep ' outermost frame ' | sed 's/^/#   /'
		awk -F';' '$2 !~ /^\[/ { print $2 }' "$TMP/$name.folded" | sort | uniq -c | sort -rn |
			head -20 | sed 's/^/#   outermost: /'
	fi
	if at_least 99 "$share" && [ "${share#*/}" -ge 200 ]; then
		ok "$name: >= 99% of samples have a complete user stack ($share)"
	else
		fail "$name: complete user stacks in $share samples; the others:"
		incomplete_why "$TMP/$name.folded" | sed 's/^/#   /'
	fi
	# A LuaJIT trace runs in the frame lua_pcall's call of the VM made (the chunk runs
	# under lua_pcall): a stack through the trace that lacks lua_pcall skipped frames,
	# complete or not.
	# oneDNN calls its generated kernels from its own code: the JIT frame's caller is a
	# libdnnl frame, in the main thread and in OpenMP's workers alike (the kernel, and so
	# its callers' names, depends on the CPU's vector units).
	if [ "$name" = onednn ] || [ "$name" = onednn_avx2 ]; then
		among_check "$name: stacks through the JIT kernels go on into libdnnl" 50 \
			"$TMP/$name.folded" onednn_gemm ';\[jit\](;|$)' ';libdnnl[^;]*;\[jit\](;|$)'
		# in the main thread, on into the program's call of dnnl_sgemm
		among_check "$name: the main thread's stacks through the JIT kernels hold main's call of dnnl_sgemm" 25 \
			"$TMP/$name.folded" onednn_gemm ';main;([^;]*;)*\[jit\](;|$)' \
			';main;([^;]*;)*dnnl_sgemm;([^;]*;)*\[jit\](;|$)'
	fi
	# HotSpot's interpreter (-Xint) runs Interp's leaf under main, a, b and c, each in an
	# interpreted frame of no CFI whose return address follows no call: a stack that ends
	# in the JIT code under JavaCalls::call_helper holds the call stub and those five
	# frames, none dropped, none added (the rest: class loading, the clock's native calls).
	if [ "$name" = java_interp ]; then
		among_check "java_interp: stacks in the interpreted code hold the call stub and the five interpreted frames" 200 \
			"$TMP/$name.folded" java ';JavaCalls::call_helper[^;]*(;\[jit\])+(;[^;]*_\[k\])*$' \
			';JavaCalls::call_helper[^;]*;\[jit\];\[jit\];\[jit\];\[jit\];\[jit\];\[jit\](;[^;]*_\[k\])*$'
	fi
	# QEMU's translated blocks run in the frame of its code buffer's prologue, which
	# cpu_exec's callee calls: the CFI QEMU registers says so, and names the buffer.
	if [ "$name" = qemu ]; then
		among_check "qemu: stacks through the translated blocks go on into cpu_exec" 100 \
			"$TMP/$name.folded" qemu-x86_64 ';code_gen_buffer(;|$)' ';cpu_exec;([^;]*;)*code_gen_buffer(;|$)'
	fi
	# LLVM's JIT registers each module's object, with its CFI and symbols: the JIT'd
	# functions are named and their chain is whole, main;middle;leaf_work.
	if [ "$name" = lli ]; then
		among_check "lli: the JIT'd functions are named, main;middle;leaf_work" 100 \
			"$TMP/$name.folded" lli-14 ';leaf_work(;|$)' 'runAsMain[^;]*;main;middle;leaf_work(;|$)'
	fi
	# MKL's kernels (mkl_blas_<cpu>_sgemm_kernel_*, no CFI) run under MKL's own BLAS code,
	# which the OpenMP workers and main's sgemm call alike: a stack whose leaf is a kernel
	# goes on into the OpenMP driver of MKL's sgemm.
	if [ "$name" = mkl ]; then
		among_check "mkl: stacks whose leaf is an sgemm kernel go on into MKL's driver" 100 \
			"$TMP/$name.folded" mkl_gemm ';mkl_blas_[a-z0-9]*_sgemm_kernel[^;]*$' ';[^;]*omp_driver[^;]*;([^;]*;)*mkl_blas_[a-z0-9]*_sgemm_kernel[^;]*$'
	fi
	# PHP's tracing JIT keeps its traces in shared anonymous memory, a mapping named
	# "/dev/zero (deleted)": JIT code, [jit] frames in execute_ex's frame (zend_execute
	# calls it), not code of a file named "zero".
	if [ "$name" = php ]; then
		among_check "php: stacks through the JIT's traces go on into zend_execute" 100 \
			"$TMP/$name.folded" php ';\[jit\](;|$)' ';zend_execute;\[jit\](;|$)'
		check "php: no frame is named after the JIT's mapping (zero+0x...)" \
			not_grep 'zero+0x' "$TMP/php.folded"
	fi
	# Mono's Fib keeps no frame pointer; Main and the runtime's invoke wrapper, JIT code
	# too, do. A stack whose leaf is JIT code has those three JIT frames or more: a chain
	# from rbp alone would skip every Fib frame but the leaf (the build before gave
	# mono-sgen;[jit] for most samples, marked complete).
	if [ "$name" = mono ]; then
		through=$(share_among "$TMP/$name.folded" mono ';\[jit\]$' ';\[jit\];\[jit\];\[jit\]$')
		check "mono: stacks whose leaf is JIT code hold Fib's caller, Main and the wrapper ($through)" \
			eval 'at_least 95 "$through" && [ "${through#*/}" -ge 100 ]'
	fi
	if [ "$name" = luajit ]; then
		through=$(share_among "$TMP/$name.folded" luajit ';\[jit\]' ';lua_pcall;')
		check "luajit: stacks through the trace keep lua_pcall and its callers ($through)" \
			at_least 99 "$through"
	fi
	# BEAM's C (lists:reverse/2's BIF, the garbage collector) runs on the scheduler's stack,
	# in the frame of the JIT-generated process_main: 16.5 KiB, realigned, its pages mostly
	# never touched, below the return address into beam.smp's C++ process_main. Without the
	# perf map (erl's default: no JIT function's start is known) as with it, a stack
	# through that C goes on through process_main into the thread's start.
	if [ "$name" = erl ]; then
		erl_c=';(lists_reverse_2|erts_garbage_collect_nobump)(;|$)'
		among_check "erl: stacks through BEAM's C on the scheduler's stack reach its start past process_main" 50 \
			"$TMP/$name.folded" 1_scheduler "$erl_c" \
			"^1_scheduler;clone3;start_thread;([^;]*;)*process_main;[^;]+;([^;]*;)*${erl_c#;}"
		if "$HPROF" -F 499 --folded "$TMP/erl_default.folded" -- \
			/usr/bin/erl -noshell +S 1:1 -pa "$TMP/erlang" -s work main 2.5 >/dev/null 2>"$TMP/erl_default.err"; then
			among_check "erl without its perf map: the same stacks reach the start past process_main" 50 \
				"$TMP/erl_default.folded" 1_scheduler "$erl_c" \
				"^1_scheduler;clone3;start_thread;([^;]*;)*process_main;\\[jit\\];([^;]*;)*${erl_c#;}"
		else
			fail "erl without its perf map: hprof or erl failed: $(tail -1 "$TMP/erl_default.err")"
		fi
	fi
	# GHC's Haskell code runs in the frame of the RTS's StgRun, which jumps to it: the one
	# return address above it is StgRun's, into the scheduler, after a direct call of
	# StgRun. Every stack of the program's main thread then goes from libc's call of main
	# through main and hs_main (shellcheck is stripped: the pair is named by address, the
	# same in every stack; pandoc exports them). The build before took main's own return
	# address, which follows a call through a pointer, for the Haskell code's:
	# __libc_start_call_main;[haskell], or (pandoc, whose scheduler's frame is found from
	# the rbp StgRun saved) truncated.
	if [ "$name" = shellcheck ] || [ "$name" = pandoc ]; then
		through=$(same_frames_after "$TMP/$name.folded" "$name" __libc_start_call_main 2)
		check "$name: stacks go from libc's call of main through the same two frames, main's and hs_main's ($through)" \
			eval 'at_least 99 "$through" && [ "${through#*/}" -ge 200 ]'
	fi
	# Debian's Go programs keep only Go's own .gopclntab: every Go function is named by it
	# (no frame named by address between two Go frames, whose names hold a package path and
	# a dot; cgo's C functions outside .dynsym, at a thread's start, stay unnamed), and no
	# frame lies above the stacks' ends Go's traceback knows, the g0 stack's included (the
	# word above systemstack's frame there is stale).
	if [ "$name" = esbuild ]; then
		# "by address/all" over the frames between two Go frames (none there when no Go
		# frame is named at all: at least 1000 must be)
		between=$(awk '{ n = split($0, f, ";")
			for (i = 3; i < n; i++) {
				if (f[i - 1] !~ /^[A-Za-z][^ +]*\.[^ +]*$/ ||
				    f[i + 1] !~ /^[A-Za-z][^ +]*\.[^ +]*( [0-9]+)?$/)
					continue
				t += $NF
				if (f[i] ~ /^esbuild\+0x/) c += $NF } }
			END { printf "%d/%d\n", c, t }' "$TMP/$name.folded")
		check "esbuild: every Go function named by .gopclntab ($between of the frames between two Go frames named by address)" \
			eval '[ "${between%/*}" = 0 ] && [ "${between#*/}" -ge 1000 ]'
		# (but for the switches hprof joins to the goroutine that made them, by its
		# g.m.curg.sched: such a stack starts at the goroutine's runtime.goexit)
		beyond=$(awk -v ends="$GO_STACK_ENDS" '{ n = split($0, f, ";")
			for (i = 3; i < n; i++)
				if (f[i] ~ ends && f[i + 1] !~ /_\[k\]/ && !(f[2] == "runtime.goexit" &&
				    f[i] ~ /^runtime\.(systemstack|mcall|morestack)(\.abi0)?$/))
					c += $NF }
			END { print c + 0 }' "$TMP/$name.folded")
		check "esbuild: no frame above where Go's traceback ends a stack ($beyond)" [ "$beyond" = 0 ]
	fi
	# SBCL's compiled Lisp runs from its core file's mapping, named [sbcl.core] as JIT code
	# is, on the Lisp stack SBCL entered from C: every stack through it goes on into
	# call_into_lisp_ and from there, by the frame records, to libc's start (the build
	# before stopped at the Lisp leaf: code it did not read, in a file without CFI).
	if [ "$name" = sbcl ]; then
		through=$(awk '/\[sbcl\.core\]/ { t += $NF; if (/;call_into_lisp_;\[sbcl\.core\]/) c += $NF }
			END { printf "%d/%d\n", c, t }' "$TMP/$name.folded")
		check "sbcl: stacks through the Lisp code go on into call_into_lisp ($through)" \
			eval 'at_least 99 "$through" && [ "${through#*/}" -ge 200 ]'
	fi
done
