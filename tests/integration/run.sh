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
set -euo pipefail

cd "$(dirname "$0")/../.."
# shellcheck source=lib.sh
source tests/integration/lib.sh

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
