#!/usr/bin/env bash
# ELF layouts whose executable segment's file offset differs from its address: LLD (Rust's
# default linker on x86-64 Linux since 1.90; clang -fuse-ld=lld) does not page-align the
# segment in the file, so /proc/PID/maps gives a page offset inside the read-only segment
# before it. Every address must still map to the right symbol and CFI: at least 99% of the
# samples in the workload's own code (own_share in lib.sh) hold exactly its chain, and most
# of them are in its hot function.
source "$(dirname "$0")/lib.sh"
require_bpf "layouts"

KERNEL='(;[^;]*_\[k\])*'
START='_start;__libc_start_main;__libc_start_call_main;main'
HOST='(;[^;]+)*'
# Legacy Rust symbols demangle to path::name::h<hash>.
rust() { echo "lld_rust::$1(::h[0-9a-f]+)?"; }

# profile NAME BIN: 3 s of BIN under hprof, folded stacks in $TMP/NAME.folded.
profile() {
	"$HPROF" --folded "$TMP/$1.folded" -- "$2" 3 >/dev/null 2>"$TMP/$1.err" ||
		{ fail "$1: hprof failed: $(tail -1 "$TMP/$1.err")"; return 1; }
}

# expect_chain NAME OWN REGEX CALLERS HOT: >= 99% of NAME's samples in its own code
# (own_share: OWN names its functions, CALLERS matches its frames that call into libc, as
# main does to read the clock) match REGEX, out of at least 50; at least half of them are
# in its hot function, c, with its chain (HOT).
expect_chain() {
	local name=$1 share hot
	share=$(own_share "$TMP/$name.folded" "$name" "$2" "$3" "$4")
	hot=$(own_share "$TMP/$name.folded" "$name" "$2" "$5")
	echo "# $name: $share, in c $hot"
	if at_least 99 "$share" && [ "${share#*/}" -ge 50 ]; then
		ok "$name: >= 99% of samples hold the exact chain ($share)"
	else
		fail "$name: exact chain in $share samples; the others:"
		own_others "$TMP/$name.folded" "$name" "$2" "$3" "$4" | cut -c1-600
	fi
	# c runs 4 million rounds a call, the clock is read once: nearly all the time is c's.
	check "$name: most samples are in c, named with its chain ($hot)" at_least 50 "$hot"
}

# layout NAME BIN OWN REGEX CALLERS HOT: BIN's executable segment must be moved, then
# profiled right.
layout() {
	if ! exec_load_moved "$2"; then
		fail "$1: the executable LOAD's offset equals its address: the test shows nothing"
		return
	fi
	ok "$1: the executable LOAD's file offset and address differ"
	profile "$1" "$2" && expect_chain "$1" "$3" "$4" "$5" "$6"
}

# Rust's main reaches lld_rust::main through the standard library's start-up code, and
# lld_rust::main reads the clock through the standard library too.
if rust_bin=$(build_lld_rust "$TMP" 2>"$TMP/cargo.err"); then
	rmain="^lld_rust;$START$HOST;$(rust main)"
	layout lld_rust "$rust_bin" 'main|lld_rust::.*' \
		"$rmain(;$(rust a)(;$(rust b)(;$(rust c))?)?)?$KERNEL\$" "($rmain|^lld_rust;$START)\$" \
		"$rmain;$(rust a);$(rust b);$(rust c)$KERNEL\$"
else
	skip "lld_rust" "$(tail -1 "$TMP/cargo.err")"
fi

layout lld_chain "$WL/lld_chain" 'main|a|b|c|workload_.*' \
	"^lld_chain;$START(;a(;b(;c)?)?|;workload_now$HOST)?$KERNEL\$" "^lld_chain;$START\$" \
	"^lld_chain;$START;a;b;c$KERNEL\$"
