#!/usr/bin/env bash
# Root that does no harm: outputs belong to the user who ran sudo, never go through a link
# another user planted, captures stay private and carry no environment; files profiled
# processes name are read only when they are the very files mapped, never a FIFO or a
# device; capabilities not needed after set-up are gone while hprof samples.
source "$(dirname "$0")/lib.sh"
require_bpf "safety"

NOBODY=65534

owner_mode() { stat -c '%u:%g %a' "$1"; }

# Under sudo: outputs owned by SUDO_UID:SUDO_GID, created with the user's umask; the
# capture 0600 whatever the umask.
mkdir -p "$TMP/sudo"
(umask 027; SUDO_UID=$NOBODY SUDO_GID=$NOBODY "$HPROF" --svg "$TMP/sudo/out.svg" \
	--folded "$TMP/sudo/out.folded" --raw "$TMP/sudo/out.raw" -- "$WL/fp_chain" 0.3 \
	>/dev/null 2>"$TMP/sudo.err")
check "sudo: the flamegraph belongs to the invoking user, umask 027 ($(owner_mode "$TMP/sudo/out.svg"))" \
	[ "$(owner_mode "$TMP/sudo/out.svg")" = "$NOBODY:$NOBODY 640" ]
check "sudo: the folded stacks too ($(owner_mode "$TMP/sudo/out.folded"))" \
	[ "$(owner_mode "$TMP/sudo/out.folded")" = "$NOBODY:$NOBODY 640" ]
check "sudo: the capture too, mode 0600 ($(owner_mode "$TMP/sudo/out.raw"))" \
	[ "$(owner_mode "$TMP/sudo/out.raw")" = "$NOBODY:$NOBODY 600" ]
(umask 000; "$HPROF" --raw "$TMP/sudo/open.raw" -- "$WL/fp_chain" 0.2 >/dev/null 2>&1)
check "a capture is 0600 even with umask 000 ($(owner_mode "$TMP/sudo/open.raw"))" \
	[ "$(owner_mode "$TMP/sudo/open.raw")" = "0:0 600" ]

# A shared directory (sticky, world-writable) where another user planted a symlink and a
# hard link at the output names: the links are replaced, their targets untouched.
shared=$TMP/shared
mkdir -p "$shared" && chmod 1777 "$shared"
echo precious >"$TMP/victim" && echo precious >"$shared/victim2"
ln -s "$TMP/victim" "$shared/out.svg" && chown -h $NOBODY "$shared/out.svg"
ln "$shared/victim2" "$shared/out.folded"
"$HPROF" --svg "$shared/out.svg" --folded "$shared/out.folded" -- "$WL/fp_chain" 0.3 \
	>/dev/null 2>"$TMP/shared.err"
check "planted symlink: its target is untouched" grep -qx precious "$TMP/victim"
check "planted symlink: the output replaced the link" \
	bash -c "[ ! -L '$shared/out.svg' ] && xmllint --noout '$shared/out.svg'"
check "planted hard link: the other name is untouched" grep -qx precious "$shared/victim2"
check "planted hard link: the output is a file of its own" \
	[ "$(stat -c '%h %u' "$shared/out.folded")" = "1 0" ]
# A symlink to a device, another user's: not followed (root's own, /dev/stdout, is).
ln -s /dev/full "$shared/dev.svg" && chown -h $NOBODY "$shared/dev.svg"
"$HPROF" --svg "$shared/dev.svg" --time 100 >/dev/null 2>"$TMP/dev.err"
rc=$?
check "another user's symlink to a device: refused, exit $rc: $(cat "$TMP/dev.err")" \
	bash -c "[ $rc -ne 0 ] && grep -q 'cannot write $shared/dev.svg: Operation not permitted' '$TMP/dev.err'"
"$HPROF" --folded /dev/stdout -- "$WL/fp_chain" 0.3 >"$TMP/stdout.folded" 2>/dev/null
check "root's symlink /dev/stdout is written through" grep -q '^fp_chain;' "$TMP/stdout.folded"
check "root's symlink /dev/stdout is still a symlink" [ -L /dev/stdout ]
echo first >"$TMP/append.log"
"$HPROF" --folded /dev/stdout -- "$WL/fp_chain" 0.3 >>"$TMP/append.log" 2>/dev/null
check "--folded /dev/stdout appends to >> redirection" \
	bash -c "head -1 '$TMP/append.log' | grep -qx first && grep -q '^fp_chain;' '$TMP/append.log'"

# The environment never reaches a capture: the stack copy of the main thread stops where
# argv's strings start, and the kernel copies nothing else of the process.
marker=HPROF_SECRET_$RANDOM$RANDOM$RANDOM
env "SECRET_FOR_TEST=$marker" "$HPROF" --raw "$TMP/env.raw" --stack-size 65536 -F 499 \
	-- "$WL/nofp_recurse" 1 >/dev/null 2>&1
check "capture with a marker in the environment: the capture holds samples" \
	[ "$(stat -c %s "$TMP/env.raw")" -gt 100000 ]
check "capture with a marker in the environment: the marker is not in it" \
	bash -c "! grep -qa '$marker' '$TMP/env.raw'"

# A mapping of a device: fp_jit runs its code from a private mapping of /dev/zero. hprof
# must not read the device as an ELF file, live or in a report.
timeout 60 "$HPROF" --raw "$TMP/zero.raw" --folded "$TMP/zero.folded" -- \
	"$WL/fp_jit" 1 --code-file /dev/zero >/dev/null 2>"$TMP/zero.err"
rc=$?
check "code mapped from /dev/zero: hprof finishes (status $rc)" [ "$rc" -eq 0 ]
check "code mapped from /dev/zero: its frames are named after the mapping, not read" \
	grep -q '^fp_jit;.*;run_jit;zero+0x' "$TMP/zero.folded"
timeout 60 "$HPROF" report "$TMP/zero.raw" --folded "$TMP/zero.report" 2>/dev/null
check "code mapped from /dev/zero: hprof report finishes too (status $?)" [ -s "$TMP/zero.report" ]

# Size limits: a binary past 4 GiB (a sparse file) is not read.
truncate -s 5G "$TMP/huge"
"$HPROF" table "$TMP/huge" >/dev/null 2>"$TMP/huge.err"
check "a 5 GiB file is not compiled: $(cat "$TMP/huge.err")" grep -q "larger than 4294967296 bytes" "$TMP/huge.err"
rm -f "$TMP/huge"

# A FIFO where a capture's binary was: hprof report reads paths as they are now, and a
# FIFO must not block it.
mkdir -p "$TMP/fifo"
cp "$WL/nofp_qsort" "$TMP/fifo/prog"
"$HPROF" --raw "$TMP/fifo.raw" -F 199 -- "$TMP/fifo/prog" 0.5 >/dev/null 2>&1
rm "$TMP/fifo/prog" && mkfifo "$TMP/fifo/prog"
timeout 60 "$HPROF" report "$TMP/fifo.raw" --folded "$TMP/fifo.folded" 2>/dev/null
rc=$?
check "a FIFO at a binary's path: hprof report finishes (status $rc)" [ "$rc" -eq 0 ]
check "a FIFO at a binary's path: its frames are unnamed, not read" grep -q '^prog;.*prog+0x' "$TMP/fifo.folded"

# Paths are resolved inside the process's root: a symlink in a chroot that points at "/"
# stays in the chroot. A static program runs chrooted in $TMP/root; pinning a path the
# host also has, through a range the process has not mapped (so map_files cannot help),
# finds the chroot's file or nothing, never the host's.
root=$TMP/root
mkdir -p "$root/app" "$root/etc"
if gcc -static -O2 -Itests/workloads -o "$root/app/prog" tests/workloads/nofp_qsort.c 2>"$TMP/static.err"; then
	ln -s / "$root/app/up"
	chroot "$root" /app/prog 30 >/dev/null &
	cpid=$!
	# chroot has run and exec'd the program once its executable is the chroot's
	for ((i = 0; i < 1200; i++)); do
		[ "$(readlink /proc/$cpid/exe)" = "$root/app/prog" ] && break
		sleep 0.05
	done
	pinned=$(build/tools/pin $cpid 1000 2000 /app/up/etc/hostname /etc/hostname)
	check "chroot: a symlink to / does not lead to the host's file ($pinned)" [ "$pinned" != pinned ]
	pinned=$(build/tools/pin $cpid 1000 2000 /app/up/app/prog "$root/app/prog")
	check "chroot: the same symlink leads to the chroot's own file ($pinned)" [ "$pinned" = pinned ]
	# the process's file, not a FIFO or another file, is all that is ever kept
	mkfifo "$root/app/fifo"
	pinned=$(timeout 20 build/tools/pin $cpid 1000 2000 /app/fifo "$root/app/prog")
	check "chroot: a FIFO at the path is not opened for reading ($pinned)" [ "$pinned" != pinned ]
	kill $cpid
	wait $cpid 2>/dev/null
else
	fail "chroot: cannot build a static program: $(tail -1 "$TMP/static.err")"
fi

# Capabilities while sampling: what set-up needed is gone; reading another user's process
# (its maps, its files) still works. The workload runs as nobody.
chmod o+x "$TMP" && mkdir -p "$TMP/caps" && chmod 777 "$TMP/caps"
"$HPROF" -F 499 --folded "$TMP/caps.folded" -- setpriv --reuid=$NOBODY --regid=$NOBODY \
	--clear-groups sh -c 'echo $$ > "$0" && exec "$1" 2' "$TMP/caps/ready" "$WL/fp_chain" \
	>/dev/null 2>"$TMP/caps.err" &
hpid=$!
if wait_for "$TMP/caps/ready"; then
	eff=$(awk '/^CapEff/ { print $2 }' /proc/$hpid/status)
	has() { (( (16#$eff >> $1) & 1 )); }
	check "capabilities while sampling: no CAP_BPF, CAP_PERFMON, CAP_SYS_MODULE, CAP_NET_ADMIN, CAP_SETUID, CAP_KILL (CapEff $eff)" \
		bash -c "! (( (16#$eff >> 39) & 1 || (16#$eff >> 38) & 1 || (16#$eff >> 16) & 1 || (16#$eff >> 12) & 1 || (16#$eff >> 7) & 1 || (16#$eff >> 5) & 1 ))"
	check "capabilities while sampling: CAP_SYS_PTRACE kept, for other users' /proc files" has 19
	check "capabilities: no inheritable or ambient ones" \
		grep -Eq '^CapAmb:\s*0+$' /proc/$hpid/status
else
	fail "capabilities: the workload never started: $(tail -1 "$TMP/caps.err")"
fi
wait $hpid
check "another user's process, profiled after the drop: its frames are named" \
	grep -Eq '^fp_chain;.*main;a;b;c' "$TMP/caps.folded"
