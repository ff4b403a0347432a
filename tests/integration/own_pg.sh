# shellcheck shell=bash
# tests/integration/own_pg.sh -- a PostgreSQL of the test's own, for the
# tests that stop, copy, restore or promote their server (t170, t172) or
# change its pg_hba.conf (t225): the run's server must stay as it is for
# the tests after them. Source it after lib.sh and after it_init:
#
#   source "$(dirname "$0")/own_pg.sh"
#   own_pg_start "$port" "$db"       # cluster, outbox table, publication, slot
#   own_write_config "$conf" http.listen=
#   own_sql "SELECT ..."
#
# Functions (the server's files are under $OWN = $IT_TEST_DIR/own):
#   own_pg_start PORT DB     a cluster of its own on PORT with database DB,
#                            sql/outbox.sql, the publication (pgoutput) and
#                            a RELAY_PLUGIN slot named DB; sets OWN,
#                            OWN_PORT, OWN_DB. A cluster that does not start
#                            is a not_ok and the end of the test.
#   own_sql SQL              psql -At on OWN_DB
#   own_conninfo [DB]        libpq conninfo for the relay
#   own_write_config FILE [KEY=VALUE...]   it_write_config for the slot DB
#                            on this server (quick reconnects)
#   own_copy_data NAME       stops the server, copies its data directory to
#                            $OWN/pg/NAME, starts it again
#   own_restore_data NAME    stops the server, puts that copy back, starts
#   own_wait_confirmed LSN SECS   until the slot's confirmed_flush_lsn >= LSN
#   own_check_slot_behind PREFIX   it_check: the slot's confirmed_flush_lsn
#                            is not past pg_current_wal_lsn()
#   own_all_arrived TOPIC TAG N SECS   until the N ids with event_type TAG
#                            in OWN_DB are all in TOPIC ($IT_TEST_DIR/out.json)

if [[ -n ${_OWN_PG_SOURCED:-} ]]; then
	return 0
fi
_OWN_PG_SOURCED=1

OWN=
OWN_PORT=
OWN_DB=

own_pg_start() {
	OWN=$IT_TEST_DIR/own OWN_PORT=$1 OWN_DB=$2
	if ! pg_start "$OWN" "$OWN_PORT" "$OWN_DB" 2>"$IT_TEST_DIR/pg.err"; then
		not_ok "own PostgreSQL cluster on port $OWN_PORT" "$(cat "$IT_TEST_DIR/pg.err")"
		it_summary
	fi
	psql_f "$OWN_PORT" "$OWN_DB" "$IT_ROOT/sql/outbox.sql" >/dev/null
	# The suite's plugin (make integration-pgoutput): the publication first.
	[[ $RELAY_PLUGIN == wal2json ]] || own_sql "CREATE PUBLICATION
		$IT_PUBLICATION FOR TABLE public.outbox WITH (publish = 'insert')" >/dev/null
	own_sql "SELECT pg_create_logical_replication_slot('$OWN_DB', '$RELAY_PLUGIN')" >/dev/null
}

own_sql() { psql_q "$OWN_PORT" "$OWN_DB" "$1"; }

own_conninfo() {
	echo "host=127.0.0.1 port=$OWN_PORT dbname=${1:-$OWN_DB} user=postgres"
}

# The server goes away and comes back in these tests: reconnects are quick
# so that the relay's view of it is never far behind.
own_write_config() {
	local f=$1
	shift
	it_write_config "$f" "$OWN_DB" "pg.conninfo=$(own_conninfo)" \
		reconnect.backoff.ms=100 reconnect.backoff.max.ms=300 "$@"
}

own_copy_data() {
	pg_stop "$OWN"
	rm -rf "$OWN/pg/$1"
	cp -a "$OWN/pg/data" "$OWN/pg/$1"
	pg_launch "$OWN"
}

own_restore_data() {
	pg_stop "$OWN"
	rm -rf "$OWN/pg/data"
	cp -a "$OWN/pg/$1" "$OWN/pg/data"
	pg_launch "$OWN"
}

own_wait_confirmed() {
	local lsn=$1 secs=$2 i cur
	for ((i = 0; i < secs * 5; i++)); do
		cur=$(own_sql "SELECT confirmed_flush_lsn FROM pg_replication_slots
			WHERE slot_name = '$OWN_DB'")
		[[ -n $cur ]] && lsn_ge "$cur" "$lsn" && return 0
		sleep 0.2
	done
	return 1
}

# own_check_slot_behind PREFIX: it_check "PREFIX the slot (LSN) is not past
# the server's WAL (LSN)": after a restore or a promotion, a slot ahead of
# the WAL would skip whatever is written up to there.
own_check_slot_behind() {
	local slot wal
	slot=$(own_sql "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$OWN_DB'")
	wal=$(own_sql "SELECT pg_current_wal_lsn()")
	it_check "$1 the slot ($slot) is not past the server's WAL ($wal)" lsn_ge "$wal" "$slot"
}

# Ids, not counts: a replayed event must not stand in for a lost one.
own_all_arrived() {
	local topic=$1 tag=$2 n=$3 deadline=$((SECONDS + $4)) missing
	local want=$IT_TEST_DIR/want.$tag have=$IT_TEST_DIR/have out=$IT_TEST_DIR/out.json
	own_sql "SELECT id FROM outbox WHERE event_type = '$tag' ORDER BY id" >"$want"
	[[ $(grep -c . "$want") == "$n" ]] || return 1
	while :; do
		it_consume "$topic" "$out" 2>/dev/null || true
		it_fields "$out" h:id | sort -u >"$have"
		missing=$(comm -23 "$want" "$have" | grep -c . || true)
		((missing == 0)) && return 0
		((SECONDS < deadline)) || break
		sleep 0.5
	done
	it_diag "$missing of $n ids of $tag missing in Kafka"
	return 1
}
