#!/bin/sh
# Runs once, when the database is first initialised (deploy/compose.yaml):
# allows wal2json where the server restricts output plugins, and creates
# the relay's slot (the relay never creates one). sql/outbox.sql ran
# before this, so the slot starts after the outbox table exists.
set -eu
q() { psql -v ON_ERROR_STOP=1 -U postgres -d app -At -c "$1"; }
if [ "$(q "SELECT count(*) FROM pg_settings WHERE name = 'output_plugin_libraries'")" = 1 ]; then
	q "ALTER SYSTEM SET output_plugin_libraries = 'pgoutput', 'wal2json'"
fi
q "SELECT pg_create_logical_replication_slot('outbox_relay', 'wal2json')"
