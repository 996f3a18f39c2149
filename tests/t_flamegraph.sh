#!/usr/bin/env bash
# `hprof flamegraph`: the golden SVG, well-formed XML, exit statuses, and that a failed
# run leaves no output behind.
source "$(dirname "$0")/lib.sh"

GOLDEN=tests/golden
SVG=$TMP/out.svg

# The golden file was derived by hand from flamegraph_small.folded: 8 samples over the
# 400 px between 10 px margins of a 420 px image, so 50 px a sample.
#   all 8 (x 10, w 400) > app 7 (x 10, w 350) > main 7 > [unknown] 1 (x 10, w 50),
#   compute 3+1 (x 60, w 200), write_[k] 2 (x 260, w 100), children in byte order;
#   x<&> 1 (x 360, w 50) beside app. Four rows of 16 px under a 56 px header (title,
#   subtitle) make the root's row y 104 and the image 148 px high. Labels fit
#   floor((w - 3) / 7.08) chars: [unknown] in 50 px is cut to "[unk..". The fills match a
#   separate FNV-1a computation of the palette formulas in flamegraph.c.
$HPROF flamegraph --title "hprof golden" --subtitle "8 samples, 99 Hz, 0.1 s" --width 420 \
	$GOLDEN/flamegraph_small.folded "$SVG"
check "golden: matches tests/golden/flamegraph_small.svg" cmp -s "$SVG" $GOLDEN/flamegraph_small.svg
check "golden: well-formed XML" xmllint --noout "$SVG"

# stdin and line order: the same stacks reversed give the same bytes
tac $GOLDEN/flamegraph_small.folded | $HPROF flamegraph --title "hprof golden" \
	--subtitle "8 samples, 99 Hz, 0.1 s" --width 420 - "$TMP/stdin.svg"
check "stdin: reversed input, same bytes" cmp -s "$TMP/stdin.svg" $GOLDEN/flamegraph_small.svg

# hostile names still give well-formed XML
printf 'a<b>&"'"'"';c]]>d 3\nbad\xff\xfe;ctl\x01\x1b;caf\xc3\xa9 2\n[unknown];x_[k] 1\n' >"$TMP/hostile.folded"
$HPROF flamegraph --title '<T&>' "$TMP/hostile.folded" "$TMP/hostile.svg"
check "hostile names: exit 0" test $? -eq 0
check "hostile names: well-formed XML" xmllint --noout "$TMP/hostile.svg"

# malformed input: one line on stderr naming the line, exit 1, no output, no temp file
printf 'a;b 1\na;b\n' >"$TMP/bad.folded"
mkdir "$TMP/outdir"
$HPROF flamegraph "$TMP/bad.folded" "$TMP/outdir/bad.svg" 2>"$TMP/err"
check "malformed: exit 1" test $? -eq 1
check "malformed: message names the line" \
	grep -qx 'hprof: flamegraph: line 2: missing sample count' "$TMP/err"
check "malformed: one line" test "$(wc -l <"$TMP/err")" -eq 1
check "malformed: nothing left in the output directory" test -z "$(ls -A "$TMP/outdir")"

echo old >"$TMP/outdir/keep.svg"
$HPROF flamegraph "$TMP/bad.folded" "$TMP/outdir/keep.svg" 2>/dev/null
check "malformed: an existing output is kept" grep -qx old "$TMP/outdir/keep.svg"

$HPROF flamegraph $GOLDEN/flamegraph_small.folded "$TMP/no/such/dir/x.svg" 2>"$TMP/err"
check "unwritable output: exit 1" test $? -eq 1
check "unwritable output: says why" grep -q '^hprof: flamegraph: .*No such file or directory' "$TMP/err"

$HPROF flamegraph "$TMP/missing.folded" "$TMP/x.svg" 2>"$TMP/err"
check "missing input: exit 1" test $? -eq 1
check "missing input: no output" test ! -e "$TMP/x.svg"

# usage errors exit 2
$HPROF flamegraph 2>/dev/null
check "usage: no paths, exit 2" test $? -eq 2
$HPROF flamegraph --width 12x $GOLDEN/flamegraph_small.folded "$SVG" 2>/dev/null
check "usage: bad --width, exit 2" test $? -eq 2
$HPROF flamegraph --bogus a b 2>/dev/null
check "usage: unknown option, exit 2" test $? -eq 2
$HPROF flamegraph --help >"$TMP/help"
check "usage: --help exits 0" test $? -eq 0
check "usage: --help prints usage" grep -q '^usage: hprof flamegraph' "$TMP/help"

# The embedded script: a syntax check when node is around; under `make test-full` with
# chromium installed, a headless run that zooms (#z=) and searches (#s=) via the URL.
sed -n '/<script><!\[CDATA\[/,/\]\]><\/script>/p' "$SVG" | sed '1d;$d' >"$TMP/fg.js"
if command -v node >/dev/null; then
	check "script: node --check" node --check "$TMP/fg.js"
else
	echo "# node not installed: script syntax not checked"
fi

browser_dom() {
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$TMP/chromium" --dump-dom "file://$(realpath "$1")$2" 2>/dev/null
}
if [ "${HPROF_FULL:-}" = 1 ] && command -v chromium >/dev/null; then
	# zoom into compute (4 of 8 samples) and search for "[" (an invalid regex, so literal):
	# [unknown] 1 + write_[k] 2 = 37.50% of all samples
	browser_dom "$SVG" '#z=compute&s=%5B' >"$TMP/dom"
	check "browser: zoomed frame fills the width" \
		grep -q '<title>compute (4 samples, 50.00%)</title><rect x="10.00" y="56" width="400.00"' "$TMP/dom"
	check "browser: ancestors span the width, dimmed" \
		grep -q 'class="anc"><title>main (7 samples, 87.50%)</title><rect x="10.00" y="72" width="400.00"' "$TMP/dom"
	check "browser: siblings hidden" \
		grep -q 'style="display: none;"><title>x&lt;&amp;&gt; (' "$TMP/dom"
	check "browser: search share of all samples" grep -q '>Matched: 37.50%<' "$TMP/dom"
	check "browser: matches highlighted" \
		grep -q '<title>write_\[k\] (2 samples, 25.00%)</title><rect [^>]*fill="rgb(230,0,230)"' "$TMP/dom"
fi
