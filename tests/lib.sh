# Shared helpers for tests/t_*.sh. Source it; then call check/ok/fail/skip.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
HPROF=${HPROF:-build/hprof}
WL=build/workloads
TMP=$(mktemp -d /tmp/hprof-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

ok()   { echo "ok - $*"; }
fail() { echo "not ok - $*"; }

# skip NAME WHY: a skipped BPF check is a failure under CI, where BPF must work.
skip() {
	local name=$1; shift
	if [ "${CI:-}" = true ]; then
		echo "not ok - $name: skipped under CI: $*"
	else
		echo "skip - $name: $*"
	fi
}

# check NAME CMD...: ok when CMD exits 0.
check() {
	local name=$1; shift
	if "$@"; then ok "$name"; else fail "$name"; fi
}

# bpf_available: root with a BTF kernel; otherwise says why on stderr.
bpf_available() {
	if [ "$(id -u)" -ne 0 ]; then echo "not root" >&2; return 1; fi
	if [ ! -r /sys/kernel/btf/vmlinux ]; then echo "no kernel BTF" >&2; return 1; fi
	return 0
}
