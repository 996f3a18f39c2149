#!/usr/bin/env bash
# Runs every benchmark (bench/b_*.sh); each prints its figures and ratios against its anchor.
set -u
cd "$(dirname "$0")/.."
rc=0
for b in bench/b_*.sh; do
	[ -f "$b" ] || continue
	echo "== $b"
	bash "$b" || rc=1
done
exit $rc
