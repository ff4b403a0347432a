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

-- ----------------------------------------------------------------------
-- Prisma variant (camelCase columns). Prisma creates the table from its
-- schema; this model
--
--     model Outbox {
--       id            String   @id @default(dbgenerated("gen_random_uuid()")) @db.Uuid
--       aggregateType String
--       aggregateId   String
--       eventType     String
--       payload       Json
--       createdAt     DateTime @default(now())
--     }
--
-- becomes (quoted identifiers: the names keep their case):
--
-- BEGIN PRISMA DDL
-- CREATE TABLE IF NOT EXISTS public."Outbox" (
--     "id"            uuid         PRIMARY KEY DEFAULT gen_random_uuid(),
--     "aggregateType" text         NOT NULL,
--     "aggregateId"   text         NOT NULL,
--     "eventType"     text         NOT NULL,
--     "payload"       jsonb        NOT NULL,
--     "createdAt"     timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
-- );
-- END PRISMA DDL
--
-- and the relay maps it with (relay.conf; names unquoted, exact case):
--
--     outbox.table = public.Outbox
--     table.field.event.key = aggregateId
--     table.field.event.type = eventType
--     route.by.field = aggregateType
--
-- table.field.event.id (id) and table.field.event.payload (payload) keep
-- their defaults. Table and column names are case-sensitive:
-- outbox.table = public.outbox would name another table (the relay stops
-- at start when it does not exist). public."Outbox" is accepted too (the
-- quotes are dropped).
