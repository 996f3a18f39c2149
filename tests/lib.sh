# Shared helpers for tests/t_*.sh. Source it; then call check/ok/fail/skip.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
HPROF=${HPROF:-build/hprof}
WL=build/workloads
# No test fetches debug files from a server it did not start (Debian sets DEBUGINFOD_URLS
# for login shells when debuginfod.debian.net is configured).
unset DEBUGINFOD_URLS
TMP=$(mktemp -d /tmp/hprof-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

ok()   { echo "ok - $*"; }
fail() { echo "not ok - $*"; }

# skip NAME WHY: a skipped BPF check is a failure under CI, where BPF must work.
skip() {
	local name=$1; shift
	if [ "${CI:-}" = true ]; then
		echo "not ok - $name: skipped under CI: $*"
	else
		echo "skip - $name: $*"
	fi
}

# cpythons: the CPythons hprof reads frames of that are here, a path a line: Debian's
# python3.11 and every pyenv CPython 3.8-3.13.
cpythons() {
	local minor py
	if [ -x /usr/bin/python3.11 ]; then echo /usr/bin/python3.11; fi
	for minor in 8 9 10 11 12 13; do
		for py in /root/.pyenv/versions/3.$minor.*/bin/python3.$minor; do
			if [ -x "$py" ]; then echo "$py"; fi
		done
	done
}

# check NAME CMD...: ok when CMD exits 0.
check() {
	local name=$1; shift
	if "$@"; then ok "$name"; else fail "$name"; fi
}

# bpf_available: root with a BTF kernel; otherwise says why on stderr.
bpf_available() {
	if [ "$(id -u)" -ne 0 ]; then echo "not root" >&2; return 1; fi
	if [ ! -r /sys/kernel/btf/vmlinux ]; then echo "no kernel BTF" >&2; return 1; fi
	return 0
}

# share_matching FILE COMM REGEX: percent (integer) of COMM's samples in folded FILE whose
# stack (without the count) matches the extended REGEX; prints "matched/total".
share_matching() {
	awk -v comm="$2" -v re="$3" '
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
		  split(stack, f, ";"); if (f[1] != comm) next
		  total += count; if (stack ~ re) matched += count }
		END { printf "%d/%d\n", matched, total }' "$1"
}

# share_among FILE COMM WITHIN RE: "matched/total" over COMM's samples whose stack matches
# the extended regex WITHIN, matched when it also matches RE.
share_among() {
	awk -v comm="$2" -v within="$3" -v re="$4" '
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
		  split(stack, f, ";"); if (f[1] != comm || stack !~ within) next
		  total += count; if (stack ~ re) matched += count }
		END { printf "%d/%d\n", matched, total }' "$1"
}

# among_misses FILE COMM WITHIN REGEX [N]: the N (3) commonest of COMM's stacks in FILE that
# match WITHIN but not REGEX, with their counts (what share_among did not count).
among_misses() {
	awk -v comm="$2" -v within="$3" -v re="$4" '
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
		  split(stack, f, ";"); if (f[1] != comm || stack !~ within || stack ~ re) next
		  miss[stack] += count }
		END { for (m in miss) print miss[m], m }' "$1" | sort -rn | head -"${5:-3}" | cut -c1-600
}

# own_share FILE COMM OWN REGEX [CALLERS]: "matched/total" like share_matching, over the
# samples in which COMM's own program ran (see own_samples); matched: those whose whole
# stack matches the extended REGEX or, when CALLERS is given, whose frames up to the
# innermost frame of the program match the extended regex CALLERS, the frames of the
# program that call into libc (main;printf...): below it, libc, the vDSO and the kernel
# pick their own functions.
own_share() { own_samples "$@" | head -1; }

# own_others FILE COMM OWN REGEX [CALLERS]: the 5 commonest stacks of own_share's samples
# that did not match, as "COUNT STACK" lines.
own_others() { own_samples "$@" | tail -n +2 | sort -rn | head -5; }

# own_samples FILE COMM OWN REGEX [CALLERS]: own_share's "matched/total", then a
# "COUNT STACK" line per stack that did not match. A frame of the program is one whose
# whole name matches the extended regex OWN (the program's own functions, such as
# main|leaf), or one named after an address in the program (COMM+0x...) or in no known
# mapping ([unmapped]+0x..., ?+0x...). The samples counted are COMM's user stacks (samples
# with no user frame, kernel work in execve or exit, are no stacks of the program) that are
# incomplete (as stack_completeness says: under a [truncated: ...] root or not reaching an
# entry) or hold a frame of the program. The others, complete stacks wholly outside the
# program (the dynamic loader before main, libc's exit code after it), are left out: how
# long they take is the machine's business. So a sample is judged by what the program's
# code was doing whatever its leaf (the program's own loop, the clock it reads, its stdio,
# the vDSO, the kernel), and a stack that is cut short, or names the program's code
# wrongly, always counts.
own_samples() {
	awk -v comm="$2" -v own="^($3)\$" -v re="$4" -v callers="${5:-}" '
		function mine(name) {
			return name ~ own || index(name, comm "+0x") == 1 || name ~ /^(\[unmapped\]|\?)\+0x/
		}
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
		  n = split(stack, f, ";"); if (f[1] != comm) next
		  if (n < 2 || f[2] ~ /_\[k\]$/) next
		  outer = f[3]; sub(/\+0x[0-9a-f]+$/, "", outer)
		  ran = !(f[2] ~ /^(_start|_dl_start_user|__clone3|clone3|__clone|clone)$/ ||
			  (f[2] !~ /^\[/ && (outer ~ /^__libc_start_main/ || outer == "_dl_start")))
		  inner = 0
		  for (i = 2; i <= n; i++)
			  if (f[i] !~ /_\[k\]$/ && mine(f[i])) inner = i
		  if (!ran && !inner) next
		  total += count
		  right = stack ~ re
		  if (!right && callers != "" && inner) {
			  prefix = f[1]
			  for (i = 2; i <= inner; i++) prefix = prefix ";" f[i]
			  right = prefix ~ callers
		  }
		  if (right) matched += count; else others[stack] += count }
		END { printf "%d/%d\n", matched, total
		      for (s in others) print others[s], s }' "$1"
}

# at_least PCT "matched/total": true when matched is at least PCT percent of a non-zero total.
at_least() {
	local m=${2%/*} t=${2#*/}
	[ "$t" -gt 0 ] && [ $((m * 100)) -ge $(($1 * t)) ]
}

# wait_for FILE: until FILE is non-empty (a workload wrote it when ready), polling every
# 50 ms for at most 60 s. Returns 1 on timeout.
wait_for() {
	local i
	for ((i = 0; i < 1200; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_sampling PID: until hprof PID has opened its mapping events and its sampling events,
# one of each per online CPU (each sampling event is attached as soon as it is open).
wait_sampling() {
	local want=$((2 * $(getconf _NPROCESSORS_ONLN))) deadline=$((SECONDS + 60)) n
	while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$1" 2>/dev/null; do
		n=$(find /proc/"$1"/fd -lname 'anon_inode:\[perf_event\]' 2>/dev/null | wc -l)
		[ "$n" -ge "$want" ] && return 0
		sleep 0.02
	done
	return 1
}

# ran_for PID TICKS: until PID has run TICKS clock ticks (1/100 s) on a CPU, so that it has
# been sampled, at most 60 s.
ran_for() {
	local i ticks
	for ((i = 0; i < 1200; i++)); do
		ticks=$(awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null) || return 1
		[ "$ticks" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_exec PID PROGRAM: until process PID runs PROGRAM (its exec is done), at most 60 s.
wait_exec() {
	local i want
	want=$(readlink -f "$2")
	for ((i = 0; i < 1200; i++)); do
		[ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$want" ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# require_bpf NAME: skips (fails under CI) the rest of the script when BPF is unusable.
require_bpf() {
	local why
	if ! why=$(bpf_available 2>&1); then
		skip "$1" "$why"
		exit 0
	fi
}

# exec_load_moved BIN: true when an executable PT_LOAD of BIN has a file offset other than
# its virtual address (LLD, mold, gold), so its mapping's page offset is not its p_offset.
exec_load_moved() {
	local off vaddr
	while read -r off vaddr; do
		[ $((off)) -ne $((vaddr)) ] && return 0
	done < <(readelf -lW "$1" | awk '$1 == "LOAD" && / R?W?E / { print $2, $3 }')
	return 1
}

# build_lld_rust DIR: builds tests/workloads/lld_rust (release, no frame pointers, linked by
# LLD) from a copy in DIR and prints the binary's path; says why on stderr when it cannot.
build_lld_rust() {
	local dir=$1 flags="-C force-frame-pointers=no" minor
	PATH=$PATH:${CARGO_HOME:-${HOME:-}/.cargo}/bin
	if ! command -v cargo >/dev/null || ! command -v rustc >/dev/null; then
		echo "no cargo or rustc (scripts/install-deps.sh installs them)" >&2
		return 1
	fi
	# rustc links with rust-lld by default from 1.90 on; before, ask the C driver for lld.
	minor=$(rustc --version | sed -n 's/^rustc 1\.\([0-9]*\)\..*/\1/p')
	[ -n "$minor" ] && [ "$minor" -ge 90 ] || flags="$flags -C link-arg=-fuse-ld=lld"
	cp -r tests/workloads/lld_rust "$dir/" &&
		RUSTFLAGS=$flags CARGO_TARGET_DIR=$dir/lld_rust/target \
			cargo build --release --offline --quiet --manifest-path "$dir/lld_rust/Cargo.toml" >&2 ||
		{ echo "cargo build failed" >&2; return 1; }
	echo "$dir/lld_rust/target/release/lld_rust"
}

# stack_completeness FILE: "complete/total" over the user stacks in folded FILE, then one
# "COUNT WHY" line per way the others were incomplete. A user stack is complete when it is
# not under a [truncated: ...] root and its outermost frame (the first after the comm) is
# the entry of the program, of the dynamic loader or of a thread: _start, _dl_start_user
# (where ld.so's _start returns from _dl_start), clone3, clone, libc's start routine where a
# frame-pointer chain from another stack ends (__libc_start_call_main, __libc_start_main,
# start_thread: SBCL's Lisp stack leads there), an unnamed frame calling
# __libc_start_main or _dl_start (a stripped program's or ld.so's _start), or, for an
# Erlang process's own stack, BEAM's exit as its perf map names it
# ($erts_beamasm:normal_exit/0..., where every Erlang process's stack ends), or where Go's
# own traceback ends a stack (GO_STACK_ENDS: a goroutine's runtime.goexit, a thread's
# runtime.mstart or rt0_go, a signal's sigtramp, and the g0 stack that systemstack, mcall,
# morestack, a call of C or of the vDSO (nanotime1, walltime) switched to; ".abi0" in a
# .symtab's names). Samples with no
# user frame at all (kernel work in execve or exit, when the task has no user stack) are
# no user stacks: they count in neither figure and are reported as a "COUNT kernel-only"
# line.
GO_STACK_ENDS='^runtime\.(goexit|mstart|rt0_go|sigtramp|systemstack|mcall|morestack|asmcgocall|callCgo[A-Za-z]*|nanotime1|walltime1?|vgetrandom1)(\.abi0)?$'
stack_completeness() {
	awk -v go_ends="$GO_STACK_ENDS" '
	     function go_end(frame) { sub(/\+0x[0-9a-f]+$/, "", frame); return frame ~ go_ends }
	     { count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack); split(stack, f, ";")
	       sub(/\+0x[0-9a-f]+$/, "", f[3])
	       if (f[2] ~ /_\[k\]$/ || f[2] == "") { kernel_only += count; next }
	       total += count
	       if (f[2] ~ /^(_start|_dl_start_user|__clone3|clone3|__clone|clone)$/ ||
		   f[2] ~ /^(__libc_start_call_main|__libc_start_main|start_thread)$/ ||
		   f[2] ~ /^\$erts_beamasm:normal_exit\/0/ || go_end(f[2]) ||
		   (f[2] !~ /^\[/ && (f[3] ~ /^__libc_start_main/ || f[3] == "_dl_start")))
		       complete += count
	       else if (f[2] ~ /^\[truncated/)
		       why[f[2] " at " f[3]] += count
	       else
		       why["outermost frame " f[2]] += count }
	     END { printf "%d/%d\n", complete, total
		   for (w in why) print why[w], w
		   if (kernel_only) print kernel_only, "kernel-only (not a user stack)" }' "$1"
}

# complete_share FILE: "complete/total" (stack_completeness).
complete_share() { stack_completeness "$1" | head -1; }

# false_complete FILE: samples whose stack hprof did not cut with a named reason, yet whose
# outermost frame is no entry (stack_completeness's "outermost frame" lines): stacks that
# pass for complete short of their start. Right stacks give 0, whatever the share.
false_complete() {
	stack_completeness "$1" | awk '$2 == "outermost" && $3 == "frame" { n += $1 } END { print n + 0 }'
}

# incomplete_why FILE [N]: the N (5) commonest ways FILE's stacks were incomplete, with counts.
incomplete_why() { stack_completeness "$1" | tail -n +2 | sort -rn | head -"${2:-5}"; }

# text_lines N: N lines of text that compresses like text (numbered lines of words and hex
# numbers), the same every time; 1000000 lines are ~23 MB.
text_lines() {
	awk -v n="$1" 'BEGIN { srand(1); w = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod"
		for (i = 0; i < n; i++)
			printf "%d %s %x\n", i, substr(w, 1 + int(rand() * 40), 1 + int(rand() * 20)), int(rand() * 65536) }'
}

# nested_blocks_c FUNCTIONS DEPTH [SEED]: a C file of FUNCTIONS functions, each DEPTH blocks
# deep with a local in every block, for deep stacks in a real compiler: gcc -O2's cc1 needs
# ~700 bytes of stack a level while it gimplifies such a function (gimplify_expr and three
# helpers a level), so 60 levels reach ~45 KiB, within the 128 KiB copy ceiling. SEED makes
# files of the same shape differ.
nested_blocks_c() {
	awk -v F="$1" -v D="$2" -v seed="${3:-0}" 'BEGIN {
		for (f = 0; f < F; f++) {
			printf "int f%d(int x)\n{\n", f
			for (l = 0; l < D; l++)
				printf "{ int v%d = x * %d + %d; x ^= v%d >> 3;\n", l, l + 3, f + seed, l
			printf "x++;\n"
			for (l = 0; l < D; l++) printf "}"
			printf "\nreturn x;\n}\n"
		} }'
}

# Real programs from Debian's packages (scripts/install-deps.sh), each ~2-3 s of CPU work,
# for tests/realprog.sh and bench/b_realprog.sh.
REALPROGS="xz zstd gzip python3 perl sqlite3 openssl node lld_rust lld_chain"

# Real programs whose hot code has no CFI, for the same test and bench: x264 and dav1d
# (kernels in nasm assembly), libjpeg-turbo's tjbench (its SIMD in nasm), pcre2grep (PCRE2's
# JIT compiles the pattern to anonymous executable memory), luajit (traces), java
# (HotSpot's interpreter and compiled methods, which keep no frame pointer), java_interp
# (HotSpot's template interpreter alone, -Xint), onednn (oneDNN's sgemm on 2 OpenMP threads:
# GEMM kernels it generates at run time, as PyTorch's CPU matmuls run), onednn_avx2 (its AVX2
# kernels, which move rsp to a workspace of their own) and qemu (qemu-user's TCG running xz: translated blocks that run in
# their prologue's frame, described through gdb's JIT interface) and lli (LLVM 14's JIT
# running C compiled to bitcode without frame pointers: the objects it registers through
# the same interface) and mkl (Intel MKL's sgemm on 2 OpenMP threads: hand-written kernels
# without CFI that save registers by mov and count in rbp, under callers that keep a frame
# pointer), php (PHP 8.2's tracing JIT, whose code lies in shared anonymous memory, a
# mapping named "/dev/zero (deleted)") and mono (Mono's JIT: a recursion of methods that
# keep no frame pointer, under JIT code that keeps one), rav1e (Rust, its kernels in nasm
# assembly, frames of up to 43 KiB, leaves that run with sp off a word boundary) and erl
# (Erlang/OTP 25's JIT, named by the perf map BEAM writes: Erlang code on each Erlang
# process's own stack, C on the scheduler's, under process_main's 16.5-KiB frame),
# shellcheck and pandoc (GHC's Haskell code, without CFI, run in the frame of the RTS's
# StgRun, which jumps to it; pandoc's scheduler keeps a frame pointer), esbuild (Go, as
# Debian ships it: stripped of .symtab and .debug_frame, only Go's .gopclntab describes its
# code; goroutines on many stacks, the collector on the threads' g0 stacks), sbcl (Lisp
# compiled into SBCL's dynamic space, a mapping of its core file, no ELF: JIT code, on a
# stack of its own entered from C), aomenc (libaom's AV1 encoder: code without frame
# pointers, realigned frames, and stacks deeper than the copy's ceiling, whose two copied
# parts leave a gap), each ~2 s of CPU work; hprof
# unwinds through that code by analysing it, or by the CFI its JIT registered (README:
# "Code without CFI"). Their inputs come from realprog_nocfi_prepare.
REALPROGS_NOCFI="x264 tjbench dav1d pcre2grep luajit java java_interp onednn onednn_avx2 qemu lli mkl php mono rav1e erl shellcheck pandoc esbuild sbcl aomenc"

# realprog_prepare DIR: writes the programs' inputs to DIR and builds the LLD Rust binary
# there (DIR/lld_rust.path holds its path; missing when it could not be built).
realprog_prepare() {
	local bin
	text_lines 1000000 >"$1/text"
	head -c 5000000 "$1/text" >"$1/text5m"
	if bin=$(build_lld_rust "$1" 2>"$1/lld_rust.err"); then
		echo "$bin" >"$1/lld_rust.path"
	fi
}

# realprog_command NAME DIR: sets the array CMD to NAME's command line, or returns 1 with
# the reason on stderr when NAME cannot run here.
realprog_command() {
	local dir=$2
	case $1 in
	xz)       CMD=(/usr/bin/xz -9 -T1 -c "$dir/text5m") ;;
	zstd)     CMD=(/usr/bin/zstd -19 -c "$dir/text5m") ;;
	gzip)     CMD=(/bin/gzip -9 -c "$dir/text") ;;
	python3)  CMD=(/usr/bin/python3 -c 'import time
end = time.time() + 2.5
n = 0
while time.time() < end:
    for i in range(10000): n += i * i % 7
print(n)') ;;
	perl)     CMD=(/usr/bin/perl -MTime::HiRes=time -e '$e = time + 2.5; while (time < $e) { $s += $_ % 7 for 1 .. 10000 } print "$s\n"') ;;
	sqlite3)  CMD=(/usr/bin/sqlite3 :memory: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 15000000) SELECT sum(x) FROM c;') ;;
	openssl)  CMD=(/usr/bin/openssl speed -seconds 2 -bytes 16384 sha256) ;;
	node)     CMD=(/usr/bin/node -e 'let s = 0; const end = Date.now() + 2500; while (Date.now() < end) for (let i = 0; i < 100000; i++) s += i % 7; console.log(s)') ;;
	lld_rust)
		[ -s "$dir/lld_rust.path" ] || { tail -1 "$dir/lld_rust.err" >&2; return 1; }
		CMD=("$(cat "$dir/lld_rust.path")" 3) ;;
	lld_chain) CMD=("$WL/lld_chain" 3) ;;
	x264)     CMD=(/usr/bin/x264 --threads 1 --quiet -o /dev/null "$dir/video.y4m") ;;
	aomenc)   CMD=(/usr/bin/aomenc --cpu-used=8 --threads=1 --limit=24 -q --ivf -o /dev/null "$dir/video.y4m") ;;
	rav1e)    CMD=(/usr/bin/rav1e -s 10 --threads 1 --limit 8 --quiet -o /dev/null "$dir/video.y4m") ;;
	tjbench)  CMD=(/usr/bin/tjbench "$dir/image.ppm" 90 -subsamp 420 -benchtime 1 -warmup 0 -nowrite -quiet) ;;
	dav1d)
		[ -s "$dir/video.ivf" ] || { cat "$dir/video.ivf.err" >&2; return 1; }
		CMD=(/usr/bin/dav1d --threads 1 --quiet -i "$dir/video.ivf" -o /dev/null --muxer null) ;;
	pcre2grep) CMD=(/usr/bin/pcre2grep -c '(\w+).*\1 ' "$dir/text") ;;
	luajit)   CMD=(/usr/bin/luajit -e 'local s = 0 for i = 1, 6e8 do s = s + i % 7 end print(s)') ;;
	java)
		[ -s "$dir/java/Work.class" ] || { cat "$dir/java.err" >&2; return 1; }
		CMD=(/usr/bin/java -cp "$dir/java" Work 2.5) ;;
	java_interp)
		[ -s "$dir/java/Interp.class" ] || { cat "$dir/java.err" >&2; return 1; }
		CMD=(/usr/bin/java -Xint -cp "$dir/java" Interp 2.5) ;;
	onednn)
		[ -s "$dir/onednn_gemm" ] || { cat "$dir/onednn.err" >&2; return 1; }
		CMD=(/usr/bin/env OMP_NUM_THREADS=2 "$dir/onednn_gemm" 2) ;;
	# oneDNN's AVX2 GEMM kernels (the ones an AVX2 CPU runs; a CPU without AVX2 runs its
	# best below) move rsp to a workspace of their own, off the thread's stack
	onednn_avx2)
		[ -s "$dir/onednn_gemm" ] || { cat "$dir/onednn.err" >&2; return 1; }
		CMD=(/usr/bin/env DNNL_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=2 "$dir/onednn_gemm" 3 100 256 320 383) ;;
	qemu)     CMD=(/usr/bin/qemu-x86_64 /usr/bin/xz -6 -T1 -c "$dir/text1m") ;;
	lli)
		[ -s "$dir/work.bc" ] || { cat "$dir/llvm.err" >&2; return 1; }
		CMD=(/usr/bin/lli-14 "$dir/work.bc" 2) ;;
	mkl)
		[ -s "$dir/mkl_gemm" ] || { cat "$dir/mkl.err" >&2; return 1; }
		CMD=(/usr/bin/env OMP_NUM_THREADS=2 "$dir/mkl_gemm" 2) ;;
	mono)
		[ -s "$dir/work.exe" ] || { cat "$dir/mono.err" >&2; return 1; }
		CMD=(/usr/bin/mono "$dir/work.exe" 2.5) ;;
	erl)
		[ -s "$dir/erlang/work.beam" ] || { cat "$dir/erlang.err" >&2; return 1; }
		CMD=(/usr/bin/erl -noshell +S 1:1 +JPperf map -pa "$dir/erlang" -s work main 2.5) ;;
	shellcheck) CMD=(/usr/bin/shellcheck -s bash -S error "$dir/script.sh") ;;
	pandoc)   CMD=(/usr/bin/pandoc -f markdown -t html -o /dev/null "$dir/text.md") ;;
	esbuild)  CMD=(/usr/bin/esbuild "$dir/app.js" --minify --outfile=/dev/null --log-level=warning) ;;
	sbcl)     CMD=(/usr/bin/sbcl --script tests/workloads/lisp/work.lisp 60) ;;
	php)      CMD=(/usr/bin/php -n -d zend_extension=opcache -d opcache.enable_cli=1 \
			-d opcache.jit_buffer_size=64M -d opcache.jit=tracing tests/workloads/php/work.php 2.5) ;;
*) echo "unknown program $1" >&2; return 1 ;;
	esac
	[ -x "${CMD[0]}" ] || { echo "${CMD[0]} is not installed (scripts/install-deps.sh)" >&2; return 1; }
}

# realprog_nocfi_prepare DIR: writes the inputs of REALPROGS_NOCFI to DIR: video.y4m (x264, rav1e),
# image.ppm (tjbench), text (pcre2grep; realprog_prepare's, written here if missing), text1m
# (its first MB, for xz under qemu) and
# video.ivf (dav1d: AV1 that aomenc, from aom-tools, encodes from the video's first 48 frames,
# repeated 10 times over; when it cannot, video.ivf.err says why), java/Work.class and
# java/Interp.class (tests/workloads/java/; when javac cannot, java.err says why), onednn_gemm
# (tests/workloads/onednn/gemm.c against libdnnl; when it cannot be built, onednn.err),
# mkl_gemm (tests/workloads/mkl/gemm.c against MKL; else mkl.err), work.exe
# (tests/workloads/mono/Work.cs, for mono; else mono.err), work.bc
# (tests/workloads/llvm/work.c as bitcode, for lli; else llvm.err), erlang/work.beam
# (tests/workloads/erlang/work.erl, for erl; else erlang.err), script.sh (shell_script,
# for shellcheck), text.md (markdown_text, for pandoc) and app.js (js_module, for esbuild).
realprog_nocfi_prepare() {
	local dir=$1
	mkdir -p "$dir/java" "$dir/erlang"
	if ! command -v erlc >/dev/null; then
		echo "no erlc to compile work.erl (erlang-base; scripts/install-deps.sh)" >"$dir/erlang.err"
	elif ! erlc -o "$dir/erlang" tests/workloads/erlang/work.erl 2>"$dir/erlang.err"; then
		sed -i '1s/^/erlc failed: /' "$dir/erlang.err"
	fi
	if ! command -v javac >/dev/null; then
		echo "no javac to compile Work.java (openjdk-17-jdk-headless; scripts/install-deps.sh)" >"$dir/java.err"
	elif ! javac -d "$dir/java" tests/workloads/java/Work.java tests/workloads/java/Interp.java \
		2>"$dir/java.err"; then
		sed -i '1s/^/javac failed: /' "$dir/java.err"
	fi
	if ! clang -O1 -fomit-frame-pointer -c -emit-llvm -o "$dir/work.bc" tests/workloads/llvm/work.c \
		2>"$dir/llvm.err"; then
		sed -i '1s/^/compiling the LLVM workload to bitcode failed: /' "$dir/llvm.err"
	fi
	if [ ! -e /usr/include/dnnl.h ]; then
		echo "no dnnl.h to build the oneDNN workload (libdnnl-dev; scripts/install-deps.sh)" >"$dir/onednn.err"
	elif ! gcc -O2 -o "$dir/onednn_gemm" tests/workloads/onednn/gemm.c -ldnnl 2>"$dir/onednn.err"; then
		sed -i '1s/^/building the oneDNN workload failed: /' "$dir/onednn.err"
	fi
	if ! command -v mcs >/dev/null; then
		echo "no mcs to compile Work.cs (mono-mcs; scripts/install-deps.sh)" >"$dir/mono.err"
	elif ! mcs -out:"$dir/work.exe" tests/workloads/mono/Work.cs >"$dir/mono.err" 2>&1; then
		sed -i '1s/^/mcs failed: /' "$dir/mono.err"
	fi
	# -rdynamic: MKL's check for an Intel CPU must find the workload's answer (gemm.c)
	if [ ! -e /usr/lib/x86_64-linux-gnu/libmkl_core.so ]; then
		echo "no libmkl_core.so to build the MKL workload (libmkl-core; scripts/install-deps.sh)" >"$dir/mkl.err"
	elif ! gcc -O2 -rdynamic -o "$dir/mkl_gemm" tests/workloads/mkl/gemm.c -lmkl_gf_lp64 \
		-lmkl_gnu_thread -lmkl_core -lgomp -lpthread -lm -ldl 2>"$dir/mkl.err"; then
		sed -i '1s/^/building the MKL workload failed: /' "$dir/mkl.err"
	fi
	[ -s "$dir/text" ] || text_lines 1000000 >"$dir/text"
	head -c 1000000 "$dir/text" >"$dir/text1m"
	shell_script 100 >"$dir/script.sh"
	markdown_text 500 >"$dir/text.md"
	js_module 40000 >"$dir/app.js"
	y4m_video 640 360 64 >"$dir/video.y4m"
	ppm_image 2048 2048 >"$dir/image.ppm"
	rm -f "$dir/video.ivf"
	if ! command -v aomenc >/dev/null; then
		echo "no aomenc to make an AV1 input (aom-tools; scripts/install-deps.sh)" >"$dir/video.ivf.err"
	elif ! aomenc --rt --cpu-used=10 --threads=1 --target-bitrate=4000 --limit=48 --ivf --quiet \
		-o "$dir/video1.ivf" "$dir/video.y4m" >/dev/null 2>"$dir/video.ivf.err"; then
		sed -i '1s/^/aomenc failed: /' "$dir/video.ivf.err"
	else
		ivf_repeat "$dir/video1.ivf" "$dir/video.ivf" 10
	fi
}

# js_module N: a JavaScript module of N exported functions (~6 lines, ~300 bytes each), the
# same every time; 40000 (12 MB) keep esbuild 0.17 minifying for ~2 s.
js_module() {
	awk -v n="$1" 'BEGIN { srand(3)
		for (f = 0; f < n; f++) {
			printf "export function fn%d(a, b) {\n  let total = 0;\n", f
			printf "  for (let i = 0; i < a.length; i++) { total += a[i] * %d + (b ? b[i %% b.length] : %d); }\n", int(rand() * 100), f % 7
			printf "  const obj = { key%d: total, name: \"fn%d\", items: [1, 2, 3].map(x => x * total) };\n", f, f
			printf "  return JSON.stringify(obj) + String(total > %d ? \"big\" : \"small\");\n}\n", int(rand() * 1000)
		} }'
}

# shell_script N: a bash script of N functions (~16 lines each) with what shellcheck warns
# of (unquoted expansions, backquotes, read without -r, but no error: it exits 0 with
# -S error), the same every time;
# 100 keep shellcheck 0.9 busy for ~2 s.
shell_script() {
	awk -v n="$1" 'BEGIN { srand(2); print "#!/bin/bash"; print "set -u"
		for (i = 0; i < n; i++) {
			printf "f%d() {\n\tlocal a=$1 b=\"$2\" out\n", i
			printf "\tfor x in /tmp/d%d*; do\n\t\tif [ $x == \"$a\" ] && [[ -n $b ]]; then\n", i
			printf "\t\t\tout=`cat $x | grep -c %s`\n\t\t\techo $out >> /tmp/log%d\n\t\tfi\n\tdone\n",
				substr("abcdefgh", 1 + int(rand() * 8), 2), i
			printf "\tcase \"$a\" in\n\t\t%d) f%d \"$b\" $a ;;\n\t\t*) read line; echo ${line} | sed s/a/b/g ;;\n\tesac\n",
				i, int(rand() * (i + 1))
			printf "\tlet count=$count+%d\n\treturn $((count %% 3))\n}\n", i
		}
		for (i = 0; i < n; i++)
			printf "f%d %d \"$@\"\n", i, i }'
}

# markdown_text N: N sections of Markdown (headings, paragraphs with emphasis and code,
# lists, links, a table), the same every time; 500 keep pandoc 2.17 busy for ~2 s.
markdown_text() {
	awk -v n="$1" 'BEGIN { srand(3); split("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor", w, " ")
		for (s = 0; s < n; s++) {
			printf "%s %s %s\n\n", substr("###", 1, 1 + s % 3), w[1 + int(rand() * 12)], w[1 + int(rand() * 12)]
			for (p = 0; p < 3; p++) {
				for (i = 0; i < 60; i++) {
					x = w[1 + int(rand() * 12)]; r = rand()
					printf "%s%s", i ? " " : "", r < 0.1 ? "*" x "*" : r < 0.15 ? "`" x "`" : x
				}
				printf "\n\n"
			}
			printf "- item one\n- item [link](http://x/%d)\n  1. sub\n\n", s
			printf "| a | b |\n|---|---|\n| %d | %s |\n\n", s, w[1 + int(rand() * 12)]
		} }'
}

# y4m_video W H FRAMES: a raw 4:2:0 video in YUV4MPEG2 (what x264 and aomenc read), the same
# every time: a luma gradient that scrolls a little each frame, crossed by a band of noise
# that moves, flat Cb and noisy Cr, so motion search, transforms and entropy coding all work.
y4m_video() {
	python3 - "$@" <<'EOF'
import random, sys
w, h, n = (int(a) for a in sys.argv[1:4])
random.seed(1)
noise = bytes(random.getrandbits(8) for _ in range(w * h * 2))
grad = bytes(x * 255 // w for x in range(w)) * 3
out = sys.stdout.buffer
out.write(b"YUV4MPEG2 W%d H%d F25:1 Ip A1:1 C420jpeg\n" % (w, h))
for f in range(n):
    y = bytearray()
    for r in range(h):
        line = bytearray(grad[(f * 4 + r) % w:][:w])
        o, at = (r * 131 + f * 7) * 3 % (w * h), f * 8 % (w - w // 4)
        line[at:at + w // 4] = noise[o:o + w // 4]
        y += line
    c = w // 2 * (h // 2)
    out.write(b"FRAME\n" + y + bytes([(128 + f) & 255]) * c + noise[f * 16:f * 16 + c])
EOF
}

# ppm_image W H: a binary PPM, the same every time: rows of a gradient with a band of noise
# across their middle third.
ppm_image() {
	python3 - "$@" <<'EOF'
import random, sys
w, h = int(sys.argv[1]), int(sys.argv[2])
random.seed(1)
noise = bytes(random.getrandbits(7) for _ in range(1 << 17))
grad = bytes(x * 255 // (w * 3) for x in range(w * 3))
out = sys.stdout.buffer
out.write(b"P6\n%d %d\n255\n" % (w, h))
for r in range(h):
    o = r * 977 % ((1 << 17) - w)
    out.write(grad[:w] + noise[o:o + w] + grad[2 * w:])
EOF
}

# ivf_repeat IN OUT N: OUT holds the frames of the IVF file IN (which starts with a key frame)
# N times over, their timestamps renumbered: a longer video to decode without encoding one.
ivf_repeat() {
	python3 - "$@" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
n, header = int(sys.argv[3]), struct.unpack_from("<H", data, 6)[0]
frames, o = [], header
while o + 12 <= len(data):
    size = struct.unpack_from("<I", data, o)[0]
    frames.append(data[o + 12:o + 12 + size])
    o += 12 + size
head = bytearray(data[:header])
struct.pack_into("<I", head, 24, len(frames) * n)
with open(sys.argv[2], "wb") as out:
    out.write(head)
    for i in range(len(frames) * n):
        out.write(struct.pack("<IQ", len(frames[i % len(frames)]), i) + frames[i % len(frames)])
EOF
}
