#!/usr/bin/env bash
# Binaries that outlive their path: frames are named from the very file a process mapped,
# even when that file is deleted and replaced on disk while it runs (a CI rebuild), and
# when its path does not exist in hprof's mount namespace (a container).
source "$(dirname "$0")/lib.sh"
require_bpf "binaries"

KERNEL='(;[^;]*_\[k\])*'
START='_start;__libc_start_main;__libc_start_call_main;main'
# The program's own functions, both builds' (now is usually inlined into main), and those
# of them that call into libc (its clock, its stdio): below them, libc, the vDSO and the
# kernel run functions of their own, named as this machine names them.
OWN='main|now|alpha_hot|beta_hot'
CALLERS="$START(;now)?\$"

# One program, two builds: each names its functions after its VARIANT. It says "ready" on
# stdout once running, waits for a line on stdin when asked to, then stays in VARIANT_hot
# for the given seconds.
cat >"$TMP/prog.c" <<'SRC'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define CAT(a, b) a##b
#define NAME(v, f) CAT(v, f)
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
__attribute__((noinline)) void NAME(VARIANT, _hot)(void)
{
	for (volatile int i = 0; i < 100000; i++)
		;
}
int main(int argc, char **argv)
{
	double end;
	char line[16];

	printf("ready\n");
	fflush(stdout);
	if (argc > 2 && !fgets(line, sizeof(line), stdin))
		return 1;
	end = now() + atof(argv[1]);
	while (now() < end)
		NAME(VARIANT, _hot)();
	return 0;
}
SRC
for v in alpha beta; do
	gcc -O2 -g -fomit-frame-pointer -DVARIANT="$v" "$TMP/prog.c" -o "$TMP/prog_$v" ||
		{ fail "building the $v variant"; exit 0; }
done

# wait_ready FILE: until the profiled program has said "ready" in FILE (it is running).
wait_ready() {
	for _ in $(seq 600); do
		grep -q ready "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# Deleted and replaced: prog (the alpha build) starts and waits; its file is removed and
# the beta build put at the same path before it runs any hot code, so no sample can have
# been named yet. Its samples must still be alpha's.
mkdir -p "$TMP/ci"
cp "$TMP/prog_alpha" "$TMP/ci/prog"
mkfifo "$TMP/go"
"$HPROF" -F 499 --folded "$TMP/deleted.folded" -- "$TMP/ci/prog" 2 wait <"$TMP/go" \
	>"$TMP/deleted.out" 2>"$TMP/deleted.err" &
hprof_pid=$!
exec 3>"$TMP/go"
if wait_ready "$TMP/deleted.out"; then
	rm -f "$TMP/ci/prog"
	cp "$TMP/prog_beta" "$TMP/ci/prog"
	echo go >&3
	exec 3>&-
	wait "$hprof_pid"
	rc=$?
	check "deleted binary: hprof exits 0 ($rc)" [ "$rc" -eq 0 ]
	# Right: complete, and every frame of the program named from the file that ran (none
	# from the file that replaced it, none after an address in the program, as a frame of a
	# file hprof could not read would be), whatever the leaf: between two calls of alpha_hot
	# the program reads the clock, for as long as this machine's clock source takes.
	right=$(own_share "$TMP/deleted.folded" prog "$OWN" "^prog;$START(;alpha_hot)?$KERNEL\$" "^prog;$CALLERS")
	named=$(own_share "$TMP/deleted.folded" prog "$OWN" "^prog;$START;alpha_hot$KERNEL\$")
	wrong=$(share_matching "$TMP/deleted.folded" prog "beta_hot")
	echo "# deleted: right $right, main;alpha_hot $named, beta_hot $wrong"
	if at_least 99 "$right"; then
		ok "deleted binary: >= 99% of the program's samples complete and named from the file that ran ($right)"
	else
		fail "deleted binary: complete and named from the file that ran in $right samples; the others:"
		own_others "$TMP/deleted.folded" prog "$OWN" "^prog;$START(;alpha_hot)?$KERNEL\$" "^prog;$CALLERS" |
			cut -c1-300 | sed 's/^/#   /'
	fi
	# The program spends nearly all its time in alpha_hot (a call is ~100 us, a clock read
	# well under 5 us on any clock source): the names checked above are mostly its.
	check "deleted binary: most of the program's samples are main;alpha_hot ($named)" at_least 50 "$named"
	check "deleted binary: never named from the file that replaced it ($wrong)" [ "${wrong%/*}" -eq 0 ]
else
	exec 3>&-
	kill "$hprof_pid" 2>/dev/null
	fail "deleted binary: the program never said ready"
fi

# Another mount namespace: the program runs from a tmpfs mounted only in its own mount
# namespace, so its path does not exist for hprof.
if unshare -m true 2>/dev/null; then
	"$HPROF" -F 499 --folded "$TMP/ns.folded" -- unshare -m --propagation private sh -c \
		"mkdir -p '$TMP/private' && mount -t tmpfs none '$TMP/private' &&
		 cp '$TMP/prog_beta' '$TMP/private/nsprog' && exec '$TMP/private/nsprog' 1" \
		>"$TMP/ns.out" 2>"$TMP/ns.err"
	rc=$?
	check "mount namespace: hprof exits with the program's status ($rc)" [ "$rc" -eq 0 ]
	check "mount namespace: the program's path does not exist here" [ ! -e "$TMP/private/nsprog" ]
	right=$(own_share "$TMP/ns.folded" nsprog "$OWN" "^nsprog;$START(;beta_hot)?$KERNEL\$" "^nsprog;$CALLERS")
	named=$(own_share "$TMP/ns.folded" nsprog "$OWN" "^nsprog;$START;beta_hot$KERNEL\$")
	echo "# mount namespace: right $right, main;beta_hot $named"
	if at_least 99 "$right"; then
		ok "mount namespace: >= 99% of the program's samples complete with the program's own names ($right)"
	else
		fail "mount namespace: complete with the program's own names in $right samples; the others:"
		own_others "$TMP/ns.folded" nsprog "$OWN" "^nsprog;$START(;beta_hot)?$KERNEL\$" "^nsprog;$CALLERS" |
			cut -c1-300 | sed 's/^/#   /'
	fi
	check "mount namespace: most of the program's samples are main;beta_hot ($named)" at_least 50 "$named"
else
	skip "mount namespace" "unshare -m is not permitted here"
fi
