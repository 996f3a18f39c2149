#!/usr/bin/env bash
# The tree's layering (tests/deps_check.py): no include circle between files or between the
# stage folders of user/, flamegraph/ a library of its own, the sample record decoded in
# one place. The checker is first shown a tree with a circle, which it must reject.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/tree/user/x" "$TMP/tree/user/y" "$TMP/tree/flamegraph"
echo '#include "y/b.h"' >"$TMP/tree/user/x/a.c"
echo '#include "x/a.h"' >"$TMP/tree/user/y/b.c"
touch "$TMP/tree/user/x/a.h" "$TMP/tree/user/y/b.h"
if python3 tests/deps_check.py "$TMP/tree" >"$TMP/self.out"; then
	fail "checker: a tree with an include circle passes"
elif grep -q "^not ok - no include circle between modules of user/: x/a -> y/b -> x/a" "$TMP/self.out"; then
	ok "checker: a tree with an include circle is rejected, naming the circle"
else
	fail "checker: rejected the tree for another reason: $(cat "$TMP/self.out")"
fi

python3 tests/deps_check.py .
