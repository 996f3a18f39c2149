#!/usr/bin/env bash
# The tree's layering: inside each stage folder no include or call circle and no internal
# header used outside (tests/check_deps.py, through `make check-deps`); across user/ no
# include circle between files or stage folders, flamegraph/ a library of its own, the
# sample record decoded in one place (tests/check_layers.py). The layer checker is first
# shown a tree with a circle, which it must reject.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/tree/user/x" "$TMP/tree/user/y" "$TMP/tree/flamegraph"
echo '#include "y/b.h"' >"$TMP/tree/user/x/a.c"
echo '#include "x/a.h"' >"$TMP/tree/user/y/b.c"
touch "$TMP/tree/user/x/a.h" "$TMP/tree/user/y/b.h"
if python3 tests/check_layers.py "$TMP/tree" >"$TMP/self.out"; then
	fail "layers: a tree with an include circle passes"
elif grep -q "^not ok - no include circle between modules of user/: x/a -> y/b -> x/a" "$TMP/self.out"; then
	ok "layers: a tree with an include circle is rejected, naming the circle"
else
	fail "layers: rejected the tree for another reason: $(cat "$TMP/self.out")"
fi

if out=$(make --no-print-directory -s check-deps 2>&1); then
	ok "check-deps: no include or call circle in any stage folder, no internal header used outside"
else
	echo "$out" | grep -vE '^(ok|not ok) - '
	fail "check-deps"
fi
echo "$out" | grep -E '^(ok|not ok) - '
