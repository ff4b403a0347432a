/* SPDX-License-Identifier: Apache-2.0 */
/* act_check.c -- --check: a preflight of everything the relay needs,
 * one item each (ok, warn or fail, what was found, the fix): the
 * PostgreSQL side here, Kafka in act_check_kafka.c. The slot and table
 * items ask slot.h, so they say what the relay would say at start. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_int.h"

/* True when the comma-separated list names plugin. */
static bool plugin_listed(const char *list, const char *plugin)
{
	size_t plen = strlen(plugin);

	for (const char *p = list; *p != '\0';) {
		size_t n;
		p += strspn(p, ", ");
		n = strcspn(p, ", ");
		if (n == plen && strncmp(p, plugin, n) == 0)
			return true;
		p += n;
	}
	return false;
}

/* "pgoutput, test_decoding" -> "'pgoutput', 'test_decoding'". */
static void quote_list(const char *in, char *out, size_t outlen)
{
	size_t n = 0;

	out[0] = '\0';
	while (*in != '\0') {
		size_t len;
		while (*in == ',' || *in == ' ' || *in == '\t')
			in++;
		len = strcspn(in, ", \t");
		if (len == 0 || n + len + 5 >= outlen)
			break;
		n += (size_t)snprintf(out + n, outlen - n, "%s'%.*s'",
		                      n ? ", " : "", (int)len, in);
		in += len;
	}
}

/* Server settings and the role; s is filled for the items after them.
 * Returns false when the settings could not be read. */
static bool check_server(struct cli_checks *c, PGconn *conn, bool slot_exists,
                         const char *plugin, struct slot_server *srv)
{
	struct slot_server s;
	struct pgu_status st;
	char fix[1024], err[1400];

	if (slot_server_read(conn, cli_deadline(), &s, &st, err,
	                     sizeof(err)) < 0) {
		check_item(c, "server_settings", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           NULL, "cannot read them: %s", err);
		return false;
	}
	*srv = s;
	/* 15: make check, both plugins; 16 to 18: make check-pg-matrix,
	 * pgoutput only (their builds there have no wal2json). */
	int major = s.version_num / 10000;
	bool tested = major == 15 || (major >= 16 && major <= 18 &&
	                              strcmp(plugin, "pgoutput") == 0);
	check_item(c, "server_version", tested ? CHECK_OK : CHECK_WARN, 0,
	           "outbox-relay is tested on PostgreSQL 15, and on 16 to 18 "
	           "with slot.plugin = pgoutput: run its integration tests "
	           "against this version first", "PostgreSQL %s (%d)",
	           s.version, s.version_num);
	check_item(c, "wal_level",
	           strcmp(s.wal_level, "logical") ? CHECK_FAIL : CHECK_OK,
	           RELAY_EXIT_UNAVAILABLE, "ALTER SYSTEM SET wal_level = logical; "
	           "then restart PostgreSQL", "%s", s.wal_level);
	check_item(c, "max_replication_slots",
	           s.used_slots >= s.max_slots && !slot_exists ? CHECK_FAIL
	           : s.used_slots >= s.max_slots - 1           ? CHECK_WARN
	                                                       : CHECK_OK,
	           RELAY_EXIT_UNAVAILABLE, "raise max_replication_slots (restart) "
	           "or drop slots nobody uses", "%d of %d in use", s.used_slots,
	           s.max_slots);
	check_item(c, "max_wal_senders",
	           s.used_senders >= s.max_senders - 1 ? CHECK_WARN : CHECK_OK, 0,
	           "raise max_wal_senders (restart): the relay needs one, a "
	           "standby relay another", "%d of %d in use", s.used_senders,
	           s.max_senders);
	if (!s.plugin_libs_known && !s.read_all_settings) {
		/* A superuser-only setting: pg_settings hides it. */
		check_item(c, "output_plugin_libraries", CHECK_OK, 0, NULL,
		           "not readable by role \"%s\" (it needs "
		           "pg_read_all_settings)%s", s.user,
		           strcmp(plugin, "wal2json") == 0
		               ? "; the wal2json item tests it in effect" : "");
	} else if (!s.plugin_libs_known) {
		check_item(c, "output_plugin_libraries", CHECK_OK, 0, NULL,
		           "not a setting of PostgreSQL %s: any installed plugin "
		           "may be used", s.version);
	} else {
		bool listed = plugin_listed(s.plugin_libs, plugin);
		char list[512];
		/* A list setting: each library its own literal. One literal
		 * holding "a, b" would name a single library called that. */
		quote_list(s.plugin_libs, list, sizeof(list));
		snprintf(fix, sizeof(fix), "ALTER SYSTEM SET output_plugin_libraries "
		         "= %s%s'%s'; SELECT pg_reload_conf(); (this trusts "
		         "%s for every REPLICATION role)", list,
		         list[0] ? ", " : "", plugin, plugin);
		check_item(c, "output_plugin_libraries", listed ? CHECK_OK : CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, fix, "'%s'%s%s%s", s.plugin_libs,
		           listed ? "" : ": ", listed ? "" : plugin,
		           listed ? "" : " is not allowed");
	}
	check_item(c, "max_slot_wal_keep_size",
	           strcmp(s.max_slot_wal_keep_size, "-1") == 0 ? CHECK_WARN
	                                                       : CHECK_OK, 0,
	           "ALTER SYSTEM SET max_slot_wal_keep_size = '<below the free space "
	           "of the WAL disk>'; SELECT pg_reload_conf(); (a stalled slot then "
	           "loses WAL instead of filling the disk)",
	           "%s%s", s.max_slot_wal_keep_size,
	           strcmp(s.max_slot_wal_keep_size, "-1") == 0
	               ? " (unlimited: a stalled slot keeps WAL until the disk is "
	                 "full)" : "");
	snprintf(fix, sizeof(fix), "ALTER ROLE \"%s\" REPLICATION;", s.user);
	if (s.superuser)
		check_item(c, "role", CHECK_WARN, 0, "use a LOGIN REPLICATION role "
		           "that is not a superuser (least privilege)",
		           "\"%s\" is a superuser", s.user);
	else
		check_item(c, "role", s.replication ? CHECK_OK : CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, fix, "\"%s\"%s", s.user,
		           s.replication ? " has REPLICATION" : " lacks REPLICATION");
	return true;
}

/* synchronized_standby_slots (17) against the standbys streaming now:
 * the relay must not receive a transaction a standby that may be
 * promoted has not received, or after a failover to it Kafka holds an
 * event the new primary never committed (a ghost). */
static void check_standby_slots(struct cli_checks *c,
                                const struct slot_server *s)
{
	char missing[512], unknown[512], idle[512], fix[1024];
	const char *set = s->standby_slots;

	slot_standby_compare(set, s->physical, s->physical_active, missing,
	                     sizeof(missing), unknown, sizeof(unknown), idle,
	                     sizeof(idle));
	snprintf(fix, sizeof(fix), "ALTER SYSTEM SET synchronized_standby_slots "
	         "= '<the physical slot of each standby that may be promoted>'; "
	         "SELECT pg_reload_conf();%s%s%s (runbook, section \"failover\")",
	         s->physical_active[0] ? " (streaming now: " : "",
	         s->physical_active, s->physical_active[0] ? ")" : "");
	if (unknown[0] != '\0') {
		check_item(c, "synchronized_standby_slots", CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, fix, "'%s' names %s, which is no "
		           "physical replication slot here: the relay's walsender "
		           "waits for it and sends nothing", set, unknown);
	} else if (missing[0] != '\0') {
		check_item(c, "synchronized_standby_slots", CHECK_WARN, 0, fix,
		           "%s%s%s, but a standby streams from physical slot %s: the "
		           "relay may receive a transaction that standby has not; "
		           "after a failover to it, Kafka holds events the new "
		           "primary never committed (ghosts)", set[0] ? "'" : "",
		           set[0] ? set : "empty", set[0] ? "'" : "", missing);
	} else if (idle[0] != '\0') {
		check_item(c, "synchronized_standby_slots", CHECK_WARN, 0,
		           "start that standby, or take its slot out of the setting "
		           "if it is not to be promoted", "'%s': no standby streams "
		           "from %s now, and the relay's walsender waits for it: "
		           "nothing is published until it does", set, idle);
	} else if (set[0] == '\0') {
		check_item(c, "synchronized_standby_slots", CHECK_OK, 0, NULL,
		           "empty; no standby streams from a physical slot now%s",
		           s->physical[0] ? "" : " (there is none)");
	} else {
		check_item(c, "synchronized_standby_slots", CHECK_OK, 0, NULL,
		           "'%s': every standby streaming from a physical slot is "
		           "named, so the relay receives only what they have", set);
	}
	if (s->slotless_senders > 0)
		check_item(c, "standbys_without_slot", CHECK_WARN, 0,
		           "give each standby a physical slot (primary_slot_name), "
		           "name it in synchronized_standby_slots, and set "
		           "sync_replication_slots = on and hot_standby_feedback = on "
		           "on the standby", "%d walsender%s without a replication "
		           "slot (a standby without primary_slot_name, or a base "
		           "backup): synchronized_standby_slots cannot name it and "
		           "the failover slot is not synchronized to it",
		           s->slotless_senders, s->slotless_senders == 1 ? "" : "s");
}

/* Failover slots (17) and the idle timeout (18), as slot.failover asks.
 * row is NULL when the slot could not be read. */
static void check_failover(struct cli_checks *c, const struct slot_server *s,
                           const struct slot_row *row,
                           const struct relay_config *cfg)
{
	const char *name = cfg->slot_name;
	char err[512], fix[512];
	bool want;

	if (slot_failover_wanted(cfg->slot_failover, s->version_num, &want, err,
	                         sizeof(err)) < 0) {
		check_item(c, "failover_slot", CHECK_FAIL, RELAY_EXIT_CONFIG,
		           "set slot.failover = auto", "%s", err);
	} else if (s->version_num < SLOT_PG_FAILOVER) {
		check_item(c, "failover_slot",
		           strcmp(cfg->slot_failover, "off") == 0 ? CHECK_OK
		                                                  : CHECK_WARN, 0,
		           "plan a promotion with the runbook, section \"failover\" "
		           "(failover slots need PostgreSQL 17)", "not available on "
		           "PostgreSQL %d: after a promotion the new primary has no "
		           "slot \"%s\" and the relay stops (slot does not exist)",
		           s->version_num / 10000, name);
	} else if (!want) {
		check_item(c, "failover_slot", CHECK_OK, 0, NULL, "off "
		           "(slot.failover = off): after a promotion the new primary "
		           "has no slot \"%s\"", name);
	} else if (s->in_recovery) {
		check_item(c, "failover_slot", CHECK_WARN, 0, "point pg.conninfo at "
		           "the primary", "the server is a standby (in recovery): "
		           "failover slots are made and checked on the primary%s",
		           row != NULL && row->synced == SLOT_FLAG_TRUE
		               ? "; this slot is a synchronized copy" : "");
	} else if (row == NULL || !row->exists) {
		check_item(c, "failover_slot", CHECK_OK, 0, NULL, "no slot yet: "
		           "--create-slot creates \"%s\" with FAILOVER", name);
	} else if (row->failover != SLOT_FLAG_TRUE) {
		snprintf(fix, sizeof(fix), "while no relay streams from it: "
		         "ALTER_REPLICATION_SLOT \"%s\" (FAILOVER true) on a "
		         "replication connection (psql \"dbname=<db> "
		         "replication=database\"), or drop it and run --create-slot",
		         name);
		check_item(c, "failover_slot",
		           strcmp(cfg->slot_failover, "on") == 0 ? CHECK_FAIL
		                                                 : CHECK_WARN,
		           RELAY_EXIT_UNAVAILABLE, fix, "\"%s\" is not a failover "
		           "slot: standbys do not get a copy, and after a promotion "
		           "the new primary has none", name);
	} else {
		check_item(c, "failover_slot", CHECK_OK, 0, NULL, "\"%s\" is a "
		           "failover slot (standbys with sync_replication_slots = on "
		           "keep a copy)", name);
	}
	if (want && s->version_num >= SLOT_PG_FAILOVER && !s->in_recovery &&
	    s->standby_slots_known)
		check_standby_slots(c, s);
	if (s->idle_timeout_s > 0)
		check_item(c, "idle_replication_slot_timeout", CHECK_WARN, 0,
		           "keep a standby relay running, or raise it above the "
		           "longest relay outage (0 turns it off): ALTER SYSTEM SET "
		           "idle_replication_slot_timeout = 0; SELECT pg_reload_conf();",
		           "%lld s: a slot no relay streams from for that long is "
		           "invalidated at the next checkpoint (invalidation_reason "
		           "idle_timeout; the relay then stops with exit 69, runbook: "
		           "slot lost)", (long long)s->idle_timeout_s);
	else if (s->idle_timeout_s == 0)
		check_item(c, "idle_replication_slot_timeout", CHECK_OK, 0, NULL,
		           "0 (off)");
}

/* wal2json is installed and allowed: pg_available_extensions does not
 * list an output plugin, so a TEMPORARY slot is created with it (gone
 * at disconnect at the latest) and dropped again. */
static void check_wal2json(struct cli_checks *c, PGconn *conn)
{
	struct pgu_status st;
	char name[64], err[1400];

	snprintf(name, sizeof(name), "outbox_relay_check_%d", (int)getpid());
	if (slot_try_wal2json(conn, name, cli_deadline(), &st, err,
	                      sizeof(err)) == 0)
		check_item(c, "wal2json", CHECK_OK, 0, NULL, "loadable: a temporary "
		           "wal2json slot was created and dropped");
	else if (strcmp(st.sqlstate, "58P01") == 0)
		check_item(c, "wal2json", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "install wal2json for this server (Debian: apt-get install "
		           "postgresql-15-wal2json)", "not installed: %s", err);
	else if (strstr(err, "output_plugin_libraries") != NULL)
		check_item(c, "wal2json", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "as a superuser: ALTER SYSTEM SET output_plugin_libraries "
		           "= '<each current library>', 'wal2json'; "
		           "SELECT pg_reload_conf(); "
		           "(this trusts wal2json for every REPLICATION role)",
		           "not allowed: %s", err);
	else if (strcmp(st.sqlstate, "53400") == 0)
		check_item(c, "wal2json", CHECK_WARN, 0, "free a replication slot and "
		           "run --check again", "not tested: no free replication "
		           "slot for a temporary one");
	else if (strcmp(st.sqlstate, "57014") == 0)
		check_item(c, "wal2json", CHECK_WARN, 0, "end long-running "
		           "transactions (pg_stat_activity) or raise --timeout-ms",
		           "not tested: creating a slot waits for running "
		           "transactions, which did not end in time");
	else
		check_item(c, "wal2json", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, NULL,
		           "a temporary wal2json slot could not be created: %s", err);
}

/* pgoutput is part of PostgreSQL: what must be right is the
 * publication it publishes (slot.h), which wal2json does not have. */
static void check_publication(struct cli_checks *c, PGconn *conn,
                              const struct relay_config *cfg)
{
	struct stream_spec ss;
	struct slot_pub p;
	struct pgu_status st;
	enum slot_pub_verdict v;
	char err[1400], what[1024], fix[1400];

	check_item(c, "pgoutput", CHECK_OK, 0, NULL, "built into PostgreSQL: "
	           "nothing to install (publication \"%s\")",
	           cfg->slot_publication);
	ss_init(&ss, cfg);
	if (slot_pub_read(conn, cfg->slot_publication, &ss.spec, cli_deadline(),
	                  &p, &st, err, sizeof(err)) < 0) {
		check_item(c, "publication", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, NULL,
		           "cannot read it: %s", err);
	} else {
		v = slot_pub_judge(&p);
		slot_pub_text(v, &p, cfg->slot_publication, &ss.spec, what,
		              sizeof(what), fix, sizeof(fix));
		check_item(c, "publication", v == PUB_OK ? CHECK_OK : CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, fix, "%s", what);
	}
	ss_free(&ss);
}

/* pg_hba admits a replication=database connection of this role. */
static void check_replication(struct cli_checks *c,
                              const struct relay_config *cfg)
{
	struct pgu_system sys;
	struct pgu_status st;
	char err[1400];
	PGconn *conn = cli_connect(cfg, true, 0, err, sizeof(err));

	if (conn == NULL) {
		check_item(c, "replication_connection", CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, "allow it in pg_hba.conf with a "
		           "line naming the database (logical replication "
		           "connections match the database name, not the "
		           "\"replication\" keyword), e.g. \"hostssl <db> <role> "
		           "<relay address>/32 scram-sha-256\", then reload", "%s", err);
		return;
	}
	if (pgu_identify(conn, cli_deadline(), &sys, &st, err, sizeof(err)) < 0)
		check_item(c, "replication_connection", CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, NULL, "%s", err);
	else
		check_item(c, "replication_connection", CHECK_OK, 0, NULL,
		           "accepted (system %s, timeline %d, WAL at " LSN_FMT ")",
		           sys.system_id, sys.timeline, LSN_ARGS(sys.xlogpos));
	PQfinish(conn);
}

/* The outbox table as the relay checks it at start (slot.h), with the
 * payload column's type on top: a text payload is checked as JSON. */
static void check_table(struct cli_checks *c, PGconn *conn,
                        const struct relay_config *cfg)
{
	struct stream_spec ss;
	struct slot_table t;
	struct pgu_status st;
	char err[1400];
	const char *pt;

	ss_init(&ss, cfg);
	if (slot_table_check(conn, &ss.spec, cli_deadline(), &t, &st, err,
	                     sizeof(err)) < 0) {
		check_item(c, "outbox_table", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, NULL,
		           "cannot read its columns: %s", err);
	} else if (t.verdict == TABLE_NOT_TABLE) {
		check_item(c, "outbox_table", CHECK_FAIL, RELAY_EXIT_CONFIG, t.fix,
		           "%s (the relay refuses it, exit 78)", t.what);
	} else if (t.verdict != TABLE_OK) {
		check_item(c, "outbox_table", CHECK_FAIL, RELAY_EXIT_CONFIG, t.fix,
		           "%s", t.what);
	} else if (strcmp(cfg->outbox_table, "*") == 0) {
		check_item(c, "outbox_table", CHECK_OK, 0, NULL, "%s.* (%ld table%s, "
		           "each with the configured columns)", cfg->outbox_schema,
		           t.tables, t.tables == 1 ? "" : "s");
	} else if (pt = t.payload_type, strcmp(pt, "json") != 0 &&
	                                    strcmp(pt, "jsonb") != 0) {
		check_item(c, "outbox_table", CHECK_WARN, 0, "make the payload column "
		           "jsonb (ALTER TABLE ... ALTER COLUMN ... TYPE jsonb USING "
		           "... ::jsonb)", "%s.%s (%s): the payload column is %s, so "
		           "every value is checked as JSON and one that is not stops "
		           "the relay (exit 65)", cfg->outbox_schema,
		           cfg->outbox_table, t.columns, pt);
	} else {
		check_item(c, "outbox_table", CHECK_OK, 0, NULL, "%s.%s (%s)",
		           cfg->outbox_schema, cfg->outbox_table, t.columns);
	}
	ss_free(&ss);
}

/* The slot as the relay judges it; active is a warning here (a relay
 * started now waits in standby). */
static void check_slot(struct cli_checks *c, const struct slot_row *s,
                       const char *name, const char *plugin)
{
	enum slot_refusal why = slot_judge(s, plugin, 0);
	char what[600], retained[32];

	if (why == SLOT_ACTIVE) {
		check_item(c, "slot", CHECK_WARN, 0, "stop the other relay, or keep "
		           "this one as a hot standby", "\"%s\" is active for PID %d: "
		           "a relay started now waits in standby", name, s->active_pid);
	} else if (why != SLOT_USABLE) {
		slot_refusal_what(why, s, name, what, sizeof(what));
		check_item(c, "slot", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           slot_refusal_fix(why), "%s", what);
	} else {
		fmt_bytes(retained, sizeof(retained), (double)s->retained_bytes);
		check_item(c, "slot", CHECK_OK, 0, NULL, "\"%s\": %s, "
		           "confirmed_flush_lsn " LSN_FMT ", retained WAL %s", name,
		           s->plugin, LSN_ARGS(s->confirmed_lsn), retained);
	}
}

/* The slot against the slot ledger, as the relay will check it (read
 * only: a missing topic is not created here). */
static void check_ledger(struct cli_checks *c, const struct relay_config *cfg,
                         const struct slot_row *s)
{
	struct ledger_entry e;
	char err[1400], key[256];

	if (cfg->slot_ledger_topic[0] == '\0') {
		check_item(c, "slot_ledger", CHECK_WARN, 0, "set slot.ledger.topic",
		           "off: a slot dropped and created again would not be noticed");
		return;
	}
	if (cli_ledger_key(cfg, s->database, key, sizeof(key), err,
	                   sizeof(err)) < 0 ||
	    cli_ledger_read(cfg, key, false, &e, err, sizeof(err)) < 0) {
		check_item(c, "slot_ledger", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "the relay confirms nothing it cannot record there",
		           "%s", err);
		return;
	}
	if (ledger_check(&e, cfg->slot_name, s->confirmed_lsn, err,
	                 sizeof(err)) < 0) {
		check_item(c, "slot_ledger", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, NULL,
		           "%s", err);
		return;
	}
	if (e.found)
		check_item(c, "slot_ledger", CHECK_OK, 0, NULL, "%s: slot at " LSN_FMT
		           ", recorded " LSN_FMT " (by %s at %s)",
		           cfg->slot_ledger_topic, LSN_ARGS(s->confirmed_lsn),
		           LSN_ARGS(e.lsn), e.by, e.at);
	else
		check_item(c, "slot_ledger", CHECK_OK, 0, NULL, "%s: %s; the relay's "
		           "first confirm records the slot", cfg->slot_ledger_topic,
		           e.no_topic ? "no such topic yet (the relay creates it, "
		                        "compacted)" : "no record of the slot yet");
}

static void check_postgres(struct cli_checks *c, const struct relay_config *cfg,
                           int64_t timeout_ms)
{
	struct pgu_status st;
	struct slot_row s;
	struct slot_server srv;
	char err[1400];
	PGconn *conn;
	bool slot_read_ok, srv_ok;

	if (cfg->pg_conninfo[0] == '\0') {
		check_item(c, "postgres_connection", CHECK_FAIL, RELAY_EXIT_CONFIG,
		           "set pg.conninfo", "pg.conninfo is not set");
		return;
	}
	if (cfg_check_conninfo(cfg, err, sizeof(err)) < 0) {
		check_item(c, "postgres_connection", CHECK_FAIL, RELAY_EXIT_CONFIG,
		           "fix pg.conninfo", "%s", err);
		return;
	}
	conn = cli_connect(cfg, false, timeout_ms, err, sizeof(err));
	if (conn == NULL) {
		check_item(c, "postgres_connection", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "check pg.conninfo, the server and pg_hba.conf", "%s", err);
		return;
	}
	check_item(c, "postgres_connection", CHECK_OK, 0, NULL,
	           "connected to database \"%s\" as \"%s\"", PQdb(conn),
	           PQuser(conn));
	slot_read_ok = slot_read(conn, cfg->slot_name, cli_deadline(), &s, &st,
	                         err, sizeof(err)) == 0;
	if (!slot_read_ok)
		check_item(c, "slot", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, NULL, "%s",
		           err);
	/* A slot that could not be read is not blamed for the slot count. */
	srv_ok = check_server(c, conn, !slot_read_ok || s.exists, cfg->slot_plugin,
	                      &srv);
	if (strcmp(cfg->slot_plugin, "pgoutput") != 0)
		check_wal2json(c, conn);
	check_replication(c, cfg);
	check_table(c, conn, cfg);
	if (strcmp(cfg->slot_plugin, "pgoutput") == 0)
		check_publication(c, conn, cfg);
	if (slot_read_ok)
		check_slot(c, &s, cfg->slot_name, cfg->slot_plugin);
	if (srv_ok)
		check_failover(c, &srv, slot_read_ok ? &s : NULL, cfg);
	if (slot_read_ok && s.exists && s.confirmed_known)
		check_ledger(c, cfg, &s);
	PQfinish(conn);
}

int act_check(const struct relay_config *cfg, const struct cli_args *a)
{
	struct cli_checks c = { .json = a->json };
	int64_t timeout = a->timeout_ms > 0 ? a->timeout_ms : 10000;

	if (c.json)
		c.items = json_array();
	check_postgres(&c, cfg, timeout);
	check_kafka(&c, cfg, timeout);
	if (c.json) {
		json_t *j = json_object();
		json_object_set_new(j, "ok", json_integer(c.n[CHECK_OK]));
		json_object_set_new(j, "warn", json_integer(c.n[CHECK_WARN]));
		json_object_set_new(j, "fail", json_integer(c.n[CHECK_FAIL]));
		json_object_set_new(j, "checks", c.items);
		cli_json_out(j);
	} else {
		printf("%u ok, %u warn, %u fail\n", c.n[CHECK_OK], c.n[CHECK_WARN],
		       c.n[CHECK_FAIL]);
	}
	return c.n[CHECK_FAIL] > 0 ? c.exit_code : RELAY_EXIT_OK;
}
