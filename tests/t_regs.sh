#!/usr/bin/env bash
# Frames whose unwinding needs more of the sampled registers than rsp and rbp, or a rule no
# CFI gives, on a real process under the real BPF program (tests/workloads/nofp_regs.c):
# a CFA based on rbx (as in ld.so's lazy-binding trampoline) with callees that save rbx and
# overwrite it, a return address kept in rdi (as in glibc's __vfork), and samples at the
# first instruction of the program's DT_INIT function, which has no CFI there (as crti.o's
# _init). At least 99% of each mode's samples in the workload's own code (own_share in
# lib.sh) must be complete with the exact chain.
source "$(dirname "$0")/lib.sh"
require_bpf "regs"

BIN=$WL/nofp_regs
START='_start;__libc_start_main;__libc_start_call_main;main'
KERNEL='(;[^;]*_\[k\])*'
HOST='(;[^;]+)*'
CLOCK="(;workload_now$HOST)?"
OWN='main|bx_loop|bx_frame|saves_bx|bx_spin|rdi_loop|rdi_spin|entry_loop|entry_probe|workload_.*'

# The workload's code is as the test needs it: checked on the binary with binutils.
# address FUNCTION: FUNCTION's address as nm and readelf -wF print it (16 hex digits).
address() { nm "$BIN" | awk -v f="$1" '$3 == f { print $1 }'; }
# fde_of FUNCTION: readelf -wF's rows for the FDE starting at FUNCTION's address.
fde_of() {
	readelf -wF "$BIN" | awk -v a="pc=$(address "$1")" 'index($0, a) { on = 1; next } on && NF == 0 { exit } on'
}
check "saves_bx's CFI saves rbx (readelf -wF)" grep -q ' c-[0-9]* ' <(fde_of saves_bx)
check "bx_frame's CFA is rbx + 16 (readelf -wF)" grep -q '^[0-9a-f]* rbx+16 ' <(fde_of bx_frame)
check "rdi_spin's return address is in rdi (readelf -wF)" grep -q 'r5 (rdi)' <(fde_of rdi_spin)
probe=$(address entry_probe)
init=$(readelf -d "$BIN" | awk '$2 == "(INIT)" { print $3 }')
check "entry_probe is DT_INIT (readelf -d: $init)" [ -n "$probe" -a "$((init))" -eq "$((16#${probe:-0}))" ]
check "no FDE covers entry_probe's first instruction (readelf -wF)" \
	bash -c "! readelf -wF '$BIN' | grep -q 'pc=$probe\.\.'"

# record MODE [hprof options]: profiles nofp_regs MODE for 3 s.
record() {
	"$HPROF" "${@:2}" --folded "$TMP/$1.folded" -- "$BIN" 3 "$1" >/dev/null 2>"$TMP/$1.err" ||
		{ fail "$1: hprof failed: $(tail -1 "$TMP/$1.err")"; return 1; }
}

# expect_chain MODE REGEX [CALLERS]: >= 99% of the samples in the workload's own code match,
# out of at least 50 (own_share: main, and CALLERS, may call into libc).
expect_chain() {
	local share callers="^nofp_regs;$START${3:+(${3})?}\$"
	share=$(own_share "$TMP/$1.folded" nofp_regs "$OWN" "$2" "$callers")
	if at_least 99 "$share" && [ "${share#*/}" -ge 50 ]; then
		ok "$1: >= 99% of samples complete with the exact chain ($share)"
	else
		fail "$1: exact chain in $share samples; the others:"
		own_others "$TMP/$1.folded" nofp_regs "$OWN" "$2" "$callers" | cut -c1-400
	fi
}

record bx &&
	expect_chain bx "^nofp_regs;$START(;bx_loop(;bx_frame(;saves_bx(;bx_spin)?)?|$CLOCK))?$KERNEL\$"
# By design: bx_spin's 300 rounds a call are nearly all of the work.
deep=$(own_share "$TMP/bx.folded" nofp_regs "$OWN" "^nofp_regs;$START;bx_loop;bx_frame;saves_bx;bx_spin$KERNEL\$")
check "bx: most samples come from below bx_frame, where rbx was overwritten ($deep)" at_least 50 "$deep"

record rdi &&
	expect_chain rdi "^nofp_regs;$START(;rdi_loop(;rdi_spin|$CLOCK))?$KERNEL\$"
# In the system call the sampled rdi is the one saved on kernel entry.
in_kernel=$(share_matching "$TMP/rdi.folded" nofp_regs ";rdi_loop;rdi_spin(;[^;]*_\\[k\\])+\$")
in_user=$(share_matching "$TMP/rdi.folded" nofp_regs ";rdi_loop;rdi_spin\$")
check "rdi: samples both in the system call ($in_kernel) and in user code ($in_user)" \
	[ "${in_kernel%/*}" -ge 5 -a "${in_user%/*}" -ge 5 ]

# The page faults take a share of the time that depends on the kernel and the machine
# (under a tenth here, madvise most of the rest): 499 Hz, for enough of them.
record entry -F 499 &&
	expect_chain entry "^nofp_regs;$START(;entry_loop(;entry_probe|$CLOCK))?$KERNEL\$" ';entry_loop'
# entry_probe runs one instruction in user code: samples with it as the user leaf and kernel
# frames above are in the page fault on its first instruction; they must be complete.
faults=$(share_among "$TMP/entry.folded" nofp_regs ";entry_probe(;[^;]*_\\[k\\])+\$" \
	"^nofp_regs;$START;entry_loop;entry_probe(;[^;]*_\\[k\\])+\$")
check "entry: samples in the fault at entry_probe's first instruction are complete ($faults)" \
	eval '[ "${faults#*/}" -ge 10 ] && at_least 99 "$faults"'
