# shellcheck shell=bash
# tests/integration/load.sh -- the checker's writer in the background, the
# relay killed at random moments under it, and the final delivery check,
# for the tests that inject a fault under load (t130-t150, t500-t550,
# t560-t585, t800). Source it after lib.sh and after it_init:
#
#   source "$(dirname "$0")/load.sh"
#   it_setup_db "$db"
#   load_init "$db" "$type" 50        # agg_seq + emit() + the pgbench script
#   load_start                        # pgbench bursts until load_stop
#   ... faults ...
#   load_stop                         # LOAD_BURSTS, LOAD_FAILED
#   load_check "$topic" 120 "$faults" # LOAD_RC, LOAD_SUMMARY, LOAD_COMMITTED
#   load_stat duplicates              # a figure of the checker's summary
#   load_row F5 2                     # the reliability matrix's row
#
# Functions:
#   load_init DB TYPE AGGS [ROLLBACK_PCT [MULTI_PCT [--rich]]]
#                             checker.py setup-sql in DB (aggregates TYPE-1..
#                             TYPE-AGGS) and the pgbench script (ROLLBACK_PCT
#                             rollbacks, default 10%, MULTI_PCT two-aggregate
#                             transactions, default 25%; --rich: the ledger,
#                             deletes and outbox_emit() of checker.py --rich)
#   load_start [RATE] [CLIENTS]  background writer: pgbench bursts of 2 s at
#                             RATE transactions/s (default 100) over CLIENTS
#                             connections (3), straight to PostgreSQL, until
#                             load_stop or LOAD_MAX_SECS (180); a burst that
#                             fails is counted, not fatal (a server crash
#                             fails bursts on purpose)
#   load_stop                 stops the writer, waits for it; sets
#                             LOAD_BURSTS and LOAD_FAILED
#   load_committed            committed events so far (sum of agg_seq.n)
#   load_check TOPIC SECS [FAULTS]  writes the expected sequences and the
#                             outbox ids from the database, then
#                             it_wait_checked (consume + checker.py check,
#                             retried while events are missing) for up to
#                             SECS, with --faults FAULTS when given (a
#                             key's records count up, a re-delivery only
#                             repeats a suffix, at most FAULTS times); sets
#                             LOAD_RC (the checker's exit code: 0 good, 1
#                             violation, 2 events missing), LOAD_SUMMARY
#                             (its "checker: ..." line), LOAD_COMMITTED,
#                             LOAD_OUT (the consumed records)
#   load_expected             $IT_TEST_DIR/expected (agg_seq) and
#                             LOAD_COMMITTED, for checker.py --expected
#   load_ids                  $IT_TEST_DIR/ids: the outbox rows of TYPE
#                             (aggregate, seq, id), for checker.py --ids
#   load_checked TOPIC SECS ARGS...  it_wait_checked with --expected and
#                             ARGS (the parts of load_check a test wants:
#                             --ids, --topic, --faults, --covered, --notes);
#                             sets LOAD_RC, LOAD_SUMMARY, LOAD_OUT; under
#                             RELAY_DELIVERY=exactly-once it_wait_checked
#                             adds --no-dups, and load_isolation follows
#   load_isolation TOPIC ARGS...  TOPIC consumed read_uncommitted too
#                             (LOAD_OUT.ru) and checker.py check with
#                             --uncommitted: LOAD_ISO, its "checker:
#                             isolation ..." line (both consumers' records,
#                             distinct, duplicates, missing, order
#                             violations; ru_aborted)
#   load_iso_stat NAME        a NAME=N figure of LOAD_ISO (rc_duplicates,
#                             ru_records, ru_aborted, ...)
#   load_kill9 CONF LOG MIN SPREAD  a relay on CONF (log LOG) killed with
#                             SIGKILL after MIN + (RANDOM % SPREAD) / 10
#                             seconds and reaped; LOAD_NAP is how long it
#                             ran. In the test's own shell, like
#                             it_start_relay
#   load_stop_checked         load_stop, the writer's figures as a
#                             diagnostic, and the check that no burst failed
#   load_check_sessions TOPIC LOG SCENARIO ROUNDS [WHAT]   load_check with
#                             one re-delivery allowed per reconnect (the
#                             "streaming from slot" lines of LOG, less the
#                             first: LOAD_FAULTS), ok or not_ok "checker: all
#                             N committed events in Kafka[ WHAT], ...", then
#                             the summary and load_row SCENARIO ROUNDS
#   load_stat NAME            a NAME=N figure of LOAD_SUMMARY (records,
#                             events, expected, missing, duplicates,
#                             dup_events, replays, max_pg_lsn, committed,
#                             consumed, leaked, order_violations, ...)
#   load_row SCENARIO ROUNDS  "# row: scenario=... rounds=... <the checker's
#                             figures> mode=... [ru_...] wall=Ns", the line
#                             tests/reliability/run.sh puts in its table
#   load_row_extra            "mode=RELAY_DELIVERY" and, when LOAD_ISO is
#                             set, the read_uncommitted figures: for the
#                             tests that print their own row
#   load_ms                   the wall clock in milliseconds
#   load_wait_log FILE ERE N SECS   until FILE has N lines matching ERE;
#                             prints the milliseconds it took
#   load_count_log FILE ERE   lines of FILE matching ERE
#   load_acked LOG            acked= of the relay's latest stats line
#   load_wait_acked LOG N SECS   until that is >= N
#
# Files go to $IT_TEST_DIR (writer.pgbench, pgbench.log, expected, ids,
# records.json and records.json.check).

if [[ -n ${_LOAD_SH_SOURCED:-} ]]; then
	return 0
fi
_LOAD_SH_SOURCED=1

LOAD_MAX_SECS=${LOAD_MAX_SECS:-180}
LOAD_CHECKER=$ENV_REPO_ROOT/tests/integration/checker.py
LOAD_DB=
LOAD_TYPE=
LOAD_BURSTS=
LOAD_FAILED=
LOAD_RC=
LOAD_SUMMARY=
LOAD_COMMITTED=
LOAD_OUT=
LOAD_NAP=
LOAD_FAULTS=
LOAD_ISO=
_LOAD_PID=
_LOAD_HOOKED=

load_init() {
	LOAD_DB=$1 LOAD_TYPE=$2
	local aggs=$3 rollback=${4:-10} multi=${5:-25} rich=()
	[[ ${6:-} != --rich ]] || rich=(--rich)
	python3 "$LOAD_CHECKER" setup-sql --type "$LOAD_TYPE" --aggs "$aggs" "${rich[@]}" |
		it_sql_file "$LOAD_DB" - || return 1
	python3 "$LOAD_CHECKER" pgbench-script --aggs "$aggs" --rollback-pct "$rollback" \
		--multi-pct "$multi" "${rich[@]}" >"$IT_TEST_DIR/writer.pgbench" || return 1
}

# The writer itself, in a background subshell: bursts until the stop file.
_load_writer() {
	local rate=$1 clients=$2 deadline=$((SECONDS + LOAD_MAX_SECS)) n=0 failed=0
	while [[ ! -e $IT_TEST_DIR/writer.stop ]] && ((SECONDS < deadline)); do
		n=$((n + 1))
		if ! "$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$PGPORT" -U postgres \
			-f "$IT_TEST_DIR/writer.pgbench" -c "$clients" -j 1 -T 2 \
			-R "$rate" "$LOAD_DB" >>"$IT_TEST_DIR/pgbench.log" 2>&1; then
			failed=$((failed + 1))
			# A server that is down fails a burst at once: no spin.
			sleep 0.5
		fi
	done
	echo "$n $failed" >"$IT_TEST_DIR/writer.done"
}

load_start() {
	local rate=${1:-100} clients=${2:-3}
	if [[ -n $_LOAD_PID ]]; then
		echo "load_start: the writer runs already" >&2
		return 1
	fi
	rm -f "$IT_TEST_DIR/writer.stop" "$IT_TEST_DIR/writer.done"
	if [[ -z $_LOAD_HOOKED ]]; then
		env_on_cleanup load_stop
		_LOAD_HOOKED=1
	fi
	_load_writer "$rate" "$clients" &
	_LOAD_PID=$!
}

load_stop() {
	local done
	[[ -n $_LOAD_PID ]] || return 0
	touch "$IT_TEST_DIR/writer.stop"
	# A burst lasts 2 s; pgbench against a dead server ends sooner.
	wait "$_LOAD_PID" 2>/dev/null || true
	_LOAD_PID=
	done=$(cat "$IT_TEST_DIR/writer.done" 2>/dev/null || echo "? ?")
	LOAD_BURSTS=${done% *}
	LOAD_FAILED=${done#* }
}

load_committed() {
	it_sql "$LOAD_DB" "SELECT coalesce(sum(n), 0) FROM agg_seq"
}

load_check() {
	local topic=$1 secs=$2 faults=()
	[[ -z ${3:-} ]] || faults=(--faults "$3")
	load_expected && load_ids || return 1
	load_checked "$topic" "$secs" --ids "$IT_TEST_DIR/ids" --topic "$topic" "${faults[@]}"
}

load_expected() {
	it_sql "$LOAD_DB" "SELECT agg, n FROM agg_seq ORDER BY id" \
		>"$IT_TEST_DIR/expected" || return 1
	LOAD_COMMITTED=$(load_committed)
}

load_ids() {
	it_sql "$LOAD_DB" "SELECT aggregate_id, payload->>'seq', id FROM outbox
		WHERE aggregate_type = '$LOAD_TYPE'" >"$IT_TEST_DIR/ids"
}

load_checked() {
	local topic=$1 secs=$2
	shift 2
	LOAD_OUT=$IT_TEST_DIR/records.json
	LOAD_RC=0
	it_wait_checked "$topic" "$LOAD_OUT" "$secs" \
		--expected "$IT_TEST_DIR/expected" "$@" || LOAD_RC=$?
	LOAD_SUMMARY=$(grep '^checker:' "$LOAD_OUT.check" | head -n1 || true)
	LOAD_ISO=
	# Exactly-once: what a read_uncommitted consumer sees, beside it.
	if it_eos && ((LOAD_RC != 2 && LOAD_RC != 3)); then
		load_isolation "$topic" "$@" || true
	fi
}

load_isolation() {
	local topic=$1 ru=${LOAD_OUT%.json}.ru.json
	shift
	LOAD_ISO=
	it_consume_uncommitted "$topic" "$ru" 2>"$ru.err" || return 1
	python3 "$LOAD_CHECKER" check --expected "$IT_TEST_DIR/expected" "$@" \
		--uncommitted "$ru" "$LOAD_OUT" >"$ru.check" 2>&1 || true
	LOAD_ISO=$(grep '^checker: isolation' "$ru.check" | head -n1 || true)
	[[ -n $LOAD_ISO ]]
}

load_iso_stat() {
	sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$LOAD_ISO"
}

load_row_extra() {
	local f extra="mode=$RELAY_DELIVERY"
	if [[ -n $LOAD_ISO ]]; then
		for f in records duplicates missing order_violations aborted; do
			extra+=" ru_$f=$(load_iso_stat "ru_$f")"
		done
	fi
	echo "$extra"
}

# The relay killed at a random moment: how long it ran varies from round
# to round, so that the kills land in every phase of a session.
load_kill9() {
	local conf=$1 log=$2 min=$3 spread=$4
	it_start_relay "$conf" "$log"
	LOAD_NAP=$(awk -v x="$RANDOM" -v m="$min" -v s="$spread" \
		'BEGIN { printf "%.1f", m + (x % s) / 10 }')
	sleep "$LOAD_NAP"
	kill -9 "$IT_RELAY_PID" 2>/dev/null || true
	wait "$IT_RELAY_PID" 2>/dev/null || true
	IT_RELAY_PID=
}

load_stop_checked() {
	load_stop
	it_diag "writer: $LOAD_BURSTS bursts, $LOAD_FAILED failed"
	it_check "writer ran without errors" test "$LOAD_FAILED" = 0
}

# A fault that ends the relay's session makes the next one start from the
# slot's confirmed position: every session after the first may replay a
# suffix, so the checker allows one re-delivery per reconnect.
load_check_sessions() {
	local topic=$1 log=$2 scenario=$3 rounds=$4 what=${5:-} desc
	LOAD_FAULTS=$(($(load_count_log "$log" 'streaming from slot') - 1))
	load_check "$topic" 120 "$LOAD_FAULTS"
	desc="checker: all $LOAD_COMMITTED committed events in Kafka${what:+ $what}, in order, none rolled back, re-deliveries only suffixes ($LOAD_FAULTS reconnects)"
	if ((LOAD_RC == 0)); then
		ok "$desc"
	else
		not_ok "$desc" "exit $LOAD_RC: $(head -n 30 "$LOAD_OUT.check")
$(it_show_log "$log" 20)"
	fi
	it_diag "$LOAD_SUMMARY"
	load_row "$scenario" "$rounds"
}

load_stat() {
	sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$LOAD_SUMMARY"
}

load_row() {
	it_diag "row: scenario=$1 rounds=$2 $(sed 's/^checker: [A-Z]* //' <<<"$LOAD_SUMMARY") $(load_row_extra) wall=${SECONDS}s"
}

# Milliseconds of the wall clock, for measuring how long a reaction took.
load_ms() { echo $(($(date +%s%N) / 1000000)); }

# load_wait_log FILE PATTERN N SECS: until FILE has at least N lines
# matching the extended regex PATTERN, polled every 0.1 s for up to SECS;
# prints how many milliseconds the wait took. Fails on the deadline.
load_wait_log() {
	local file=$1 pattern=$2 n=$3 secs=$4 t0 deadline
	t0=$(load_ms)
	deadline=$((t0 + secs * 1000))
	while :; do
		if (($(load_count_log "$file" "$pattern") >= n)); then
			echo $(($(load_ms) - t0))
			return 0
		fi
		(($(load_ms) < deadline)) || return 1
		sleep 0.1
	done
}

# load_count_log FILE PATTERN: lines of FILE matching PATTERN (0 if none).
load_count_log() {
	local c
	c=$(grep -cE -- "$2" "$1" 2>/dev/null) || true
	echo "${c:-0}"
}

# load_acked LOG: the acked= figure of the relay's latest stats line.
load_acked() {
	local a
	a=$(grep -o 'stats: .* acked=[0-9]*' "$1" 2>/dev/null | tail -n1 | sed 's/.*acked=//') || true
	echo "${a:-0}"
}

# load_wait_acked LOG N SECS: until the relay's stats say acked >= N (the
# relay needs stats.interval.ms set low); fails on the deadline.
load_wait_acked() {
	local log=$1 n=$2 secs=$3 i
	for ((i = 0; i < secs * 5; i++)); do
		(($(load_acked "$log") >= n)) && return 0
		sleep 0.2
	done
	return 1
}
