#!/usr/bin/env bash
# Runs every fuzz harness (or those named) for FUZZ_SECONDS each, one at a time, under nice:
#   FUZZ_SECONDS=60 bash tests/fuzz/run.sh [NAME...]
# Each starts from its seed corpus in tests/fuzz/corpus/NAME (read only) and keeps what it
# finds in build/fuzz/work/NAME. Crashes go to build/fuzz/artifacts/NAME/; copy each into
# the seed corpus once its cause is fixed. Prints one line per harness with its execution
# count and coverage, and exits 1 when any harness found a crash, a leak or a timeout.
set -u
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-60}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for src in tests/fuzz/fuzz_*.c; do
		n=${src#tests/fuzz/fuzz_}
		names+=("${n%.c}")
	done
fi

failed=0
for name in "${names[@]}"; do
	bin=build/fuzz/fuzz_$name work=build/fuzz/work/$name art=build/fuzz/artifacts/$name
	log=build/fuzz/logs/$name.log
	mkdir -p "$work" "$art" "$(dirname "$log")"
	# -close_fd_mask=3: the capture harness runs `hprof report`, whose summary goes to
	# stderr; sanitizer reports still reach the log. -timeout is generous: the machine is
	# shared.
	nice -n 19 "$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 \
		-close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$art/" \
		"$work" "tests/fuzz/corpus/$name" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
	if [ "$rc" -ne 0 ]; then
		failed=1
		echo "$name: FAILED (status $rc), ${execs:-?} execs, $cov; see $log and $art/"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -3
	else
		echo "$name: ${execs:-?} execs in ${seconds} s, $cov"
	fi
done
exit "$failed"
