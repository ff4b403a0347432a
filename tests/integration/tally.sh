#!/usr/bin/env bash
# tests/integration/tally.sh -- the closing count line of a run.sh log,
# read the same way by run.sh (its shards) and matrix.sh (its versions).
# Sourced; defines it_tally only.

# it_tally LOG RC: sets p, f and s from LOG's last line ("N passed, N
# failed, N skipped") and adds them to pass, fail and skipped. A log
# without that line, or a failing status RC whose line says 0 failed,
# counts as one failure.
it_tally() {
	local last
	last=$(tail -n 1 "$1")
	if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
		p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[3]}
	else
		p=0 f=1 s=0
	fi
	(($2 == 0 || f > 0)) || f=1
	pass=$((pass + p))
	fail=$((fail + f))
	skipped=$((skipped + s))
}
