#!/usr/bin/env bash
# tests/fuzz/run.sh -- `make fuzz`: runs each libFuzzer harness for a
# bounded time and prints one line of figures per harness.
#
#   tests/fuzz/run.sh DIR SECONDS NAME...
#
# DIR holds the harnesses (DIR/fuzz_NAME, built by make fuzz-build). Each
# runs SECONDS from DIR/corpus/NAME (kept between runs: it only grows),
# with the seeds (tests/fuzz/seeds.py) and tests/fuzz/regress/NAME as
# extra inputs and tests/fuzz/NAME.dict (or the generated one) as its
# dictionary. A crash, leak, timeout or failed property leaves the input
# in DIR/crashes/ and the log in DIR/NAME.log; the run goes on with the
# next harness and exits non-zero at the end. Keep a crash input, once
# fixed, in tests/fuzz/regress/NAME/ so that `make check` replays it.
# FUZZ_JOBS=N runs N harnesses at a time (each on one CPU).
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=$1 secs=$2
shift 2
python3 tests/fuzz/seeds.py "$dir/seeds"
mkdir -p "$dir/crashes"
# One harness: its figures (or its failure) in DIR/NAME.result, exit
# status 1 when it failed.
fuzz_one() {
	local name=$1 bin=$dir/fuzz_$1 log=$dir/$1.log corpus=$dir/corpus/$1
	local args inputs t0 rc execs rate files
	mkdir -p "$corpus"
	args=(-max_total_time="$secs" -timeout=20 -rss_limit_mb=2048
		-print_final_stats=1 -artifact_prefix="$dir/crashes/$name-")
	if [[ -f tests/fuzz/$name.dict ]]; then
		args+=(-dict="tests/fuzz/$name.dict")
	elif [[ -f $dir/seeds/$name.dict ]]; then
		args+=(-dict="$dir/seeds/$name.dict")
	fi
	inputs=("$corpus" "$dir/seeds/$name")
	[[ -d tests/fuzz/regress/$name ]] && inputs+=("tests/fuzz/regress/$name")
	t0=$SECONDS
	rc=0
	"$bin" "${args[@]}" "${inputs[@]}" >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
	files=$(find "$corpus" -type f | wc -l)
	if ((rc == 0)); then
		printf 'fuzz %-7s ok: %s execs (%s/s) in %d s, corpus %d inputs\n' \
			"$name" "${execs:-?}" "${rate:-?}" $((SECONDS - t0)) "$files"
	else
		printf 'fuzz %-7s FAILED (exit %d) after %d s; log %s\n' \
			"$name" "$rc" $((SECONDS - t0)) "$log"
		grep -E '^(==[0-9]+==|SUMMARY|[a-z_]+: |artifact_prefix|Test unit written)' \
			"$log" | head -n 30 || true
		return 1
	fi
} >"$dir/$1.result"

# FUZZ_JOBS harnesses at once (default 1; CI runs 2 on its 2 CPUs),
# each harness's lines printed in the order of the arguments.
jobs=${FUZZ_JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || jobs=1
declare -A pid_of=()
running=0
for name in "$@"; do
	if ((running >= jobs)); then
		wait -n || true
		running=$((running - 1))
	fi
	fuzz_one "$name" &
	pid_of[$name]=$!
	running=$((running + 1))
done
failed=()
for name in "$@"; do
	rc=0
	wait "${pid_of[$name]}" || rc=$?
	cat "$dir/$name.result"
	((rc == 0)) || failed+=("$name")
done
if ((${#failed[@]} > 0)); then
	echo "fuzz: failed: ${failed[*]} (inputs in $dir/crashes/)"
	exit 1
fi
