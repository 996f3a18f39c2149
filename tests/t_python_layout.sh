#!/usr/bin/env bash
# hprof's CPython layouts (user/python/layout.c) against each installed version's own
# headers: tests/tools/pyheaders.c, compiled with -DPy_BUILD_CORE against a version's
# include/python3.X and its internal/, prints offsetof() of every field hprof uses;
# build/tools/pylayout prints hprof's table (3.8-3.12) or what it parses from the
# _Py_DebugOffsets at the start of _PyRuntime, read from the ELF file (3.13). The two must
# be the same. Versions hprof does not know are refused. A version not installed (pyenv's
# under /root/.pyenv/versions) is skipped.
source "$(dirname "$0")/lib.sh"

PYLAYOUT=build/tools/pylayout
CC=${CC:-gcc}

# runtime_bytes LIB OUT: the first 1024 bytes of _PyRuntime as LIB's file holds them
runtime_bytes() {
	local lib=$1 out=$2 value off
	value=$(readelf -sW "$lib" | awk '$8 == "_PyRuntime" { print $2; exit }')
	[ -n "$value" ] || return 1
	off=
	while read -r _ type addr soff size _; do
		[ "$type" = NOBITS ] && continue
		[[ $addr =~ ^[0-9a-f]+$ && $soff =~ ^[0-9a-f]+$ && $size =~ ^[0-9a-f]+$ ]] || continue
		if ((16#$addr && 16#$value >= 16#$addr && 16#$value < 16#$addr + 16#$size)); then
			off=$((16#$value - 16#$addr + 16#$soff))
			break
		fi
	done < <(readelf -SW "$lib" | sed -n 's/^ *\[ *[0-9]*\] *//p')
	[ -n "$off" ] || return 1
	tail -c +$((off + 1)) "$lib" | head -c 1024 >"$out"
}

# VERSION=INCLUDE_DIR: pyenv's, then Debian's (python3.11-dev)
versions=()
for v in 3.8 3.9 3.10 3.11 3.12 3.13; do
	dir=$(ls -d /root/.pyenv/versions/$v.* 2>/dev/null | head -1)
	if [ -n "$dir" ] && [ -f "$dir/include/python$v/Python.h" ]; then
		versions+=("$v=$dir/include/python$v")
	else
		skip "python layout $v" "no CPython $v headers under /root/.pyenv/versions"
	fi
done
if [ -f /usr/include/python3.11/Python.h ]; then
	versions+=("3.11=/usr/include/python3.11")
else
	skip "python layout 3.11 (Debian)" "no /usr/include/python3.11 (python3.11-dev)"
fi

for entry in "${versions[@]}"; do
	v=${entry%%=*} inc=${entry#*=}
	dir=${inc%/include/python$v}
	if [ ! -d "$inc/internal" ]; then
		fail "python layout $v: $inc has no internal headers"
		continue
	fi
	if ! $CC -DPy_BUILD_CORE -I"$inc" -I"$inc/internal" tests/tools/pyheaders.c \
		-o "$TMP/pyheaders$v" 2>"$TMP/cc.err"; then
		fail "python layout $v: tests/tools/pyheaders.c does not build: $(head -3 "$TMP/cc.err")"
		continue
	fi
	"$TMP/pyheaders$v" | sort >"$TMP/headers"
	args=()
	if [ "$v" = 3.13 ]; then
		lib=$dir/lib/libpython$v.so.1.0
		[ -f "$lib" ] || lib=$dir/bin/python$v
		if ! runtime_bytes "$lib" "$TMP/runtime"; then
			fail "python layout $v: no _PyRuntime in $lib"
			continue
		fi
		args=("$TMP/runtime")
		what="parsed from _PyRuntime's _Py_DebugOffsets in $(basename "$lib")"
	else
		what="the table"
	fi
	if ! "$PYLAYOUT" "$v" "${args[@]}" 2>"$TMP/err" | sort >"$TMP/hprof"; then
		fail "python layout $v: refused: $(cat "$TMP/err")"
		continue
	fi
	n=$(wc -l <"$TMP/headers")
	if diff "$TMP/headers" "$TMP/hprof" >"$TMP/diff"; then
		ok "python layout $v: $what: the $n offsets $inc gives"
	else
		fail "python layout $v: $what differs from $inc (< headers, > hprof): $(grep '^[<>]' "$TMP/diff" | tr '\n' '|')"
	fi
	if [ "$v" = 3.13 ]; then
		check "python layout 3.14: a 3.13 _PyRuntime is not taken for 3.14's" \
			bash -c "! '$PYLAYOUT' 3.14 '$TMP/runtime' 2>/dev/null"
		head -c 8 /dev/zero >"$TMP/zero"
		check "python layout 3.13: _PyRuntime bytes without the cookie are refused" \
			bash -c "! '$PYLAYOUT' 3.13 '$TMP/zero' 2>/dev/null"
	fi
done

for v in 3.6 3.7 3.14 4.0; do
	if out=$("$PYLAYOUT" "$v" 2>&1); then
		fail "python layout $v: hprof guessed a layout for a version it does not know"
	else
		check "python layout $v: refused ($out)" grep -q "not supported" <<<"$out"
	fi
done
