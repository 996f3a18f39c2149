#!/usr/bin/env bash
# Inline frames and source lines from DWARF, through libdw: a C and a C++ program with
# functions forced inline at known lines (tests/workloads/inline_work.c, .cc), built here
# with -O2 and each kind of debug info: -gdwarf-4, -gdwarf-5, -gsplit-dwarf, after dwz (a
# supplementary file), with zlib-compressed sections, and split out by objcopy
# --only-keep-debug into a build-id
# directory (HPROF_DEBUG_DIR). For each, every pc hprof sampled in the program gets in the
# pprof profile the Lines (functions, files, lines, innermost first) eu-addr2line -i -f -C
# gives on the same pc, and so does every instruction of the function the inlined calls
# are in, through tests/tools/inline_chain; the folded stacks mark inlined calls "_[i]",
# the SVG draws them lighter with file:line, hprof stack prints them as gdb's bt does
# (against eu-addr2line on its pcs), hprof diff reads them back from pprof as the folded
# stacks name them, and --no-inline, --no-lines take them out.
# elfutils 0.188's eu-addr2line gives no inline frames through a skeleton unit: the
# -gsplit-dwarf build is compared with the same build without -gsplit-dwarf, whose code is
# checked to be the same bytes.
source "$(dirname "$0")/lib.sh"

SRC=$PWD/tests/workloads
CHAIN=build/tools/inline_chain
# the inlined functions each profile must show, '|' between them
C_FUNCS="step|mix|scale"
CC_FUNCS="work::Hasher<unsigned long>::feed(unsigned long)"

# all_of COND...: every COND (shell text, run here) holds; check's command ends at the
# first &&, so a check of several conditions passes them through this. A COND is run inside
# check, whose local name hides the caller's: expand it before.
all_of() {
	local cond
	for cond in "$@"; do
		eval "$cond" || return 1
	done
}

for tool in eu-addr2line dwz objcopy g++; do
	if ! command -v $tool >/dev/null; then
		fail "$tool is missing (scripts/install-deps.sh installs it)"
		exit 0
	fi
done

# build NAME LANG FLAGS...: $TMP/NAME/prog from the C (c) or C++ (cc) workload, compiled
# in its own directory (split DWARF's .dwo lands there).
build() {
	local name=$1 lang=$2; shift 2
	mkdir -p "$TMP/$name"
	if [ "$lang" = c ]; then
		(cd "$TMP/$name" && gcc -O2 "$@" -o prog "$SRC/inline_work.c")
	else
		(cd "$TMP/$name" && g++ -O2 "$@" -o prog "$SRC/inline_work.cc")
	fi
}

# the function holding the inlined calls, as the symbol table names it
hot_symbol() { [ "$1" = c ] && echo spin || echo _ZN4work6Runner3runEl; }

# hot_addrs BIN SYMBOL: every instruction address of SYMBOL in BIN.
hot_addrs() {
	objdump -d "$1" | awk -v sym="<$2>:" '$2 == sym { f = 1; next } f && /^$/ { exit }
		f && $1 ~ /:$/ { sub(":", "", $1); print "0x" $1 }'
}

# variant NAME LANG REF BIN [CHAIN_FILE]: the checks of one build; REF is the unstripped,
# unsplit binary eu-addr2line reads; CHAIN_FILE the file hprof's index reads (BIN itself,
# or its debug file).
variant() {
	local name=$1 lang=$2 ref=$3 bin=$4 dwarf=${5:-$4} funcs rounds
	[ "$lang" = c ] && funcs=$C_FUNCS rounds=40000000 || funcs=$CC_FUNCS rounds=150000000
	hot_addrs "$ref" "$(hot_symbol "$lang")" >"$TMP/$name/addrs"
	"$CHAIN" "$dwarf" <"$TMP/$name/addrs" >"$TMP/$name/chains"
	python3 tests/inline_compare.py tool "$TMP/$name/chains" "$ref" $(cat "$TMP/$name/addrs") \
		>"$TMP/$name/tool.out"
	rc=$?
	check "$name: every instruction of the hot function: hprof's chain is eu-addr2line's ($(tail -1 "$TMP/$name/tool.out"))" \
		all_of "[ $rc -eq 0 ]" "grep -q '(0 where' '$TMP/$name/tool.out'"
	grep -v '^#' "$TMP/$name/tool.out" | head -6
	[ -n "${NO_BPF:-}" ] && return
	"$HPROF" -q -F 1999 --pprof "$TMP/$name/p.pb.gz" -- "$bin" $rounds >/dev/null 2>"$TMP/$name/err"
	rc=$?
	check "$name: hprof exits 0 ($rc $(head -1 "$TMP/$name/err"))" [ $rc -eq 0 ]
	python3 tests/inline_compare.py pprof "$TMP/$name/p.pb.gz" "$bin" "$ref" "$funcs" \
		>"$TMP/$name/pprof.out" 2>&1
	rc=$?
	check "$name: every sampled pc's Lines are eu-addr2line's chain ($(grep '^#' "$TMP/$name/pprof.out"))" \
		all_of "[ $rc -eq 0 ]" "grep -q '(0 where' '$TMP/$name/pprof.out'"
	grep -v '^#' "$TMP/$name/pprof.out" | head -6
}

# -- the C program: DWARF 4 and 5
if ! bpf_available 2>/dev/null; then NO_BPF=1; skip "profiles" "$(bpf_available 2>&1)"; fi
build c-dwarf4 c -gdwarf-4
variant c-dwarf4 c "$TMP/c-dwarf4/prog" "$TMP/c-dwarf4/prog"
build c-dwarf5 c -gdwarf-5
variant c-dwarf5 c "$TMP/c-dwarf5/prog" "$TMP/c-dwarf5/prog"

# -- split DWARF: the .dwo next to the binary, through its skeleton unit
build c-split c -gdwarf-5 -gsplit-dwarf
objdump -d --no-show-raw-insn "$TMP/c-split/prog" | tail -n +4 >"$TMP/c-split/code"
objdump -d --no-show-raw-insn "$TMP/c-dwarf5/prog" | tail -n +4 >"$TMP/c-dwarf5/code"
check "c-split: a .dwo was written, and the code is -gdwarf-5's byte for byte" \
	all_of '[ -n "$(ls "$TMP"/c-split/*.dwo 2>/dev/null)" ]' 'cmp -s "$TMP/c-split/code" "$TMP/c-dwarf5/code"'
variant c-split c "$TMP/c-dwarf5/prog" "$TMP/c-split/prog"
# the same with its sections compressed and the build directory recorded as "." (a
# reproducible build's -fdebug-prefix-map): the .dwo is found next to the binary, which
# libdw knows only from the file it reads, not from a copy inflated in memory
build c-splitrel c -gdwarf-5 -gsplit-dwarf "-fdebug-prefix-map=$TMP/c-splitrel=."
objcopy --compress-debug-sections=zlib "$TMP/c-splitrel/prog" "$TMP/c-splitrel/prog.z" &&
	mv "$TMP/c-splitrel/prog.z" "$TMP/c-splitrel/prog"
# (readelf fails on the unit whose .dwo it looks for in its own directory)
readelf --debug-dump=info "$TMP/c-splitrel/prog" >"$TMP/c-splitrel/info" 2>/dev/null
check "c-splitrel: compressed (.debug_line; the skeleton's .debug_info is too small), its comp_dir '.'" \
	all_of 'readelf -S "$TMP/c-splitrel/prog" | grep -A1 " .debug_line " | grep -q C' \
	'grep -q "DW_AT_comp_dir *: \.$" "$TMP/c-splitrel/info"'
variant c-splitrel c "$TMP/c-dwarf5/prog" "$TMP/c-splitrel/prog"

# -- dwz: DIEs shared by two copies moved into a supplementary file
build c-dwz c -gdwarf-4
cp "$TMP/c-dwz/prog" "$TMP/c-dwz/ref"
cp "$TMP/c-dwz/prog" "$TMP/c-dwz/twin"
dwz -m "$TMP/c-dwz/common.debug" "$TMP/c-dwz/prog" "$TMP/c-dwz/twin" 2>"$TMP/c-dwz/err"
check "c-dwz: dwz made a supplementary file the binary links to ($(head -1 "$TMP/c-dwz/err"))" \
	all_of '[ -s "$TMP/c-dwz/common.debug" ]' 'readelf -S "$TMP/c-dwz/prog" | grep -q gnu_debugaltlink'
variant c-dwz c "$TMP/c-dwz/ref" "$TMP/c-dwz/prog"

# -- compressed sections (SHF_COMPRESSED zlib, as Debian's debug files have them), which
# hprof inflates itself: DWARF 5, and the dwz'd binary with its supplementary file
for name in c-dwarf5 c-dwz; do
	mkdir -p "$TMP/$name-zlib"
	objcopy --compress-debug-sections=zlib "$TMP/$name/prog" "$TMP/$name-zlib/prog"
done
check "zlib: .debug_info compressed in both" \
	all_of 'readelf -S "$TMP/c-dwarf5-zlib/prog" | grep -A1 " .debug_info" | grep -q C' \
	'readelf -S "$TMP/c-dwz-zlib/prog" | grep -A1 " .debug_info" | grep -q C'
variant c-dwarf5-zlib c "$TMP/c-dwarf5/prog" "$TMP/c-dwarf5-zlib/prog"
variant c-dwz-zlib c "$TMP/c-dwz/ref" "$TMP/c-dwz-zlib/prog"
# dwz -M names the supplementary file relative to the binary's directory
build c-dwzrel c -gdwarf-4
(cd "$TMP/c-dwzrel" && cp prog ref && cp prog twin &&
	dwz -m common.debug -M common.debug prog twin 2>/dev/null &&
	objcopy --compress-debug-sections=zlib prog prog.z && mv prog.z prog)
check "c-dwzrel: a relative link to the supplementary file" \
	bash -c "readelf -p .gnu_debugaltlink '$TMP/c-dwzrel/prog' | grep -q ' common.debug'"
variant c-dwzrel c "$TMP/c-dwzrel/ref" "$TMP/c-dwzrel/prog"

# -- the debug info in a build-id directory, the binary stripped of it
build c-debugdir c -gdwarf-5 -Wl,--build-id
d=$TMP/c-debugdir
id=$(readelf -n "$d/prog" | awk '/Build ID/ { print $3 }')
mkdir -p "$d/debug/.build-id/${id:0:2}"
objcopy --only-keep-debug "$d/prog" "$d/debug/.build-id/${id:0:2}/${id:2}.debug"
objcopy --strip-debug "$d/prog" "$d/stripped"
check "c-debugdir: the stripped binary has no .debug_info" \
	bash -c "! readelf -S '$d/stripped' | grep -q debug_info"
export HPROF_DEBUG_DIR=$d/debug
variant c-debugdir c "$d/prog" "$d/stripped" \
	"$d/debug/.build-id/${id:0:2}/${id:2}.debug"
unset HPROF_DEBUG_DIR

# -- the C++ program: demangled names of a class template's method and a function
# template, inlined into a member function
build cc-dwarf5 cc -gdwarf-5
variant cc-dwarf5 cc "$TMP/cc-dwarf5/prog" "$TMP/cc-dwarf5/prog"
build cc-dwarf4 cc -gdwarf-4
variant cc-dwarf4 cc "$TMP/cc-dwarf4/prog" "$TMP/cc-dwarf4/prog"

[ -n "${NO_BPF:-}" ] && exit 0

# -- the outputs: folded marks inlined calls _[i] and carries no lines; --no-inline takes
# them out; the SVG draws them lighter, with file:line; --no-lines keeps the frames
# without lines
bin=$TMP/c-dwarf5/prog
"$HPROF" -q -F 1999 --folded "$TMP/f.folded" --svg "$TMP/f.svg" -- "$bin" 40000000
r=$(share_matching "$TMP/f.folded" prog ';spin;step_\[i\];(mix|scale)_\[i\]$')
check "folded: spin;step_[i];mix_[i] or scale_[i] in most samples ($r)" \
	all_of '[ "${r%/*}" -gt 0 ]' '[ $((${r%/*} * 2)) -gt "${r#*/}" ]'
check "folded: no file or line in frame names" bash -c "! grep -q 'inline_work.c' '$TMP/f.folded'"
python3 - "$TMP/f.svg" <<'EOF'
import re, sys
svg = open(sys.argv[1]).read()
frames = re.findall(r'<title>([^<]*)</title>\s*<rect[^>]*fill="rgb\((\d+),(\d+),(\d+)\)"', svg)
inl = [(t, tuple(map(int, c))) for t, *c in frames if re.match(r"(mix|step|scale)_\[i\] ", t)]
spin = [t for t, *c in frames if t.startswith("spin ")]
light = all(min(c) >= 127 for _, c in inl)
placed = all(re.search(r"inline_work\.c(:\d+)?\)$", t) for t in [t for t, _ in inl] + spin)
print("# %d inline frames, all light: %s, all with their file: %s" % (len(inl), light, placed))
sys.exit(0 if inl and spin and light and placed else 1)
EOF
rc=$?
check "svg: inline frames drawn lighter, their tooltips and spin's with inline_work.c" [ $rc -eq 0 ]
"$HPROF" -q -F 1999 --no-inline --folded "$TMP/n.folded" -- "$bin" 40000000
r=$(share_matching "$TMP/n.folded" prog '_\[i\]')
check "--no-inline: no inline frames ($r)" all_of '[ "${r%/*}" -eq 0 ]' '[ "${r#*/}" -gt 0 ]'
"$HPROF" -q -F 1999 --no-lines --svg "$TMP/l.svg" --folded "$TMP/l.folded" -- "$bin" 40000000
r=$(share_matching "$TMP/l.folded" prog ';spin;step_\[i\]')
check "--no-lines: inline frames kept ($r), no file in the SVG" \
	all_of '[ "${r%/*}" -gt 0 ]' '! grep -q inline_work.c "$TMP/l.svg"'

# -- hprof stack: the inlined calls as frames of their own, each frame "at file:line"; a
# stopped process's pc is where it is, so the stack is taken until one shows inlined calls
"$bin" 100000000000 &
pid=$!
for try in $(seq 1 30); do
	"$HPROF" stack "$pid" >"$TMP/stack.out" 2>&1
	grep -q '\[inlined\]' "$TMP/stack.out" && break
done
cp /proc/$pid/maps "$TMP/stack.maps"
kill $pid
wait $pid 2>/dev/null
sed 's/^/# /' "$TMP/stack.out"
python3 tests/inline_compare.py stack "$TMP/stack.out" "$TMP/stack.maps" "$bin" >"$TMP/stack.cmp"
rc=$?
check "stack: the inlined calls and every frame's line are eu-addr2line's ($(grep '^#' "$TMP/stack.cmp"))" [ $rc -eq 0 ]
grep -v '^#' "$TMP/stack.cmp" | head -4
"$HPROF" stack --no-inline --no-lines $$ >"$TMP/stack-plain.out" 2>&1
check "stack --no-inline --no-lines: no [inlined] frame, no file:line" \
	bash -c "! grep -q -e '\[inlined\]' -e ' at .*:[0-9]*$' '$TMP/stack-plain.out' && grep -q '^#0 ' '$TMP/stack-plain.out'"

# -- no DWARF anywhere (a stripped program, no debug directory): every output is what it
# is with --no-inline --no-lines, byte for byte. Recorded by a stripped copy of hprof: a
# sample of its child before it runs the program is in hprof's own code, whose DWARF would
# name it with lines and inlined calls.
gcc -O2 -o "$TMP/bare" "$SRC/inline_work.c" && strip "$TMP/bare"
strip -o "$TMP/hprof-bare" "$HPROF"
mkdir -p "$TMP/nodebug"
"$TMP/hprof-bare" -q -F 999 --raw "$TMP/bare.raw" -- "$TMP/bare" 40000000
for run in plain off; do
	opts=()
	[ $run = off ] && opts=(--no-inline --no-lines)
	HPROF_DEBUG_DIR=$TMP/nodebug "$HPROF" report -q "$TMP/bare.raw" "${opts[@]}" --top 10 \
		--svg "$TMP/bare-$run.svg" --folded "$TMP/bare-$run.folded" \
		--pprof "$TMP/bare-$run.pb.gz" --json "$TMP/bare-$run.json" >"$TMP/bare-$run.top"
done
same=true
for ext in svg folded pb.gz json top; do
	cmp -s "$TMP/bare-plain.$ext" "$TMP/bare-off.$ext" || { same=false; echo "# $ext differs"; }
done
# what differs, should anything: the JSON's lines, and the binaries named with DWARF
$same || diff <(python3 -m json.tool "$TMP/bare-plain.json") <(python3 -m json.tool "$TMP/bare-off.json") |
	head -30 | sed 's/^/#   /' || true
check "no DWARF: SVG, folded, pprof, JSON and --top are --no-inline --no-lines's, byte for byte" $same

# -- hprof diff: a pprof profile's inlined Lines are "_[i]" frames, as the folded stacks of
# the same capture name them: the two agree on every function
"$HPROF" -q -F 1999 --raw "$TMP/d.raw" -- "$TMP/c-dwarf5/prog" 40000000
"$HPROF" report -q "$TMP/d.raw" --pprof "$TMP/d.pb.gz" --folded "$TMP/d.folded"
"$HPROF" diff "$TMP/d.pb.gz" "$TMP/d.folded" >"$TMP/d.out" 2>&1
moved=$(awk '$5 ~ /^[+-][0-9.]+$/ && $5 != "+0.00" && $5 != "-0.00"' "$TMP/d.out" | wc -l)
check "diff: the pprof and the folded stacks of one capture agree, step_[i] and mix_[i] included ($moved moved)" \
	all_of '[ "$moved" -eq 0 ]' "grep -q ' step_\\[i\\]\$' \"\$TMP/d.out\"" "grep -q ' mix_\\[i\\]\$' \"\$TMP/d.out\""

# -- --top counts an inlined function as itself wherever it was inlined: its shares are go
# tool pprof -top's "f (inline)" on the pprof of the same capture
if command -v go >/dev/null; then
	"$HPROF" report -q "$TMP/d.raw" --top 50 >"$TMP/d.top"
	HOME=$TMP GOCACHE=$TMP/go-cache GOFLAGS= go tool pprof -top -sample_index=samples \
		-nodefraction=0 "$TMP/d.pb.gz" >"$TMP/d.pprof" 2>/dev/null
	python3 tests/top_compare.py pprof "$TMP/d.top" "$TMP/d.pprof" >"$TMP/d.cmp"
	rc=$?
	check "--top: mix_[i], step_[i], scale_[i] rows are go tool pprof -top's 'f (inline)' shares" \
		all_of '[ $rc -eq 0 ]' "grep -q ' mix_\\[i\\]\$' \"\$TMP/d.top\"" "grep -q 'mix (inline)\$' \"\$TMP/d.pprof\""
	head -4 "$TMP/d.cmp"
fi

# -- hprof serve: each window's stacks have the inlined calls too
"$TMP/c-dwarf5/prog" 100000000000 &
pid=$!
mkdir -p "$TMP/serve"
"$HPROF" serve -F 499 --listen 127.0.0.1:0 -p "$pid" --every 1s --folded "$TMP/serve/w.folded" \
	>/dev/null 2>"$TMP/serve.err" &
serve_pid=$!
for ((i = 0; i < 600; i++)); do
	cat "$TMP"/serve/w.*.folded 2>/dev/null | grep -q ';spin;step_\[i\]' && break
	sleep 0.1
done
kill -TERM "$serve_pid"
wait "$serve_pid"
kill "$pid"
wait "$pid" 2>/dev/null
check "serve: a window's folded stacks have spin;step_[i]" \
	bash -c "cat '$TMP'/serve/w.*.folded 2>/dev/null | grep -q ';spin;step_\[i\]'"

# -- real debug files: Debian's libc6-dbg (libc's DWARF in a build-id file). libc's frames
# under a comparator qsort calls: every sampled pc in libc has eu-addr2line's chain, or
# where elfutils 0.188 errs (tests/inline_compare.py), binutils' addr2line's. The
# outermost function is named by its symbol in hprof's outputs (an alias or a clone's
# "f.part.0"), so the whole chain is also compared through tests/tools/inline_chain on the
# debug file, at the same pcs.
libc=$(ldd "$WL/nofp_qsort" | awk '/libc\.so/ { print $3 }')
libc=$(readlink -f "$libc")
id=$(readelf -n "$libc" | awk '/Build ID/ { print $3 }')
libc_debug=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
if [ ! -r "$libc_debug" ]; then
	skip "libc6-dbg" "no debug file for $libc ($libc_debug): apt-get install libc6-dbg"
	exit 0
fi
"$HPROF" -q -F 1999 --pprof "$TMP/libc.pb.gz" -- "$WL/nofp_qsort" 1 >/dev/null
python3 tests/inline_compare.py pprof --symbols "$TMP/libc.pcs" "$TMP/libc.pb.gz" "$libc" "$libc" \
	>"$TMP/libc.out" 2>&1
rc=$?
check "libc6-dbg: every sampled pc in libc has eu-addr2line's Lines ($(grep '^#' "$TMP/libc.out"))" [ $rc -eq 0 ]
grep -v '^#' "$TMP/libc.out" | head -6
"$CHAIN" "$libc_debug" <"$TMP/libc.pcs" >"$TMP/libc.chains"
python3 tests/inline_compare.py tool "$TMP/libc.chains" "$libc" $(cat "$TMP/libc.pcs") >"$TMP/libc.tool"
rc=$?
check "libc6-dbg: the whole chain at those pcs, outermost name too ($(tail -1 "$TMP/libc.tool"))" [ $rc -eq 0 ]
grep -v '^#' "$TMP/libc.tool" | head -6

# -- a DWARF budget of nothing (HPROF_DWARF_BUDGET_MIB=0): the program's DWARF and libc's
# (libc6-dbg) closed whenever the other's is looked up, and opened again: the same outputs
"$HPROF" report -q "$TMP/d.raw" --pprof "$TMP/d.pb.gz" --folded "$TMP/d.folded"
HPROF_DWARF_BUDGET_MIB=0 "$HPROF" report -v "$TMP/d.raw" --pprof "$TMP/d0.pb.gz" \
	--folded "$TMP/d0.folded" 2>"$TMP/d0.err"
budget_same() {
	grep -q "DWARF closed [1-9]" "$TMP/d0.err" && cmp -s "$TMP/d.folded" "$TMP/d0.folded" &&
		cmp -s "$TMP/d.pb.gz" "$TMP/d0.pb.gz"
}
check "DWARF budget 0: closed and opened again ($(grep -o 'DWARF closed.*' "$TMP/d0.err")), pprof and folded the same byte for byte" \
	budget_same
