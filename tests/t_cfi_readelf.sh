#!/usr/bin/env bash
# hprof table against readelf --debug-dump=frames-interp, row by row (tests/cfi_compare.py).
# Default: a fast subset (core libraries, the project's binaries, small programs built
# here to carry .debug_frame, DRAP and clang CFI). HPROF_FULL=1: every ELF file with CFI
# under /usr/lib/x86_64-linux-gnu and /usr/bin as well (`make cfi-sweep`).
source "$(dirname "$0")/lib.sh"

LIBDIR=/usr/lib/x86_64-linux-gnu
COMPARE="python3 tests/cfi_compare.py $HPROF"

# compare NAME FILE...: one check over the files; prints the comparator's summary.
compare() {
	local name=$1; shift
	local out
	out=$($COMPARE "$@" 2>&1)
	local rc=$?
	echo "$out" | tail -n 25
	if [ $rc -eq 0 ] && echo "$out" | tail -n 1 | grep -q ' mismatches 0 errors 0 '; then
		ok "$name: $(echo "$out" | tail -n 1)"
	else
		fail "$name: $(echo "$out" | tail -n 1)"
	fi
}

# Small programs whose CFI the system libraries may not show: .debug_frame only (no
# .eh_frame), GCC's stack-realignment (DRAP) expressions, and clang's CFI.
build_extra() {
	cat >"$TMP/drap.c" <<-'EOF'
	#include <string.h>
	__attribute__((noinline)) int use(void *p, int n) { return ((char *)p)[n % 7]; }
	__attribute__((noinline)) int realign(int n)
	{
		char vla[n];
		__attribute__((aligned(64))) char big[128];
		memset(vla, 1, n);
		memset(big, 2, sizeof(big));
		return use(vla, n) + use(big, n);
	}
	int main(int argc, char **argv) { (void)argv; return realign(argc + 10); }
	EOF
	gcc -O2 -o "$TMP/drap" "$TMP/drap.c" &&
	gcc -O2 -g -fno-asynchronous-unwind-tables -fno-exceptions -o "$TMP/debug_frame_only" "$TMP/drap.c" &&
	clang -O2 -o "$TMP/clang_drap" "$TMP/drap.c"
}

files=()
for f in "$LIBDIR/libc.so.6" "$LIBDIR/libm.so.6" "$LIBDIR/libgcc_s.so.1" \
	 "$LIBDIR/libstdc++.so.6" /lib64/ld-linux-x86-64.so.2 "$HPROF" tests/fixtures/regs; do
	[ -f "$f" ] && files+=("$f")
done
for f in "$WL"/*; do
	[ -f "$f" ] && [ -x "$f" ] && files+=("$f")
done
if build_extra; then
	files+=("$TMP/drap" "$TMP/debug_frame_only" "$TMP/clang_drap")
	# main and realign have no .eh_frame FDE there, only .debug_frame ones
	check "debug_frame_only carries a .debug_frame" \
		bash -c "readelf -S '$TMP/debug_frame_only' | grep -q '\.debug_frame'"
else
	fail "build the extra CFI programs"
fi
compare "readelf agrees on the fast subset" "${files[@]}"

# Finding .eh_frame through PT_GNU_EH_FRAME must give the same rows as by section name.
if cmp -s <("$HPROF" table --section eh_frame "$LIBDIR/libc.so.6") \
	<("$HPROF" table --section eh_frame --via-hdr "$LIBDIR/libc.so.6"); then
	ok "libc rows via .eh_frame_hdr equal rows via the section header"
else
	fail "libc rows via .eh_frame_hdr equal rows via the section header"
fi

if [ "${HPROF_FULL:-}" = 1 ]; then
	mapfile -t all < <(find "$LIBDIR" /usr/bin -type f -size +63c 2>/dev/null |
		while read -r f; do
			[ "$(head -c4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"
		done)
	echo "full sweep: ${#all[@]} ELF files"
	compare "readelf agrees on every ELF file under $LIBDIR and /usr/bin" "${all[@]}"
fi
