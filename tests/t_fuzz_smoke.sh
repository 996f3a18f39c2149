#!/usr/bin/env bash
# Every fuzz harness (tests/fuzz/) over its seed corpus, which holds the inputs of every
# finding fixed so far, then a few seconds of fuzzing: any crash, leak, sanitizer report or
# timeout fails. `make fuzz` runs the same harnesses for longer.
source "$(dirname "$0")/lib.sh"

SECONDS_EACH=${FUZZ_SMOKE_SECONDS:-3}

for src in tests/fuzz/fuzz_*.c; do
	name=${src#tests/fuzz/fuzz_}
	name=${name%.c}
	bin=build/fuzz/fuzz_$name
	if [ ! -x "$bin" ]; then
		fail "fuzz $name: $bin is not built (make fuzz-build)"
		continue
	fi
	mkdir -p "$TMP/$name" "$TMP/$name.art"
	# the corpus first, input by input, as regression tests
	"$bin" -runs=0 -timeout=60 -close_fd_mask=3 "$TMP/$name" "tests/fuzz/corpus/$name" \
		>"$TMP/$name.seeds.log" 2>&1
	rc=$?
	check "fuzz $name: every seed input runs clean (status $rc)" [ "$rc" -eq 0 ]
	[ "$rc" -eq 0 ] || grep -E 'ERROR|runtime error|SUMMARY' "$TMP/$name.seeds.log" | head -3
	# -timeout is generous: the machine may be busy
	"$bin" -max_total_time="$SECONDS_EACH" -timeout=60 -rss_limit_mb=4096 -close_fd_mask=3 \
		-print_final_stats=1 -artifact_prefix="$TMP/$name.art/" "$TMP/$name" \
		"tests/fuzz/corpus/$name" >"$TMP/$name.log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/$name.log")
	check "fuzz $name: ${SECONDS_EACH} s of fuzzing, ${execs:-?} inputs, no finding (status $rc)" [ "$rc" -eq 0 ]
	if [ "$rc" -ne 0 ]; then
		grep -E 'ERROR|runtime error|SUMMARY' "$TMP/$name.log" | head -3
		ls "$TMP/$name.art/"
	fi
done
