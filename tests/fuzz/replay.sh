#!/usr/bin/env bash
# tests/fuzz/replay.sh -- `make fuzz-regress`: every seed and every kept
# crash input through its harness once, without libFuzzer.
#
#   tests/fuzz/replay.sh BUILD NAME...
#
# BUILD/fuzz-replay/fuzz_NAME are the harnesses linked with
# tests/fuzz/replay.c; the inputs are the seeds (tests/fuzz/seeds.py,
# written to BUILD/fuzz-replay/seeds) and tests/fuzz/regress/NAME/. A
# harness that aborts fails the run. Ends with "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/../.."

build=$1
shift
seeds=$build/fuzz-replay/seeds
python3 tests/fuzz/seeds.py "$seeds"
pass=0 fail=0
for name in "$@"; do
	inputs=("$seeds/$name")
	[[ -d tests/fuzz/regress/$name ]] && inputs+=("tests/fuzz/regress/$name")
	rc=0
	out=$("$build/fuzz-replay/fuzz_$name" "${inputs[@]}" 2>&1) || rc=$?
	if ((rc == 0)); then
		echo "ok - fuzz-regress $name: ${out##*replay: }"
		pass=$((pass + 1))
	else
		echo "not ok - fuzz-regress $name (exit $rc)"
		printf '%s\n' "$out" | tail -n 30 | sed 's/^/# /'
		fail=$((fail + 1))
	fi
done
echo "fuzz-regress: $pass passed, $fail failed"
((fail == 0))
