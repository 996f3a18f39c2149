#!/usr/bin/env bash
# Real programs from Debian's packages (compressors, interpreters, sqlite3, openssl, node),
# the LLD-linked binaries of t_layouts, and programs whose hot code has no CFI (x264, dav1d
# and libjpeg-turbo's assembly, MKL's kernels; PCRE2's, LuaJIT's, HotSpot's, oneDNN's,
# QEMU's, LLVM's, PHP's and Mono's JIT code): at least 99% of each program's samples must come back with a complete user
# stack, one reaching the program's or thread's entry (stack_completeness in lib.sh).
source "$(dirname "$0")/lib.sh"
require_bpf "realprog"

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
	if [ "$name" = onednn ]; then
		through=$(share_among "$TMP/$name.folded" onednn_gemm ';\[jit\](;|$)' ';libdnnl[^;]*;\[jit\](;|$)')
		check "onednn: stacks through the JIT kernels go on into libdnnl ($through)" \
			eval 'at_least 99 "$through" && [ "${through#*/}" -ge 100 ]'
	fi
	# QEMU's translated blocks run in the frame of its code buffer's prologue, which
	# cpu_exec's callee calls: the CFI QEMU registers says so, and names the buffer.
	if [ "$name" = qemu ]; then
		through=$(share_among "$TMP/$name.folded" qemu-x86_64 ';code_gen_buffer(;|$)' ';cpu_exec;([^;]*;)*code_gen_buffer(;|$)')
		check "qemu: stacks through the translated blocks go on into cpu_exec ($through)" \
			eval 'at_least 99 "$through" && [ "${through#*/}" -ge 100 ]'
	fi
	# LLVM's JIT registers each module's object, with its CFI and symbols: the JIT'd
	# functions are named and their chain is whole, main;middle;leaf_work.
	if [ "$name" = lli ]; then
		through=$(share_among "$TMP/$name.folded" lli-14 ';leaf_work(;|$)' 'runAsMain[^;]*;main;middle;leaf_work(;|$)')
		check "lli: the JIT'd functions are named, main;middle;leaf_work ($through)" \
			eval 'at_least 99 "$through" && [ "${through#*/}" -ge 100 ]'
	fi
	# MKL's kernels (mkl_blas_<cpu>_sgemm_kernel_*, no CFI) run under MKL's own BLAS code,
	# which the OpenMP workers and main's sgemm call alike: a stack whose leaf is a kernel
	# goes on into the OpenMP driver of MKL's sgemm.
	if [ "$name" = mkl ]; then
		through=$(share_among "$TMP/$name.folded" mkl_gemm ';mkl_blas_[a-z0-9]*_sgemm_kernel[^;]*$' ';[^;]*omp_driver[^;]*;([^;]*;)*mkl_blas_[a-z0-9]*_sgemm_kernel[^;]*$')
		check "mkl: stacks whose leaf is an sgemm kernel go on into MKL's driver ($through)" \
			eval 'at_least 99 "$through" && [ "${through#*/}" -ge 100 ]'
	fi
	# PHP's tracing JIT keeps its traces in shared anonymous memory, a mapping named
	# "/dev/zero (deleted)": JIT code, [jit] frames in execute_ex's frame (zend_execute
	# calls it), not code of a file named "zero".
	if [ "$name" = php ]; then
		through=$(share_among "$TMP/$name.folded" php ';\[jit\](;|$)' ';zend_execute;\[jit\](;|$)')
		check "php: stacks through the JIT's traces go on into zend_execute ($through)" \
			eval 'at_least 99 "$through" && [ "${through#*/}" -ge 100 ]'
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
done
