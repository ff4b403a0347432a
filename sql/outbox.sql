-- sql/outbox.sql -- the transactional outbox table that outbox-relay reads.
--
-- The application inserts one row per event in the same transaction as its
-- business change; the relay streams committed inserts from a wal2json
-- logical replication slot to Kafka (topic outbox.event.<aggregate_type>,
-- key aggregate_id, value payload). Rows can be deleted right away (even in
-- the inserting transaction): the relay only needs the insert in the WAL.
-- Idempotent: safe to apply to an existing database.

CREATE TABLE IF NOT EXISTS public.outbox (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    aggregate_type text        NOT NULL,
    aggregate_id   text        NOT NULL,
    event_type     text        NOT NULL,
    payload        jsonb       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
