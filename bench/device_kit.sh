#!/usr/bin/env bash
# bench/device_kit.sh [DIR]: packs what bench/b_device.sh needs on the accelerator machine,
# which has no BPF toolchain, into DIR (devkit/, which git ignores): build/hprof,
# build/bench/bench_lazy, and the shared libraries they link but for glibc's and GCC's
# runtime (the machine's own are newer). Each program gets a wrapper of its name that runs
# it through the machine's dynamic loader with --library-path DIR/lib, so that only hprof
# itself loads these libraries: a profiled command inherits no LD_LIBRARY_PATH.
#
# Then, with the device tool: carry ["devkit"], command "bash bench/b_device.sh devkit".
set -eu
cd "$(dirname "$0")/.."
KIT=${1:-devkit}

make -s build/hprof build/bench/bench_lazy
rm -rf "$KIT"
mkdir -p "$KIT/bin" "$KIT/lib"
for prog in build/hprof build/bench/bench_lazy; do
	name=$(basename "$prog")
	cp "$prog" "$KIT/bin/$name"
	# "libfoo.so.1 => /path/libfoo.so.1 (0x...)": all but the C library's and the compiler's
	ldd "$prog" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' |
		grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libgcc_s|libstdc\+\+)\.so' |
		while read -r lib; do cp -L "$lib" "$KIT/lib/"; done
	cat >"$KIT/$name" <<-EOF
	#!/bin/sh
	# $name from bench/device_kit.sh: its libraries from lib/ beside this file, for it alone.
	dir=\$(dirname "\$(readlink -f "\$0")")
	exec /lib64/ld-linux-x86-64.so.2 --library-path "\$dir/lib" "\$dir/bin/$name" "\$@"
	EOF
	chmod +x "$KIT/$name"
done
"$KIT/hprof" --version >/dev/null
echo "device_kit: $KIT: $(ls "$KIT/bin" | tr '\n' ' ')+ $(ls "$KIT/lib" | wc -l) libraries," \
	"$(du -sh "$KIT" | cut -f1)"
