#!/usr/bin/env bash
# t527_failover -- reliability matrix F18 (primary failover), on pairs of
# the test's own: a primary and a streaming standby (tests/env/pg_pair.sh)
# of PostgreSQL 17 and 16 (tests/env/pgdist.sh; no binaries is a failure,
# not a skip). The relay runs on a multi-host conninfo (host=P,S
# target_session_attrs=read-write), slot.plugin = pgoutput, the checker's
# writer writes through one too; the primary is killed with kill -9 (the
# postmaster and all its children) under load and the standby promoted.
# The promoted database's outbox is the ledger.
#  (a) 17, failover slot synced to the standby, synchronized_standby_slots
#      naming the standby's slot: the relay finds the new primary and goes
#      on from the synced slot without exiting (the new timeline branches
#      at or past all it published); nothing committed is missing, nothing
#      published is unknown to the promoted database (no ghost), per-key
#      order holds, duplicates only from the synced slot's position on;
#      the seconds from the kill to the first event committed on the new
#      primary in Kafka are printed. Fails on a relay that stops on any
#      timeline change.
#  (b) 17, synchronized_standby_slots unset and the standby held back (its
#      link to the primary blackholed by build/tcp-proxy): the relay
#      publishes what the standby never gets. After the promotion it must
#      stop with exit 69 (the back-in-time guard), or have published no
#      ghost; on exit 69 the log's LSN range ("above X and up to Y") must
#      hold the pg_lsn of every ghost (an event in flight at the kill and
#      acked later is in Kafka too). What --check said before is printed.
#  (c) 16, no failover slots: after the promotion the slot does not exist
#      on the new primary: exit 69, the log says the slot does not exist
#      on a promoted server (runbook: failover),
#      nothing published that the promoted database lacks (the standby had
#      caught up before the kill: 16 cannot keep a slot from running
#      ahead of it).
# Ports PGPORT + 33 .. + 38. Prints each case's figures and wall time.
# T527_CASES="a c" runs only those cases.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=../env/pg_pair.sh
source "$IT_ROOT/tests/env/pg_pair.sh"
# shellcheck source=proxy.sh
source "$(dirname "$0")/proxy.sh"
it_init

CHECKER=$IT_ROOT/tests/integration/checker.py
RUN=$(date +%s)
AGGS=20
# Seconds the relay may take to drain and to stop.
DRAIN_SECS=${T527_DRAIN_SECS:-90}
EXIT_SECS=${T527_EXIT_SECS:-60}
# The cases to run, in order (all by default).
CASES=${T527_CASES:-a b c}

# ------------------------------------------------------------------ helpers

# pgdist BIN_VAR MAJOR: the binaries, or a failure that ends the test.
pgdist() {
	local out
	if ! out=$("$IT_ROOT/tests/env/pgdist.sh" "$2" 2>&1); then
		not_ok "PostgreSQL $2 binaries (tests/env/pgdist.sh $2)" "$out"
		it_summary
	fi
	printf -v "$1" '%s' "$(tail -n1 <<<"$out")"
}

ports_free() {
	local p
	for p in "$@"; do
		if port_in_use 127.0.0.1 "$p"; then
			echo "port $p is in use"
			return 1
		fi
	done
}

# setup_schema PDIR DB TYPE SLOT [FAILOVER]: outbox, publication, the
# checker's agg_seq/emit(), then the slot (after the publication); with
# FAILOVER (true, 17+) a failover slot, else a plain one (15 and 16 have
# no fifth argument).
setup_schema() {
	local pdir=$1 db=$2 type=$3 slot=$4 failover=${5:+, false, false, $5} port
	port=$(pair_port "$pdir")
	psql_f "$port" "$db" "$IT_ROOT/sql/outbox.sql" >/dev/null &&
		pair_sql "$pdir" "$db" "CREATE PUBLICATION $IT_PUBLICATION FOR TABLE
			public.outbox WITH (publish = 'insert')" >/dev/null &&
		python3 "$CHECKER" setup-sql --type "$type" --aggs "$AGGS" |
		psql_f "$port" "$db" - >/dev/null &&
		pair_sql "$pdir" "$db" "SELECT pg_create_logical_replication_slot('$slot',
			'pgoutput'$failover)" >/dev/null
}

# conninfo DB PPORT SPORT: both hosts, the writable one wins.
conninfo() {
	echo "host=127.0.0.1,127.0.0.1 port=$2,$3 dbname=$1 user=postgres target_session_attrs=read-write connect_timeout=2"
}

write_conf() { # FILE CONNINFO SLOT
	{
		echo "# written by $IT_TEST_NAME"
		echo "pg.conninfo = $2"
		echo "kafka.bootstrap.servers = $KAFKA_BROKERS"
		echo "slot.name = $3"
		echo "slot.plugin = pgoutput"
		echo "http.listen ="
		echo "reconnect.backoff.ms = 100"
		echo "reconnect.backoff.max.ms = 500"
		echo "stats.interval.ms = 2000"
		# The run's guarantee, as it_write_config writes it: under
		# exactly-once the checker wants no duplicate (check_until).
		[[ $RELAY_DELIVERY == at-least-once ]] ||
			echo "delivery.guarantee = $RELAY_DELIVERY"
	} >"$1"
}

# The checker's writer through the multi-host conninfo: pgbench bursts of
# 2 s; a burst that fails (the primary died, the standby is not promoted
# yet) is counted and retried after 0.3 s. Only what the database
# committed counts (its outbox is the ledger).
W_PID=
W_DIR=
writer_start() { # CONNINFO SCRIPT RATE DIR
	local ci=$1 script=$2 rate=$3
	W_DIR=$4
	rm -f "$W_DIR/writer.stop"
	(
		n=0 failed=0 deadline=$((SECONDS + 120))
		while [[ ! -e $W_DIR/writer.stop ]] && ((SECONDS < deadline)); do
			n=$((n + 1))
			if ! "$PG_BIN/pgbench" -n -f "$script" -c 2 -j 1 -T 2 -R "$rate" \
				"$ci" >>"$W_DIR/pgbench.log" 2>&1; then
				failed=$((failed + 1))
				sleep 0.3
			fi
		done
		echo "$n $failed" >"$W_DIR/writer.done"
	) &
	W_PID=$!
}
writer_stop() {
	[[ -n $W_PID ]] || return 0
	touch "$W_DIR/writer.stop"
	wait "$W_PID" 2>/dev/null || true
	W_PID=
}
env_on_cleanup writer_stop

# wait_slot_confirmed PDIR DB SLOT LSN SECS
wait_slot_confirmed() {
	local i cur
	for ((i = 0; i < $5 * 5; i++)); do
		cur=$(pair_sql "$1" "$2" "SELECT confirmed_flush_lsn FROM pg_replication_slots
			WHERE slot_name = '$3'" 2>/dev/null) || cur=
		[[ -n $cur ]] && lsn_ge "$cur" "$4" && return 0
		sleep 0.2
	done
	return 1
}

# ledger SDIR DB TYPE DIR: the promoted database's committed events:
# DIR/expected (agg|n), DIR/ids (agg|seq|id), DIR/rows (id|created_at ms).
ledger() {
	local sdir=$1 db=$2 type=$3 dir=$4
	pair_sql "$sdir" "$db" "SELECT agg, n FROM agg_seq ORDER BY id" >"$dir/expected" &&
		pair_sql "$sdir" "$db" "SELECT aggregate_id, payload->>'seq', id FROM outbox
			WHERE aggregate_type = '$type'" >"$dir/ids" &&
		pair_sql "$sdir" "$db" "SELECT id, (extract(epoch FROM created_at) * 1000)::bigint
			FROM outbox WHERE aggregate_type = '$type'" >"$dir/rows"
}

# check_until TOPIC DIR SECS PID CHECKER-ARGS...: consume and check
# against DIR/expected and DIR/ids until nothing is missing, the checker
# finds a violation, the relay (PID) is gone, or SECS pass. Sets CK_RC,
# CK_SUMMARY; the records are in DIR/records.json.
check_until() {
	local topic=$1 dir=$2 secs=$3 pid=$4 deadline gone=
	shift 4
	# Exactly-once: no duplicate read_committed (as it_wait_checked).
	if it_eos && [[ -z ${IT_ALLOW_DUPS:-} ]]; then
		set -- "$@" --no-dups
	fi
	deadline=$((SECONDS + secs))
	while :; do
		CK_RC=0
		if it_consume "$topic" "$dir/records.json" 2>"$dir/consume.err"; then
			python3 "$CHECKER" check --expected "$dir/expected" --ids "$dir/ids" \
				--topic "$topic" "$@" "$dir/records.json" >"$dir/records.check" 2>&1 || CK_RC=$?
		else
			CK_RC=3
			cp "$dir/consume.err" "$dir/records.check"
		fi
		((CK_RC == 2 || CK_RC == 3)) || break
		[[ -z $gone ]] || break
		((SECONDS < deadline)) || break
		# One more look after the relay exited: what it flushed is there.
		_env_pid_alive "$pid" || gone=1
		sleep 1
	done
	CK_SUMMARY=$(grep '^checker:' "$dir/records.check" | head -n1 || true)
}
ck_stat() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$CK_SUMMARY"; }

# figures DIR KILL_MS SLOT_LSN [LOG TLI]: from DIR/records.json and
# DIR/rows (and the relay's LOG), one
# line of key=value: records, events (distinct ids), dup_events,
# dup_below_slot (duplicated events whose pg_lsn is below the synced
# slot's position: a replay from further back than the slot), ghosts (ids
# published that the promoted database does not have) and their pg_lsn
# range, new_rows (committed on the new primary: created after the kill),
# new_published, first_new_ms (Kafka timestamp of the first of them minus
# the kill), new_session_ms (the relay's first "streaming from slot" on
# timeline TLI minus the kill), old_max_lsn (the newest pg_lsn published
# of an event the old primary committed: the new timeline must branch at
# or after it, or Kafka holds what the new primary does not).
figures() {
	python3 - "$@" <<-'PY'
	import json, re, sys
	d, kill_ms, slot = sys.argv[1], int(sys.argv[2]), sys.argv[3]
	def lsn(s):
	    try:
	        hi, lo = s.split("/")
	        return (int(hi, 16) << 32) | int(lo, 16)
	    except Exception:
	        return None
	def fmt(v):
	    return "%X/%X" % (v >> 32, v & 0xFFFFFFFF)
	slot_lsn = lsn(slot) if slot else None
	rows = {}
	with open(d + "/rows") as f:
	    for line in f:
	        line = line.strip()
	        if line:
	            i, ms = line.split("|")
	            rows[i] = int(ms)
	seen, dups, ghosts, first_new, old_max = {}, set(), {}, None, None
	n = 0
	with open(d + "/records.json") as f:
	    for line in f:
	        if not line.strip():
	            continue
	        r = json.loads(line)
	        n += 1
	        h = r.get("headers") or []
	        hm = {h[k]: h[k + 1] for k in range(0, len(h) - 1, 2)}
	        i, l = hm.get("id"), lsn(hm.get("pg_lsn", ""))
	        if i in seen:
	            dups.add(i)
	        seen[i] = l
	        if (i not in rows or rows[i] < kill_ms) and l is not None:
	            old_max = l if old_max is None else max(old_max, l)
	        if i not in rows:
	            ghosts[i] = l
	        elif rows[i] >= kill_ms:
	            ts = r.get("ts")
	            if ts is not None and (first_new is None or ts < first_new):
	                first_new = ts
	below = [i for i in dups if slot_lsn is not None and seen[i] is not None
	         and seen[i] < slot_lsn]
	gl = sorted(v for v in ghosts.values() if v is not None)
	new_rows = sum(1 for v in rows.values() if v >= kill_ms)
	new_pub = sum(1 for i in seen if i in rows and rows[i] >= kill_ms)
	# The relay's first session on the new timeline, from its log.
	found_ms = "none"
	if len(sys.argv) > 5:
	    import datetime
	    pat = re.compile(r"^(\S+Z) INFO  streaming from slot .*\(system \d+, timeline %s\)"
	                     % re.escape(sys.argv[5]))
	    with open(sys.argv[4]) as f:
	        for line in f:
	            m = pat.match(line)
	            if m:
	                t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ")
	                t = t.replace(tzinfo=datetime.timezone.utc)
	                found_ms = int(t.timestamp() * 1000) - kill_ms
	                break
	print("records=%d events=%d dup_events=%d dup_below_slot=%d ghosts=%d "
	      "ghost_lsn=%s new_rows=%d new_published=%d first_new_ms=%s "
	      "new_session_ms=%s old_max_lsn=%s" % (
	      n, len(seen), len(dups), len(below), len(ghosts),
	      (fmt(gl[0]) + ".." + fmt(gl[-1])) if gl else "-",
	      new_rows, new_pub,
	      (first_new - kill_ms) if first_new is not None else "none", found_ms,
	      fmt(old_max) if old_max is not None else "-"))
	PY
}
fig() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }

# The log lines a reader of this test's output wants: errors, warnings,
# the sessions and the verification.
relay_lines() {
	grep -E ' (ERROR|WARN) |streaming from slot|behind what this process|back in time|does not exist' \
		"$1" | grep -v CONFWARN | tail -n "${2:-12}" || true
}

# -------------------------------------------------------------- (a) 17, synced
case_a() {
	t_case=$SECONDS
	pa=$IT_TEST_DIR/a.primary sa=$IT_TEST_DIR/a.standby
	PA=$((PGPORT + 33)) SA=$((PGPORT + 34))
	db=t527_a slot=t527_a_$RUN type=t527a_$RUN
	topic=outbox.event.$type
	da=$IT_TEST_DIR/a
	mkdir -p "$da"
	if ! err=$(ports_free "$PA" "$SA"); then
		not_ok "(a) ports $PA and $SA free" "$err"
		it_summary
	fi
	pair_bin "$BIN17"
	if ! pair_primary_start "$pa" "$PA" "$db" --synchronized-standby-slots 2>"$da/pair.err" ||
		! pair_standby_start "$sa" "$pa" "$SA" "$db" --sync-slots 2>>"$da/pair.err"; then
		not_ok "(a) PostgreSQL 17 primary and standby" "$(cat "$da/pair.err")"
		it_summary
	fi
	# Cleanup hooks run last-registered first: the writer and the relays go
	# before the pairs (pair_cleanup is registered by the first start).
	env_on_cleanup "writer_stop; _it_kill_relays"
	it_check "(a) schema, publication and failover slot on the primary" \
		setup_schema "$pa" "$db" "$type" "$slot" true
	python3 "$CHECKER" pgbench-script --aggs "$AGGS" --rollback-pct 10 --multi-pct 25 \
		>"$da/writer.pgbench"
	ci=$(conninfo "$db" "$PA" "$SA")
	write_conf "$da/relay.conf" "$ci" "$slot"
	"$RELAY_BIN" --config "$da/relay.conf" --check >"$da/check.out" 2>&1 || true
	log=$da/relay.log
	it_start_relay "$da/relay.conf" "$log"
	pid=$IT_RELAY_PID
	writer_start "$ci" "$da/writer.pgbench" 60 "$da"
	sleep 2
	lsn=$(pair_sql "$pa" "$db" "SELECT pg_current_wal_lsn()")
	it_check "(a) the relay confirms on the primary ($lsn)" \
		wait_slot_confirmed "$pa" "$db" "$slot" "$lsn" 30
	it_check "(a) the failover slot is synced on the standby, at $lsn or later" \
		pair_wait_synced "$sa" "$db" "$slot" 60 "$lsn"
	sleep 3
	synced_before=$(pair_sql "$sa" "$db" "SELECT confirmed_flush_lsn FROM pg_replication_slots
		WHERE slot_name = '$slot'")
	primary_slot=$(pair_sql "$pa" "$db" "SELECT confirmed_flush_lsn FROM pg_replication_slots
		WHERE slot_name = '$slot'")
	kill_ms=$(pair_kill "$pa")
	it_diag "(a) kill -9 of the primary under load: its slot at $primary_slot, the standby's synced copy at $synced_before"
	synced_at=$(pair_sql "$sa" "$db" "SELECT confirmed_flush_lsn FROM pg_replication_slots
		WHERE slot_name = '$slot'")
	it_check "(a) the standby is promoted" pair_promote "$sa" 60
	promote_ms=$(($(date +%s%N) / 1000000))
	tl=$(pair_timeline "$sa" || echo '?')
	branch=$(pair_history "$sa" "$tl" 2>/dev/null | awk 'NF >= 2 { b = $2 } END { print b }' || true)
	it_diag "(a) promoted in $((promote_ms - kill_ms)) ms: timeline $tl branches at ${branch:-?}; the synced slot was at $synced_at"
	# Writes go on against the new primary, then stop.
	sleep 6
	writer_stop
	it_diag "(a) writer: $(cat "$da/writer.done" 2>/dev/null) (bursts, failed bursts)"
	ledger "$sa" "$db" "$type" "$da"
	committed=$(pair_sql "$sa" "$db" "SELECT coalesce(sum(n), 0) FROM agg_seq")
	check_until "$topic" "$da" "$DRAIN_SECS" "$pid" --faults 1
	f=$(figures "$da" "$kill_ms" "$synced_at" "$log" "$tl")
	alive=
	it_relay_alive "$pid" && alive=1
	it_diag "(a) checker: $CK_SUMMARY"
	it_diag "(a) $f"
	if [[ -n $alive ]]; then
		ok "(a) the relay did not exit over the failover"
	else
		rc=0
		wait "$pid" 2>/dev/null || rc=$?
		not_ok "(a) the relay did not exit over the failover (exit $rc)" \
			"$(relay_lines "$log")"
	fi
	it_check "(a) the relay streamed from the new primary (timeline $tl)" \
		grep -q "streaming from slot \"$slot\" (system [0-9]*, timeline $tl)" "$log"
	if ((CK_RC == 0)); then
		ok "(a) $committed events committed on the promoted database: none missing, none unknown, per-key order (a re-delivery repeats a suffix, once)"
	else
		not_ok "(a) $committed events committed on the promoted database: none missing, none unknown, per-key order" \
			"checker exit $CK_RC: $(head -n 20 "$da/records.check")"
	fi
	it_check "(a) no ghost: every published event is in the promoted database" \
		test "$(fig ghosts "$f")" = 0
	old_max=$(fig old_max_lsn "$f")
	it_check "(a) timeline $tl branches at ${branch:-?}, at or after the newest commit published from the old primary ($old_max)" \
		lsn_ge "${branch:-0/0}" "$old_max"
	it_check "(a) events committed on the new primary were published ($(fig new_published "$f") of $(fig new_rows "$f"))" \
		test "$(fig new_rows "$f")" -gt 0 -a "$(fig new_published "$f")" = "$(fig new_rows "$f")"
	it_check "(a) duplicates ($(fig dup_events "$f") events) only from the synced slot's position $synced_at on" \
		test "$(fig dup_below_slot "$f")" = 0
	secs() { awk -v m="$1" 'BEGIN { if (m ~ /^-?[0-9]+$/) printf "%.1f s", m / 1000; else print "none" }'; }
	it_diag "(a) from the kill: the relay streams from the new primary after $(secs "$(fig new_session_ms "$f")"), the first event committed there is in Kafka after $(secs "$(fig first_new_ms "$f")")"
	it_diag "(a) relay log: $(relay_lines "$log" 8)"
	if [[ -n $alive ]]; then
		it_stop_checked "(a) the relay exits 0 on SIGTERM" "$pid"
	fi
	pair_cleanup
	it_diag "row: scenario=F18a pg=17 rounds=1 committed=$committed $(sed 's/^checker: [A-Z]* //' <<<"$CK_SUMMARY") $f wall=$((SECONDS - t_case))s"

}

# -------------------------------------------- (b) 17, standby held back
case_b() {
	t_case=$SECONDS
	pb=$IT_TEST_DIR/b.primary sb=$IT_TEST_DIR/b.standby
	PB=$((PGPORT + 35)) SB=$((PGPORT + 36))
	db=t527_b slot=t527_b_$RUN type=t527b_$RUN
	topic=outbox.event.$type
	dbb=$IT_TEST_DIR/b
	mkdir -p "$dbb"
	if ! err=$(ports_free "$PB" "$SB"); then
		not_ok "(b) ports $PB and $SB free" "$err"
		it_summary
	fi
	pair_bin "$BIN17"
	if ! pair_primary_start "$pb" "$PB" "$db" 2>"$dbb/pair.err" ||
		! proxy_start "127.0.0.1:$PB" 2>>"$dbb/pair.err" ||
		! pair_standby_start "$sb" "$pb" "$SB" "$db" --sync-slots --upstream "$PROXY_PORT" \
			2>>"$dbb/pair.err" ||
		! pair_wait_streaming "$pb" 30; then
		not_ok "(b) PostgreSQL 17 primary and standby (through tcp-proxy)" "$(cat "$dbb/pair.err")"
		it_summary
	fi
	it_check "(b) schema, publication and failover slot on the primary" \
		setup_schema "$pb" "$db" "$type" "$slot" true
	python3 "$CHECKER" pgbench-script --aggs "$AGGS" --rollback-pct 10 --multi-pct 25 \
		>"$dbb/writer.pgbench"
	ci=$(conninfo "$db" "$PB" "$SB")
	write_conf "$dbb/relay.conf" "$ci" "$slot"
	ck_rc=0
	"$RELAY_BIN" --config "$dbb/relay.conf" --check >"$dbb/check.out" 2>&1 || ck_rc=$?
	if grep -qi 'synchronized_standby_slots\|failover' "$dbb/check.out"; then
		it_diag "(b) --check (exit $ck_rc) before the failover said: $(grep -i 'synchronized_standby_slots\|failover' "$dbb/check.out")"
		check_warned=1
	else
		it_diag "(b) --check (exit $ck_rc) before the failover said nothing of synchronized_standby_slots or failover"
		check_warned=
	fi
	log=$dbb/relay.log
	it_start_relay "$dbb/relay.conf" "$log"
	pid=$IT_RELAY_PID
	writer_start "$ci" "$dbb/writer.pgbench" 60 "$dbb"
	sleep 2
	lsn=$(pair_sql "$pb" "$db" "SELECT pg_current_wal_lsn()")
	it_check "(b) the relay confirms on the primary ($lsn)" \
		wait_slot_confirmed "$pb" "$db" "$slot" "$lsn" 30
	it_check "(b) the failover slot is synced on the standby, at $lsn or later" \
		pair_wait_synced "$sb" "$db" "$slot" 60 "$lsn"
	# The standby is cut off: it receives nothing more, while the relay goes
	# on publishing from the primary.
	proxy_cmd blackhole >/dev/null
	held=$(pair_sql "$pb" "$db" "SELECT pg_current_wal_lsn()")
	sleep 4
	lsn=$(pair_sql "$pb" "$db" "SELECT pg_current_wal_lsn()")
	it_check "(b) the relay confirms on the primary past what the standby has ($lsn)" \
		wait_slot_confirmed "$pb" "$db" "$slot" "$lsn" 30
	received=$(pair_sql "$sb" postgres "SELECT pg_last_wal_receive_lsn()")
	synced_at=$(pair_sql "$sb" "$db" "SELECT confirmed_flush_lsn FROM pg_replication_slots
		WHERE slot_name = '$slot'")
	kill_ms=$(pair_kill "$pb")
	it_diag "(b) standby cut off at about $held; at the kill it had received $received, its synced slot at $synced_at; the primary's slot at $lsn or later"
	it_check "(b) the standby is promoted" pair_promote "$sb" 60
	tl=$(pair_timeline "$sb" || echo '?')
	branch=$(pair_history "$sb" "$tl" 2>/dev/null | awk 'NF >= 2 { b = $2 } END { print b }' || true)
	it_diag "(b) timeline $tl branches at ${branch:-?}"
	sleep 4
	writer_stop
	it_diag "(b) writer: $(cat "$dbb/writer.done" 2>/dev/null) (bursts, failed bursts)"
	exited=
	rc=
	if it_wait_exit "$pid" "$EXIT_SECS"; then
		rc=0
		wait "$pid" 2>/dev/null || rc=$?
		exited=1
	fi
	ledger "$sb" "$db" "$type" "$dbb"
	committed=$(pair_sql "$sb" "$db" "SELECT coalesce(sum(n), 0) FROM agg_seq")
	# A relay still running gets the time to publish what it would.
	[[ -n $exited ]] || check_until "$topic" "$dbb" 20 "$pid" --faults 1
	it_consume "$topic" "$dbb/records.json" 2>/dev/null || true
	f=$(figures "$dbb" "$kill_ms" "$synced_at" "$log" "$tl")
	it_diag "(b) $f"
	ghosts=$(fig ghosts "$f")
	it_diag "(b) timeline $tl branches at ${branch:-?}, the newest commit published from the old primary is at $(fig old_max_lsn "$f")"
	if [[ -n $exited ]]; then
		it_diag "(b) the relay exited $rc: $(relay_lines "$log" 6)"
	else
		it_diag "(b) the relay is still running: $(relay_lines "$log" 6)"
	fi
	if [[ $rc == 69 ]] || [[ $ghosts == 0 ]]; then
		ok "(b) no ghost published after the promotion goes unreported (exit ${rc:-none}, $ghosts ghosts${check_warned:+, --check warned})"
	else
		not_ok "(b) no ghost published after the promotion goes unreported (exit ${rc:-none}, $ghosts ghosts)" \
			"$(relay_lines "$log")"
	fi
	if [[ $rc == 69 ]]; then
		range=$(grep -oE 'above [0-9A-F]+/[0-9A-F]+ and up to [0-9A-F]+/[0-9A-F]+' "$log" | tail -n1 || true)
		it_check "(b) the log says the database went back in time, with an LSN range (${range:-none})" \
			test -n "$range"
		if [[ -n $range && $ghosts != 0 ]]; then
			read -r _ lo _ _ _ hi <<<"$range"
			glo=$(fig ghost_lsn "$f") ghi=
			ghi=${glo#*..} glo=${glo%..*}
			it_check "(b) the range $lo..$hi holds every ghost's pg_lsn ($glo..$ghi)" \
				eval 'lsn_ge "$glo" "$lo" && lsn_ge "$hi" "$ghi"'
		fi
	elif [[ -z $exited ]]; then
		it_stop_relay "$pid" >/dev/null 2>&1 || true
	fi
	proxy_stop >/dev/null 2>&1 || true
	pair_cleanup
	it_diag "row: scenario=F18b pg=17 rounds=1 committed=$committed exit=${rc:-none} $f wall=$((SECONDS - t_case))s"

}

# ------------------------------------------------- (c) 16, no failover slot
case_c() {
	t_case=$SECONDS
	pc=$IT_TEST_DIR/c.primary sc=$IT_TEST_DIR/c.standby
	PC=$((PGPORT + 37)) SC=$((PGPORT + 38))
	db=t527_c slot=t527_c_$RUN type=t527c_$RUN
	topic=outbox.event.$type
	dc=$IT_TEST_DIR/c
	mkdir -p "$dc"
	if ! err=$(ports_free "$PC" "$SC"); then
		not_ok "(c) ports $PC and $SC free" "$err"
		it_summary
	fi
	pair_bin "$BIN16"
	if ! pair_primary_start "$pc" "$PC" "$db" 2>"$dc/pair.err" ||
		! pair_standby_start "$sc" "$pc" "$SC" "$db" 2>>"$dc/pair.err"; then
		not_ok "(c) PostgreSQL 16 primary and standby" "$(cat "$dc/pair.err")"
		it_summary
	fi
	it_check "(c) schema, publication and slot on the primary" \
		setup_schema "$pc" "$db" "$type" "$slot"
	python3 "$CHECKER" pgbench-script --aggs "$AGGS" --rollback-pct 10 --multi-pct 25 \
		>"$dc/writer.pgbench"
	ci=$(conninfo "$db" "$PC" "$SC")
	write_conf "$dc/relay.conf" "$ci" "$slot"
	log=$dc/relay.log
	it_start_relay "$dc/relay.conf" "$log"
	pid=$IT_RELAY_PID
	writer_start "$ci" "$dc/writer.pgbench" 60 "$dc"
	sleep 4
	writer_stop
	lsn=$(pair_sql "$pc" "$db" "SELECT pg_current_wal_lsn()")
	it_check "(c) the relay confirms on the primary ($lsn)" \
		wait_slot_confirmed "$pc" "$db" "$slot" "$lsn" 30
	it_check "(c) the standby has replayed all of it" pair_wait_caught_up "$pc" "$sc" 30
	kill_ms=$(pair_kill "$pc")
	it_check "(c) the standby is promoted" pair_promote "$sc" 60
	tl=$(pair_timeline "$sc" || echo '?')
	it_diag "(c) slots on the promoted standby (timeline $tl): $(pair_sql "$sc" postgres "SELECT coalesce(string_agg(slot_name, ' '), 'none') FROM pg_replication_slots")"
	for ((i = 1; i <= 5; i++)); do
		pair_sql "$sc" "$db" "SELECT emit($i)" >/dev/null
	done
	if it_wait_exit "$pid" "$EXIT_SECS"; then
		rc=0
		wait "$pid" 2>/dev/null || rc=$?
		it_check "(c) the relay exits 69 after the promotion" test "$rc" -eq 69
	else
		not_ok "(c) the relay exits after the promotion" "$(relay_lines "$log")"
		it_stop_relay "$pid" >/dev/null 2>&1 || true
		rc=none
	fi
	it_diag "(c) the relay's last lines: $(relay_lines "$log" 6)"
	it_check "(c) the log says the slot does not exist" \
		grep -q "slot \"$slot\" does not exist" "$log"
	it_check "(c) ... on a promoted server, and names the failover runbook" \
		grep -q "This server is on timeline 2: it was promoted.*Runbook: failover" "$log"
	ledger "$sc" "$db" "$type" "$dc"
	committed=$(pair_sql "$sc" "$db" "SELECT coalesce(sum(n), 0) FROM agg_seq")
	it_consume "$topic" "$dc/records.json" 2>/dev/null || true
	f=$(figures "$dc" "$kill_ms" "")
	it_diag "(c) $f"
	it_check "(c) nothing published that the promoted database lacks" \
		test "$(fig ghosts "$f")" = 0
	pair_cleanup
	it_diag "row: scenario=F18c pg=16 rounds=1 committed=$committed exit=$rc $f wall=$((SECONDS - t_case))s"

}

for c in $CASES; do
	case $c in
	a | b) [[ -n ${BIN17:-} ]] || pgdist BIN17 17 ;;
	c) [[ -n ${BIN16:-} ]] || pgdist BIN16 16 ;;
	*)
		not_ok "T527_CASES: no case '$c' (a, b, c)"
		continue
		;;
	esac
	"case_$c"
done

it_summary
