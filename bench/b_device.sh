#!/usr/bin/env bash
# bench/b_device.sh [KIT]: the measurements of issues 18 and 19 that need the accelerator
# machine (PyTorch from its pip wheel, CUDA), in one run of a few minutes. KIT is the
# folder bench/device_kit.sh packs here; the machine gets it through the device tool's
# carry (without KIT, build/'s programs and PYTHON's torch, here: no CUDA rows):
#
#   bash bench/device_kit.sh                                    (here)
#   run carry=["devkit"] command="bash bench/b_device.sh devkit" (there)
#
# Each workload runs SECONDS_EACH (8) seconds under `hprof -v -F 499` with HPROF_DEBUG=memory:
#   cuda_train   a training loop on the GPU (an MLP under AdamW, bf16 autocast: cuBLASLt),
#                the host side sampled (issue 18: 92% complete; issue 19: 373 MiB RSS,
#                goal <= 80 MiB)
#   cpu_matmul   float32 matmuls on 16 threads (MKL's kernels, oneDNN's JIT code; 44%)
#   xperf        python3 -X perf running cuda_train (CPython's trampolines; 54%), 3.12+
#   xperf_jit    python3 -X perf_jit (jitdump with unwinding info), 3.13+
# and perf record --call-graph dwarf,16384 on the same commands, PERF_SECONDS (3) each,
# where perf exists (a 16-thread run's DWARF copies make perf script slow). Then the
# single tables of the wheel's largest libraries (hprof table --stats-only) and the first
# lookup in each (bench_lazy: from opening the file to its first pc's rules; goal <= 5 ms
# for the 450-MB libtorch_cpu.so). Goals: >= 99% complete and never below perf.
#
# Prints the report and writes it to $OUT/device.txt, with each run's folded stacks and
# summary (what comes back from the device tool); OUT defaults to a temporary folder.
set -u
KIT=${1:+$(readlink -f "$1")}
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh
HPROF=${KIT:+$KIT/hprof}
HPROF=${HPROF:-build/hprof}
LAZY=${KIT:+$KIT/bench_lazy}
LAZY=${LAZY:-build/bench/bench_lazy}
SECONDS_EACH=${SECONDS_EACH:-8}
PERF_SECONDS=${PERF_SECONDS:-3}
PY=${PYTHON:-python3}
OUT=${OUT:-$TMP/out}
mkdir -p "$OUT"
REPORT=$OUT/device.txt
: >"$REPORT"

say() { echo "$*" | tee -a "$REPORT"; }

if [ ! -x "$HPROF" ] || [ ! -x "$LAZY" ]; then
	echo "b_device: no $HPROF or $LAZY (make; bash bench/device_kit.sh packs a kit)" >&2
	exit 1
fi
if ! "$PY" -c 'import torch' 2>/dev/null; then
	echo "skip: b_device needs torch for $PY (PYTHON=...; python3-torch here, the wheel there)"
	exit 0
fi

# ---- the machine ----
torch_info=$("$PY" - <<-'EOF' 2>&1
	import sys, torch
	cuda = torch.cuda.is_available()
	print("python", sys.version.split()[0], "torch", torch.__version__,
	      "cuda", torch.version.cuda if cuda else "none",
	      torch.cuda.get_device_name(0) if cuda else "", "|", torch.__file__)
	EOF
)
say "== machine: $(uname -r), $(nproc) CPUs, uid $(id -u), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
say "== $torch_info"
TORCH_LIB=$(dirname "${torch_info##*| }")/lib
HAVE_CUDA=0
case "$torch_info" in *" cuda none "* | *Error*) ;; *) HAVE_CUDA=1 ;; esac
PY_MINOR=$("$PY" -c 'import sys; print(sys.version_info[1])' 2>/dev/null || echo 0)
if ! bpf_available 2>"$TMP/why"; then
	say "b_device: hprof cannot record here: $(cat "$TMP/why")"
	exit 1
fi

# ---- the workloads ----
cat >"$TMP/work.py" <<'EOF'
"""work.py MODE SECONDS: cuda_train (a training loop on the GPU) or cpu_matmul (16 threads)."""
import sys
import time

import torch

mode, seconds = sys.argv[1], float(sys.argv[2])
torch.manual_seed(0)
end = time.monotonic() + seconds
steps = 0
if mode == "cuda_train":
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                                torch.nn.Linear(4096, 4096), torch.nn.GELU(),
                                torch.nn.Linear(4096, 1000)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(512, 1024, device=dev)
    y = torch.randint(0, 1000, (512,), device=dev)
    while time.monotonic() < end:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        steps += 1
        if steps % 20 == 0:
            torch.cuda.synchronize()
elif mode == "cpu_matmul":
    torch.set_num_threads(16)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    while time.monotonic() < end:
        c = a @ b
        steps += 1
print(mode, "steps", steps, file=sys.stderr)
EOF

# field LINE REGEX: the number the regex's group 1 catches in LINE, summed ("" if none).
field() {
	grep -oE "$2" <<<"$1" | sed -E "s/$2/\\1/" | awk '{ s += $1; n++ } END { if (n) printf "%.1f", s }'
}

# profile NAME CMD... SECONDS: hprof and (where present) perf on CMD, the word SECONDS last
# standing for how long it runs (SECONDS_EACH, PERF_SECONDS); one line and hprof's figures.
profile() {
	local name=$1 share perf_share="-" line rss
	shift
	local cmd=("${@:1:$#-1}")
	HPROF_DEBUG=memory timeout 120 "$HPROF" -v -F 499 --folded "$OUT/$name.folded" -- \
		"${cmd[@]}" "$SECONDS_EACH" >/dev/null 2>"$OUT/$name.err"
	share=$(complete_share "$OUT/$name.folded")
	line=$(grep '^hprof: memory:' "$OUT/$name.err" | tail -1)
	rss=$(field "$line" 'rss ([0-9]+) KiB' | awk '$1 != "" { printf "%.1f", $1 / 1024 }')
	if command -v perf >/dev/null &&
		timeout 120 perf record -q -F 499 --call-graph dwarf,16384 -o "$TMP/$name.data" -- \
			"${cmd[@]}" "$PERF_SECONDS" >/dev/null 2>"$OUT/$name.perf.err"; then
		timeout 180 perf script --no-inline -F comm,ip,sym,dso -i "$TMP/$name.data" 2>/dev/null |
			perf_folded >"$OUT/$name.perf.folded"
		perf_share=$(complete_share "$OUT/$name.perf.folded")
		rm -f "$TMP/$name.data"
	fi
	say "$(printf '%-11s | hprof %6s %-13s | perf dwarf %6s %-13s | end RSS %s MiB' "$name" \
		"$(pct "$share")" "($share)" "$([ "$perf_share" = - ] && echo - || pct "$perf_share")" \
		"($perf_share)" "${rss:-?}")"
	grep -E '^hprof: (user stacks by method|code without CFI|lost samples)' "$OUT/$name.err" |
		sed "s/^hprof: /    /" | tee -a "$REPORT"
	incomplete_why "$OUT/$name.folded" 4 | sed 's/^/    incomplete: /' | tee -a "$REPORT"
	[ -n "$line" ] && say "    ${line#hprof: }"
	grep -E ' steps [0-9]+$' "$OUT/$name.err" | sed 's/^/    /' | tee -a "$REPORT"
}

say ""
say "== complete stacks at 499 Hz, $SECONDS_EACH s each (goal >= 99%, never below perf)"
if [ "$HAVE_CUDA" = 1 ]; then
	profile cuda_train "$PY" "$TMP/work.py" cuda_train SECONDS
else
	say "cuda_train  | not run: torch sees no CUDA device"
fi
profile cpu_matmul "$PY" "$TMP/work.py" cpu_matmul SECONDS
if [ "$PY_MINOR" -ge 12 ] && [ "$HAVE_CUDA" = 1 ]; then
	profile xperf "$PY" -X perf "$TMP/work.py" cuda_train SECONDS
else
	say "xperf       | not run: needs Python 3.12+ (3.$PY_MINOR) and CUDA"
fi
if [ "$PY_MINOR" -ge 13 ] && [ "$HAVE_CUDA" = 1 ]; then
	profile xperf_jit "$PY" -X perf_jit "$TMP/work.py" cuda_train SECONDS
else
	say "xperf_jit   | not run: needs Python 3.13+ (3.$PY_MINOR) and CUDA"
fi

say ""
say "== the wheel's largest libraries: whole table (hprof table --stats-only), first lookup (bench_lazy -n 3)"
# largest FILES...: the largest 4 regular files among FILES (symbolic links followed).
largest() {
	find -L "$@" -maxdepth 0 -type f -printf '%s %p\n' 2>/dev/null | sort -rn | head -4 | cut -d' ' -f2
}
for lib in $(largest "$TORCH_LIB"/*.so*) \
	$(largest "$(dirname "$TORCH_LIB")"/../nvidia/*/lib/libcublasLt.so* | head -1); do
	size=$(du -mL "$lib" | cut -f1)
	stats=$(timeout 120 "$HPROF" table --stats-only "$lib" 2>&1 |
		grep -E '^(fdes|rows|table bytes|cfa unsupported|cfa expr-deref-bp|cfa r1[0-5]-offset):' |
		paste -sd' ')
	say "$(basename "$lib") ($size MB): $stats"
	timeout 120 "$LAZY" -n 3 "$lib" 2>&1 | grep -v '^$' | sed 's/^/    /' | tee -a "$REPORT"
done
say ""
say "b_device: report in $REPORT"
