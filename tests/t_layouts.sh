#!/usr/bin/env bash
# ELF layouts whose executable segment's file offset differs from its address: LLD (Rust's
# default linker on x86-64 Linux since 1.90; clang -fuse-ld=lld) does not page-align the
# segment in the file, so /proc/PID/maps gives a page offset inside the read-only segment
# before it. Every address must still map to the right symbol and CFI: at least 99% of the
# samples hold exactly the workload's chain.
source "$(dirname "$0")/lib.sh"
require_bpf "layouts"

KERNEL='(;[^;]*_\[k\])*'
START='_start;__libc_start_main;__libc_start_call_main;main'
# Legacy Rust symbols demangle to path::name::h<hash>.
rust() { echo "lld_rust::$1(::h[0-9a-f]+)?"; }

# profile NAME BIN: 3 s of BIN under hprof, folded stacks in $TMP/NAME.folded.
profile() {
	"$HPROF" --folded "$TMP/$1.folded" -- "$2" 3 >/dev/null 2>"$TMP/$1.err" ||
		{ fail "$1: hprof failed: $(tail -1 "$TMP/$1.err")"; return 1; }
}

# expect_chain NAME REGEX: >= 99% of NAME's samples (at least 50) match REGEX.
expect_chain() {
	local name=$1 re=$2 share
	share=$(share_matching "$TMP/$name.folded" "$name" "$re")
	echo "# $name: $share"
	if at_least 99 "$share" && [ "${share#*/}" -ge 50 ]; then
		ok "$name: >= 99% of samples hold the exact chain ($share)"
	else
		fail "$name: exact chain in $share samples; the others:"
		awk -v re="$re" '{ s = $0; sub(/ [0-9]+$/, "", s); if (s !~ re) print }' \
			"$TMP/$name.folded" | sort -t' ' -k2 -rn | head -5 | cut -c1-600
	fi
}

# layout NAME BIN REGEX: BIN's executable segment must be moved, then profiled right.
layout() {
	if ! exec_load_moved "$2"; then
		fail "$1: the executable LOAD's offset equals its address: the test shows nothing"
		return
	fi
	ok "$1: the executable LOAD's file offset and address differ"
	profile "$1" "$2" && expect_chain "$1" "$3"
}

if rust_bin=$(build_lld_rust "$TMP" 2>"$TMP/cargo.err"); then
	layout lld_rust "$rust_bin" \
		"^lld_rust;$START(;[^;]+)*;$(rust main);$(rust a);$(rust b);$(rust c)$KERNEL\$"
else
	skip "lld_rust" "$(tail -1 "$TMP/cargo.err")"
fi

layout lld_chain "$WL/lld_chain" "^lld_chain;$START;a;b;c$KERNEL\$"
