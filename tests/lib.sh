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
