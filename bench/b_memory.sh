#!/usr/bin/env bash
# hprof's memory on real programs: the programs of tests/t_realprog.sh (REALPROGS), a clang++
# -O2 compile of generated C++ (~6 s) and a python3-torch training loop (~4 s of a small MLP
# under SGD, when /usr/bin/python3 has torch), each profiled once at 499 Hz:
#   hprof -F 499 --folded F -- CMD   with HPROF_DEBUG=memory: its RSS at the end of the run
#     and the unwind tables' and symbols' MiB from the last "hprof: memory:" line; its peak
#     RSS (VmHWM, read as hprof exits by a preloaded library: /usr/bin/time's %M would be the
#     larger of hprof's and its command's).
#   perf record -F 499 --call-graph dwarf,16384 -o D -- CMD, then the peak RSS of
#     perf report --no-inline -i D --stdio (/usr/bin/time -f %M): the anchor. Without
#     --no-inline perf runs addr2line on every binary for inlined frames: minutes on
#     libLLVM (clang), the same peak (181 MB either way on the clang row).
# Where NVIDIA's CUDA toolkit is installed (CUDA_HOME, /usr/local/cuda), a "cuda" row: the
# host side of NVRTC (libnvrtc, ~110 MB) and cuBLASLt (libcublasLt, ~540 MB), no GPU needed
# (tests/workloads/cuda/host.c, bench/lib.sh's cuda_host_command).
# Ratios hprof/perf. HPROF_BASE=/path/to/old/hprof adds "before" columns: that binary, same
# commands, same run. Goal (issue 19): end-of-run RSS <= 32 MiB on the clang and torch runs.
# CLANG_UNITS (12) sizes the C++ file; PROGRAMS (all) picks rows, e.g. PROGRAMS="clang torch".
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh

GOAL_MIB=32
CLANG_UNITS=${CLANG_UNITS:-12}
PROGRAMS=${PROGRAMS:-$REALPROGS clang torch cuda}
BASE=${HPROF_BASE:-}

if ! bpf_available 2>/dev/null; then
	echo "skip: b_memory needs root and a BTF kernel (BPF recording)"
	exit 0
fi
if ! command -v perf >/dev/null; then
	echo "skip: b_memory needs perf (linux-perf; scripts/install-deps.sh)"
	exit 0
fi
if [ ! -x "$HPROF" ]; then
	echo "b_memory: $HPROF is not built (make)" >&2
	exit 1
fi
if [ -n "$BASE" ] && [ ! -x "$BASE" ]; then
	echo "b_memory: HPROF_BASE=$BASE is not an executable" >&2
	exit 1
fi

# cxx_templates N: a C++ file of N instantiations of a function template over a type of its
# own, each instantiating vector, sort, map, to_string and ostringstream's code for that
# type again (a few hundred template instantiations at N = 12): ~0.3 s of clang++ -O2 each.
cxx_templates() {
	awk -v n="$1" 'BEGIN {
	print "#include <algorithm>\n#include <map>\n#include <sstream>\n#include <string>\n#include <vector>\n"
	print "template <int N> struct Rec {\n\tint a;\n\tstd::string s;"
	print "\tbool operator<(const Rec &o) const { return a != o.a ? a < o.a : s < o.s; }\n};\n"
	print "template <int N> std::string work(const std::vector<int> &in)\n{"
	print "\tstd::vector<Rec<N>> v;\n\tfor (int x : in)\n\t\tv.push_back(Rec<N>{x % (N + 7), std::to_string(x + N)});"
	print "\tstd::sort(v.begin(), v.end());"
	print "\tstd::map<int, Rec<N>> m;\n\tfor (const Rec<N> &r : v)\n\t\tm.emplace(r.a, r);"
	print "\tstd::ostringstream os;\n\tfor (const auto &[k, r] : m)\n\t\tos << k << \x27=\x27 << r.s << \x27;\x27;"
	print "\treturn os.str();\n}\n"
	for (i = 0; i < n; i++) printf "template std::string work<%d>(const std::vector<int> &);\n", i
	}'
}

# The torch row: a 64-128-128-10 MLP trained by SGD on one fixed batch for 4 s, one thread.
cat >"$TMP/mlp.py" <<'EOF'
import time
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                            torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
x = torch.randn(256, 64)
y = torch.randint(0, 10, (256,))
end = time.time() + 4.0
steps = 0
while time.time() < end:
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    steps += 1
print(steps, float(loss))
EOF

# A library preloaded into hprof that writes its VmHWM (KiB) to $HWM_OUT as it exits, after
# its outputs are written. It takes itself out of the environment at once, so that the
# command hprof starts does not load it.
cat >"$TMP/hwm.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char out[4096];

__attribute__((constructor)) static void hwm_start(void)
{
	const char *path = getenv("HWM_OUT");

	if (path)
		snprintf(out, sizeof(out), "%s", path);
	unsetenv("HWM_OUT");
	unsetenv("LD_PRELOAD");
}

__attribute__((destructor)) static void hwm_end(void)
{
	char line[256];
	FILE *status, *o;

	if (!out[0] || !(status = fopen("/proc/self/status", "r")))
		return;
	while (fgets(line, sizeof(line), status)) {
		if (strncmp(line, "VmHWM:", 6) == 0 && (o = fopen(out, "w"))) {
			fprintf(o, "%ld\n", strtol(line + 6, NULL, 10));
			fclose(o);
		}
	}
	fclose(status);
}
EOF
HWM_SO=
if ${CC:-cc} -O2 -shared -fPIC -o "$TMP/hwm.so" "$TMP/hwm.c" 2>"$TMP/hwm.err"; then
	HWM_SO=$TMP/hwm.so
else
	echo "note: hprof's peak RSS not measured: cannot build the preloaded library: $(head -1 "$TMP/hwm.err")"
fi
HAVE_TIME=1
[ -x /usr/bin/time ] || { HAVE_TIME=0; echo "note: perf report's peak RSS not measured: no /usr/bin/time (Debian: time)"; }

# program_command NAME: sets CMD to NAME's command line, or returns 1 with the reason on
# stderr.
program_command() {
	case $1 in
	clang)
		command -v clang++ >/dev/null || { echo "clang++ is not installed" >&2; return 1; }
		[ -s "$TMP/templates.cc" ] || cxx_templates "$CLANG_UNITS" >"$TMP/templates.cc"
		CMD=("$(command -v clang++)" -std=c++17 -O2 -c "$TMP/templates.cc" -o "$TMP/templates.o") ;;
	torch)
		[ -x /usr/bin/python3 ] || { echo "no /usr/bin/python3" >&2; return 1; }
		/usr/bin/python3 -c 'import torch' 2>/dev/null ||
			{ echo "/usr/bin/python3 cannot import torch" >&2; return 1; }
		CMD=(/usr/bin/python3 "$TMP/mlp.py") ;;
	cuda) cuda_host_command "$TMP" ;;
	*) realprog_command "$1" "$TMP" ;;
	esac
}

# field LINE REGEX: the sum of the numbers the regex's group 1 catches in LINE ("" if none).
field() {
	grep -oE "$2" <<<"$1" | sed -E "s/$2/\\1/" | awk '{ s += $1; n++ } END { if (n) printf "%.1f", s }'
}

# hprof_run BINARY NAME: profiles CMD with BINARY; sets END_MIB, UNWIND_MIB, SYM_MIB,
# PEAK_MIB and LOST ("?" for what could not be read).
hprof_run() {
	local bin=$1 name=$2 line
	rm -f "$TMP/$name.hwm"
	if [ -n "$HWM_SO" ]; then
		HPROF_DEBUG=memory HWM_OUT="$TMP/$name.hwm" LD_PRELOAD="$HWM_SO" \
			"$bin" -F 499 --folded "$TMP/$name.folded" -- "${CMD[@]}" >/dev/null 2>"$TMP/$name.err"
	else
		HPROF_DEBUG=memory "$bin" -F 499 --folded "$TMP/$name.folded" -- "${CMD[@]}" \
			>/dev/null 2>"$TMP/$name.err"
	fi
	line=$(grep '^hprof: memory:' "$TMP/$name.err" | tail -1)
	END_MIB=$(field "$line" 'rss ([0-9]+) KiB' | awk '$1 != "" { printf "%.1f", $1 / 1024 }')
	# "unwind tables X MiB", or "unwind indexes X MiB" and the cached "rows of N functions Y
	# of Z MiB": tables are what the walk reads, however they are held.
	UNWIND_MIB=$(field "$line" 'unwind [a-z]+ ([0-9.]+) MiB')
	rows=$(field "$line" 'rows of [0-9]+ functions ([0-9.]+) ')
	[ -n "$rows" ] && UNWIND_MIB=$(calc %.1f "${UNWIND_MIB:-0} + $rows")
	SYM_MIB=$(field "$line" 'symbols ([0-9.]+) MiB')
	PEAK_MIB=$([ -s "$TMP/$name.hwm" ] && calc %.1f "$(cat "$TMP/$name.hwm") / 1024")
	LOST=$(sed -nE 's/^hprof: lost ([0-9]+) sample.*/\1/p' "$TMP/$name.err")
	END_MIB=${END_MIB:-?} UNWIND_MIB=${UNWIND_MIB:-?} SYM_MIB=${SYM_MIB:-?} PEAK_MIB=${PEAK_MIB:-?}
	LOST=${LOST:-0}
	[ "$END_MIB" != "?" ] || echo "$name: no memory line from $bin: $(tail -3 "$TMP/$name.err")" >&2
}

# ratio A B: A/B with two decimals and an x, "?" when either is unknown.
ratio() {
	case "$1$2" in *[!0-9.]*|"") echo "?" ;; *) calc '%.2fx' "$1 / $2" ;; esac
}

# perf_anchor NAME: perf record (499 Hz, dwarf,16384) of CMD; sets PERF_MIB, perf report's
# peak RSS.
perf_anchor() {
	local name=$1
	PERF_MIB="?"
	if ! perf record -q -F 499 --call-graph dwarf,16384 -o "$TMP/$name.data" -- "${CMD[@]}" \
		>/dev/null 2>"$TMP/$name.perf.err"; then
		echo "$name: perf record failed: $(head -c 300 "$TMP/$name.perf.err")" >&2
		return
	fi
	if [ "$HAVE_TIME" = 1 ] && /usr/bin/time -f %M -o "$TMP/$name.time" \
		perf report --no-inline -i "$TMP/$name.data" --stdio >/dev/null 2>&1; then
		PERF_MIB=$(calc %.1f "$(tail -1 "$TMP/$name.time") / 1024")
	fi
	rm -f "$TMP/$name.data"
}

realprog_prepare "$TMP"
cols="program    | end RSS | unwind | symbols | peak RSS | lost | perf report peak | end/perf | peak/perf"
[ -n "$BASE" ] && cols="$cols | before: end RSS | unwind | symbols | peak RSS | lost | end/perf | peak/perf | end after/before"
echo "hprof: $HPROF${BASE:+; before: $BASE}; MiB; 499 Hz; clang: $CLANG_UNITS units"
echo "$cols"
echo "$cols" | sed 's/[^|]/-/g'
declare -A END
for name in $PROGRAMS; do
	if ! program_command "$name" 2>"$TMP/why"; then
		printf '%-10s | not run: %s\n' "$name" "$(cat "$TMP/why")"
		continue
	fi
	hprof_run "$HPROF" "$name"
	END[$name]=$END_MIB
	row=$(printf '%-10s | %7s | %6s | %7s | %8s | %4s' "$name" "$END_MIB" "$UNWIND_MIB" "$SYM_MIB" \
		"$PEAK_MIB" "$LOST")
	after_end=$END_MIB after_peak=$PEAK_MIB
	if [ -n "$BASE" ]; then
		hprof_run "$BASE" "$name.base"
		END[$name.base]=$END_MIB
	fi
	perf_anchor "$name"
	row=$(printf '%s | %16s | %8s | %9s' "$row" "$PERF_MIB" "$(ratio "$after_end" "$PERF_MIB")" \
		"$(ratio "$after_peak" "$PERF_MIB")")
	if [ -n "$BASE" ]; then
		row=$(printf '%s | %15s | %6s | %7s | %8s | %4s | %8s | %9s | %16s' "$row" "$END_MIB" \
			"$UNWIND_MIB" "$SYM_MIB" "$PEAK_MIB" "$LOST" "$(ratio "$END_MIB" "$PERF_MIB")" \
			"$(ratio "$PEAK_MIB" "$PERF_MIB")" "$(ratio "$after_end" "$END_MIB")")
	fi
	echo "$row"
done
echo "end RSS, unwind, symbols: hprof's last HPROF_DEBUG=memory line (unwind: tables, or indexes"
echo "plus cached rows); peak RSS: hprof's VmHWM as it exits; lost: samples the summary says were"
echo "lost; perf report peak: /usr/bin/time -f %M of perf report --no-inline --stdio on perf record -F 499"
echo "--call-graph dwarf,16384 of the same command."

for name in clang torch; do
	case " $PROGRAMS " in *" $name "*) ;; *) continue ;; esac
	for which in "" .base; do
		[ -z "$which" ] || [ -n "$BASE" ] || continue
		label=${which:+ (before)}
		v=${END[$name$which]:-}
		if [ -z "$v" ]; then
			echo "goal: end-of-run RSS <= $GOAL_MIB MiB on $name$label -> not run"
		elif [ "$v" = "?" ]; then
			echo "goal: end-of-run RSS <= $GOAL_MIB MiB on $name$label -> not measured"
		elif [ "$(calc %d "$v <= $GOAL_MIB")" = 1 ]; then
			echo "goal: end-of-run RSS <= $GOAL_MIB MiB on $name$label -> met ($v MiB)"
		else
			echo "goal: end-of-run RSS <= $GOAL_MIB MiB on $name$label -> not met ($v MiB)"
		fi
	done
done
