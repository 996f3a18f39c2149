#!/usr/bin/env bash
# The stage folders `make check-deps` names: no include or call circle between their files,
# and nothing outside a folder includes its internal headers (tests/check_deps.py).
source "$(dirname "$0")/lib.sh"

if out=$(make --no-print-directory -s check-deps 2>&1); then
	ok "check-deps: no include or call circle, no internal header used outside"
else
	echo "$out"
	fail "check-deps"
fi
