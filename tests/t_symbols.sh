#!/usr/bin/env bash
# Names of stripped code. One small program, built once per place its names can come from
# (.symtab, the build-id debug file, .gnu_debuglink, MiniDebugInfo + .dynsym, .dynsym, CFI
# alone), must have every hot function under one name: its symbol, or MODULE+0xSTART, the
# function's start as addr2line -e takes it. First checked address by address with
# build/tools/symbolize (no BPF), then on samples of the running programs.
#
# Debug files live under $TMP/debug, named by HPROF_DEBUG_DIR: nothing is written to the
# system's /usr/lib/debug, which other processes read while the test runs.
source "$(dirname "$0")/lib.sh"

SYMBOLIZE=build/tools/symbolize
DEBUG=$TMP/debug
export HPROF_DEBUG_DIR=$DEBUG
FUNCS="hot_alpha hot_beta hot_gamma"

cat >"$TMP/hot.c" <<'EOF'
/* VIS is "static" in the executables and empty in the library, which exports hot_alpha
 * and hot_beta; hot_gamma is never exported. noipa: no clones (hot_alpha.constprop.0),
 * no inlining. */
#include <time.h>

#ifndef VIS
#define VIS
#endif
#define HOT __attribute__((noipa))

static volatile unsigned long sink;

HOT VIS unsigned long hot_alpha(unsigned long n)
{
	unsigned long x = n;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ul + i;
	return x;
}

HOT VIS unsigned long hot_beta(unsigned long n)
{
	unsigned long x = n;

	for (unsigned long i = 0; i < n; i++)
		x ^= (x << 7) + (x >> 3) + i;
	return x;
}

HOT static unsigned long hot_gamma(unsigned long n)
{
	unsigned long x = n;

	for (unsigned long i = 0; i < n; i++)
		x += (x >> 5) ^ (i * 31);
	return x;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

HOT unsigned long hot_run(double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		sink += hot_alpha(1000000);
		sink += hot_beta(1000000);
		sink += hot_gamma(1000000);
	}
	return sink;
}
EOF
cat >"$TMP/main.c" <<'EOF'
#include <stdlib.h>

unsigned long hot_run(double seconds);

int main(int argc, char **argv)
{
	return hot_run(argc > 1 ? atof(argv[1]) : 1.0) == 42;
}
EOF

# Every build gets its own build-id, so no variant's debug file can name another's code.
next_id=0
new_build_id() { next_id=$((next_id + 1)); build_id=$(printf '0x5e1f%036x' "$next_id"); }

# exe DIR NAME [gcc options]: DIR/NAME and its unstripped copy DIR/full.
exe() {
	mkdir -p "$1"
	new_build_id
	gcc -O2 -g -DVIS=static -Wl,--build-id="$build_id" "${@:3}" "$TMP/main.c" "$TMP/hot.c" \
		-o "$1/full" && cp "$1/full" "$1/$2"
}

# lib DIR NAME: DIR/libhot.so (and DIR/full, unstripped) with DIR/NAME linked against it.
lib() {
	mkdir -p "$1"
	new_build_id
	gcc -O2 -g -shared -fPIC -Wl,--build-id="$build_id" "$TMP/hot.c" -o "$1/full" &&
		cp "$1/full" "$1/libhot.so" &&
		gcc -O2 -g "$TMP/main.c" -L"$1" -lhot -Wl,-rpath,'$ORIGIN' -o "$1/$2"
}

# debug_file BINARY: BINARY.debug, then BINARY stripped.
debug_file() { objcopy --only-keep-debug "$1" "$1.debug" && strip "$1"; }

# Fedora's MiniDebugInfo (gdb manual, "MiniDebugInfo"): the function symbols .dynsym lacks,
# xz-compressed into .gnu_debugdata.
minidebuginfo() {
	local b=$1 d=$TMP/mini.work
	mkdir -p "$d"
	nm -D "$b" --format=posix --defined-only | awk '{ print $1 }' | sort >"$d/dynsyms"
	nm "$b" --format=posix --defined-only |
		awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort >"$d/funcsyms"
	comm -13 "$d/dynsyms" "$d/funcsyms" >"$d/keep_symbols"
	objcopy --only-keep-debug "$b" "$d/debug"
	objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols="$d/keep_symbols" "$d/debug" "$d/mini_debuginfo"
	strip --strip-all -R .comment "$b"
	xz -f "$d/mini_debuginfo"
	objcopy --add-section .gnu_debugdata="$d/mini_debuginfo.xz" "$b"
}

build() {
	exe "$TMP/symtab" p_symtab || return 1

	exe "$TMP/buildid" p_buildid && debug_file "$TMP/buildid/p_buildid" || return 1
	local id
	id=$(readelf -n "$TMP/buildid/full" | awk '/Build ID/ { print $3 }')
	mkdir -p "$DEBUG/.build-id/${id:0:2}"
	mv "$TMP/buildid/p_buildid.debug" "$DEBUG/.build-id/${id:0:2}/${id:2}.debug"

	# .gnu_debuglink in each place gdb looks: next to the binary, in .debug/ next to it,
	# under the debug directory followed by the binary's directory.
	local where
	for where in next sub root; do
		exe "$TMP/link_$where" p_debuglink && debug_file "$TMP/link_$where/p_debuglink" &&
			objcopy --add-gnu-debuglink="$TMP/link_$where/p_debuglink.debug" \
				"$TMP/link_$where/p_debuglink" || return 1
	done
	mkdir -p "$TMP/link_sub/.debug" "$DEBUG$TMP/link_root"
	mv "$TMP/link_sub/p_debuglink.debug" "$TMP/link_sub/.debug/"
	mv "$TMP/link_root/p_debuglink.debug" "$DEBUG$TMP/link_root/"

	# The same link, but the file of that name is another build's (-O1: other addresses),
	# so its CRC does not match.
	exe "$TMP/badcrc" p_badcrc && debug_file "$TMP/badcrc/p_badcrc" &&
		objcopy --add-gnu-debuglink="$TMP/badcrc/p_badcrc.debug" "$TMP/badcrc/p_badcrc" &&
		exe "$TMP/other" p_badcrc -O1 &&
		objcopy --only-keep-debug "$TMP/other/full" "$TMP/badcrc/p_badcrc.debug" || return 1

	# A CI job's own debug files, in one directory given by --debug-dir: by build-id, and
	# by the name .gnu_debuglink gives.
	exe "$TMP/cibuild" p_cibuildid && debug_file "$TMP/cibuild/p_cibuildid" || return 1
	id=$(readelf -n "$TMP/cibuild/full" | awk '/Build ID/ { print $3 }')
	mkdir -p "$TMP/ci/.build-id/${id:0:2}"
	mv "$TMP/cibuild/p_cibuildid.debug" "$TMP/ci/.build-id/${id:0:2}/${id:2}.debug"
	exe "$TMP/cilink" p_cilink && debug_file "$TMP/cilink/p_cilink" &&
		objcopy --add-gnu-debuglink="$TMP/cilink/p_cilink.debug" "$TMP/cilink/p_cilink" &&
		mv "$TMP/cilink/p_cilink.debug" "$TMP/ci/" || return 1

	exe "$TMP/cfi" p_cfi && strip "$TMP/cfi/p_cfi" || return 1

	lib "$TMP/mini" m_mini && minidebuginfo "$TMP/mini/libhot.so" || return 1
	lib "$TMP/dynsym" m_dynsym && strip "$TMP/dynsym/libhot.so" || return 1

	# Hostile sections: a debuglink name without its NUL, a truncated xz stream.
	exe "$TMP/junk" p_junk && strip "$TMP/junk/p_junk" || return 1
	head -c 300 /dev/zero | tr '\0' A >"$TMP/junk/name"
	head -c 64 "$TMP/mini.work/mini_debuginfo.xz" >"$TMP/junk/xz"
	cp "$TMP/junk/p_junk" "$TMP/junk/p_xz"
	objcopy --add-section .gnu_debuglink="$TMP/junk/name" "$TMP/junk/p_junk" &&
		objcopy --add-section .gnu_debugdata="$TMP/junk/xz" "$TMP/junk/p_xz"
}

if ! build >"$TMP/build.log" 2>&1; then
	fail "build the variants: $(tail -3 "$TMP/build.log")"
	exit 1
fi
ok "build the variants (symtab, build-id, debuglink x3, bad CRC, CFI only, MiniDebugInfo, dynsym)"

# start FULL FUNC: FUNC's address in the unstripped FULL, as 0x...
start() { printf '0x%x' "0x$(nm "$1" | awk -v f="$2" '$3 == f { print $1 }')"; }
# size FULL FUNC
size() { printf '0x%x' "0x$(nm -S "$1" | awk -v f="$2" '$4 == f { print $2 }')"; }

# names FILE FULL: symbolize each hot function of FILE at its start, one byte in and its
# middle; prints "FUNC NAME" per address after the "source: ..." line.
names() {
	local f s n args=()
	for f in $FUNCS hot_run; do
		s=$(start "$2" "$f") n=$(size "$2" "$f")
		args+=("$s" "$((s + 1))" "$((s + n / 2))")
	done
	"$SYMBOLIZE" "$1" "${args[@]}" | awk -v funcs="$FUNCS hot_run" '
		BEGIN { split(funcs, f, " ") }
		NR == 1 { print; next }
		{ print f[int((NR - 2) / 3) + 1], $2 }'
}

# name_of MAP FULL FUNC: the name FUNC should have. MAP "sym": its own; "cfi:MODULE":
# MODULE+0xSTART; "dynsym": its own when the library exports it, else libhot.so+0xSTART.
name_of() {
	case $1 in
	sym) echo "$3" ;;
	cfi:*) echo "${1#cfi:}+$(start "$2" "$3")" ;;
	dynsym) if [ "$3" = hot_gamma ]; then echo "libhot.so+$(start "$2" "$3")"; else echo "$3"; fi ;;
	esac
}

# expect_names FILE FULL SOURCE MAP: the symbols came from SOURCE and each function has the
# one name MAP gives it (see name_of) at every address.
expect_names() {
	local file=$1 full=$2 source=$3 map=$4 out f got bad=""
	out=$(names "$file" "$full")
	for f in $FUNCS hot_run; do
		got=$(echo "$out" | awk -v f="$f" '$1 == f { print $2 }' | sort -u | tr '\n' ' ')
		[ "$got" = "$(name_of "$map" "$full" "$f") " ] || bad="$bad $f:$got"
	done
	if [ "$(echo "$out" | head -1)" = "source: $source" ] && [ -z "$bad" ]; then
		ok "symbolize ${file#"$TMP"/}: from $source, one name per function"
	else
		fail "symbolize ${file#"$TMP"/}: $(echo "$out" | head -1), want $source;${bad:- names ok}"
	fi
}

expect_names "$TMP/symtab/p_symtab" "$TMP/symtab/full" ".symtab" sym
expect_names "$TMP/buildid/p_buildid" "$TMP/buildid/full" "build-id debug file" sym
for where in next sub root; do
	expect_names "$TMP/link_$where/p_debuglink" "$TMP/link_$where/full" ".gnu_debuglink file" sym
done
expect_names "$TMP/badcrc/p_badcrc" "$TMP/badcrc/full" none cfi:p_badcrc
expect_names "$TMP/cfi/p_cfi" "$TMP/cfi/full" none cfi:p_cfi
expect_names "$TMP/mini/libhot.so" "$TMP/mini/full" ".gnu_debugdata+.dynsym" sym
expect_names "$TMP/dynsym/libhot.so" "$TMP/dynsym/full" ".dynsym" dynsym
expect_names "$TMP/junk/p_junk" "$TMP/junk/full" none cfi:p_junk
expect_names "$TMP/junk/p_xz" "$TMP/junk/full" none cfi:p_xz

xz -dc "$TMP/mini.work/mini_debuginfo.xz" >"$TMP/mini.elf"
check "MiniDebugInfo holds hot_gamma but not the exported hot_alpha (so .dynsym must be merged)" \
	[ "$(nm "$TMP/mini.elf" | grep -c ' hot_gamma$')" = 1 -a "$(nm "$TMP/mini.elf" | grep -c ' hot_alpha$')" = 0 ]

entry=$(readelf -h "$TMP/cfi/full" | awk '/Entry point/ { print $4 }')
check "symbolize: the stripped executable's entry point ($entry) and the rest of its FDE are _start" \
	[ "$("$SYMBOLIZE" "$TMP/cfi/p_cfi" "$entry" "$((entry + 4))" | tail -n +2 | awk '{ print $2 }' | sort -u)" = _start ]

# addr2line takes the CFI name's address and names the function there.
bad=""
for f in $FUNCS hot_run; do
	s=$(start "$TMP/cfi/full" "$f")
	got=$(addr2line -f -e "$TMP/cfi/full" "$s" | head -1)
	addr2line -e "$TMP/cfi/p_cfi" "$s" >/dev/null 2>&1 || bad="$bad $f:rejected"
	[ "$got" = "$f" ] || bad="$bad $f:$got"
done
check "addr2line -e names each p_cfi+0xSTART after its function${bad:+:$bad}" [ -z "$bad" ]

require_bpf "symbols"

# All variants at once under one hprof (children are followed): 3 s, each process its comm;
# the CI variants' debug files only in --debug-dir.
"$HPROF" -F 299 --folded "$TMP/all.folded" --debug-dir "$TMP/ci" -- bash -c "
	for p in symtab/p_symtab buildid/p_buildid link_next/p_debuglink badcrc/p_badcrc \
		cfi/p_cfi mini/m_mini dynsym/m_dynsym cibuild/p_cibuildid cilink/p_cilink; do
		'$TMP'/\$p 3 &
	done
	wait" >/dev/null 2>"$TMP/all.err"
check "hprof profiles all variants ($(tail -1 "$TMP/all.err"))" [ -s "$TMP/all.folded" ]

# samples COMM REGEX: samples of COMM whose stack matches REGEX.
samples() { local s; s=$(share_matching "$TMP/all.folded" "$1" "$2"); echo "${s%/*}"; }

# frames COMM: the distinct frame names of COMM's samples.
frames() {
	awk -v comm="$1" 'index($0, comm ";") == 1 { sub(/ [0-9]+$/, ""); n = split($0, f, ";")
		for (i = 2; i <= n; i++) print f[i] }' "$TMP/all.folded" | sort -u
}

# expect_profile COMM FULL MAP: each hot function is sampled under hot_run with the name MAP
# gives it (see name_of), and no frame is named after an address inside one of them.
expect_profile() {
	local comm=$1 full=$2 map=$3 f n run missing="" inside="" name module a lo hi
	run=$(name_of "$map" "$full" hot_run)
	for f in $FUNCS; do
		name=$(name_of "$map" "$full" "$f")
		n=$(samples "$comm" ";${run//+/\\+};${name//+/\\+}(;|\$)")
		echo "# $comm: $f as $name under $run: $n samples"
		[ "$n" -ge 3 ] || missing="$missing $f($n)"
	done
	check "profile $comm: every hot function under its name${missing:+, too few:$missing}" [ -z "$missing" ]
	module=${map#cfi:}
	[ "$map" = dynsym ] && module=libhot.so
	[ "$map" = sym ] && return
	for name in $(frames "$comm" | grep "^$module+0x"); do
		a=$((${name#"$module+"}))
		for f in $FUNCS hot_run; do
			lo=$(($(start "$full" "$f"))) hi=$(($(start "$full" "$f") + $(size "$full" "$f")))
			[ "$a" -gt "$lo" ] && [ "$a" -lt "$hi" ] && inside="$inside $name($f)"
		done
	done
	check "profile $comm: no frame named after an address inside a hot function${inside:+:$inside}" \
		[ -z "$inside" ]
}

expect_profile p_symtab "$TMP/symtab/full" sym
expect_profile p_buildid "$TMP/buildid/full" sym
expect_profile p_debuglink "$TMP/link_next/full" sym
expect_profile p_badcrc "$TMP/badcrc/full" cfi:p_badcrc
check "profile p_badcrc: the debug file with the wrong CRC names nothing" \
	[ "$(samples p_badcrc ';hot_')" -eq 0 ]
expect_profile p_cfi "$TMP/cfi/full" cfi:p_cfi
expect_profile p_cibuildid "$TMP/cibuild/full" sym
expect_profile p_cilink "$TMP/cilink/full" sym
expect_profile m_mini "$TMP/mini/full" sym
expect_profile m_dynsym "$TMP/dynsym/full" dynsym

# Of its samples in its own code (own_share: frames named p_cfi+0x...; the loader's and
# exit's, as long as the machine takes for them, are left out), complete or not.
share=$(own_share "$TMP/all.folded" p_cfi main '^p_cfi;_start;')
check "profile p_cfi: stacks start at the stripped executable's _start ($share)" at_least 99 "$share"
