#!/usr/bin/env bash
# What each --stack-size gives: each no-FP workload is recorded once with the largest copy
# (128 KiB), then replayed with shorter copies (hprof report --stack-size), so every size
# sees the same samples. Prints the share of complete stacks and the bytes each size moves.
set -u
cd "$(dirname "$0")/.."
HPROF=build/hprof
TMP=$(mktemp -d /tmp/hprof-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
sizes="2048 4096 8192 16384 32768 65536 131072"

printf '%-14s' "workload"
for s in $sizes; do printf '%9s' "$((s / 1024))K"; done
printf '   (share of samples complete)\n'
for wl in nofp_qsort nofp_signal nofp_threads nofp_cxx fp_demo "nofp_recurse 3 100" "nofp_recurse 3 300"; do
	set -- $wl
	name=$1; shift
	"$HPROF" --stack-size 131072 --raw "$TMP/$name.raw" --folded /dev/null -- \
		"build/workloads/$name" ${1:-3} ${2:-} >/dev/null 2>&1 || { echo "$name: recording failed"; exit 1; }
	printf '%-14s' "$name${2:+($2)}"
	for s in $sizes; do
		share=$("$HPROF" report -v --stack-size "$s" "$TMP/$name.raw" --folded /dev/null 2>&1 |
			sed -n 's/.*truncated \([0-9.]*\)%.*/\1/p')
		awk -v t="${share:-100}" 'BEGIN { printf "%8.1f%%", 100 - t }'
	done
	echo
done
echo "bytes moved per sample are at most 80 + 8 x frames + the copy; at 99 Hz a 16 KiB copy is"
echo "at most $((99 * 16384 / 1024)) KiB/s per busy CPU."
