# Judging sampled stacks frame by frame against a workload's true call chains (sourced by
# tests that profile workloads whose chains they know: t_nocfi.sh, t_sljit.sh; after lib.sh,
# with TMP set). Each sampled stack of the workload is judged:
#   right      the program's start-up frames (whatever hprof names above main in most
#              stacks: libc's, not written here), then exactly a prefix of a true chain
#   truncated  under a [truncated: ...] root, and its frames are a run of a true chain
#   wrong      any other stack: a frame that is not on the stack, or a frame missing
# Stacks with none of the chains' frames (the dynamic loader's start-up, exit, kernel-only
# samples) and other processes' are not judged. A run must be >= 99% right with no wrong
# stack at all, of at least MIN_SAMPLES (the sourcing test sets it) judged stacks;
# TOTAL_SAMPLES adds up the stacks judged. Also what such a workload is built as: its
# functions without CFI (uncovered).
TOTAL_SAMPLES=0

# judge FOLDED COMM CHAINS: judges COMM's stacks in FOLDED against the chains in the file
# CHAINS, one a line: frames from main inwards, ';'-separated; a last frame '*' stands for
# any frames (none of them a frame the chains name). Prints
#   counts RIGHT WRONG TRUNCATED UNJUDGED
#   startup FRAMES          (the start-up frames above main, as most stacks have them)
#   wrong|truncated COUNT STACK   (each such stack)
judge() {
	awk -v comm="$2" -v chains_file="$3" '
	# the user frames of a folded line, outermost first, named without the suffixes of
	# the copies gcc makes of a function (workload_seconds.constprop.0)
	function user_frames(line, u,    f, n, i, k) {
		sub(/ [0-9]+$/, "", line)
		n = split(line, f, ";")
		k = 0
		for (i = 2; i <= n; i++) {
			if (f[i] ~ /_\[k\]$/)
				continue
			while (sub(/\.(constprop|isra|part|cold)(\.[0-9]+)?$/, "", f[i]))
				;
			u[++k] = f[i]
		}
		return k
	}
	# F[from..n] matches C from position start on ("*" takes the rest, if none of it is ours)
	function run_matches(F, from, n, C, m, start,    j, i) {
		for (j = 0; from + j <= n; j++) {
			if (start + j > m)
				return 0
			if (C[start + j] == "*") {
				for (i = from + j; i <= n; i++)
					if (F[i] in ours)
						return 0
				return 1
			}
			if (F[from + j] != C[start + j])
				return 0
		}
		return 1
	}
	# a true chain from the entry of the program: the start-up frames, then chain c
	function full_chain(c, C) {
		return split(nstart ? startup ";" chain[c] : chain[c], C, ";")
	}
	# right: F is the start-up frames, then a prefix (main at least) of a chain
	function is_right(F, n,    c, C, m) {
		if (n <= nstart)
			return 0
		for (c = 1; c <= nchains; c++) {
			m = full_chain(c, C)
			if (run_matches(F, 1, n, C, m, 1))
				return 1
		}
		return 0
	}
	# consistent: F[2..n] (under the truncated root) is a run of some full chain
	function is_run(F, n,    c, C, m, s) {
		for (c = 1; c <= nchains; c++) {
			m = full_chain(c, C)
			for (s = 1; s <= m; s++)
				if (run_matches(F, 2, n, C, m, s))
					return 1
		}
		return 0
	}
	function has_ours(F, n,    i) {
		for (i = 1; i <= n; i++)
			if (F[i] in ours)
				return 1
		return 0
	}
	BEGIN {
		while ((getline line < chains_file) > 0) {
			chain[++nchains] = line
			m = split(line, C, ";")
			for (i = 1; i <= m; i++)
				if (C[i] != "*")
					ours[C[i]] = 1
		}
	}
	# First pass: the commonest frames above main in complete stacks.
	NR == FNR {
		split($0, head, ";")
		if (head[1] != comm)
			next
		n = user_frames($0, F)
		if (n == 0 || F[1] ~ /^\[truncated/)
			next
		for (i = 1; i <= n && F[i] != "main"; i++)
			;
		if (i > n)
			next
		p = ""
		for (j = 1; j < i; j++)
			p = p (j > 1 ? ";" : "") F[j]
		above[p] += $NF
		next
	}
	FNR == 1 {
		best = -1
		for (p in above)
			if (above[p] > best) { best = above[p]; startup = p }
		if (best < 0)
			startup = "(no stack reaches main)"
		nstart = split(startup, S, ";")
		if (startup == "")
			nstart = 0
	}
	{
		split($0, head, ";")
		if (head[1] != comm)
			next
		count = $NF
		n = user_frames($0, F)
		stack = $0
		sub(/ [0-9]+$/, "", stack)
		if (n == 0 || !has_ours(F, n)) {
			unjudged += count
		} else if (F[1] ~ /^\[truncated/) {
			if (is_run(F, n)) {
				truncated += count
				print "truncated", count, stack
			} else {
				wrong += count
				print "wrong", count, stack
			}
		} else if (is_right(F, n)) {
			right += count
		} else {
			wrong += count
			print "wrong", count, stack
		}
	}
	END {
		print "counts", right + 0, wrong + 0, truncated + 0, unjudged + 0
		print "startup", startup
	}' "$1" "$1"
}

# chains_of NAME: the file with NAME's true chains (written by expect_chains).
chains_of() { echo "$TMP/$1.chains"; }

# expect_chains NAME CHAIN...: NAME's runs are judged against these chains, and those of
# workload.h's helpers, which main calls into libc: its arguments, its clock.
expect_chains() {
	local name=$1; shift
	printf '%s\n' "$@" 'main;workload_seconds;*' 'main;workload_cpu_now;*' >"$(chains_of "$name")"
}

# report_judged NAME COMM [MAX_WRONG]: prints the judgement of run NAME and checks it:
# >= 99% right, at least MIN_SAMPLES judged, and no wrong stack, or with MAX_WRONG (a run
# by scanning alone) at most MAX_WRONG per mille of them, reported as scanning's
# false-positive rate.
report_judged() {
	local name=$1 comm=$2 judged right wrong truncated unjudged startup total
	judged=$(judge "$TMP/$name.folded" "$comm" "$(chains_of "$name")")
	read -r _ right wrong truncated unjudged < <(grep '^counts ' <<<"$judged")
	startup=$(sed -n 's/^startup //p' <<<"$judged")
	total=$((right + wrong + truncated))
	TOTAL_SAMPLES=$((TOTAL_SAMPLES + total))
	echo "# $name: $total stacks judged: right $right ($(percent "$right" "$total")), wrong $wrong" \
		"($(percent "$wrong" "$total")), truncated $truncated ($(percent "$truncated" "$total"));" \
		"$unjudged not judged"
	echo "#   start-up frames: $startup"
	if [ "$total" -ge "$MIN_SAMPLES" ] && at_least 99 "$right/$total"; then
		ok "$name: >= 99% of $total stacks complete and right ($right)"
	else
		fail "$name: $right of $total stacks complete and right (want >= 99% of >= $MIN_SAMPLES)"
		show_worst "$judged" truncated
	fi
	if [ -n "${3:-}" ]; then
		# scanning alone: its false-positive rate, reported and bounded
		if [ $((wrong * 1000)) -le $((${3} * total)) ]; then
			ok "$name: scanning's false-positive rate $(percent "$wrong" "$total") ($wrong stacks with a wrong frame) <= ${3} per mille"
		else
			fail "$name: scanning's false-positive rate $(percent "$wrong" "$total") ($wrong stacks) > ${3} per mille"
		fi
		show_worst "$judged" wrong
	elif [ "$wrong" -eq 0 ]; then
		ok "$name: no stack with a wrong frame"
	else
		fail "$name: $wrong stacks with a wrong frame"
		show_worst "$judged" wrong
	fi
}

# percent PART WHOLE: PART as a percentage of WHOLE, one decimal.
percent() { awk -v p="$1" -v w="$2" 'BEGIN { printf "%.1f%%", w ? 100 * p / w : 0 }'; }

# show_worst JUDGED KIND: the 5 commonest stacks of KIND (wrong, truncated) in judge's output.
show_worst() {
	grep "^$2 " <<<"$1" | sort -k2,2 -rn | head -5 | cut -c1-400 | sed 's/^/#   /'
}

# ---- what the workloads are built as ----

# fde_rows BIN FUNCTION: readelf -wF's rows of the FDE that starts at FUNCTION.
fde_rows() {
	local at
	at=$(nm "$1" | awk -v f="$2" '$3 == f { print $1 }')
	readelf -wF "$1" | awk -v a="pc=$at" 'index($0, a) { on = 1; next } on && NF == 0 { exit } on'
}

# uncovered BIN FUNCTION...: no FDE (in .eh_frame or .debug_frame) covers any byte of the
# FUNCTIONs (nm -S).
uncovered() {
	local bin=$1 fn start size from to
	shift
	for fn in "$@"; do
		read -r start size < <(nm -S "$bin" | awk -v f="$fn" '$4 == f { print $1, $2 }')
		[ -n "$start" ] || { echo "no symbol $fn in $bin" >&2; return 1; }
		while read -r from to; do
			if ((16#$from < 16#$start + 16#$size && 16#$to > 16#$start)); then
				echo "an FDE ($from..$to) covers $fn" >&2
				return 1
			fi
		done < <(readelf -wF "$bin" | sed -n 's/.* FDE .*pc=\([0-9a-f]*\)\.\.\([0-9a-f]*\)$/\1 \2/p')
	done
}
