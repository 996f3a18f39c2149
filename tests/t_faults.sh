#!/usr/bin/env bash
# Faults, one real run each: the profiled command or hprof killed or interrupted, stdout
# closed early, a full file system, an overflowing ring buffer, process and thread churn,
# damaged captures. hprof never crashes, never leaves a partial or temporary file, and
# says what went wrong in one line.
source "$(dirname "$0")/lib.sh"
require_bpf "faults"

# only_entries DIR NAME...: DIR holds exactly the files NAME... (no temporary files).
only_entries() {
	local dir=$1; shift
	[ "$(ls -A "$dir" | sort | tr '\n' ' ')" = "$(printf '%s\n' "$@" | sort | tr '\n' ' ')" ]
}

# start NAME [hprof options]: runs hprof in the background on a workload that writes its pid
# to $TMP/NAME/ready once it runs (sampling has started by then); sets HPID and WPID. hprof
# starts with SIGHUP at its default (HUP_AT_START=ignore: ignored, as under nohup), whatever
# this script was started with.
start() {
	local name=$1; shift
	mkdir -p "$TMP/$name"
	env --"${HUP_AT_START:-default}"-signal=HUP "$HPROF" -F 499 "$@" --svg "$TMP/$name/out.svg" --folded "$TMP/$name/out.folded" -- \
		sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec "$1" 60' "$TMP/$name/ready" \
		"$WL/nofp_qsort" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	HPID=$!
	if ! wait_for "$TMP/$name/ready"; then
		fail "$name: the workload never started: $(tail -1 "$TMP/$name.err")"
		kill -KILL "$HPID"
		return 1
	fi
	WPID=$(cat "$TMP/$name/ready")
	ran_for "$WPID" 10 || fail "$name: the workload did not run"
}

# outputs_whole NAME: the flamegraph is well-formed and the folded stacks hold samples.
outputs_whole() {
	xmllint --noout "$TMP/$1/out.svg" 2>/dev/null && [ -s "$TMP/$1/out.folded" ]
}

# The command dies of a signal: every output written, the shell's status for the signal.
for sig in KILL SEGV; do
	if start "cmd_$sig"; then
		kill -"$sig" "$WPID"
		wait "$HPID"
		rc=$? want=$((128 + $(kill -l "$sig")))
		check "command killed by SIG$sig: hprof exits $want ($rc)" [ "$rc" -eq "$want" ]
		check "command killed by SIG$sig: every output written" outputs_whole "cmd_$sig"
		check "command killed by SIG$sig: no other file left" only_entries "$TMP/cmd_$sig" ready out.svg out.folded
	fi
done

# hprof is interrupted: it stops sampling, writes every output, prints its summary, and
# passes the signal on to the command, whose status it exits with.
for sig in INT TERM HUP; do
	if start "hprof_$sig"; then
		kill -"$sig" "$HPID"
		wait "$HPID"
		rc=$? want=$((128 + $(kill -l "$sig")))
		check "hprof gets SIG$sig: every output written" outputs_whole "hprof_$sig"
		check "hprof gets SIG$sig: summary printed" grep -qE "^hprof: .* samples? at" "$TMP/hprof_$sig.err"
		check "hprof gets SIG$sig: the command got it too, hprof exits $want ($rc)" [ "$rc" -eq "$want" ]
		kill -KILL "$WPID" 2>/dev/null
	fi
done

# Under nohup (SIGHUP ignored when hprof starts), a hangup stops neither hprof nor its
# command: after SIGHUP, hprof samples another second of the workload's CPU time (~499
# samples; had it stopped, only the ~0.1 s before), then SIGTERM stops both.
if HUP_AT_START=ignore start "nohup_HUP"; then
	kill -HUP "$HPID"
	ticks=$(awk '{ print $14 + $15 }' "/proc/$WPID/stat")
	ran_for "$WPID" $((ticks + $(getconf CLK_TCK))) || fail "nohup_HUP: the workload stopped running"
	kill -TERM "$HPID"
	wait "$HPID"
	rc=$?
	samples=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/nohup_HUP/out.folded")
	check "under nohup, hprof goes on sampling after SIGHUP ($samples samples, want >= 250)" \
		[ "$samples" -ge 250 ]
	check "under nohup, SIGTERM after SIGHUP stops hprof and its command: exits 143 ($rc)" \
		[ "$rc" -eq 143 ]
	kill -KILL "$WPID" 2>/dev/null
fi

# A reader that stops early: hprof gets EPIPE on stdout, not a crash.
"$HPROF" --time 1000 -F 499 2>"$TMP/head.err" | head -1 >/dev/null
rc=${PIPESTATUS[0]}
check "stdout closed early (| head -1): hprof exits 0 ($rc)" [ "$rc" -eq 0 ]
check "stdout closed early: summary printed" grep -qE "^hprof: .* samples? at" "$TMP/head.err"
"$HPROF" --time 500 -F 499 2>"$TMP/true.err" | true
rc=${PIPESTATUS[0]}
check "stdout closed before any output (| true): hprof exits 0 ($rc)" [ "$rc" -eq 0 ]

# hprof killed outright: no temporary file beside its outputs, the capture's included.
if start "hprof_KILL" --raw "$TMP/hprof_KILL/out.raw"; then
	kill -KILL "$HPID"
	wait "$HPID" 2>/dev/null
	kill -KILL "$WPID" 2>/dev/null
	check "hprof killed by SIGKILL: no file left but the workload's" only_entries "$TMP/hprof_KILL" ready
fi

# A full file system: one line naming the file and the reason, a failing status, no file.
mkdir -p "$TMP/full"
if mount -t tmpfs -o size=1m tmpfs "$TMP/full"; then
	dd if=/dev/zero of="$TMP/full/filler" bs=4k 2>/dev/null
	# a command, so that there are samples: an empty folded file would need no space
	"$HPROF" -F 499 --svg "$TMP/full/out.svg" --folded "$TMP/full/out.folded" \
		-- "$WL/fp_chain" 0.5 >/dev/null 2>"$TMP/full.err"
	rc=$?
	check "full file system: non-zero exit ($rc)" [ "$rc" -ne 0 ]
	check "full file system: one line says so: $(grep 'cannot write' "$TMP/full.err")" \
		[ "$(grep -c "^hprof: cannot write $TMP/full/out\.[a-z]*: No space left on device$" "$TMP/full.err")" -eq 1 ]
	check "full file system: no partial or temporary file" only_entries "$TMP/full" filler
	umount "$TMP/full"
else
	fail "full file system: cannot mount a tmpfs"
fi

# A ring buffer too small for a sample: every loss counted and shown, status unaffected.
# nofp_recurse's stack copies (a 300-frame recursion, some 16 KiB) never fit in 4 KiB.
"$HPROF" -v --ring-size 4096 -F 499 --folded "$TMP/ring.folded" -- "$WL/nofp_recurse" 1 \
	>/dev/null 2>"$TMP/ring.err"
rc=$?
lost=$(sed -n 's/^hprof: lost samples: \([0-9]*\) (ring buffer full \([0-9]*\),.*/\1 \2/p' "$TMP/ring.err")
check "ring buffer overflow: exit status is the command's (0, got $rc)" [ "$rc" -eq 0 ]
ring_lost() { [ -n "$lost" ] && [ "${lost% *}" -gt 0 ] && [ "${lost#* }" -gt 0 ]; }
check "ring buffer overflow: lost samples counted and shown (lost, ring buffer full: $lost)" ring_lost

# 5,000 short-lived processes and 1,000 threads while hprof samples every CPU.
"$HPROF" -F 499 --folded "$TMP/churn.folded" >/dev/null 2>"$TMP/churn.err" &
HPID=$!
# sampling has started once hprof gave up the capabilities it needs only for set-up
for ((i = 0; i < 1200; i++)); do
	[ "$(awk '/^CapEff/ { print $2 }' /proc/$HPID/status 2>/dev/null)" != \
	  "$(awk '/^CapEff/ { print $2 }' /proc/self/status)" ] && break
	sleep 0.05
done
churn=$("$WL/nofp_churn" 5000 1000)
kill -INT "$HPID"
wait "$HPID"
rc=$?
check "churn: the workload ran ($churn)" [ "$churn" = "done 5000 1000" ]
check "churn: hprof exits 0 after 5,000 processes and 1,000 threads ($rc)" [ "$rc" -eq 0 ]
echo "# $(grep '^hprof: mappings' "$TMP/churn.err")"
check "churn: folded stacks written" [ -s "$TMP/churn.folded" ]

# Captures cut at any byte, or from a newer hprof: hprof report says which, exits 1.
"$HPROF" --raw "$TMP/cap.raw" --stack-size 1024 -F 99 -- "$WL/fp_chain" 0.5 >/dev/null 2>&1
size=$(stat -c %s "$TMP/cap.raw")
stride=$((size / 150 | 1))
bad=()
# libc's separate debug file would be read again by each report: not what is tested here
mkdir -p "$TMP/no-debug"
for ((cut = 0; cut < size; cut += (cut < 64 ? 1 : stride))); do
	head -c "$cut" "$TMP/cap.raw" >"$TMP/cut.raw"
	HPROF_DEBUG_DIR=$TMP/no-debug "$HPROF" report "$TMP/cut.raw" >/dev/null 2>"$TMP/cut.err"
	rc=$?
	[ "$rc" -eq 1 ] && grep -q "^hprof: report: $TMP/cut.raw: truncated at offset [0-9]*" "$TMP/cut.err" ||
		bad+=("$cut:$rc:$(head -1 "$TMP/cut.err")")
done
check "a capture of $size bytes cut at every byte to 64, then every ${stride}th: each says truncated, exits 1 (${bad[*]:0:3})" \
	[ ${#bad[@]} -eq 0 ]
"$HPROF" report "$TMP/cap.raw" >/dev/null 2>&1
check "the whole capture reports (exit 0)" [ $? -eq 0 ]
python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[8] += 1; open(sys.argv[2], "wb").write(d)' \
	"$TMP/cap.raw" "$TMP/newer.raw"
"$HPROF" report "$TMP/newer.raw" >/dev/null 2>"$TMP/newer.err"
rc=$?
check "a newer hprof's capture: exit 1 ($rc)" [ "$rc" -eq 1 ]
check "a newer hprof's capture: says so ($(cat "$TMP/newer.err"))" grep -q "written by a newer hprof" "$TMP/newer.err"
