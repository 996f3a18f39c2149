#!/usr/bin/env bash
# sljit's fast calls, the calls PCRE2's JIT makes between the pieces of a compiled pattern,
# on a real process under the real BPF program: code without CFI (nofp_sljit.S) whose
# callees move their return address off the stack's top at once and run with their
# caller's rsp: into the caller's top word (pop (%rsp), left by mov (%rsp),%rax; push
# %rax; ret as PCRE2's pieces do), into a slot of the caller's frame (pop 0x8(%rsp)), into
# r8 (pop %r8, PCRE2's UTF helpers), and two deep (a piece that keeps it in the top word
# calls one that keeps it in r8), all under a caller that saved registers and moved rsp
# for its locals, as sljit's entry does. Over >= 10,000 stacks each is judged frame by
# frame against the true chains (judge.sh): >= 99% right, none with a wrong or missing
# frame. Each piece of code is distinct and called from one place only, so that a frame
# dropped (the matcher under a piece, the outer piece under the nested one) is a chain no
# true one has a prefix of.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/judge.sh"

MIN_SAMPLES=10000
KERNEL='(;[^;]*_\[k\])*'
FAST=(fast_top_piece fast_slot_piece fast_reg_leaf fast_nest_outer fast_reg_nested)

require_bpf "sljit"
check "nofp_sljit: no FDE covers sljit_matcher or its fast callees (readelf -wF)" \
	uncovered "$WL/nofp_sljit" sljit_matcher "${FAST[@]}"

# moved ERR: the summary's figures of return addresses the code moved (hprof -v's stderr):
# into the caller's frame, into a sampled register, into another.
moved() { sed -n 's/.*return addresses the code moved (sljit): \([0-9]*\) into the caller.s frame, \([0-9]*\) into a sampled register, \([0-9]*\) into another.*/\1 \2 \3/p' "$1"; }

# (main prints its result: a sample there, a first malloc's page fault, is main's too)
expect_chains sljit 'main;run_matcher;sljit_matcher;fast_top_piece' \
	'main;run_matcher;sljit_matcher;fast_slot_piece' 'main;run_matcher;sljit_matcher;fast_reg_leaf' \
	'main;run_matcher;sljit_matcher;fast_nest_outer;fast_reg_nested' 'main;run_matcher;workload_cpu_now;*' \
	'main;printf;*'
# 5 kHz on the workload's one CPU: ~15,000 samples in its 3 seconds of CPU time.
if timeout 60 "$HPROF" -v -F 4999 --folded "$TMP/sljit.folded" -- "$WL/nofp_sljit" 3 \
	>"$TMP/sljit.out" 2>"$TMP/sljit.err"; then
	for fn in "${FAST[@]}" sljit_matcher; do
		share=$(share_matching "$TMP/sljit.folded" nofp_sljit ";$fn$KERNEL\$")
		check "sljit: the workload runs in $fn ($share samples its leaf)" at_least 5 "$share"
	done
	report_judged sljit nofp_sljit
	read -r in_frame in_sampled in_other < <(moved "$TMP/sljit.err")
	echo "# return addresses the code moved: $in_frame into the caller's frame, $in_sampled into" \
		"a sampled register, $in_other into another (the caller's top word taken)"
	# each form was stepped by its rules: the top word and the slot, r8 (fast_reg_leaf,
	# fast_reg_nested), and rax after mov (%rsp),%rax at a piece's exit
	check "sljit: return addresses moved into the caller's frame were stepped (${in_frame:-none})" \
		[ "${in_frame:-0}" -ge 1000 ]
	check "sljit: return addresses popped into r8 were read from the sample (${in_sampled:-none})" \
		[ "${in_sampled:-0}" -ge 1000 ]
	check "sljit: return addresses reloaded into rax were taken from the caller's top word (${in_other:-none})" \
		[ "${in_other:-0}" -ge 1 ]
else
	fail "sljit: hprof failed: $(tail -1 "$TMP/sljit.err")"
fi
