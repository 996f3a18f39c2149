#!/usr/bin/env bash
# Real programs from Debian's packages (compressors, interpreters, sqlite3, openssl, node)
# and the LLD-linked binaries of t_layouts: at least 99% of each program's samples must
# come back with a complete user stack, one reaching the program's or thread's entry
# (stack_completeness in lib.sh).
source "$(dirname "$0")/lib.sh"
require_bpf "realprog"

realprog_prepare "$TMP"
for name in $REALPROGS; do
	if ! realprog_command "$name" "$TMP" 2>"$TMP/why"; then
		skip "$name" "$(cat "$TMP/why")"
		continue
	fi
	if ! "$HPROF" -F 499 --folded "$TMP/$name.folded" -- "${CMD[@]}" >/dev/null 2>"$TMP/$name.err"; then
		fail "$name: hprof or the program failed: $(tail -1 "$TMP/$name.err")"
		continue
	fi
	share=$(complete_share "$TMP/$name.folded")
	echo "# $name: complete $share"
	if at_least 99 "$share" && [ "${share#*/}" -ge 200 ]; then
		ok "$name: >= 99% of samples have a complete user stack ($share)"
	else
		fail "$name: complete user stacks in $share samples; the others:"
		incomplete_why "$TMP/$name.folded" | sed 's/^/#   /'
	fi
done
