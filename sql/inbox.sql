-- sql/inbox.sql -- the consumer side: process each event at most once.
--
-- The relay delivers at least once: after a crash, a reconnect or a Kafka
-- error it replays from its slot, and a consumer can see an event again
-- (README.md, "What a consumer must do with duplicates"). Every record
-- carries the event id in its "id" header. A consumer that writes to
-- PostgreSQL makes its processing idempotent by recording that id IN THE
-- SAME TRANSACTION as its own side effects:
--
--     BEGIN;
--     SELECT inbox_claim('6f1c0a52-1f0e-4a4e-9d7b-2f8f5a0e9c11');  -- id header
--       -- true:  first time: apply the side effects, then COMMIT
--       -- false: already processed: apply nothing, COMMIT (or ROLLBACK)
--     UPDATE stock SET reserved = reserved + 1 WHERE sku = 'A-1';
--     COMMIT;
--     -- only now commit the Kafka offset
--
-- Why it is correct:
-- * The id row and the side effects commit or roll back together: a crash
--   before COMMIT leaves neither, so the redelivered event is processed;
--   a crash after COMMIT but before the offset commit leaves both, so the
--   redelivery is recognised and skipped.
-- * Two consumers handling the same event at once (a rebalance): the
--   second INSERT waits on the first one's unique-index entry; if the
--   first commits, the second gets false; if it rolls back, the second
--   inserts and gets true. No SELECT-then-INSERT race, no lost event.
-- * ON CONFLICT DO NOTHING needs no exception handling and leaves no
--   aborted subtransaction behind.
--
-- Without the function, the same check-and-insert as a plain statement:
--     INSERT INTO processed_events (event_id) VALUES ($1)
--     ON CONFLICT (event_id) DO NOTHING
--     RETURNING event_id;      -- one row: first time; no row: duplicate
--
-- One processed_events table per consumer (per consumer group): the key
-- is the event id alone, so two services that both handle an event need
-- their own tables (or add a consumer column to the primary key).
-- Event ids from sql/outbox.sql and sql/emit.sql are uuids; an outbox with
-- other ids (table.field.event.id on a bigint or text column) needs
-- event_id text instead.
--
-- Retention: keep ids at least as long as an event can come back, i.e. the
-- topic's retention.ms (a consumer group reset to the earliest offset
-- replays that far) plus the relay's replay window. For example, daily:
--     DELETE FROM processed_events WHERE processed_at < now() - interval '30 days';
--
-- Idempotent: CREATE ... IF NOT EXISTS, CREATE OR REPLACE.

CREATE TABLE IF NOT EXISTS public.processed_events (
    event_id     uuid        PRIMARY KEY,
    processed_at timestamptz NOT NULL DEFAULT now()
);

-- For the retention DELETE above.
CREATE INDEX IF NOT EXISTS processed_events_processed_at_idx
    ON public.processed_events (processed_at);

-- true the first time an id is claimed (the row is inserted), false when
-- it was already there. Runs as the caller, inside the caller's
-- transaction: the claim is undone with it on ROLLBACK. The caller needs
-- INSERT on processed_events. A NULL id is an error (not_null_violation),
-- never a silent skip.
CREATE OR REPLACE FUNCTION public.inbox_claim(event_id uuid)
RETURNS boolean
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
    WITH claimed AS (
        INSERT INTO public.processed_events (event_id)
        VALUES (inbox_claim.event_id)
        ON CONFLICT (event_id) DO NOTHING
        RETURNING 1
    )
    SELECT EXISTS (SELECT FROM claimed);
$fn$;

COMMENT ON FUNCTION public.inbox_claim(uuid) IS
    'Consumer-side check-and-insert: true the first time an event id is seen in this database, false afterwards. Call it in the transaction that applies the event. See sql/inbox.sql.';
