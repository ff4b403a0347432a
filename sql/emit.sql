-- sql/emit.sql -- outbox_emit(): publish an outbox event with no table.
--
-- An application calls, inside the transaction that makes its business
-- change:
--
--     SELECT outbox_emit('Order', 'o-42', 'OrderPlaced',
--                        '{"orderId": "o-42", "amount": "19.90"}');
--
-- and gets the event id (uuid) back. The event is written to the WAL only,
-- as a TRANSACTIONAL logical decoding message
-- (pg_logical_emit_message(true, prefix, content)): no row, no dead tuple,
-- no vacuum, no index. Being transactional it is decoded inside its
-- transaction, in WAL order with the transaction's other changes, only
-- once the transaction commits; a rollback (or ROLLBACK TO SAVEPOINT)
-- discards it, exactly like an outbox row.
--
-- What the relay reads (wal2json 2.5, format-version 2):
--   {"action":"M","xid":...,"transactional":true,"prefix":"outbox",
--    "content":"{\"id\": \"...\", \"payload\": {...}, \"event_type\": ...}"}
-- content is a JSON object with the default outbox column names:
--   id             uuid text, generated here (gen_random_uuid()), header id
--   aggregate_type the routing value (topic outbox.event.<aggregate_type>)
--   aggregate_id   the record key
--   event_type     header event_type
--   payload        the jsonb value; the Kafka value is its text exactly as
--                  PostgreSQL prints jsonb (the same bytes as SELECT
--                  payload::text, the same as the outbox table path)
-- These member names are fixed: table.field.* / route.by.field map table
-- columns, not message members.
--
-- The relay must be told to decode this prefix: relay key
-- outbox.emit.prefix (empty, i.e. off, by default; set it to "outbox" or
-- your prefix; it is added to wal2json's add-msg-prefixes next to
-- heartbeat.prefix). A message whose prefix the relay does not ask for is
-- dropped by wal2json without a trace, and the slot then moves past it:
-- the event is lost. So the prefix here and outbox.emit.prefix MUST be
-- equal, and the relay must be configured BEFORE applications call
-- outbox_emit().
--
-- The prefix: the setting outbox.emit_prefix, default 'outbox'. Set it per
-- database or role, never per call site:
--     ALTER DATABASE app SET outbox.emit_prefix = 'orders';
-- wal2json splits its prefix list at commas and white space and cannot
-- match a prefix holding a backslash, so such prefixes are refused here
-- rather than silently never decoded.
--
-- SECURITY (PostgreSQL 15, checked on 15.20):
-- * pg_logical_emit_message() is executable by PUBLIC out of the box: any
--   role that can connect to the database, with no privilege on any table,
--   can write a message. Once the relay decodes the "outbox" prefix, that
--   means any such role could make the relay publish an arbitrary record
--   to any outbox.event.* topic. This file therefore REVOKEs EXECUTE on
--   every pg_logical_emit_message variant from PUBLIC in this database
--   (function privileges are per database: apply this file in every
--   database that has a relay slot; pg_dump keeps the change).
-- * outbox_emit() is SECURITY DEFINER, so callers need only EXECUTE on it
--   (granted to the outbox_writer role by sql/roles.sql), not on
--   pg_logical_emit_message. It runs as its owner, the role that applied
--   this file (a superuser, or any role that keeps EXECUTE on
--   pg_logical_emit_message). It is safe to run as that owner because:
--   search_path is pinned (pg_catalog, then pg_temp last, so no temporary
--   object can shadow anything); every input is data (no dynamic SQL); and
--   it can do exactly one thing, emit a well-formed event.
--   EXECUTE on it is revoked from PUBLIC (the default for new functions
--   would let every role call it).
-- * The relay role needs EXECUTE on pg_logical_emit_message(boolean, text,
--   text) for its own heartbeats (heartbeat.interval.ms > 0); roles.sql
--   grants it. Other software that calls pg_logical_emit_message as a
--   non-superuser in this database needs the same explicit grant. To undo
--   the revoke (PostgreSQL 15 and 16; on 17 and later each variant has a
--   fourth argument, flush boolean: add ", boolean"):
--     GRANT EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, text) TO PUBLIC;
--     GRANT EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, bytea) TO PUBLIC;
--   Applied by a role that does not own pg_logical_emit_message (not a
--   superuser: e.g. the admin role of a managed service), the REVOKEs
--   below only WARN "no privileges could be revoked" and PUBLIC keeps
--   EXECUTE (checked on 15.20): the hole stays open. There, set the
--   relay's outbox.emit.prefix empty unless every role that can connect
--   to the database may publish events.
--
-- Costs and limits:
-- * The message is WAL the slot retains until the relay confirms it, like
--   an outbox row; there is no table to inspect afterwards (use the
--   relay's --dry-run or pg_logical_slot_peek_changes).
-- * Needs wal_level = logical to be decodable, and a transaction id: it
--   cannot run on a hot standby.
-- * jsonb numbers keep every digit (the payload is passed through as
--   text), including numbers beyond +-1.8e308, which jsonb can hold.
--
-- Idempotent: CREATE OR REPLACE and REVOKE/GRANT can be applied again.

CREATE OR REPLACE FUNCTION public.outbox_emit(
    aggregate_type text,
    aggregate_id   text,
    event_type     text,
    payload        jsonb)
RETURNS uuid
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    event_id uuid := pg_catalog.gen_random_uuid();
    -- missing_ok: NULL when never set; '' after SET + RESET in a session.
    prefix   text := coalesce(nullif(pg_catalog.current_setting(
                                  'outbox.emit_prefix', true), ''), 'outbox');
BEGIN
    -- The same NOT NULL rules as the outbox table: refused here, in the
    -- application's transaction, instead of a poison event in the WAL.
    IF outbox_emit.aggregate_type IS NULL OR outbox_emit.aggregate_id IS NULL
       OR outbox_emit.event_type IS NULL OR outbox_emit.payload IS NULL THEN
        RAISE EXCEPTION 'outbox_emit: aggregate_type, aggregate_id, event_type and payload must not be NULL'
            USING ERRCODE = 'not_null_violation';
    END IF;
    IF prefix ~ '[,\s\\]' THEN
        RAISE EXCEPTION 'outbox_emit: outbox.emit_prefix % contains a comma, white space or a backslash; wal2json could never match it',
            pg_catalog.quote_literal(prefix)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM pg_catalog.pg_logical_emit_message(
        true,
        prefix,
        pg_catalog.jsonb_build_object(
            'id',             event_id,
            'aggregate_type', outbox_emit.aggregate_type,
            'aggregate_id',   outbox_emit.aggregate_id,
            'event_type',     outbox_emit.event_type,
            'payload',        outbox_emit.payload)::text);
    RETURN event_id;
END
$fn$;

COMMENT ON FUNCTION public.outbox_emit(text, text, text, jsonb) IS
    'Publishes an outbox event as a transactional logical decoding message (prefix: setting outbox.emit_prefix, default outbox); returns the event id. See sql/emit.sql.';

-- Only roles granted EXECUTE (sql/roles.sql: outbox_writer) may call it.
REVOKE ALL ON FUNCTION public.outbox_emit(text, text, text, jsonb) FROM PUBLIC;

-- Close the default: without this any role can forge events (see above).
-- Every variant pg_proc lists, whatever its arguments: PostgreSQL 15 and
-- 16 have (boolean, text, text) and (boolean, text, bytea); 17 added a
-- fourth argument to both (flush boolean DEFAULT false) and has no
-- three-argument variant left, so a REVOKE naming one would fail there.
DO $revoke$
DECLARE
    fn text;
BEGIN
    FOR fn IN
        SELECT pg_catalog.format('pg_catalog.%I(%s)', p.proname,
                                 pg_catalog.pg_get_function_identity_arguments(p.oid))
          FROM pg_catalog.pg_proc p
         WHERE p.proname = 'pg_logical_emit_message'
           AND p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
         ORDER BY p.oid
    LOOP
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', fn);
    END LOOP;
END
$revoke$;
