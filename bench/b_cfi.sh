#!/usr/bin/env bash
# CFI compiler throughput on the anchor binaries (see bench/README.md, "CFI compiler").
set -u
cd "$(dirname "$0")/.."
LIB=/usr/lib/x86_64-linux-gnu
files=()
for f in "$LIB/libc.so.6" "$LIB/libstdc++.so.6" /usr/bin/python3.11 "$LIB/libLLVM-14.so.1"; do
	if [ -f "$f" ]; then files+=("$f"); else echo "b_cfi: $f missing (scripts/install-deps.sh)"; fi
done
[ ${#files[@]} -gt 0 ] || exit 1
exec build/bench/bench_cfi -n "${CFI_RUNS:-9}" -r "${CFI_READELF_RUNS:-3}" "${files[@]}"
