#!/usr/bin/env bash
# Real Python programs on Debian's python3.11, each profiled in one run by hprof (Python
# frames, the default), perf record --call-graph dwarf,16384 and perf record -g, at 499 Hz,
# for RUN_SECONDS (default 4) of work after its imports (tests/workloads/python/):
#   torch  python3-torch's CPU training loop: a small conv net and MLP, random tensors
#   numpy  matmul, FFT and sorting called from Python functions
#   flask  a Flask app's views called through its test client (no network)
#   pip    pip's resolver backtracking offline over PIP_VERSIONS (default 80) versions of
#          small wheels the script writes (pip download --no-index --find-links DIR)
# For each: its samples; hprof's "Python frames in N of M samples" line; complete stacks by
# hprof, perf dwarf and perf -g (stack_completeness, as bench/b_realprog.sh); hprof's --top
# 10 and its top Python functions by inclusive share; perf dwarf's top frames and how many
# of its samples hold the evaluator (_PyEval_EvalFrameDefault) and how deep; the heaviest
# hprof stack through the program's own function, cut with "...". Check: the program's own
# Python functions (OWN_NAMES) appear in hprof's stacks and in no perf stack.
# PYTHON (default /usr/bin/python3.11, the interpreter Debian's packages are built for).
source "$(dirname "$0")/../tests/lib.sh"
source bench/lib.sh
PYTHON=${PYTHON:-/usr/bin/python3.11}
RUN_SECONDS=${RUN_SECONDS:-4}
PIP_VERSIONS=${PIP_VERSIONS:-80}
PROGRAMS=${PROGRAMS:-torch numpy flask pip}
PYW=tests/workloads/python

if ! bpf_available 2>/dev/null; then
	echo "skip: b_python_real needs root and a BTF kernel (BPF recording)"
	exit 0
fi
if ! command -v perf >/dev/null; then
	echo "skip: b_python_real needs perf (linux-perf; scripts/install-deps.sh)"
	exit 0
fi
if [ ! -x "$PYTHON" ]; then
	echo "skip: b_python_real needs Debian's python3.11 ($PYTHON; PYTHON)"
	exit 0
fi

# program_command NAME: sets CMD to the program's run and OWN_NAMES to the Python functions
# of its own that its stacks must show (module.qualname), or returns 1 with the reason on
# stderr (a Debian package missing).
program_command() {
	local module package script
	case $1 in
	torch) module=torch package=python3-torch script=torch_train.py
		OWN_NAMES="torch_train.train_step torch_train.Net.forward torch_train.train" ;;
	numpy) module=numpy package=python3-numpy script=numpy_work.py
		OWN_NAMES="numpy_work.step numpy_work.matmul_block numpy_work.spectrum numpy_work.rank" ;;
	flask) module=flask package=python3-flask script=flask_app.py
		OWN_NAMES="flask_app.serve flask_app.get_item flask_app.add_item flask_app.list_page" ;;
	pip) module=pip package=python3-pip
		# resolvelib's (0.8.1 in Debian 12's pip 23.0.1) and pip's, named by their files
		OWN_NAMES="resolvers.Resolution.resolve resolvers.Resolution._attempt_to_pin_criterion resolvers.Resolution._backtrack factory.Factory.find_candidates" ;;
	*) echo "no program $1" >&2; return 1 ;;
	esac
	if ! "$PYTHON" -c "import $module" 2>/dev/null; then
		echo "no $module in $PYTHON ($package; scripts/install-deps.sh)" >&2
		return 1
	fi
	case $1 in
	pip)
		[ -d "$TMP/wheels" ] || "$PYTHON" "$PYW/pip_wheels.py" "$TMP/wheels" "$PIP_VERSIONS" || return 1
		CMD=("$PYTHON" -m pip download --no-index --find-links "$TMP/wheels" -d "$TMP/dl"
			--no-cache-dir --disable-pip-version-check -q top) ;;
	*) CMD=("$PYTHON" "$PYW/$script" "$RUN_SECONDS") ;;
	esac
}

# frames_named FOLDED NAMES...: for each name "NAME:SAMPLES", the samples in FOLDED with a
# frame of exactly that name.
frames_named() {
	local file=$1
	shift
	awk -v names="$*" '
		BEGIN { n = split(names, want, " ") }
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack); k = split(stack, f, ";")
		  delete seen
		  for (i = 2; i <= k; i++) seen[f[i]] = 1
		  for (j = 1; j <= n; j++) if (want[j] in seen) hits[j] += count }
		END { for (j = 1; j <= n; j++) printf "%s%s:%d", (j > 1 ? " " : ""), want[j], hits[j] }' "$file"
}

# frames_like FOLDED NAMES...: the samples in FOLDED with a frame named like one of NAMES
# (module.qualname): the function's own name (qualname's last part) or a name holding the
# whole NAME. perf has no Python frame: any such frame of its would be one.
frames_like() {
	local file=$1
	shift
	awk -v names="$*" '
		BEGIN { n = split(names, full, " ")
			for (j = 1; j <= n; j++) { k = split(full[j], p, "."); short[j] = p[k] } }
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack); k = split(stack, f, ";")
		  for (i = 2; i <= k; i++) for (j = 1; j <= n; j++)
			  if (f[i] == short[j] || index(f[i], full[j])) { hits += count; next } }
		END { print hits + 0 }' "$file"
}

# evaluator_depth FOLDED: "samples-with/total mean-depth": the samples whose stack holds
# _PyEval_EvalFrameDefault and how many of it they hold on average.
evaluator_depth() {
	awk '{ count = $NF; total += count; d = gsub(/;_PyEval_EvalFrameDefault(;| )/, "&")
	       if (d) { with += count; frames += d * count } }
	     END { printf "%d/%d %.1f\n", with, total, with ? frames / with : 0 }' "$1"
}

# evaluator_left FOLDED: "N M": hprof's samples that kept an evaluator frame (no Python frames
# for it) and, of them, those under an import (a native frame naming Import: the body of a
# module runs once and its code object is freed before hprof names the frame).
evaluator_left() {
	awk '/;_PyEval_EvalFrameDefault(;| )/ { n += $NF; if (/;[A-Za-z_]*[Ii]mport[A-Za-z_.0-9]*;/) m += $NF }
	     END { print n + 0, m + 0 }' "$1"
}

# top_self FOLDED N: the N frames with the most self (leaf) samples, "share frame".
top_self() {
	awk '{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack); k = split(stack, f, ";")
	       total += count; self[f[k]] += count }
	     END { for (s in self) printf "%6.2f%% %s\n", 100 * self[s] / total, s }' "$1" |
		sort -rn | head -"$2"
}

# representative FOLDED NAME PYNAMES: the stack through a frame named NAME with native
# frames under its innermost Python frame (a name in the file PYNAMES) that weighs the
# most, its stacks counted together down to the fourth native frame under the innermost
# Python frame; printed cut: its first two frames, the frames around its first and its
# innermost Python frames, its last three, "..." for what lies between, C++ argument lists
# as "(...)".
representative() {
	awk -v name="$2" -v pynames="$3" '
		BEGIN { while ((getline line < pynames) > 0) py[line] = 1 }
		{ count = $NF; stack = $0; sub(/ [0-9]+$/, "", stack); n = split(stack, f, ";")
		  through = 0; last = 0
		  for (i = 2; i <= n; i++) { if (f[i] == name) through = 1; if (f[i] in py) last = i }
		  if (!through || last == n) next
		  end = last + 4 < n ? last + 4 : n
		  prefix = f[1]
		  for (i = 2; i <= end; i++) prefix = prefix ";" f[i]
		  weight[prefix] += count }
		END {
		  for (p in weight) if (weight[p] > best) { best = weight[p]; top = p }
		  if (!best) exit
		  n = split(top, f, ";"); first = last = 0
		  for (i = 2; i <= n; i++) if (f[i] in py) { if (!first) first = i; last = i }
		  out = ""; gap = 0
		  for (i = 1; i <= n; i++) {
			  if (!(i <= 2 || i > n - 3 || (i >= first - 1 && i <= first + 1) ||
				(i >= last - 2 && i <= last + 2))) { gap = 1; continue }
			  frame = f[i]; sub(/\(.*\)/, "(...)", frame)
			  out = out (gap ? ";..." : "") (out == "" ? "" : ";") frame; gap = 0
		  }
		  print out, best }' "$1"
}

met=1
rows=()
for name in $PROGRAMS; do
	if ! program_command "$name" 2>"$TMP/why"; then
		echo "$name: not run: $(cat "$TMP/why")"
		rows+=("$(printf '%-6s | not run: %s' "$name" "$(cat "$TMP/why")")")
		met=0
		continue
	fi
	rm -rf "$TMP/dl"
	"$HPROF" -F 499 --top 100000 --folded "$TMP/$name.folded" -- "${CMD[@]}" \
		>"$TMP/$name.top" 2>"$TMP/$name.err"
	rm -rf "$TMP/dl"
	perf_record_folded "$name" "$TMP/$name.perf.folded" --call-graph dwarf,16384
	rm -rf "$TMP/dl"
	perf_record_folded "$name" "$TMP/$name.perfg.folded" -g
	samples=$(sed -n 's/^hprof: profiled .* s: \([0-9]*\) samples.*/\1/p' "$TMP/$name.err")
	pyline=$(sed -n 's/^hprof: Python frames in //p' "$TMP/$name.err")
	pyshare=$(echo "$pyline" | sed -n 's/^\([0-9]*\) of \([0-9]*\) .*/\1\/\2/p')
	h=$(complete_share "$TMP/$name.folded")
	p=$(complete_share "$TMP/$name.perf.folded")
	g=$(complete_share "$TMP/$name.perfg.folded")
	awk '$4 == "[python]" { sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +\[python\] +/, ""); print }' "$TMP/$name.top" >"$TMP/$name.pynames"
	read -r ev_with ev_depth < <(evaluator_depth "$TMP/$name.perf.folded")

	echo "== $name: ${CMD[*]}"
	read -r left left_import < <(evaluator_left "$TMP/$name.folded")
	echo "hprof: $samples samples; Python frames in $pyline"
	echo "hprof's samples left with an evaluator frame: $left, $left_import of them under an import"
	echo "complete stacks: hprof $(pct "$h") ($h), perf dwarf $(pct "$p") ($p), perf -g $(pct "$g") ($g)"
	echo "hprof --top 10:"
	awk '/^top [0-9]+ of / { at = NR } at && NR > at && NR <= at + 11' "$TMP/$name.top" | sed 's/^/  /'
	echo "hprof's top Python functions by inclusive share (self, inclusive, module, function):"
	awk '$4 == "[python]"' "$TMP/$name.top" | sort -k2 -rn | head -10 | sed 's/^/  /'
	echo "perf dwarf: _PyEval_EvalFrameDefault in $(pct "$ev_with") of its samples ($ev_with), $ev_depth deep on average; top self frames:"
	top_self "$TMP/$name.perf.folded" 5 | sed 's/^/  /'
	first=${OWN_NAMES%% *}
	echo "hprof's heaviest stack through $first into native code (cut 4 frames under its innermost Python frame):"
	representative "$TMP/$name.folded" "$first" "$TMP/$name.pynames" | sed 's/^/  /'
	in_hprof=$(frames_named "$TMP/$name.folded" $OWN_NAMES)
	in_perf=$(frames_like "$TMP/$name.perf.folded" $OWN_NAMES)
	in_perfg=$(frames_like "$TMP/$name.perfg.folded" $OWN_NAMES)
	echo "own functions, samples in hprof: $in_hprof; in perf dwarf's and perf -g's frames: $in_perf, $in_perfg"
	own_ok=yes
	case " $in_hprof" in *":0"*) own_ok=no ;; esac
	[ "$in_perf" -eq 0 ] && [ "$in_perfg" -eq 0 ] || own_ok=no
	[ "$own_ok" = yes ] || met=0
	below "$h" "$p" && met=0
	below "$h" "$g" && met=0
	echo
	rows+=("$(printf '%-6s | %7s | %6s %-11s | %6s %-11s | %6s %-11s | %6s %-11s | %s' "$name" "$samples" \
		"$(pct "$pyshare")" "($pyshare)" "$(pct "$h")" "($h)" "$(pct "$p")" "($p)" "$(pct "$g")" "($g)" \
		"$own_ok")")
done

printf '%-6s | %7s | %-18s | %-18s | %-18s | %-18s | %s\n' program samples "Python frames" \
	"hprof complete" "perf dwarf" "perf -g" "own names: hprof only"
printf '%-6s-|-%7s-|-%-18s-|-%-18s-|-%-18s-|-%-18s-|-%s\n' ------ ------- ------------------ \
	------------------ ------------------ ------------------ ---------------------
printf '%s\n' "${rows[@]}"
if [ "$met" -eq 1 ]; then
	echo "goal: each program's own Python functions in hprof's stacks and in none of perf's; hprof's stacks never less complete than perf's -> met"
else
	echo "goal: each program's own Python functions in hprof's stacks and in none of perf's; hprof's stacks never less complete than perf's -> MISSED"
fi
