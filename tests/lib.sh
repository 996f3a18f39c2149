# Shared helpers for tests/t_*.sh. Source it; then call check/ok/fail/skip.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
HPROF=${HPROF:-build/hprof}
WL=build/workloads
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
# (where ld.so's _start returns from _dl_start), clone3, clone, or an unnamed frame calling
# __libc_start_main or _dl_start (a stripped program's or ld.so's _start). Samples with no
# user frame at all (kernel work in execve or exit, when the task has no user stack) are
# no user stacks: they count in neither figure and are reported as a "COUNT kernel-only"
# line.
stack_completeness() {
	awk '{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack); split(stack, f, ";")
	       sub(/\+0x[0-9a-f]+$/, "", f[3])
	       if (f[2] ~ /_\[k\]$/ || f[2] == "") { kernel_only += count; next }
	       total += count
	       if (f[2] ~ /^(_start|_dl_start_user|__clone3|clone3|__clone|clone)$/ ||
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
# helpers a level), so 60 levels reach ~45 KiB, within the 64 KiB copy ceiling. SEED makes
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
	*) echo "unknown program $1" >&2; return 1 ;;
	esac
	[ -x "${CMD[0]}" ] || { echo "${CMD[0]} is not installed (scripts/install-deps.sh)" >&2; return 1; }
}
