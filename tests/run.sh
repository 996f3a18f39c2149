#!/usr/bin/env bash
# Runs every test: unit binaries in build/tests/ and scripts tests/t_*.sh.
# Each test prints one line per check: "ok - NAME", "not ok - NAME" or "skip - NAME: WHY".
# A test that exits non-zero without reporting a failure counts as one failure.
# Ends with "N passed, N failed" (", N skipped" when anything was skipped).
set -u
cd "$(dirname "$0")/.."

passed=0 failed=0 skipped=0
failures=()
log_dir=build/test-logs
mkdir -p "$log_dir"

run_one() {
	local name=$1; shift
	local log="$log_dir/$name.log"
	local start=$SECONDS
	"$@" >"$log" 2>&1
	local rc=$?
	local p f s
	p=$(grep -c '^ok - ' "$log")
	f=$(grep -c '^not ok - ' "$log")
	s=$(grep -c '^skip - ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name exited with status $rc" >>"$log"
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	grep -E '^(ok|not ok|skip) - ' "$log" | sed "s|^|[$name] |"
	if [ "$f" -ne 0 ]; then
		failures+=("$name")
		echo "---- $name output (last 40 lines of $log) ----"
		tail -n 40 "$log"
		echo "----"
	fi
	printf '[%s] %ds\n' "$name" $((SECONDS - start))
}

for bin in build/tests/*; do
	[ -x "$bin" ] || continue
	run_one "$(basename "$bin")" "$bin"
done
for script in tests/t_*.sh; do
	[ -f "$script" ] || continue
	run_one "$(basename "$script" .sh)" bash "$script"
done

[ ${#failures[@]} -eq 0 ] || echo "failing: ${failures[*]}"
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
