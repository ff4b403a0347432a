-- sql/cleanup.sql -- outbox retention: keep the outbox table from growing.
--
-- The relay never reads the outbox table: it reads the INSERT from the WAL
-- through its slot (wal2json, actions=insert). Once a transaction has
-- committed, its outbox rows are of no use to the relay, and a DELETE or
-- UPDATE of them publishes nothing. So rows can go right away (part 1), or
-- be kept for a while for inspection and dropped a day at a time (part 2).
-- Either way the slot keeps the WAL until the relay has confirmed it:
-- deleting rows, or dropping a partition, never loses an event the relay
-- has not published yet (checked on 15.20: an insert into a partition
-- that was dropped before the slot was read still decodes in full).
--
-- Apply after sql/outbox.sql. Idempotent: every statement can be run
-- again (CREATE ... IF NOT EXISTS, CREATE OR REPLACE).

-- =================================================== 1. insert-then-delete
--
-- The row is deleted in the transaction that inserted it. With
-- actions=insert wal2json decodes only the INSERT, so the event is
-- published exactly once, and the table stays empty: no growth, no index
-- bloat, and the dead tuples are few and in a tiny table (autovacuum
-- still runs, cheaply; sql/emit.sql avoids even that).
--
-- (a) Application side, two statements in the business transaction:
--
--     BEGIN;
--     UPDATE orders SET status = 'placed' WHERE id = 42;
--     INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
--         VALUES ('Order', '42', 'OrderPlaced', '{"orderId": 42}')
--         RETURNING id;                    -- :id
--     DELETE FROM outbox WHERE id = :id;
--     COMMIT;
--
--     Not one statement: in WITH e AS (INSERT ... RETURNING id)
--     DELETE FROM outbox WHERE id IN (SELECT id FROM e) the DELETE cannot
--     see the rows its own WITH inserted, and deletes nothing.
--     The application role then needs DELETE, and SELECT for the WHERE
--     and the RETURNING (or it generates the id itself).
--
-- (b) The trigger below does it for every insert into public.outbox, once
--     per statement (a multi-row INSERT costs one DELETE). It runs as the
--     function's owner (SECURITY DEFINER), so writers need only INSERT.
--     Drop it to keep rows instead:
--         DROP TRIGGER outbox_delete_after_insert ON public.outbox;

CREATE OR REPLACE FUNCTION public.outbox_delete_inserted()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    -- The transition table holds exactly the rows this statement inserted.
    DELETE FROM public.outbox o USING inserted i WHERE o.id = i.id;
    RETURN NULL;
END
$fn$;

REVOKE ALL ON FUNCTION public.outbox_delete_inserted() FROM PUBLIC;

DO $do$
BEGIN
    IF pg_catalog.to_regclass('public.outbox') IS NOT NULL THEN
        -- CREATE OR REPLACE TRIGGER: PostgreSQL 14 and later.
        CREATE OR REPLACE TRIGGER outbox_delete_after_insert
            AFTER INSERT ON public.outbox
            REFERENCING NEW TABLE AS inserted
            FOR EACH STATEMENT
            EXECUTE FUNCTION public.outbox_delete_inserted();
    END IF;
END
$do$;

-- ================================================ 2. day-partitioned outbox
--
-- For keeping events for a few days (to look at them, to replay by hand)
-- without DELETE and VACUUM: one partition per UTC day, and whole days
-- dropped at once.
--
-- WHAT THE RELAY SEES (wal2json 2.5, checked on PostgreSQL 15.20):
-- wal2json names the PARTITION, not the parent, in every record:
--     {"action":"I",...,"schema":"outbox_part","table":"outbox_p20261130",...}
-- * add-tables=public.outbox_partitioned (the parent) matches nothing:
--   the stream has only the B/C records of such transactions.
-- * add-tables does not take a name prefix: public.outbox_p* matches
--   nothing; "*" works only as a whole schema or table name (public.*,
--   *.outbox_p20261130).
-- * wal2json's partition-root option comes after 2.5: 2.5 answers
--   'option "partition-root" = "1" is unknown'. publish_via_partition_root
--   belongs to publications, i.e. to pgoutput, not to wal2json.
-- So the partitions live in a schema of their own, outbox_part, that holds
-- nothing else, and the relay is pointed at the whole schema:
--     outbox.table = outbox_part.*
-- wal2json's add-tables then takes outbox_part.* and matches every
-- partition, including those created after the relay started.
-- THIS NEEDS THE RELAY CHANGE that accepts "schema.*" in outbox.table
-- (proposed with the outbox_emit decoding). The relay as of this file
-- cannot read this table: with outbox.table = public.outbox_partitioned
-- it starts, streams, and never publishes anything.
-- Do not create any other table in outbox_part: the relay would treat its
-- inserts as outbox events (and stop on the first one that lacks an
-- outbox column).
--
-- Locks: creating a partition with CREATE TABLE ... PARTITION OF takes an
-- ACCESS EXCLUSIVE lock on the parent (blocks every insert while it
-- waits); CREATE TABLE + ATTACH PARTITION takes only SHARE UPDATE
-- EXCLUSIVE, which inserts do not conflict with, so the function does
-- that. Dropping (or detaching) a partition takes ACCESS EXCLUSIVE on the
-- parent: the function sets lock_timeout = 2s so that a long insert
-- transaction makes the maintenance fail (run it again) instead of
-- queueing every insert behind it. Where even that is too much, detach
-- first with ALTER TABLE public.outbox_partitioned DETACH PARTITION
-- outbox_part.outbox_pYYYYMMDD CONCURRENTLY (outside a transaction, so not
-- from a function), then DROP the detached table.
--
-- There is no DEFAULT partition on purpose: an insert for a day that has
-- no partition fails in the application's transaction (loud) instead of
-- landing in a default partition that would block creating that day's
-- partition later. Run the maintenance daily with days_ahead >= 2, e.g.
-- with pg_cron:
--     SELECT cron.schedule('outbox-partitions', '5 0 * * *',
--         $$SELECT * FROM public.outbox_partitions_maintain(3, 7)$$);

CREATE SCHEMA IF NOT EXISTS outbox_part;
COMMENT ON SCHEMA outbox_part IS
    'Partitions of public.outbox_partitioned only; the relay reads every table in it (outbox.table = outbox_part.*). See sql/cleanup.sql.';

CREATE TABLE IF NOT EXISTS public.outbox_partitioned (
    id             uuid        NOT NULL DEFAULT gen_random_uuid(),
    aggregate_type text        NOT NULL,
    aggregate_id   text        NOT NULL,
    event_type     text        NOT NULL,
    payload        jsonb       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    -- A unique constraint on a partitioned table must include the
    -- partition key; id alone stays unique in practice (random uuid).
    PRIMARY KEY (id, created_at)
) PARTITION BY RANGE (created_at);

-- Creates the partitions of as_of .. as_of + days_ahead (UTC days) that do
-- not exist yet, and drops the partitions of days before
-- as_of - keep_days (keep_days = 7: as_of and the 7 days before it stay).
-- Returns one row per partition created or dropped. as_of defaults to
-- today (UTC); another date is for backfills and tests.
-- Runs as its caller (the table owner): no SECURITY DEFINER.
CREATE OR REPLACE FUNCTION public.outbox_partitions_maintain(
    days_ahead int,
    keep_days  int,
    as_of      date DEFAULT (now() AT TIME ZONE 'UTC')::date)
RETURNS TABLE (action text, partition_name text)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '2s'
AS $fn$
DECLARE
    d    date;
    part text;
BEGIN
    IF days_ahead IS NULL OR keep_days IS NULL OR as_of IS NULL
       OR days_ahead < 0 OR keep_days < 0 THEN
        RAISE EXCEPTION 'outbox_partitions_maintain: days_ahead and keep_days must be >= 0, as_of not NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    FOR d IN SELECT generate_series(as_of, as_of + days_ahead, interval '1 day')::date
    LOOP
        part := 'outbox_p' || to_char(d, 'YYYYMMDD');
        CONTINUE WHEN to_regclass(format('outbox_part.%I', part)) IS NOT NULL;
        EXECUTE format('CREATE TABLE outbox_part.%I (LIKE public.outbox_partitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                       part);
        -- Bounds spelled in UTC, whatever the session's TimeZone.
        EXECUTE format('ALTER TABLE public.outbox_partitioned ATTACH PARTITION outbox_part.%I FOR VALUES FROM (%L) TO (%L)',
                       part, d::text || ' 00:00:00+00', (d + 1)::text || ' 00:00:00+00');
        action := 'created';
        partition_name := 'outbox_part.' || part;
        RETURN NEXT;
    END LOOP;

    -- Only partitions of this parent, in outbox_part, named by this
    -- function: a table someone attached under another name is left alone.
    FOR part IN
        SELECT c.relname
          FROM pg_inherits i
          JOIN pg_class c ON c.oid = i.inhrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE i.inhparent = 'public.outbox_partitioned'::regclass
           AND n.nspname = 'outbox_part'
           AND c.relname ~ '^outbox_p[0-9]{8}$'
           AND to_date(substr(c.relname, 9), 'YYYYMMDD') < as_of - keep_days
         ORDER BY c.relname
    LOOP
        EXECUTE format('DROP TABLE outbox_part.%I', part);
        action := 'dropped';
        partition_name := 'outbox_part.' || part;
        RETURN NEXT;
    END LOOP;
END
$fn$;

COMMENT ON FUNCTION public.outbox_partitions_maintain(int, int, date) IS
    'Creates the day partitions of public.outbox_partitioned for as_of..as_of+days_ahead and drops those before as_of-keep_days. See sql/cleanup.sql.';

-- Today's partitions at once, so the table takes inserts right after this
-- file is applied (a no-op when they exist).
DO $do$
BEGIN
    PERFORM public.outbox_partitions_maintain(2, 7);
END
$do$;
