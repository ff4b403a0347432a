-- sql/roles.sql -- least-privilege roles for outbox-relay.
--
-- Run with psql as a superuser (only a superuser may give a role the
-- REPLICATION attribute), connected to the application database, AFTER
-- the other sql/ files (it grants on the objects that exist):
--
--     psql -d app -v ON_ERROR_STOP=1 -f sql/roles.sql
--     psql -d app -v ON_ERROR_STOP=1 -v relay_role=orders_relay -f sql/roles.sql
--
-- psql variables (optional): relay_role (default outbox_relay),
-- monitor_role (outbox_monitor), writer_role (outbox_writer).
--
-- Roles are cluster-wide; the grants below are per database: apply the
-- file once in every database that has an outbox. Idempotent: roles are
-- created only when missing, then their attributes are (re)set; GRANT of
-- something already granted is a no-op (a NOTICE for role memberships).
--
-- PASSWORDS: this file sets none, so a new login role can only log in
-- through a non-password method (peer, cert, gss) until you give it one.
-- Set it interactively, so that it never appears in a file, in argv, in
-- the shell history or in the server log (psql's \password hashes it with
-- SCRAM on the client and sends only the verifier):
--     psql -d app -c '\password outbox_relay'
--     psql -d app -c '\password outbox_monitor'
-- The relay then reads it from a password file (~/.pgpass or PGPASSFILE,
-- mode 0600), never from relay.conf or the command line (README.md).
-- Do not use ALTER ROLE ... PASSWORD 'literal': with log_statement = ddl
-- or all the literal lands in the server log.
--
-- pg_hba.conf (examples; scram-sha-256, adapt the addresses). The relay's
-- stream is a LOGICAL replication connection (replication=database): it
-- is matched by the DATABASE column like an ordinary connection. The
-- keyword "replication" matches only PHYSICAL replication connections
-- (pg_basebackup, standbys) and does NOT let the relay in. The watchdog's
-- second connection is an ordinary one to the same database, matched by
-- the same line:
--
--   # TYPE  DATABASE  USER            ADDRESS          METHOD
--   hostssl app       outbox_relay    10.0.0.0/24      scram-sha-256
--   hostssl app       outbox_monitor  10.0.1.0/24      scram-sha-256
--
-- (Checked on 15.20: with only "host replication outbox_relay ..." the
-- relay's connection fails with 'no pg_hba.conf entry for host ...,
-- user "outbox_relay", database "app"'.)

\if :{?relay_role}
\else
\set relay_role outbox_relay
\endif
\if :{?monitor_role}
\else
\set monitor_role outbox_monitor
\endif
\if :{?writer_role}
\else
\set writer_role outbox_writer
\endif

-- ------------------------------------------------------------ relay role
-- What the relay does and what it needs:
-- * streams from its slot over a replication=database connection and
--   creates/drops slots (--create-slot, --drop-slot): REPLICATION. Nothing
--   else: it never reads the outbox table (the rows come from the WAL),
--   so it gets no SELECT on it and no privilege on any application table.
-- * reads pg_catalog (pg_class/pg_attribute for the startup check,
--   pg_replication_slots, pg_stat_replication_slots, pg_settings
--   max_slot_wal_keep_size, pg_current_wal_lsn()): readable by every role.
-- * pg_read_all_stats: the watchdog reports the oldest transaction that
--   holds back the slot from pg_stat_activity; without this membership
--   PostgreSQL hides xact_start (and query) of other roles' sessions and
--   that figure silently reads 0.
-- * pg_read_all_settings: --check reads output_plugin_libraries, which a
--   plain role may not SHOW ("must be superuser or have privileges of
--   pg_read_all_settings").
--   Both are members of pg_monitor; the third member, pg_stat_scan_tables
--   (functions that take locks on tables), is not needed, hence not the
--   whole of pg_monitor.
-- * heartbeats (heartbeat.interval.ms > 0) call
--   pg_logical_emit_message(false, ...): EXECUTE on it, which emit.sql
--   revokes from PUBLIC.
-- * heartbeat.action.query, if set, runs as this role: grant what that
--   statement needs yourself.
-- NOSUPERUSER etc. are set explicitly so that re-running the file also
-- repairs a role someone widened by hand.
SELECT format('CREATE ROLE %I', :'relay_role')
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = :'relay_role')
\gexec
ALTER ROLE :"relay_role" WITH LOGIN REPLICATION NOSUPERUSER NOCREATEDB
    NOCREATEROLE NOBYPASSRLS INHERIT;
COMMENT ON ROLE :"relay_role" IS 'outbox-relay: logical replication from the outbox slot (sql/roles.sql)';
-- (Memberships only when missing: a repeated GRANT of a role says NOTICE.)
SELECT format('GRANT %I TO %I', g, :'relay_role')
  FROM unnest(ARRAY['pg_read_all_stats', 'pg_read_all_settings']) AS g
 WHERE NOT pg_catalog.pg_has_role(:'relay_role', g, 'MEMBER')
\gexec
GRANT CONNECT ON DATABASE :"DBNAME" TO :"relay_role";
-- The text variant: (boolean, text, text) up to PostgreSQL 16, (boolean,
-- text, text, boolean) from 17 on (flush, DEFAULT false), so found in
-- pg_proc rather than named.
SELECT format('GRANT EXECUTE ON FUNCTION pg_catalog.%I(%s) TO %I', p.proname,
              pg_catalog.pg_get_function_identity_arguments(p.oid), :'relay_role')
  FROM pg_catalog.pg_proc p
 WHERE p.proname = 'pg_logical_emit_message'
   AND p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
   AND p.proargtypes[2] = 'pg_catalog.text'::pg_catalog.regtype
\gexec

-- ------------------------------------------------------- monitoring role
-- For external monitoring (postgres_exporter, check_postgres, the
-- Prometheus rules in deploy/): slot lag, retained WAL, wal_status,
-- pg_stat_activity. pg_monitor is the predefined role for exactly that.
-- No REPLICATION, no table privileges.
SELECT format('CREATE ROLE %I', :'monitor_role')
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = :'monitor_role')
\gexec
ALTER ROLE :"monitor_role" WITH LOGIN NOREPLICATION NOSUPERUSER NOCREATEDB
    NOCREATEROLE NOBYPASSRLS INHERIT;
COMMENT ON ROLE :"monitor_role" IS 'outbox-relay: monitoring (pg_monitor) (sql/roles.sql)';
SELECT format('GRANT pg_monitor TO %I', :'monitor_role')
 WHERE NOT pg_catalog.pg_has_role(:'monitor_role', 'pg_monitor', 'MEMBER')
\gexec
GRANT CONNECT ON DATABASE :"DBNAME" TO :"monitor_role";

-- ----------------------------------------------------------- writer role
-- A NOLOGIN group role for the applications that publish events; give it
-- to their login roles:  GRANT outbox_writer TO orders_service;
-- It can INSERT into the outbox tables (the partitioned one through its
-- parent: partitions' own privileges are not checked when rows are
-- routed from the parent) and call outbox_emit(). It gets no SELECT, no
-- UPDATE and no DELETE: the insert-then-delete trigger of cleanup.sql
-- runs as its owner. Without SELECT, INSERT ... RETURNING id is refused:
-- let the application generate the id (or GRANT SELECT (id) yourself).
SELECT format('CREATE ROLE %I', :'writer_role')
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = :'writer_role')
\gexec
ALTER ROLE :"writer_role" WITH NOLOGIN NOREPLICATION NOSUPERUSER NOCREATEDB
    NOCREATEROLE NOBYPASSRLS INHERIT;
COMMENT ON ROLE :"writer_role" IS 'outbox-relay: may publish outbox events (sql/roles.sql)';
-- Only for the objects that exist: the kit's files are all optional.
SELECT format('GRANT INSERT ON TABLE %s TO %I', t::regclass, :'writer_role')
  FROM unnest(ARRAY['public.outbox', 'public.outbox_partitioned']) AS t
 WHERE pg_catalog.to_regclass(t) IS NOT NULL
\gexec
SELECT format('GRANT EXECUTE ON FUNCTION %s TO %I', p::regprocedure, :'writer_role')
  FROM unnest(ARRAY['public.outbox_emit(text, text, text, jsonb)']) AS p
 WHERE pg_catalog.to_regprocedure(p) IS NOT NULL
\gexec
