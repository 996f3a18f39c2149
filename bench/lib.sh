# Shared by bench/b_*.sh (source it after tests/lib.sh, which enters the repository's root).

# perf script -F comm,ip,sym,dso (callchains innermost first) -> folded stacks, one line a
# sample, outermost first, named as hprof names them: kernel frames with _[k], unnamed
# frames module+0xADDR, symbol versions dropped.
perf_folded() {
	awk '
	function flush(   s, i) {
		if (comm == "") return
		s = comm
		for (i = nu; i >= 1; i--) s = s ";" user[i]
		for (i = nk; i >= 1; i--) s = s ";" kern[i]
		print s, 1
		comm = ""; nu = nk = 0
	}
	/^[^\t]/ { flush(); comm = $0; sub(/[ \t]+$/, "", comm); next }
	/^\t/ {
		line = $0; sub(/^[ \t]+/, "", line)
		ip = line; sub(/ .*/, "", ip)
		sym = substr(line, length(ip) + 2); dso = ""
		if (match(sym, / \([^()]*\)$/)) {
			dso = substr(sym, RSTART + 2, RLENGTH - 3)
			sym = substr(sym, 1, RSTART - 1)
		}
		sub(/@.*/, "", sym)
		if (dso ~ /^\[kernel/ || (length(ip) == 16 && ip ~ /^ffff/)) { kern[++nk] = sym "_[k]"; next }
		if (sym == "[unknown]") { n = split(dso, p, "/"); sym = p[n] "+0x" ip }
		user[++nu] = sym
		next
	}
	/^$/ { flush() }
	END { flush() }'
}

# perf_record_folded NAME OUT PERF-RECORD-OPTIONS...: perf record (499 Hz) of CMD, folded to OUT.
perf_record_folded() {
	local name=$1 out=$2
	shift 2
	perf record -q -F 499 "$@" -o "$TMP/$name.data" -- "${CMD[@]}" >/dev/null 2>"$TMP/$name.perf.err" ||
		echo "$name: perf record failed: $(head -c 300 "$TMP/$name.perf.err")" >&2
	perf script --no-inline -F comm,ip,sym,dso -i "$TMP/$name.data" 2>/dev/null | perf_folded >"$out"
	rm -f "$TMP/$name.data"
}

# below SHARE OTHER: true when the share "m/t" is below the share OTHER: m / t < m2 / t2.
below() { [ $((${1%/*} * ${2#*/})) -lt $((${2%/*} * ${1#*/})) ]; }

# pct "m/t": the share as a percentage with one decimal.
pct() { awk -v s="$1" 'BEGIN { split(s, a, "/"); printf "%.1f%%", a[2] ? 100 * a[1] / a[2] : 0 }'; }

# perf_sample_bytes DATA: "samples bytes" of perf's PERF_RECORD_SAMPLE records in DATA, each
# as large as the kernel wrote it into the ring buffer (perf report -D).
perf_sample_bytes() {
	perf report -D -i "$1" 2>/dev/null | awk '
	function hex(s,   i, v) {
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	/PERF_RECORD_SAMPLE\(/ && match($0, /\[0x[0-9a-f]+\]/) { n++; b += hex(substr($0, RSTART + 3, RLENGTH - 4)) }
	END { printf "%d %d\n", n, b }'
}

# summary_bytes ERR: hprof's bytes received per sample, from its summary on stderr.
summary_bytes() { sed -n 's/^hprof: \([0-9]*\) bytes received per sample.*/\1/p' "$1"; }

# median N...: the median of the numbers (the mean of the middle two for an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# calc FORMAT EXPR: awk arithmetic, printed with FORMAT.
calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# The soak's churn (bench/b_soak.sh, b_serve.sh): processes and threads coming and going all
# the time. THREADS is a python3 program starting and joining four short threads at a time;
# PROCESSES a shell loop starting /bin/true and python3 -c pass.
export THREADS='
import threading
def work():
    sum(range(20000))
while True:
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts: t.start()
    for t in ts: t.join()'
PROCESSES='while :; do /bin/true; /usr/bin/python3 -c pass; done'

# churn_start: starts both loops, each leading its own process group (so that it goes with
# everything it started: kill -- -PID), their pids appended to the array churn.
churn_start() {
	setsid sh -c "$PROCESSES" >/dev/null 2>&1 &
	churn+=($!)
	setsid /usr/bin/python3 -c "$THREADS" >/dev/null 2>&1 &
	churn+=($!)
}

# The CUDA toolkit's directory, where one is installed (NVIDIA's, not a Debian package:
# /usr/local/cuda, or CUDA_HOME): the host side of its libraries is profiled by the benches
# that list "cuda", no GPU needed.
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

# cuda_host_command DIR: builds tests/workloads/cuda/host.c into DIR and sets CMD to a 4-s
# run of it, or returns 1 with the reason on stderr.
cuda_host_command() {
	local dir=$1
	if [ ! -e "$CUDA_HOME/include/nvrtc.h" ] || [ ! -e "$CUDA_HOME/include/cublasLt.h" ]; then
		echo "no CUDA toolkit in $CUDA_HOME (NVIDIA's; set CUDA_HOME)" >&2
		return 1
	fi
	if [ ! -x "$dir/cuda_host" ] &&
		! gcc -O2 -o "$dir/cuda_host" tests/workloads/cuda/host.c -I"$CUDA_HOME/include" \
			-L"$CUDA_HOME/lib64" -lnvrtc -lcublasLt -Wl,-rpath,"$CUDA_HOME/lib64" 2>"$dir/cuda.err"; then
		echo "building the CUDA host workload failed: $(head -1 "$dir/cuda.err")" >&2
		return 1
	fi
	CMD=("$dir/cuda_host" 4)
}
