#!/usr/bin/env bash
# tests/integration/run.sh -- `make integration`: starts one PostgreSQL and
# one Kafka for the whole run (ports IT_PGPORT, default 25450, and
# IT_KAFKA_PORT, default 19150), runs every tests/integration/t[0-9]*.sh in
# order as its own bash process, and ends with the line
# "N passed, N failed, N skipped". Exits non-zero if anything failed.
#
#   tests/integration/run.sh              all tests
#   tests/integration/run.sh t000 t1      only tests whose name starts so
#
# Each test gets PGPORT, PGHOST, PGUSER, KAFKA_BROKERS, IT_DIR and
# IT_RESULTS (the file where ok/not_ok record their outcome) in its
# environment, and at most IT_TEST_TIMEOUT seconds (default 600).
# ENV_KEEP_TMP=1 keeps the temp dir (server logs, per-test files).
#
# IT_JOBS=N (make integration and make check: 2) splits the tests into N
# shards run at once, each a run.sh of its own with its own PostgreSQL and
# Kafka: shard i (from 0) on IT_PGPORT + 50 i and IT_KAFKA_PORT + 30 i
# (a run uses PGPORT to + 43 and the broker's port to + 25: t000 checks
# that, and that they stay out of the ephemeral range, so N * 50 ports
# from IT_PGPORT must stay below 32768). Tests go to the shard with the
# least work so far, longest first, by tests/integration/durations, and
# run in name order within it. Each shard writes to its own log, printed
# whole when the shard ends with a "# ==== shard" line around it; the
# closing line sums the shards. Tests wait more than they compute: two
# shards fit on 2 CPUs. IT_JOBS=1 (the default) is the plain serial run.
set -euo pipefail

cd "$(dirname "$0")/../.."
# shellcheck source=lib.sh
source tests/integration/lib.sh
# shellcheck source=tally.sh
source tests/integration/tally.sh

env_trap_cleanup

tests=()
for t in tests/integration/t[0-9]*.sh; do
	[[ -e $t ]] || continue
	name=$(basename "$t" .sh)
	if (($# > 0)); then
		want=
		for p in "$@"; do
			[[ $name == "$p"* ]] && want=1
		done
		[[ -n $want ]] || continue
	fi
	tests+=("$t")
done

if ((${#tests[@]} == 0)); then
	echo "no integration tests matched" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi

# ---- IT_JOBS > 1: N shards, each this script with IT_JOBS=1
IT_SHARD_PG_STRIDE=50
IT_SHARD_KAFKA_STRIDE=30

run_shards() {
	local n=$1 t name secs line i best list rc shard_t0 last p f s
	shift
	local pgbase=${IT_PGPORT:-25450} kbase=${IT_KAFKA_PORT:-19150}
	local -A dur=() shard_of=()
	local -a load=() names=() pids=() logs=() sorted=() left=()
	if ((pgbase + n * IT_SHARD_PG_STRIDE > 32768 ||
		kbase + n * IT_SHARD_KAFKA_STRIDE > 32768)); then
		echo "IT_JOBS=$n: ports from $pgbase and $kbase would reach the ephemeral range (32768)" >&2
		echo "0 passed, 1 failed, 0 skipped"
		exit 1
	fi
	if [[ -f tests/integration/durations ]]; then
		while read -r name secs _; do
			[[ $name == t[0-9]* && $secs =~ ^[0-9]+$ ]] && dur[$name]=$secs
		done <tests/integration/durations
	fi
	mapfile -t sorted < <(for t in "$@"; do
		name=$(basename "$t" .sh)
		echo "${dur[$name]:-30} $name"
	done | sort -k1,1nr -k2,2)
	for ((i = 0; i < n; i++)); do
		load[i]=0
		names[i]=
	done
	for line in "${sorted[@]}"; do
		secs=${line%% *} name=${line#* }
		best=0
		for ((i = 1; i < n; i++)); do
			((load[i] < load[best])) && best=$i
		done
		load[best]=$((load[best] + secs))
		names[best]+=" $name"
	done

	local dir
	dir=$(env_mktemp outbox-relay-shards)
	env_register_tmpdir "$dir"
	# A signal to this script stops the shards (each stops its servers).
	_shards_stop() {
		local pid
		for pid in "${pids[@]}"; do
			kill -TERM "$pid" 2>/dev/null || true
		done
		for pid in "${pids[@]}"; do
			wait "$pid" 2>/dev/null || true
		done
	}
	env_on_cleanup _shards_stop
	echo "# IT_JOBS=$n: $# tests in $n shards (expected seconds from tests/integration/durations)"
	shard_t0=$SECONDS
	for ((i = 0; i < n; i++)); do
		# shellcheck disable=SC2086 # names are plain words
		list=$(printf '%s\n' ${names[i]} | sort | xargs)
		names[i]=$list
		logs[i]=$dir/shard$i.log
		echo "# shard $((i + 1))/$n: PostgreSQL $((pgbase + i * IT_SHARD_PG_STRIDE)), Kafka $((kbase + i * IT_SHARD_KAFKA_STRIDE)), ~${load[i]} s: $list"
		# shellcheck disable=SC2086
		IT_JOBS=1 IT_SHARD="$((i + 1))/$n" \
			IT_PGPORT=$((pgbase + i * IT_SHARD_PG_STRIDE)) \
			IT_KAFKA_PORT=$((kbase + i * IT_SHARD_KAFKA_STRIDE)) \
			bash tests/integration/run.sh $list </dev/null >"${logs[i]}" 2>&1 &
		pids[i]=$!
		shard_of[$!]=$i
	done

	local pass=0 fail=0 skipped=0 done_n=0 pid
	local -a failed=() summary=()
	while ((done_n < n)); do
		rc=0
		pid=
		left=()
		for pid in "${!shard_of[@]}"; do
			left+=("$pid")
		done
		pid=
		wait -n -p pid "${left[@]}" || rc=$?
		if [[ -z $pid ]]; then
			echo "# run.sh: lost track of the shards (wait: $rc)" >&2
			fail=$((fail + n - done_n))
			break
		fi
		[[ -n ${shard_of[$pid]:-} ]] || continue
		i=${shard_of[$pid]}
		unset "shard_of[$pid]"
		done_n=$((done_n + 1))
		echo "# ==== shard $((i + 1))/$n: ${names[i]}"
		cat "${logs[i]}"
		it_tally "${logs[i]}" "$rc"
		if ((f > 0)); then
			line=$(sed -n 's/^# failed: //p' "${logs[i]}" | tail -n 1)
			failed+=("${line:-shard $((i + 1)) (exit $rc)}")
		fi
		summary+=("# shard $((i + 1))/$n: $p passed, $f failed, $s skipped in $((SECONDS - shard_t0)) s (expected ~${load[i]} s)")
		echo "# ==== shard $((i + 1))/$n ended after $((SECONDS - shard_t0)) s (exit $rc)"
	done
	pids=()
	printf '%s\n' "${summary[@]}"
	((fail == 0)) || echo "# failed: ${failed[*]}"
	env_cleanup
	echo "$pass passed, $fail failed, $skipped skipped"
	((fail == 0))
}

jobs=${IT_JOBS:-1}
if [[ ! $jobs =~ ^[1-9][0-9]*$ ]]; then
	echo "IT_JOBS must be a number from 1, not '$jobs'" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
((jobs <= ${#tests[@]})) || jobs=${#tests[@]}
if ((jobs > 1)); then
	rc=0
	run_shards "$jobs" "${tests[@]}" || rc=$?
	exit "$rc"
fi

if ! it_servers_start; then
	env_cleanup
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
export IT_RESULTS=$IT_DIR/results

pass=0
fail=0
skipped=0
failed_tests=()
for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	echo "# ---- $name"
	: >"$IT_RESULTS"
	rc=0
	t_start=$SECONDS
	# -k: a test whose TERM trap hangs is killed 10 s later.
	timeout -k 10 "${IT_TEST_TIMEOUT:-600}" bash "$t" </dev/null || rc=$?
	echo "# time $name $((SECONDS - t_start)) s"
	p=$(grep -c '^ok' "$IT_RESULTS" || true)
	f=$(grep -c '^not ok' "$IT_RESULTS" || true)
	s=$(grep -c '^skip' "$IT_RESULTS" || true)
	if ((rc != 0 && f == 0)); then
		# Died before recording a failure (set -e, timeout, crash).
		echo "not ok - $name exited with status $rc"
		f=1
	elif ((rc == 0 && p + f + s == 0)); then
		echo "not ok - $name ran no checks"
		f=1
	fi
	# The test's relays are gone: its slots would only pin WAL (and use
	# up max_replication_slots) for the rest of the run.
	psql_q "$PGPORT" postgres "SELECT count(pg_drop_replication_slot(slot_name))
		FROM pg_replication_slots WHERE NOT active" >/dev/null 2>&1 || true
	pass=$((pass + p))
	fail=$((fail + f))
	skipped=$((skipped + s))
	((f == 0)) || failed_tests+=("$name")
done

if ((fail > 0)); then
	echo "# failed: ${failed_tests[*]}"
	if [[ -n ${CI:-} ]]; then
		# The temp dir goes away with the run: show the servers' side.
		_env_tail "$IT_DIR/pg/postgres.log" 30 2>&1
		_env_tail "$IT_DIR/kafka/server.log" 30 2>&1
	fi
fi

# Stop the servers before the closing line so that it is the last one.
env_cleanup
echo "$pass passed, $fail failed, $skipped skipped"
((fail == 0))
