#!/usr/bin/env bash
# tests/lint/pipes.sh -- no `... | grep -q` in the project's scripts
# (make lint). Under `set -o pipefail` a grep -q that finds its line and
# exits early can kill the writer with SIGPIPE, and the pipeline then
# reports failure although the line was there: CI's t420 failed that way
# once in ~1,000 runs on a loaded machine (3 in 3,000 here with three
# busy loops beside it). Read the whole input instead:
#   grep -E PATTERN FILE...           (several files: no cat needed)
#   CMD | grep -E PATTERN >/dev/null  (reads to the end, no SIGPIPE)
#
# Prints "ok"/"not ok" with the offending lines; exits 1 when any.
set -uo pipefail
cd "$(dirname "$0")/../.."

found=$(grep -rnE '(^|[^|])\|[[:space:]]*grep[[:space:]]+-[A-Za-z]*q' \
	--include='*.sh' --include=Makefile --include=run --exclude=pipes.sh \
	tests deploy .ci examples Makefile 2>/dev/null |
	grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' || true)
# ... and the same with the pipe at the end of the line before.
found2=$(find tests deploy .ci examples -name node_modules -prune -o \
	\( -name '*.sh' -o -name run \) -type f ! -name pipes.sh -print 2>/dev/null |
	xargs awk 'FNR == 1 { prev = "" }
		prev ~ /[^|]\|[[:space:]]*$/ && $0 ~ /^[[:space:]]*grep[[:space:]]+-[A-Za-z]*q/ {
			print FILENAME ":" FNR ": " $0 }
		{ prev = $0 }')
found=$(printf '%s\n%s' "$found" "$found2" | sed '/^$/d')

# The same race under set -e: VAR=$(CMD | head -n1) fails the script
# when CMD is still writing. `sed -n 1p` reads to the end.
heads=$(grep -rnE '=\$\(.*\|[[:space:]]*head\b' --include='*.sh' --exclude=pipes.sh \
	tests deploy .ci examples 2>/dev/null | grep -v '|| true' || true)

rc=0
rule() {
	if [[ -z $2 ]]; then
		echo "ok - $1"
	else
		echo "not ok - $1"
		printf '%s\n' "$2" | sed 's/^/#   /'
		rc=1
	fi
}
rule "no '| grep -q' in scripts (SIGPIPE under pipefail)" "$found"
rule "no VAR=\$(... | head) without '|| true' (SIGPIPE under set -e)" "$heads"
exit $rc
