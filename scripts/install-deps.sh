#!/usr/bin/env bash
# Installs hprof's build and test dependencies from Debian's packages.
# The Makefile runs this when a tool or header it needs is missing; it is safe to rerun.
set -euo pipefail

packages=(
	clang llvm                 # BPF compiler (clang -target bpf) and llvm-strip
	libclang-rt-14-dev         # libFuzzer and the sanitizers' runtimes for tests/fuzz/
	bpftool                    # vmlinux.h and skeleton generation
	libbpf-dev libelf-dev zlib1g-dev
	libdeflate-dev             # inflates debug files' compressed DWARF 2-3x faster than zlib
	liblzma-dev                # MiniDebugInfo (.gnu_debugdata) is xz-compressed
	uthash-dev                 # stack aggregation hash tables
	libunwind-dev              # reference unwinder for the cross-check tests and bench
	binutils                   # readelf, the independent CFI oracle in tests
	python3                    # tests/cfi_compare.py (hprof table vs readelf); python3.11 for bench/b_cfi.sh
	libllvm14                  # libLLVM-14.so.1, the largest CFI in bench/b_cfi.sh
	gdb                        # `hprof stack` is checked against gdb's bt
	libc6-dbg                  # symbols of libc's internal functions (msort_with_tmp, __restore_rt)
	python3.11-dbg             # gdb's py-bt for python3.11: `hprof stack`'s Python frames are checked against it
	libxml2-utils              # xmllint: tests check flamegraph SVGs are well-formed XML
	make gcc g++ pkg-config
	lld                        # tests/t_layouts.sh: LLD's segment layout (file offset != vaddr)
	# real programs profiled by tests/realprog.sh and bench/b_realprog.sh; perf for the bench
	xz-utils zstd gzip sqlite3 perl openssl nodejs linux-perf
	# real Python programs in bench/b_python_real.sh, on Debian's python3.11: a PyTorch
	# training loop (CPU), numpy's array work, a Flask app's test client, pip's resolver
	python3-torch python3-numpy python3-flask python3-pip
	# and those whose hot code has no CFI: nasm kernels (x264, dav1d, rav1e, libjpeg-turbo's
	# tjbench), JIT code (pcre2grep, luajit, HotSpot's compiled Java, oneDNN's GEMM kernels,
	# qemu-user's translated blocks); aomenc (aom-tools) encodes dav1d's AV1 input
	x264 dav1d rav1e aom-tools libjpeg-turbo-progs pcre2-utils luajit openjdk-17-jdk-headless
	libdnnl-dev qemu-user
	php-cli                    # PHP's opcache JIT: traces in shared anonymous memory
	mono-runtime mono-mcs      # Mono's JIT: methods that keep no frame pointer
	erlang-base                # Erlang's JIT (BEAM): its own stacks, process_main's frame
	shellcheck pandoc          # GHC's Haskell code, run in the frame of the RTS's StgRun
	esbuild                    # a Go program as Debian ships them: only .gopclntab describes its code
	sbcl                       # Lisp compiled into a mapping of SBCL's core file (no ELF)
	# Intel's MKL (Debian's non-free section, enabled below): its GEMM kernels, hand-written
	# and without CFI, as PyTorch's pip wheel runs them; a kernel library per CPU generation
	libmkl-core libmkl-gf-lp64 libmkl-gnu-thread libmkl-mc3 libmkl-avx libmkl-avx2 libmkl-avx512
	# pprof output: protobuf-c packs and unpacks profile.proto messages from the schema, so
	# no hand-written wire-format code has to get varints, nesting and bounds right
	libprotobuf-c-dev protobuf-c-compiler
	# code without CFI is unwound by decoding it: Zydis is a maintained x86-only decoder
	# that allocates nothing and reports every operand's reads and writes
	libzydis-dev
	golang-go                  # `go tool pprof`: the independent reader of --pprof in tests
	chromium                   # tests render the differential flamegraph in a headless browser
	time                       # /usr/bin/time -v: peak memory in bench/b_diff.sh
	# hprof serve's HTTP: libmicrohttpd is made for embedding an HTTP server in a C daemon
	# and is in Debian; it parses requests and enforces connection limits and timeouts, so
	# hprof has no hand-written HTTP parser
	libmicrohttpd-dev
	# the serve tests run a real Prometheus server against hprof and `promtool check metrics`
	prometheus
	# inline frames and source lines: elfutils' libdw reads .debug_info/.debug_line (DWARF 5,
	# dwz's supplementary files, split DWARF), and libdebuginfod fetches debug files as gdb and
	# perf do; elfutils (eu-addr2line), debuginfod (a loopback server) and dwz check them in tests
	libdw-dev libdebuginfod-dev elfutils debuginfod dwz
)

# A Rust binary linked by rust-lld for tests/t_layouts.sh: Debian's rustc and cargo, unless
# a cargo is already there (rustup puts one in ~/.cargo/bin, often not on root's PATH).
if ! command -v cargo >/dev/null && [ ! -x "${CARGO_HOME:-${HOME:-}/.cargo}/bin/cargo" ]; then
	packages+=(rustc cargo)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "hprof: missing packages: ${missing[*]}; run 'make deps' as root" >&2
	exit 1
fi

# MKL is in Debian's non-free section: enabled for the system's own release when no source
# offers MKL yet (Debian 12 enables only main by default).
enable_non_free() {
	local codename
	apt-cache policy libmkl-core 2>/dev/null | grep -q 'Candidate: [0-9]' && return 0
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:?}")
	cat >/etc/apt/sources.list.d/hprof-non-free.sources <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $codename
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
}

echo "hprof: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
case " ${missing[*]}" in *" libmkl-"*) enable_non_free ;; esac
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
