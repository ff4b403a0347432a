/* SPDX-License-Identifier: Apache-2.0 */
/* repl.c -- logical replication over libpq: connect, check, stream, reply.
 *
 * Frame layouts follow the streaming replication protocol; each field is
 * parsed with an explicit length check, as pg_recvlogical does. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "log.h"
#include "pgutil.h"
#include "repl.h"

/* libpq's PGconn behind our opaque name. */
#define PGC(rs) ((PGconn *)(rs)->conn)

/* Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define PG_EPOCH_OFFSET_US INT64_C(946684800000000)

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	RELAY_PRINTF(3, 4);

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* PQerrorMessage without its trailing newline. */
static const char *pq_err(PGconn *conn)
{
	static char buf[1024];
	const char *m = conn ? PQerrorMessage(conn) : "no connection";
	size_t n = strlen(m);
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(buf, m, n);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return buf;
}

static uint64_t be64(const char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | (unsigned char)p[i];
	return v;
}

static void put_be64(char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (char)(v & 0xff);
		v >>= 8;
	}
}

/* Classifies a server error by SQLSTATE. */
static enum repl_err classify(const PGresult *res)
{
	const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	if (st == NULL)
		return REPL_ERR_TRANSIENT;
	if (strcmp(st, "55006") == 0) /* object_in_use: slot active elsewhere */
		return REPL_ERR_SLOT_BUSY;
	if (strcmp(st, "42704") == 0 || /* undefined_object: no such slot */
	    strcmp(st, "55000") == 0 || /* slot invalidated, wrong state */
	    strcmp(st, "42501") == 0 || /* insufficient_privilege */
	    strcmp(st, "28000") == 0 || /* invalid authorization */
	    strcmp(st, "22023") == 0)   /* invalid parameter (plugin option) */
		return REPL_ERR_FATAL;
	return REPL_ERR_TRANSIENT;
}

/* One statement of a session's start, bounded by rs->timeout_ms: a
 * server that stops answering (a hung backend, a silent proxy) must not
 * hang the relay. NULL with err filled ("what: ...") when it timed out
 * or the connection broke: a transient error. */
static PGresult *rs_exec(struct repl_stream *rs, const char *sql,
                         const char *what, char *err, size_t errlen)
{
	bool timed_out;
	char m[512];
	PGresult *res = pgu_exec(PGC(rs), sql, 0, NULL,
	                         now_mono_us() + rs->timeout_ms * 1000, &timed_out);

	if (res != NULL)
		return res;
	if (timed_out) {
		set_err(err, errlen, "%s: PostgreSQL did not answer within %lld ms",
		        what, (long long)rs->timeout_ms);
	} else {
		pgu_message(PGC(rs), NULL, m, sizeof(m));
		set_err(err, errlen, "%s: %s", what, m);
	}
	return NULL;
}

/* The error message of a failed statement, into the caller's buffer. */
static const char *res_err(struct repl_stream *rs, const PGresult *res,
                           char *buf, size_t len)
{
	pgu_message(PGC(rs), res, buf, len);
	return buf;
}

static enum repl_err identify(struct repl_stream *rs, char *err, size_t errlen)
{
	PGresult *res = rs_exec(rs, "IDENTIFY_SYSTEM", "IDENTIFY_SYSTEM", err,
	                        errlen);
	enum repl_err rc = REPL_ERR_TRANSIENT;
	char m[512];

	if (res == NULL)
		return REPL_ERR_TRANSIENT;
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
	    PQnfields(res) < 3) {
		set_err(err, errlen, "IDENTIFY_SYSTEM failed: %s",
		        res_err(rs, res, m, sizeof(m)));
		rc = classify(res);
		goto out;
	}
	snprintf(rs->system_id, sizeof(rs->system_id), "%s", PQgetvalue(res, 0, 0));
	rs->timeline = atoi(PQgetvalue(res, 0, 1));
	if (lsn_parse(PQgetvalue(res, 0, 2), strlen(PQgetvalue(res, 0, 2)),
	              &rs->system_lsn) < 0) {
		set_err(err, errlen, "IDENTIFY_SYSTEM returned a bad xlogpos");
		goto out;
	}
	rc = REPL_OK;
out:
	PQclear(res);
	return rc;
}

/* Reads the slot's row; refuses what the relay must never stream from. */
static enum repl_err check_slot(struct repl_stream *rs, const char *slot,
                                char *err, size_t errlen)
{
	char *lit = PQescapeLiteral(PGC(rs), slot, strlen(slot));
	char sql[512];
	PGresult *res;
	enum repl_err rc = REPL_ERR_FATAL;

	if (lit == NULL) {
		set_err(err, errlen, "escaping slot name: %s", pq_err(PGC(rs)));
		return REPL_ERR_TRANSIENT;
	}
	snprintf(sql, sizeof(sql),
	         "SELECT plugin, slot_type, database = current_database(), active, "
	         "coalesce(active_pid, 0), coalesce(wal_status, ''), "
	         "coalesce(confirmed_flush_lsn::text, ''), "
	         "coalesce(restart_lsn::text, ''), coalesce(database::text, '') "
	         "FROM pg_catalog.pg_replication_slots WHERE slot_name = %s", lit);
	PQfreemem(lit);
	res = rs_exec(rs, sql, "reading pg_replication_slots", err, errlen);
	if (res == NULL)
		return REPL_ERR_TRANSIENT;
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		char m[512];
		set_err(err, errlen, "reading pg_replication_slots: %s",
		        res_err(rs, res, m, sizeof(m)));
		rc = classify(res);
		if (rc == REPL_ERR_SLOT_BUSY)
			rc = REPL_ERR_TRANSIENT;
		goto out;
	}
	if (PQntuples(res) == 0) {
		set_err(err, errlen, "replication slot \"%s\" does not exist; the "
		        "relay never creates one implicitly: create it with "
		        "SELECT pg_create_logical_replication_slot('%s', 'wal2json')",
		        slot, slot);
		goto out;
	}
	if (strcmp(PQgetvalue(res, 0, 1), "logical") != 0 ||
	    strcmp(PQgetvalue(res, 0, 0), "wal2json") != 0) {
		set_err(err, errlen, "replication slot \"%s\" uses plugin \"%s\" "
		        "(%s); the relay needs a logical wal2json slot", slot,
		        PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
		goto out;
	}
	if (strcmp(PQgetvalue(res, 0, 2), "t") != 0) {
		set_err(err, errlen, "replication slot \"%s\" belongs to another "
		        "database than the one in pg.conninfo", slot);
		goto out;
	}
	snprintf(rs->slot.plugin, sizeof(rs->slot.plugin), "%s", PQgetvalue(res, 0, 0));
	snprintf(rs->slot.database, sizeof(rs->slot.database), "%s",
	         PQgetvalue(res, 0, 8));
	snprintf(rs->slot.wal_status, sizeof(rs->slot.wal_status), "%s",
	         PQgetvalue(res, 0, 5));
	rs->slot.active = strcmp(PQgetvalue(res, 0, 3), "t") == 0;
	rs->slot.active_pid = atoi(PQgetvalue(res, 0, 4));
	if (strcmp(rs->slot.wal_status, "lost") == 0 ||
	    PQgetvalue(res, 0, 6)[0] == '\0' ||
	    lsn_parse(PQgetvalue(res, 0, 6), strlen(PQgetvalue(res, 0, 6)),
	              &rs->slot.confirmed_flush) < 0) {
		set_err(err, errlen, "replication slot \"%s\" is invalidated "
		        "(wal_status=%s): the WAL it needed is gone and events may "
		        "be missing; the relay will not recreate it (see the "
		        "runbook: slot lost)", slot,
		        rs->slot.wal_status[0] ? rs->slot.wal_status : "unknown");
		goto out;
	}
	if (lsn_parse(PQgetvalue(res, 0, 7), strlen(PQgetvalue(res, 0, 7)),
	              &rs->slot.restart_lsn) < 0)
		rs->slot.restart_lsn = 0;
	if (rs->slot.active) {
		set_err(err, errlen, "replication slot \"%s\" is active for PID %d",
		        slot, rs->slot.active_pid);
		rc = REPL_ERR_SLOT_BUSY;
		goto out;
	}
	rc = REPL_OK;
out:
	PQclear(res);
	return rc;
}

/* outbox.table "schema.*" (a partitioned outbox, partitions in a schema
 * of their own): the schema must exist and every table in it must have
 * the configured columns, since an insert into any of them is an event.
 * A schema without tables yet passes: its inserts cannot happen. */
static enum repl_err check_schema(struct repl_stream *rs,
                                  const struct w2j_spec *spec,
                                  const char *const cols[5],
                                  const char *const keys[5], char *err,
                                  size_t errlen)
{
	char *lit[6] = { NULL };
	char sql[2048];
	PGresult *res;
	enum repl_err rc = REPL_ERR_CONFIG;
	int i;

	lit[5] = PQescapeLiteral(PGC(rs), spec->schema, strlen(spec->schema));
	for (i = 0; i < 5; i++)
		lit[i] = PQescapeLiteral(PGC(rs), cols[i], strlen(cols[i]));
	for (i = 0; i < 6 && lit[i] != NULL; i++)
		;
	if (i < 6) {
		set_err(err, errlen, "escaping names: %s", pq_err(PGC(rs)));
		rc = REPL_ERR_TRANSIENT;
		goto out;
	}
	/* One row: does the schema exist, and the first table that lacks a
	 * column (x.n, 1-based in cols order), if any. */
	snprintf(sql, sizeof(sql),
	         "SELECT s.oid IS NOT NULL, c.relname, x.n "
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
	         lit[5], lit[0], lit[1], lit[2], lit[3], lit[4]);
	res = rs_exec(rs, sql, "reading the outbox schema's tables", err, errlen);
	if (res == NULL) {
		rc = REPL_ERR_TRANSIENT;
	} else if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		char m[512];
		set_err(err, errlen, "reading the outbox schema's tables: %s",
		        res_err(rs, res, m, sizeof(m)));
		rc = REPL_ERR_TRANSIENT;
	} else if (strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
		set_err(err, errlen, "outbox.table: schema %s does not exist (%s.* "
		        "means every table of the schema)", spec->schema,
		        spec->schema);
	} else if (!PQgetisnull(res, 0, 2)) {
		int n = atoi(PQgetvalue(res, 0, 2));
		set_err(err, errlen, "%s: column \"%s\" does not exist in %s.%s; "
		        "with outbox.table = %s.* every table of that schema is "
		        "read as the outbox", keys[n - 1], cols[n - 1], spec->schema,
		        PQgetvalue(res, 0, 1), spec->schema);
	} else {
		rc = REPL_OK;
	}
	PQclear(res);
out:
	for (i = 0; i < 6; i++)
		PQfreemem(lit[i]);
	return rc;
}

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

int repl_relkind_refusal(char relkind, const char *schema, const char *table,
                         char *err, size_t errlen)
{
	if (relkind == 'r')
		return 0;
	for (size_t i = 0; i < sizeof(relkinds) / sizeof(relkinds[0]); i++) {
		if (relkinds[i].relkind == relkind) {
			set_err(err, errlen, "outbox.table: %s.%s is %s; %s", schema,
			        table, relkinds[i].what, relkinds[i].fix);
			return -1;
		}
	}
	set_err(err, errlen, "outbox.table: %s.%s is not an ordinary table "
	        "(relkind '%c'); point outbox.table at the table the application "
	        "inserts into", schema, table, relkind);
	return -1;
}

/* Checks that the outbox table and the configured columns exist, so a
 * typo in the configuration fails at start instead of never matching. */
static enum repl_err check_table(struct repl_stream *rs,
                                 const struct w2j_spec *spec, char *err,
                                 size_t errlen)
{
	const char *params[2] = { spec->schema, spec->table };
	const char *cols[5] = { spec->col_id, spec->col_key, spec->col_type,
		                    spec->col_route, spec->col_payload };
	static const char *const keys[5] = {
		"table.field.event.id", "table.field.event.key",
		"table.field.event.type", "route.by.field", "table.field.event.payload"
	};
	PGresult *res;
	enum repl_err rc = REPL_ERR_CONFIG;

	if (strcmp(spec->table, "*") == 0)
		return check_schema(rs, spec, cols, keys, err, errlen);

	/* Replication connections only take the simple query protocol, so the
	 * names are escaped as literals. */
	char *s = PQescapeLiteral(PGC(rs), params[0], strlen(params[0]));
	char *t = PQescapeLiteral(PGC(rs), params[1], strlen(params[1]));
	char sql[1024];
	if (s == NULL || t == NULL) {
		PQfreemem(s);
		PQfreemem(t);
		set_err(err, errlen, "escaping table name: %s", pq_err(PGC(rs)));
		return REPL_ERR_TRANSIENT;
	}
	snprintf(sql, sizeof(sql),
	         "SELECT a.attname, c.relkind FROM pg_catalog.pg_attribute a "
	         "JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
	         "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
	         "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 "
	         "AND NOT a.attisdropped", s, t);
	PQfreemem(s);
	PQfreemem(t);
	res = rs_exec(rs, sql, "reading the outbox table's columns", err, errlen);
	if (res == NULL)
		return REPL_ERR_TRANSIENT;
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		char m[512];
		set_err(err, errlen, "reading the outbox table's columns: %s",
		        res_err(rs, res, m, sizeof(m)));
		rc = REPL_ERR_TRANSIENT;
		goto out;
	}
	if (PQntuples(res) == 0) {
		set_err(err, errlen, "outbox.table: table %s.%s does not exist (names "
		        "are case-sensitive and unquoted: a table created as "
		        "\"Outbox\" is public.Outbox)", spec->schema, spec->table);
		goto out;
	}
	if (repl_relkind_refusal(PQgetvalue(res, 0, 1)[0], spec->schema,
	                         spec->table, err, errlen) < 0)
		goto out;
	for (int i = 0; i < 5; i++) {
		bool found = false;
		for (int r = 0; r < PQntuples(res) && !found; r++)
			found = strcmp(PQgetvalue(res, r, 0), cols[i]) == 0;
		if (!found) {
			set_err(err, errlen, "%s: column \"%s\" does not exist in %s.%s",
			        keys[i], cols[i], spec->schema, spec->table);
			goto out;
		}
	}
	rc = REPL_OK;
out:
	PQclear(res);
	return rc;
}

/* Appends a single-quoted option value, doubling quotes. */
static int put_quoted(char *out, size_t outlen, size_t *n, const char *v)
{
	if (*n + 1 >= outlen)
		return -1;
	out[(*n)++] = '\'';
	for (; *v; v++) {
		if (*n + 3 >= outlen)
			return -1;
		if (*v == '\'')
			out[(*n)++] = '\'';
		out[(*n)++] = *v;
	}
	out[(*n)++] = '\'';
	out[*n] = '\0';
	return 0;
}

int repl_start_command(const char *slot, const struct w2j_spec *spec,
                       const char *msg_prefixes, char *out, size_t outlen)
{
	char tables[512];
	bool all = strcmp(spec->table, "*") == 0;
	size_t n;
	int m;

	/* outbox.table = schema.*: wal2json's own wildcard, unescaped, so
	 * that partitions created later are read too. */
	m = w2j_add_tables_value(spec->schema, all ? "" : spec->table, tables,
	                         sizeof(tables) - 1);
	if (m < 0)
		return -1;
	if (all) {
		tables[m] = '*';
		tables[m + 1] = '\0';
	}
	m = snprintf(out, outlen,
	             "START_REPLICATION SLOT \"%s\" LOGICAL 0/0 ("
	             "\"format-version\" '2', \"include-lsn\" '1', "
	             "\"include-xids\" '1', \"include-transaction\" '1', "
	             "\"include-timestamp\" '1', \"actions\" 'insert', "
	             "\"add-tables\" ", slot);
	if (m < 0 || (size_t)m >= outlen)
		return -1;
	n = (size_t)m;
	if (put_quoted(out, outlen, &n, tables) < 0)
		return -1;
	if (msg_prefixes != NULL && msg_prefixes[0] != '\0') {
		static const char opt[] = ", \"add-msg-prefixes\" ";
		if (n + sizeof(opt) >= outlen)
			return -1;
		memcpy(out + n, opt, sizeof(opt) - 1);
		n += sizeof(opt) - 1;
		if (put_quoted(out, outlen, &n, msg_prefixes) < 0)
			return -1;
	}
	if (n + 2 >= outlen)
		return -1;
	out[n++] = ')';
	out[n] = '\0';
	return (int)n;
}

enum repl_err repl_start(struct repl_stream *rs, const char *conninfo,
                         const char *slot, const struct w2j_spec *spec,
                         const char *msg_prefixes, int64_t timeout_ms,
                         char *err, size_t errlen)
{
	enum pgu_class cls;
	char cmd[1024], m[512];
	PGresult *res;
	enum repl_err rc;

	memset(rs, 0, sizeof(*rs));
	rs->timeout_ms = timeout_ms;
	rs->conn = (struct pg_conn *)pgu_connect(conninfo, "outbox-relay", true,
	                                         NULL, &cls, err, errlen);
	if (rs->conn == NULL) {
		rs->connect_failed = true;
		return cls == PGU_AUTH     ? REPL_ERR_AUTH
		       : cls == PGU_CONFIG ? REPL_ERR_CONFIG
		                           : REPL_ERR_TRANSIENT;
	}
	if ((rc = identify(rs, err, errlen)) != REPL_OK)
		goto fail;
	if ((rc = check_slot(rs, slot, err, errlen)) != REPL_OK)
		goto fail;
	if ((rc = check_table(rs, spec, err, errlen)) != REPL_OK)
		goto fail;
	if (repl_start_command(slot, spec, msg_prefixes, cmd, sizeof(cmd)) < 0) {
		set_err(err, errlen, "outbox.table name too long");
		rc = REPL_ERR_FATAL;
		goto fail;
	}
	res = rs_exec(rs, cmd, "START_REPLICATION", err, errlen);
	if (res == NULL) {
		rc = REPL_ERR_TRANSIENT;
		goto fail;
	}
	if (PQresultStatus(res) != PGRES_COPY_BOTH) {
		set_err(err, errlen, "START_REPLICATION failed: %s",
		        res_err(rs, res, m, sizeof(m)));
		rc = classify(res);
		PQclear(res);
		goto fail;
	}
	PQclear(res);
	if (PQsetnonblocking(PGC(rs), 1) != 0) {
		set_err(err, errlen, "PQsetnonblocking: %s", pq_err(PGC(rs)));
		rc = REPL_ERR_TRANSIENT;
		goto fail;
	}
	rs->in_copy = true;
	return REPL_OK;
fail:
	PQfinish(PGC(rs));
	rs->conn = NULL;
	return rc;
}

int repl_socket(const struct repl_stream *rs)
{
	return rs->conn ? PQsocket(PGC(rs)) : -1;
}

int repl_consume(struct repl_stream *rs, char *err, size_t errlen)
{
	if (PQconsumeInput(PGC(rs)) == 0) {
		set_err(err, errlen, "replication connection lost: %s", pq_err(PGC(rs)));
		rs->stream_err = REPL_ERR_TRANSIENT;
		return -1;
	}
	return 0;
}

/* After the server ended COPY or the connection failed: fetch the error
 * result so it can be classified and shown. */
static void stream_error(struct repl_stream *rs, char *err, size_t errlen)
{
	PGresult *res;
	bool got = false;

	rs->stream_err = REPL_ERR_TRANSIENT;
	rs->in_copy = false;
	/* Only what already arrived: after an ErrorResponse the server may
	 * never send ReadyForQuery (a proxy in between, a dying backend), and
	 * a blocking PQgetResult() would then wait for it forever. */
	for (;;) {
		if (PQisBusy(PGC(rs)) &&
		    (!PQconsumeInput(PGC(rs)) || PQisBusy(PGC(rs))))
			break;
		if ((res = PQgetResult(PGC(rs))) == NULL)
			break;
		if (!got && PQresultStatus(res) == PGRES_FATAL_ERROR) {
			const char *m = PQresultErrorMessage(res);
			size_t n = strlen(m);
			while (n > 0 && m[n - 1] == '\n')
				n--;
			set_err(err, errlen, "replication stream ended: %.*s", (int)n, m);
			rs->stream_err = classify(res);
			got = true;
		}
		PQclear(res);
		if (PQstatus(PGC(rs)) == CONNECTION_BAD)
			break;
	}
	if (!got)
		set_err(err, errlen, "replication stream ended: %s", pq_err(PGC(rs)));
}

int repl_parse_frame(const char *buf, size_t len, struct repl_msg *msg,
                     char *err, size_t errlen)
{
	size_t hdr;

	memset(msg, 0, sizeof(*msg));
	/* libpq never hands out an empty frame; were it to, the NUL it puts
	 * after every buffer would read as message type 0x00. */
	msg->type = len > 0 ? buf[0] : '\0';
	if (msg->type == 'w') {
		hdr = 1;  /* msgtype 'w' */
		hdr += 8; /* dataStart */
		hdr += 8; /* walEnd */
		hdr += 8; /* sendTime */
		if (len < hdr) {
			set_err(err, errlen, "XLogData header too small: %zu bytes", len);
			return -1;
		}
		msg->wal_start = be64(buf + 1);
		msg->wal_end = be64(buf + 9);
		msg->data = buf + hdr;
		msg->len = len - hdr;
		return 1;
	}
	if (msg->type == 'k') {
		hdr = 1;  /* msgtype 'k' */
		hdr += 8; /* walEnd */
		hdr += 8; /* sendTime */
		hdr += 1; /* replyRequested */
		if (len < hdr) {
			set_err(err, errlen, "keepalive too small: %zu bytes", len);
			return -1;
		}
		msg->wal_end = be64(buf + 1);
		msg->reply_requested = buf[17] != 0;
		return 1;
	}
	set_err(err, errlen, "unexpected CopyData message type 0x%02x",
	        (unsigned char)msg->type);
	return -1;
}

int repl_read(struct repl_stream *rs, struct repl_msg *msg, char *err,
              size_t errlen)
{
	int r;

	if (rs->copybuf != NULL) {
		PQfreemem(rs->copybuf);
		rs->copybuf = NULL;
	}
	r = PQgetCopyData(PGC(rs), &rs->copybuf, 1);
	if (r == 0)
		return 0;
	if (r < 0) {
		stream_error(rs, err, errlen);
		return -1;
	}
	if (repl_parse_frame(rs->copybuf, (size_t)r, msg, err, errlen) < 0) {
		rs->stream_err = REPL_ERR_TRANSIENT;
		return -1;
	}
	return 1;
}

int repl_send_status(struct repl_stream *rs, uint64_t received,
                     uint64_t flush_lsn, bool reply_requested, char *err,
                     size_t errlen)
{
	char buf[1 + 8 + 8 + 8 + 8 + 1];
	size_t n = 0;

	buf[n++] = 'r';
	put_be64(buf + n, received);  /* write */
	n += 8;
	put_be64(buf + n, flush_lsn); /* flush: the only field that moves the slot */
	n += 8;
	put_be64(buf + n, flush_lsn); /* apply */
	n += 8;
	put_be64(buf + n, (uint64_t)(now_wall_us() - PG_EPOCH_OFFSET_US)); /* sendTime */
	n += 8;
	buf[n++] = reply_requested ? 1 : 0;
	if (PQputCopyData(PGC(rs), buf, (int)n) <= 0 || PQflush(PGC(rs)) < 0) {
		set_err(err, errlen, "could not send status update: %s", pq_err(PGC(rs)));
		rs->stream_err = REPL_ERR_TRANSIENT;
		return -1;
	}
	return 0;
}

bool repl_wants_write(struct repl_stream *rs)
{
	return rs->conn != NULL && PQflush(PGC(rs)) == 1;
}

int repl_flush(struct repl_stream *rs, char *err, size_t errlen)
{
	if (PQflush(PGC(rs)) < 0) {
		set_err(err, errlen, "replication connection lost: %s", pq_err(PGC(rs)));
		rs->stream_err = REPL_ERR_TRANSIENT;
		return -1;
	}
	return 0;
}

void repl_close(struct repl_stream *rs)
{
	if (rs->copybuf != NULL)
		PQfreemem(rs->copybuf);
	rs->copybuf = NULL;
	if (rs->conn == NULL)
		return;
	if (rs->in_copy && PQstatus(PGC(rs)) == CONNECTION_OK) {
		/* CopyDone tells the walsender we are leaving on purpose; the
		 * confirmed position was already sent. */
		if (PQputCopyEnd(PGC(rs), NULL) == 1)
			(void)PQflush(PGC(rs));
	}
	PQfinish(PGC(rs));
	rs->conn = NULL;
	rs->in_copy = false;
}
