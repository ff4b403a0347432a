/* SPDX-License-Identifier: Apache-2.0 */
/* slot.c -- the SQL about the slot and the outbox table, and the rules
 * that judge them (slot.h): the slot's row, its refusals, the outbox
 * table, the runbook's changes to the slot, and the peek.
 *
 * The rule tables here are the only wording of each refusal: the relay
 * logs it, a runbook action prints it, --check shows it as an item. The
 * watchdog's sample, the standby's copy and the server's settings are in
 * slot_sample.c, the publication (pgoutput) in slot_pub.c. */
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/slot.h"
#include "slot_int.h"

/* ------------------------------------------------------------ the row */

/* Literal-escaped, so that a replication connection (simple protocol
 * only) can run it. NULL with err filled. */
char *slot_literal(PGconn *conn, const char *s, struct pgu_status *st,
                   char *err, size_t errlen)
{
	char *lit = PQescapeLiteral(conn, s, strlen(s));
	char m[512];

	if (lit == NULL) {
		st->outcome = PGU_Q_NO_ANSWER;
		st->sqlstate[0] = '\0';
		pgu_message(conn, NULL, m, sizeof(m));
		errbuf_set(err, errlen, "escaping a name: %s", m);
	}
	return lit;
}

/* The columns of newer versions, after the thirteen every version has:
 * each selected as its stand-in (older) before the version that has it. */
static const struct {
	const char *expr;
	int since;
	const char *older;
} row_cols[] = {
	{ "s.conflicting", SLOT_PG_CONFLICTING, "NULL::boolean" },
	{ "s.failover", SLOT_PG_FAILOVER, "NULL::boolean" },
	{ "s.synced", SLOT_PG_FAILOVER, "NULL::boolean" },
	{ "coalesce((extract(epoch FROM s.inactive_since) * 1000000)::bigint, 0)",
	  SLOT_PG_FAILOVER, "0::bigint" },
	{ "coalesce(s.invalidation_reason, '')", SLOT_PG_FAILOVER,
	  "CASE WHEN s.wal_status = 'lost' THEN 'wal_removed' ELSE '' END" },
};

#define NROW_BASE 13
#define NROW (NROW_BASE + (int)(sizeof(row_cols) / sizeof(row_cols[0])))

char *slot_read_sql(int version, const char *lit)
{
	char more[1024] = "";
	size_t n = 0;
	char *sql;

	for (size_t i = 0; i < sizeof(row_cols) / sizeof(row_cols[0]); i++)
		n += (size_t)snprintf(more + n, sizeof(more) - n, ", %s",
		                      version < row_cols[i].since ? row_cols[i].older
		                                                  : row_cols[i].expr);
	n = strlen(lit) + strlen(more) + 1400;
	sql = xmalloc(n);
	/* One row whether or not the slot exists. The WAL position of a
	 * server in recovery is its replay position (it has no insert
	 * position; logical slots do not exist there in 15 anyway). */
	snprintf(sql, n,
	         "SELECT s.slot_name IS NOT NULL, coalesce(s.slot_type, ''), "
	         "coalesce(s.plugin, ''), coalesce(s.database::text, ''), "
	         "coalesce(s.database = current_database(), false), "
	         "coalesce(s.active, false), coalesce(s.active_pid, 0), "
	         "coalesce(s.wal_status, ''), coalesce(s.restart_lsn::text, ''), "
	         "coalesce(s.confirmed_flush_lsn::text, ''), "
	         "coalesce(w.lsn::text, ''), "
	         "coalesce(pg_catalog.pg_wal_lsn_diff(w.lsn, s.restart_lsn)::bigint, "
	         "-1), current_user::text%s "
	         "FROM (SELECT CASE WHEN pg_catalog.pg_is_in_recovery() "
	         "      THEN pg_catalog.pg_last_wal_replay_lsn() "
	         "      ELSE pg_catalog.pg_current_wal_lsn() END AS lsn) AS w "
	         "LEFT JOIN pg_catalog.pg_replication_slots s "
	         "ON s.slot_name = %s", more, lit);
	return sql;
}

int slot_read(PGconn *conn, const char *name, int64_t deadline_us,
              struct slot_row *row, struct pgu_status *st, char *err,
              size_t errlen)
{
	char *lit = slot_literal(conn, name, st, err, errlen);
	int version = PQserverVersion(conn);
	char *sql;
	PGresult *res;

	memset(row, 0, sizeof(*row));
	row->retained_bytes = -1;
	if (lit == NULL)
		return -1;
	sql = slot_read_sql(version, lit);
	PQfreemem(lit);
	res = pgu_query(conn, sql, 0, NULL, deadline_us, PGRES_TUPLES_OK,
	                "reading pg_replication_slots", st, err, errlen);
	free(sql);
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1 || PQnfields(res) != NROW) {
		st->outcome = PGU_Q_NO_ANSWER;
		errbuf_set(err, errlen, "reading pg_replication_slots: %d rows of "
		           "%d columns", PQntuples(res), PQnfields(res));
		PQclear(res);
		return -1;
	}
	row->exists = pgu_bool(res, 0, 0);
	row->logical = strcmp(PQgetvalue(res, 0, 1), "logical") == 0;
	snprintf(row->plugin, sizeof(row->plugin), "%s", PQgetvalue(res, 0, 2));
	snprintf(row->database, sizeof(row->database), "%s",
	         PQgetvalue(res, 0, 3));
	row->same_db = pgu_bool(res, 0, 4);
	row->active = pgu_bool(res, 0, 5);
	row->active_pid = (int)pgu_i64(res, 0, 6);
	row->wal_status = wal_status_parse(PQgetvalue(res, 0, 7));
	row->restart_lsn = pgu_lsn(res, 0, 8);
	row->confirmed_known = PQgetvalue(res, 0, 9)[0] != '\0' &&
	                       pgu_lsn(res, 0, 9) != LSN_INVALID;
	row->confirmed_lsn = pgu_lsn(res, 0, 9);
	row->current_lsn = pgu_lsn(res, 0, 10);
	row->retained_bytes = pgu_i64(res, 0, 11);
	snprintf(row->user, sizeof(row->user), "%s", PQgetvalue(res, 0, 12));
	row->server_version = version;
	row->conflicting = slot_flag_of(res, NROW_BASE);
	row->failover = slot_flag_of(res, NROW_BASE + 1);
	row->synced = slot_flag_of(res, NROW_BASE + 2);
	row->inactive_since_us = pgu_i64(res, 0, NROW_BASE + 3);
	snprintf(row->invalidation_reason, sizeof(row->invalidation_reason),
	         "%s", PQgetvalue(res, 0, NROW_BASE + 4));
	PQclear(res);
	return 0;
}

/* ------------------------------------------------------------ refusals */

/* In the order they are checked; what follows 'replication slot "X" '
 * (a format taking the row's fields named in args), and the way out. */
enum slot_arg { ARG_NONE, ARG_PLUGIN, ARG_DATABASE, ARG_WAL, ARG_PID };

static const struct {
	enum slot_refusal why;
	enum slot_arg arg;
	const char *what;
	const char *fix;
} refusals[] = {
	{ SLOT_MISSING, ARG_NONE, "does not exist",
	  "the relay never creates one implicitly: create it with "
	  "outbox-relay --create-slot (events committed before it are not "
	  "published)" },
	{ SLOT_FOREIGN, ARG_PLUGIN, "uses plugin \"%s\" (%s)",
	  "the relay needs a logical slot of the plugin slot.plugin names and "
	  "leaves this one alone: set slot.name to such a slot, or slot.plugin "
	  "to this slot's plugin" },
	{ SLOT_OTHER_DB, ARG_DATABASE, "belongs to database \"%s\", not the one "
	  "in pg.conninfo",
	  "point pg.conninfo at the slot's database or use another slot.name" },
	{ SLOT_LOST, ARG_WAL, "is invalidated (wal_status=%s): the WAL it "
	  "needed is gone and events may be missing",
	  "the relay will not recreate it: drop it (--drop-slot --yes), create "
	  "a new one (--create-slot) and re-publish the outbox rows committed "
	  "since the last confirmed position (runbook: slot lost)" },
	{ SLOT_ACTIVE, ARG_PID, "is active for PID %d",
	  "stop the relay (and any standby relay) first" },
};

#define NREFUSALS (sizeof(refusals) / sizeof(refusals[0]))

enum slot_refusal slot_judge(const struct slot_row *row, const char *plugin,
                             unsigned allow)
{
	if (!row->exists)
		return SLOT_MISSING;
	if (!row->logical || strcmp(row->plugin, plugin) != 0)
		return SLOT_FOREIGN;
	if (!row->same_db)
		return SLOT_OTHER_DB;
	if (!(allow & SLOT_ALLOW_LOST) &&
	    (row->wal_status == WAL_STATUS_LOST ||
	     /* 17: a standby's synced copy has none until sync-ready */
	     (!row->confirmed_known && row->synced != SLOT_FLAG_TRUE) ||
	     row->invalidation_reason[0] != '\0' ||
	     row->conflicting == SLOT_FLAG_TRUE))
		return SLOT_LOST;
	if (!(allow & SLOT_ALLOW_ACTIVE) && row->active)
		return SLOT_ACTIVE;
	return SLOT_USABLE;
}

void slot_refusal_what(enum slot_refusal why, const struct slot_row *row,
                       const char *name, char *out, size_t outlen)
{
	const char *ws = wal_status_name(row->wal_status);
	char what[512];

	for (size_t i = 0; i < NREFUSALS; i++) {
		if (refusals[i].why != why)
			continue;
		switch (refusals[i].arg) {
		case ARG_NONE:
			snprintf(what, sizeof(what), "%s", refusals[i].what);
			break;
		case ARG_PLUGIN:
			snprintf(what, sizeof(what), refusals[i].what, row->plugin,
			         row->logical ? "logical" : "physical");
			break;
		case ARG_DATABASE:
			snprintf(what, sizeof(what), refusals[i].what, row->database);
			break;
		case ARG_WAL:
			/* Invalidated for another reason than removed WAL (18's
			 * idle_timeout, a standby's conflict): say which. */
			if (row->conflicting == SLOT_FLAG_TRUE ||
			    (row->invalidation_reason[0] != '\0' &&
			     strcmp(row->invalidation_reason, "wal_removed") != 0))
				snprintf(what, sizeof(what), "is invalidated "
				         "(invalidation_reason=%s): it can no longer be "
				         "streamed and events may be missing",
				         row->invalidation_reason[0]
				             ? row->invalidation_reason : "conflicting");
			else
				snprintf(what, sizeof(what), refusals[i].what,
				         ws[0] ? ws : "unknown");
			break;
		case ARG_PID:
			snprintf(what, sizeof(what), refusals[i].what, row->active_pid);
			break;
		}
		snprintf(out, outlen, "\"%s\" %s", name, what);
		return;
	}
	snprintf(out, outlen, "\"%s\" is usable", name);
}

const char *slot_refusal_fix(enum slot_refusal why)
{
	for (size_t i = 0; i < NREFUSALS; i++)
		if (refusals[i].why == why)
			return refusals[i].fix;
	return "";
}

void slot_refusal_text(enum slot_refusal why, const struct slot_row *row,
                       const char *name, bool fix, char *out, size_t outlen)
{
	char what[600];

	slot_refusal_what(why, row, name, what, sizeof(what));
	snprintf(out, outlen, "replication slot %s%s%s", what,
	         fix && slot_refusal_fix(why)[0] ? "; " : "",
	         fix ? slot_refusal_fix(why) : "");
}

/* ------------------------------------------------------------ the table */

/* What wal2json can read as the outbox: only an ordinary table's own
 * inserts carry its name. Everything else is refused with the way out. */
static const struct {
	char relkind;
	const char *what;
	const char *fix;
} relkinds[] = {
	{ 'p', "a partitioned table, and wal2json names the partition in every "
	  "record, never the parent: the relay would read no event at all and "
	  "confirm past them",
	  "put the partitions in a schema of their own and set outbox.table = "
	  "<schema>.* (sql/cleanup.sql sets up outbox_part.*; with pg_partman, "
	  "create the parent in a schema of its own: the child tables are created "
	  "next to it)" },
	{ 'v', "a view, and only a table's rows are written to the WAL",
	  "point outbox.table at the table the application inserts into" },
	{ 'm', "a materialized view, and its rows are not decoded",
	  "point outbox.table at the table the application inserts into" },
	{ 'f', "a foreign table, and its rows live in another server's WAL",
	  "run the relay against the server that holds the table" },
};

int slot_relkind_refusal(char relkind, const char *schema, const char *table,
                         char *what, size_t whatlen, char *fix, size_t fixlen)
{
	if (relkind == 'r')
		return 0;
	for (size_t i = 0; i < sizeof(relkinds) / sizeof(relkinds[0]); i++) {
		if (relkinds[i].relkind == relkind) {
			snprintf(what, whatlen, "%s.%s is %s", schema, table,
			         relkinds[i].what);
			snprintf(fix, fixlen, "%s", relkinds[i].fix);
			return -1;
		}
	}
	snprintf(what, whatlen, "%s.%s is not an ordinary table (relkind '%c')",
	         schema, table, relkind);
	snprintf(fix, fixlen, "point outbox.table at the table the application "
	         "inserts into");
	return -1;
}

/* The keys that name the configured columns, in slot_spec_cols() order. */
static const char *const col_keys[REC_NCOLS] = {
	"table.field.event.id", "table.field.event.key", "table.field.event.type",
	"route.by.field", "table.field.event.payload",
};

void slot_spec_cols(const struct record_spec *spec,
                    const char *cols[REC_NCOLS])
{
	cols[0] = spec->col_id;
	cols[1] = spec->col_key;
	cols[2] = spec->col_type;
	cols[3] = spec->col_route;
	cols[4] = spec->col_payload;
}

/* outbox.table "schema.*" (a partitioned outbox, partitions in a schema
 * of their own): the schema must exist and every table in it must have
 * the configured columns, since an insert into any of them is an event.
 * A schema without tables yet passes: its inserts cannot happen. */
static int check_schema(PGconn *conn, const struct record_spec *spec,
                        int64_t deadline_us, struct slot_table *t,
                        struct pgu_status *st, char *err, size_t errlen)
{
	const char *cols[REC_NCOLS];
	char *lit[REC_NCOLS + 1] = { NULL };
	char sql[2560];
	PGresult *res;
	int rc = -1, i;

	slot_spec_cols(spec, cols);
	for (i = 0; i < REC_NCOLS; i++)
		if ((lit[i] = slot_literal(conn, cols[i], st, err, errlen)) ==
		    NULL)
			goto out;
	lit[REC_NCOLS] = slot_literal(conn, spec->schema, st, err, errlen);
	if (lit[REC_NCOLS] == NULL)
		goto out;
	/* One row: does the schema exist, how many tables it has, and the
	 * first table that lacks a column (x.n, 1-based in cols order). */
	snprintf(sql, sizeof(sql),
	         "SELECT s.oid IS NOT NULL, c.relname, x.n, "
	         "(SELECT count(*) FROM pg_catalog.pg_class k "
	         " WHERE k.relnamespace = s.oid AND k.relkind = 'r') "
	         "FROM (SELECT 1) AS one "
	         "LEFT JOIN pg_catalog.pg_namespace s ON s.nspname = %s "
	         "LEFT JOIN pg_catalog.pg_class c "
	         "       ON c.relnamespace = s.oid AND c.relkind = 'r' "
	         "LEFT JOIN unnest(ARRAY[%s, %s, %s, %s, %s]::text[]) "
	         "          WITH ORDINALITY AS x(col, n) "
	         "       ON c.oid IS NOT NULL AND NOT EXISTS ("
	         "          SELECT 1 FROM pg_catalog.pg_attribute a "
	         "          WHERE a.attrelid = c.oid AND a.attname = x.col "
	         "          AND a.attnum > 0 AND NOT a.attisdropped) "
	         "ORDER BY x.n IS NULL, c.relname, x.n LIMIT 1",
	         lit[REC_NCOLS], lit[0], lit[1], lit[2], lit[3], lit[4]);
	res = pgu_query(conn, sql, 0, NULL, deadline_us, PGRES_TUPLES_OK,
	                "reading the outbox schema's tables", st, err, errlen);
	if (res == NULL)
		goto out;
	if (PQntuples(res) != 1) {
		st->outcome = PGU_Q_NO_ANSWER;
		errbuf_set(err, errlen, "reading the outbox schema's tables: %d rows",
		           PQntuples(res));
		PQclear(res);
		goto out;
	}
	if (!pgu_bool(res, 0, 0)) {
		t->verdict = TABLE_NO_SCHEMA;
		snprintf(t->what, sizeof(t->what), "schema %s does not exist (%s.* "
		         "means every table of the schema)", spec->schema,
		         spec->schema);
		snprintf(t->fix, sizeof(t->fix), "create the schema, or set "
		         "outbox.table to the schema that holds the outbox tables");
	} else if (!PQgetisnull(res, 0, 2)) {
		int n = (int)pgu_i64(res, 0, 2);
		if (n < 1 || n > REC_NCOLS)
			n = 1;
		t->verdict = TABLE_NO_COLUMN;
		snprintf(t->what, sizeof(t->what), "%s: column \"%s\" does not exist "
		         "in %s.%s; with outbox.table = %s.* every table of that "
		         "schema is read as the outbox", col_keys[n - 1], cols[n - 1],
		         spec->schema, PQgetvalue(res, 0, 1), spec->schema);
		snprintf(t->fix, sizeof(t->fix), "add the column to %s.%s, or keep "
		         "only outbox tables in schema %s", spec->schema,
		         PQgetvalue(res, 0, 1), spec->schema);
	} else {
		t->verdict = TABLE_OK;
		t->tables = (long)pgu_i64(res, 0, 3);
	}
	PQclear(res);
	rc = 0;
out:
	for (i = 0; i <= REC_NCOLS; i++)
		PQfreemem(lit[i]);
	return rc;
}

int slot_table_check(PGconn *conn, const struct record_spec *spec,
                     int64_t deadline_us, struct slot_table *t,
                     struct pgu_status *st, char *err, size_t errlen)
{
	const char *cols[REC_NCOLS];
	char *s = NULL, *tb = NULL, sql[1400];
	PGresult *res;
	size_t n = 0;
	int rc = -1;

	memset(t, 0, sizeof(*t));
	if (strcmp(spec->table, "*") == 0)
		return check_schema(conn, spec, deadline_us, t, st, err, errlen);
	slot_spec_cols(spec, cols);
	if ((s = slot_literal(conn, spec->schema, st, err, errlen)) == NULL ||
	    (tb = slot_literal(conn, spec->table, st, err, errlen)) == NULL)
		goto out;
	snprintf(sql, sizeof(sql),
	         "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), "
	         "t.typname, c.relkind, a.attnotnull FROM pg_catalog.pg_attribute a "
	         "JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
	         "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
	         "JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
	         "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 "
	         "AND NOT a.attisdropped", s, tb);
	res = pgu_query(conn, sql, 0, NULL, deadline_us, PGRES_TUPLES_OK,
	                "reading the outbox table's columns", st, err, errlen);
	if (res == NULL)
		goto out;
	rc = 0;
	if (PQntuples(res) == 0) {
		t->verdict = TABLE_MISSING;
		snprintf(t->what, sizeof(t->what), "%s.%s does not exist",
		         spec->schema, spec->table);
		snprintf(t->fix, sizeof(t->fix), "create it (sql/outbox.sql) or set "
		         "outbox.table: names are case-sensitive and unquoted (a table "
		         "created as \"Outbox\" is public.Outbox)");
		goto done;
	}
	if (slot_relkind_refusal(PQgetvalue(res, 0, 3)[0], spec->schema,
	                         spec->table, t->what, sizeof(t->what), t->fix,
	                         sizeof(t->fix)) < 0) {
		t->verdict = TABLE_NOT_TABLE;
		goto done;
	}
	for (int i = 0; i < REC_NCOLS; i++) {
		int r;
		for (r = 0; r < PQntuples(res); r++)
			if (strcmp(PQgetvalue(res, r, 0), cols[i]) == 0)
				break;
		if (r == PQntuples(res)) {
			t->verdict = TABLE_NO_COLUMN;
			snprintf(t->what, sizeof(t->what), "%s: column \"%s\" does not "
			         "exist in %s.%s", col_keys[i], cols[i], spec->schema,
			         spec->table);
			snprintf(t->fix, sizeof(t->fix), "set %s to a column of %s.%s",
			         col_keys[i], spec->schema, spec->table);
			t->columns[0] = '\0';
			goto done;
		}
		if (i == REC_NCOLS - 1)
			snprintf(t->payload_type, sizeof(t->payload_type), "%s",
			         PQgetvalue(res, r, 2));
		t->notnull[i] = PQgetvalue(res, r, 4)[0] == 't';
		if (n < sizeof(t->columns))
			n += (size_t)snprintf(t->columns + n, sizeof(t->columns) - n,
			                      "%s%s %s", i ? ", " : "", cols[i],
			                      PQgetvalue(res, r, 1));
	}
	for (size_t x = 0; x < spec->nextra; x++)
		for (int r = 0; r < PQntuples(res); r++)
			if (strcmp(PQgetvalue(res, r, 0), spec->col_extra[x]) == 0)
				t->extra_present |= 1u << x;
	t->verdict = TABLE_OK;
done:
	PQclear(res);
out:
	PQfreemem(s);
	PQfreemem(tb);
	return rc;
}

void slot_table_text(const struct slot_table *t, char *out, size_t outlen)
{
	if (t->verdict == TABLE_OK) {
		snprintf(out, outlen, "outbox.table: ok");
		return;
	}
	/* A missing column's finding starts with the key that names it. */
	snprintf(out, outlen, "%s%s; %s",
	         t->verdict == TABLE_NO_COLUMN ? "" : "outbox.table: ", t->what,
	         t->fix);
}

/* ------------------------------------------------------------ changes */

int slot_failover_wanted(const char *setting, int version, bool *want,
                         char *err, size_t errlen)
{
	bool can = version >= SLOT_PG_FAILOVER;

	*want = false;
	if (strcmp(setting, "off") == 0)
		return 0;
	if (strcmp(setting, "on") == 0 && !can) {
		errbuf_set(err, errlen, "slot.failover = on, but PostgreSQL %d.%d "
		           "has no failover slots (17 and later): set slot.failover "
		           "= auto or off (after a promotion the new primary then has "
		           "no slot: runbook, section \"failover\")", version / 10000,
		           version % 10000);
		return -1;
	}
	*want = can;
	return 0;
}

void slot_create_sql(const char *name, const char *plugin, bool failover,
                     char *out, size_t outlen)
{
	/* slot.name is [a-z0-9_] and slot.plugin one of two words
	 * (config.c), so neither needs escaping. No TWO_PHASE: pgo.c
	 * refuses what it produces. FAILOVER exists only in the option
	 * list of the newer syntax (15 and later), where SNAPSHOT 'nothing'
	 * is NOEXPORT_SNAPSHOT. */
	if (failover)
		snprintf(out, outlen, "CREATE_REPLICATION_SLOT \"%s\" LOGICAL %s "
		         "(SNAPSHOT 'nothing', FAILOVER true)", name, plugin);
	else
		snprintf(out, outlen, "CREATE_REPLICATION_SLOT \"%s\" LOGICAL %s "
		         "NOEXPORT_SNAPSHOT", name, plugin);
}

int slot_create(PGconn *conn, const char *name, const char *plugin,
                bool failover, int64_t deadline_us, uint64_t *cp,
                struct pgu_status *st, char *err, size_t errlen)
{
	char sql[256];
	PGresult *res;

	slot_create_sql(name, plugin, failover, sql, sizeof(sql));
	res = pgu_query(conn, sql, 0, NULL, deadline_us, PGRES_TUPLES_OK,
	                "creating the replication slot", st, err, errlen);
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1 || PQnfields(res) < 2 ||
	    (*cp = pgu_lsn(res, 0, 1)) == LSN_INVALID) {
		st->outcome = PGU_Q_NO_ANSWER;
		errbuf_set(err, errlen, "creating the replication slot: no "
		           "consistent point in the answer");
		PQclear(res);
		return -1;
	}
	PQclear(res);
	return 0;
}

int slot_drop(PGconn *conn, const char *name, int64_t deadline_us,
              struct pgu_status *st, char *err, size_t errlen)
{
	const char *params[1] = { name };
	PGresult *res = pgu_query(conn,
		"SELECT pg_catalog.pg_drop_replication_slot($1)", 1, params,
		deadline_us, PGRES_TUPLES_OK, "dropping the slot", st, err, errlen);

	PQclear(res);
	return res != NULL ? 0 : -1;
}

int slot_advance(PGconn *conn, const char *name, uint64_t target,
                 int64_t deadline_us, uint64_t *moved, struct pgu_status *st,
                 char *err, size_t errlen)
{
	char lsn[32];
	const char *params[2] = { name, lsn };
	PGresult *res;

	snprintf(lsn, sizeof(lsn), LSN_FMT, LSN_ARGS(target));
	res = pgu_query(conn, "SELECT end_lsn::text FROM "
	                "pg_catalog.pg_replication_slot_advance($1, $2::pg_lsn)",
	                2, params, deadline_us, PGRES_TUPLES_OK,
	                "advancing the slot", st, err, errlen);
	if (res == NULL)
		return -1;
	*moved = PQntuples(res) == 1 ? pgu_lsn(res, 0, 0) : LSN_INVALID;
	PQclear(res);
	return 0;
}

int slot_copy_temp(PGconn *conn, const char *name, const char *copy,
                   int64_t deadline_us, struct pgu_status *st, char *err,
                   size_t errlen)
{
	const char *params[2] = { name, copy };
	PGresult *res = pgu_query(conn,
		"SELECT pg_catalog.pg_copy_logical_replication_slot($1, $2, true)",
		2, params, deadline_us, PGRES_TUPLES_OK, "copying the active slot",
		st, err, errlen);

	PQclear(res);
	return res != NULL ? 0 : -1;
}

int slot_try_wal2json(PGconn *conn, const char *name, int64_t deadline_us,
                      struct pgu_status *st, char *err, size_t errlen)
{
	const char *params[1] = { name };
	PGresult *res = pgu_query(conn,
		"SELECT slot_name FROM pg_catalog."
		"pg_create_logical_replication_slot($1, 'wal2json', true)", 1,
		params, deadline_us, PGRES_TUPLES_OK, "a temporary wal2json slot",
		st, err, errlen);

	if (res == NULL)
		return -1;
	PQclear(res);
	/* TEMPORARY: gone at disconnect at the latest. */
	return slot_drop(conn, name, deadline_us, st, err, errlen);
}

/* ------------------------------------------------------------ peek */

/* Stops a running single-row query and drains what is left. */
static void cancel(PGconn *conn)
{
	PGcancel *c = PQgetCancel(conn);
	char buf[256];
	PGresult *res;

	if (c != NULL) {
		(void)PQcancel(c, buf, sizeof(buf));
		PQfreeCancel(c);
	}
	while ((res = PQgetResult(conn)) != NULL)
		PQclear(res);
}

int slot_peek_run(PGconn *conn, struct slot_peek *pk, char *err,
                  size_t errlen)
{
	static const char text_fn[] = "pg_logical_slot_peek_changes";
	static const char binary_fn[] = "pg_logical_slot_peek_binary_changes";
	const char *fn = pk->function != NULL ? pk->function : text_fn;
	char upto[32], nch[32], m[1024], sql[300];
	const char *params[4];
	PGresult *res;
	bool binary;
	int rc = 0;

	/* The name goes into the statement: only the two known ones. */
	binary = strcmp(fn, binary_fn) == 0;
	if (!binary && strcmp(fn, text_fn) != 0) {
		errbuf_set(err, errlen, "peeking at slot \"%s\": no peek function "
		           "\"%s\"", pk->slot, fn);
		return -1;
	}

	pk->rows = 0;
	pk->stopped = pk->timed_out = pk->busy = false;
	snprintf(upto, sizeof(upto), LSN_FMT, LSN_ARGS(pk->upto_lsn));
	snprintf(nch, sizeof(nch), "%lld", (long long)pk->upto_nchanges);
	params[0] = pk->slot;
	params[1] = pk->upto_lsn != LSN_INVALID ? upto : NULL;
	params[2] = pk->upto_nchanges > 0 ? nch : NULL;
	params[3] = pk->options;
	snprintf(sql, sizeof(sql), "SELECT lsn::text, coalesce(xid::text, ''), "
	         "data FROM pg_catalog.%s($1, $2::pg_lsn, $3::int, "
	         "VARIADIC $4::text[])", fn);
	/* pgoutput's messages are bytea: in binary they arrive as their own
	 * bytes (the text form would be hex to decode). A text column's
	 * binary form is its characters, so lsn and xid read the same. */
	if (!PQsendQueryParams(conn, sql, 4, NULL, params, NULL, NULL,
	                       binary ? 1 : 0) ||
	    !PQsetSingleRowMode(conn)) {
		pgu_message(conn, NULL, m, sizeof(m));
		errbuf_set(err, errlen, "peeking at slot \"%s\": %s", pk->slot, m);
		return -1;
	}
	while ((res = PQgetResult(conn)) != NULL) {
		ExecStatusType s = PQresultStatus(res);
		if (s == PGRES_SINGLE_TUPLE && rc == 0 && !pk->stopped) {
			struct slot_peek_row row = {
				.lsn_text = PQgetvalue(res, 0, 0),
				.lsn = pgu_lsn(res, 0, 0),
				.xid = PQgetvalue(res, 0, 1)[0] ? pgu_i64(res, 0, 1) : -1,
				.data = PQgetvalue(res, 0, 2),
				.len = (size_t)PQgetlength(res, 0, 2),
			};
			pk->rows++;
			if (pk->on_row(pk->ctx, &row) != 0)
				pk->stopped = true;
		} else if (s == PGRES_FATAL_ERROR && rc == 0) {
			pk->timed_out = strcmp(pgu_sqlstate(res), "57014") == 0;
			pk->busy = strcmp(pgu_sqlstate(res), "55006") == 0;
			pgu_error_text(conn, res, m, sizeof(m));
			errbuf_set(err, errlen, "peeking at slot \"%s\": %s", pk->slot, m);
			rc = -1;
		}
		PQclear(res);
		if (pk->stopped) {
			cancel(conn);
			break;
		}
	}
	return rc;
}
