#!/usr/bin/env bash
# t215_outbox_relkind -- outbox.table must be an ordinary table. wal2json
# names the partition in every record, never its partitioned parent, so a
# relay reading the parent would receive nothing and confirm past the
# inserts (silent loss); a view's rows are not in the WAL at all.
#  (a) outbox.table = a partitioned table (rows in it): exit 78 at start,
#      the message says why and shows the schema.* configuration; --check
#      fails too (exit 78), not only warns; the slot is not moved past the
#      rows;
#  (b) outbox.table = a view: exit 78, "is a view";
#  (c) on a reconnect too: a relay streaming from a plain table whose
#      table is swapped for a view of the same name (walsender terminated
#      to force a new session) stops with exit 78.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

db=t215_relkind
it_setup_db "$db"
it_sql "$db" "
	CREATE TABLE public.outbox_parted (LIKE public.outbox INCLUDING DEFAULTS) PARTITION BY LIST (aggregate_type);
	CREATE TABLE public.outbox_parted_a PARTITION OF public.outbox_parted FOR VALUES IN ('t215');
	CREATE VIEW public.outbox_view AS SELECT * FROM public.outbox;" >/dev/null

# ------------------------------------------------------------------ (a)
before=$(it_slot_confirmed "$db" "$db")
it_sql "$db" "INSERT INTO public.outbox_parted (id, aggregate_type, aggregate_id, event_type, payload)
	VALUES (gen_random_uuid(), 't215', 'p1', 'E', '{}')" >/dev/null
rows_end=$(it_current_lsn "$db")
conf=$IT_TEST_DIR/parted.conf
it_write_config "$conf" "$db" outbox.table=public.outbox_parted
it_run_relay parted --config "$conf"
it_check "(a) partitioned outbox.table: exit 78 (got $RC)" test "$RC" = 78
if grep -q 'public.outbox_parted is a partitioned table' "$IT_TEST_DIR/parted.err" &&
	grep -q 'outbox.table = <schema>\.\*' "$IT_TEST_DIR/parted.err" &&
	grep -q 'pg_partman' "$IT_TEST_DIR/parted.err"; then
	ok "(a) the message explains and shows outbox.table = <schema>.* (and pg_partman)"
else
	not_ok "(a) the message explains and shows outbox.table = <schema>.*" \
		"$(tail -n 5 "$IT_TEST_DIR/parted.err")"
fi
after=$(it_slot_confirmed "$db" "$db")
if lsn_ge "$after" "$rows_end"; then
	not_ok "(a) the slot was not moved past the partitioned rows" "$before -> $after (rows end $rows_end)"
else
	ok "(a) the slot was not moved past the partitioned rows ($after < $rows_end)"
fi
it_run_relay parted-check --config "$conf" --check
it_check "(a) --check fails with exit 78 (got $RC)" test "$RC" = 78
it_check "(a) --check says fail outbox_table ... partitioned" \
	grep -qE '^fail +outbox_table: .*is a partitioned table' "$IT_TEST_DIR/parted-check.out"

# ------------------------------------------------------------------ (b)
conf=$IT_TEST_DIR/view.conf
it_write_config "$conf" "$db" outbox.table=public.outbox_view
it_run_relay view --config "$conf"
it_check "(b) a view as outbox.table: exit 78 (got $RC)" test "$RC" = 78
it_check "(b) the message says it is a view" \
	grep -q 'public.outbox_view is a view' "$IT_TEST_DIR/view.err"

# ------------------------------------------------------------------ (c)
it_sql "$db" "CREATE TABLE public.swap (LIKE public.outbox INCLUDING DEFAULTS)" >/dev/null
conf=$IT_TEST_DIR/swap.conf
log=$IT_TEST_DIR/swap.log
it_write_config "$conf" "$db" outbox.table=public.swap reconnect.backoff.ms=100
it_start_relay "$conf" "$log"
pid=$IT_RELAY_PID
it_check "(c) relay streams from public.swap" it_wait_slot_active "$db" "$db" 30
it_sql "$db" "ALTER TABLE public.swap RENAME TO swap_old;
	CREATE VIEW public.swap AS SELECT * FROM public.swap_old;" >/dev/null
it_end_walsender "$db"
rc=0
for ((i = 0; i < 300; i++)); do it_relay_alive "$pid" || break; sleep 0.1; done
if it_relay_alive "$pid"; then
	not_ok "(c) after the reconnect the relay stops" "$(it_show_log "$log" 10)"
	it_stop_relay || true
else
	wait "$pid" 2>/dev/null || rc=$?
	it_check "(c) after the reconnect the relay stops with exit 78 (got $rc)" test "$rc" = 78
fi
it_check "(c) ... saying public.swap is a view" grep -q 'public.swap is a view' "$log"

it_summary
