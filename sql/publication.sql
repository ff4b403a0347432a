-- sql/publication.sql -- the publication the relay reads with
-- slot.plugin = pgoutput.
--
-- For a DBA, when the relay's role may not create it (--create-slot then
-- exits 77 and prints the same statement). Run with psql as the owner of
-- the outbox table, or a superuser (FOR TABLES IN SCHEMA needs one),
-- connected to the application database, BEFORE the relay's
-- --create-slot: pgoutput reads the publication as of each change, so a
-- slot created before it cannot decode what was written in between.
--
--     psql -d app -v ON_ERROR_STOP=1 -f sql/publication.sql
--     psql -d app -v ON_ERROR_STOP=1 -v publication=orders_pub \
--          -v outbox_schema=orders -v outbox_table='*' -f sql/publication.sql
--
-- psql variables (optional), matching the relay's keys: publication
-- (slot.publication, default outbox_pub), outbox_schema and outbox_table
-- (outbox.table = schema.table, default public.outbox; '*' for
-- outbox.table = schema.*).
--
-- Inserts only: the outbox is insert-only, and every update or delete
-- published would be decoded just to be stepped over. No WHERE clause
-- and no column list: the server would drop events, or the columns the
-- relay reads, without an error anywhere (--check fails on both).
--
-- Idempotent: an existing publication of that name is left as it is (it
-- may serve others); outbox-relay --check says whether it fits.

\if :{?publication}
\else
\set publication outbox_pub
\endif
\if :{?outbox_schema}
\else
\set outbox_schema public
\endif
\if :{?outbox_table}
\else
\set outbox_table outbox
\endif

SELECT format('CREATE PUBLICATION %I FOR %s WITH (publish = %L)',
              :'publication',
              CASE WHEN :'outbox_table' = '*'
                   THEN format('TABLES IN SCHEMA %I', :'outbox_schema')
                   ELSE format('TABLE %I.%I', :'outbox_schema', :'outbox_table')
              END,
              'insert')
WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_publication
                  WHERE pubname = :'publication')
\gexec
