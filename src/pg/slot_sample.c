/* SPDX-License-Identifier: Apache-2.0 */
/* slot_sample.c -- how the slot and its servers are doing (slot.h): the
 * watchdog's sample of the slot, the slot's copy on a standby, and what
 * the server allows (--check).
 *
 * Apart from slot.c because these read figures, not verdicts: each query
 * is made from a table of columns chosen by the server's version (a
 * column the version lacks is selected as a stand-in), and health.c, not
 * this file, judges what they find. */
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/slot.h"
#include "slot_int.h"

/* ------------------------------------------------------------ sample */

/* The watchdog's figures, one column each: the SQL expression and where
 * its value goes. The query and its reading are both made from this. */
enum col_type { COL_BOOL, COL_INT, COL_I64, COL_I64_NULL, COL_LSN, COL_WAL,
	            COL_DOUBLE, COL_FLAG, COL_REASON };

/* A column that a version lacks is selected as its stand-in (older):
 * the select list is chosen by server_version_num, never failing on a
 * column the server does not have, and the row keeps its shape. */
#define F(f) offsetof(struct slot_figures, f)
static const struct {
	const char *expr;
	enum col_type type;
	size_t off;
	int since;                  /* server_version_num; 0 every version */
	const char *older;          /* the expression before since */
} sample_cols[] = {
	{ "s.slot_name IS NOT NULL", COL_BOOL, F(slot_exists), 0, NULL },
	{ "coalesce(s.active, false)", COL_BOOL, F(active), 0, NULL },
	{ "coalesce(s.active_pid, 0)", COL_INT, F(active_pid), 0, NULL },
	{ "coalesce(s.restart_lsn::text, '')", COL_LSN, F(restart_lsn), 0, NULL },
	{ "coalesce(s.confirmed_flush_lsn::text, '')", COL_LSN,
	  F(confirmed_flush_lsn), 0, NULL },
	{ "coalesce(s.wal_status, '')", COL_WAL, F(wal_status), 0, NULL },
	{ "coalesce(s.safe_wal_size, -1)", COL_I64, F(safe_wal_size), 0, NULL },
	{ "w.lsn::text", COL_LSN, F(current_lsn), 0, NULL },
	{ "coalesce(pg_wal_lsn_diff(w.lsn, s.restart_lsn)::bigint, -1)", COL_I64,
	  F(retained_bytes), 0, NULL },
	{ "coalesce(pg_wal_lsn_diff(w.lsn, s.confirmed_flush_lsn)::bigint, -1)",
	  COL_I64, F(confirmed_lag_bytes), 0, NULL },
	/* NULL (no such setting) reads as unlimited. */
	{ "(SELECT CASE WHEN setting::bigint < 0 THEN -1 "
	  "        ELSE setting::bigint * 1024 * 1024 END "
	  "   FROM pg_catalog.pg_settings WHERE name = 'max_slot_wal_keep_size')",
	  COL_I64_NULL, F(max_slot_wal_keep_size), 0, NULL },
	{ "coalesce(st.spill_txns, 0)", COL_I64, F(spill_txns), 0, NULL },
	{ "coalesce(st.spill_count, 0)", COL_I64, F(spill_count), 0, NULL },
	{ "coalesce(st.spill_bytes, 0)", COL_I64, F(spill_bytes), 0, NULL },
	{ "coalesce(st.stream_txns, 0)", COL_I64, F(stream_txns), 0, NULL },
	{ "coalesce(st.stream_count, 0)", COL_I64, F(stream_count), 0, NULL },
	{ "coalesce(st.stream_bytes, 0)", COL_I64, F(stream_bytes), 0, NULL },
	{ "coalesce(st.total_txns, 0)", COL_I64, F(total_txns), 0, NULL },
	{ "coalesce(st.total_bytes, 0)", COL_I64, F(total_bytes), 0, NULL },
	{ "coalesce(x.pid, 0)", COL_INT, F(oldest_xact_pid), 0, NULL },
	{ "coalesce(x.xage, 0)", COL_I64, F(oldest_xact_age), 0, NULL },
	{ "coalesce(x.secs, 0)", COL_DOUBLE, F(oldest_xact_seconds), 0, NULL },
	{ "s.conflicting", COL_FLAG, F(conflicting), SLOT_PG_CONFLICTING,
	  "NULL::boolean" },
	{ "s.failover", COL_FLAG, F(failover), SLOT_PG_FAILOVER, "NULL::boolean" },
	{ "s.synced", COL_FLAG, F(synced), SLOT_PG_FAILOVER, "NULL::boolean" },
	{ "coalesce((extract(epoch FROM s.inactive_since) * 1000000)::bigint, 0)",
	  COL_I64, F(inactive_since_us), SLOT_PG_FAILOVER, "0::bigint" },
	/* 15 and 16 say only wal_status lost: WAL removed. */
	{ "coalesce(s.invalidation_reason, '')", COL_REASON,
	  F(invalidation_reason), SLOT_PG_FAILOVER,
	  "CASE WHEN s.wal_status = 'lost' THEN 'wal_removed' ELSE '' END" },
	{ "coalesce((SELECT setting::bigint FROM pg_catalog.pg_settings "
	  "  WHERE name = 'idle_replication_slot_timeout'), 0)", COL_I64,
	  F(idle_timeout_s), SLOT_PG_IDLE_TIMEOUT, "0::bigint" },
};
#undef F

#define NSAMPLE (sizeof(sample_cols) / sizeof(sample_cols[0]))

/* The WAL position of a standby (in recovery) is its replay position:
 * pg_current_wal_lsn() fails there, and 17's synced slots are read on
 * standbys. */
static const char sample_from[] =
	" FROM (SELECT CASE WHEN pg_catalog.pg_is_in_recovery() "
	"      THEN pg_catalog.pg_last_wal_replay_lsn() "
	"      ELSE pg_catalog.pg_current_wal_lsn() END AS lsn) AS w "
	"LEFT JOIN pg_catalog.pg_replication_slots s ON s.slot_name = $1 "
	"LEFT JOIN pg_catalog.pg_stat_replication_slots st "
	"       ON st.slot_name = s.slot_name "
	"LEFT JOIN LATERAL (SELECT a.pid, age(a.backend_xid) AS xage, "
	"       extract(epoch FROM now() - a.xact_start)::float8 AS secs "
	"     FROM pg_catalog.pg_stat_activity a WHERE a.backend_xid IS NOT NULL "
	"     ORDER BY age(a.backend_xid) DESC LIMIT 1) x ON true";

static const char *sample_expr(size_t i, int version)
{
	return version < sample_cols[i].since ? sample_cols[i].older
	                                      : sample_cols[i].expr;
}

char *slot_sample_sql(int version)
{
	size_t n = sizeof("SELECT ") + sizeof(sample_from);
	char *sql;

	for (size_t i = 0; i < NSAMPLE; i++)
		n += strlen(sample_expr(i, version)) + 2;
	sql = xmalloc(n);
	strcpy(sql, "SELECT ");
	for (size_t i = 0; i < NSAMPLE; i++) {
		if (i > 0)
			strcat(sql, ", ");
		strcat(sql, sample_expr(i, version));
	}
	strcat(sql, sample_from);
	return sql;
}

int slot_sample(PGconn *conn, const char *name, int64_t deadline_us,
                struct slot_figures *f, struct pgu_status *st, char *err,
                size_t errlen)
{
	const char *params[1] = { name };
	int version = PQserverVersion(conn);
	char *sql = slot_sample_sql(version);
	PGresult *res = pgu_query(conn, sql, 1, params, deadline_us,
	                          PGRES_TUPLES_OK, "sample query", st, err,
	                          errlen);

	free(sql);
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1 || PQnfields(res) != (int)NSAMPLE) {
		st->outcome = PGU_Q_NO_ANSWER;
		errbuf_set(err, errlen, "sample query returned %d rows of %d columns",
		           PQntuples(res), PQnfields(res));
		PQclear(res);
		return -1;
	}
	memset(f, 0, sizeof(*f));
	f->valid = true;
	f->sampled_at_us = now_wall_us();
	f->server_version = version;
	/* Each value is copied to its member by memcpy: the column table
	 * holds offsets, and a typed store through a char pointer is what
	 * alias analysis (and cppcheck) rightly distrusts. */
	for (size_t i = 0; i < NSAMPLE; i++) {
		char *p = (char *)f + sample_cols[i].off;
		int c = (int)i;
		bool b;
		int n;
		int64_t v;
		uint64_t lsn;
		enum wal_status w;
		enum slot_flag fl;
		double d;

		switch (sample_cols[i].type) {
		case COL_BOOL:
			b = pgu_bool(res, 0, c);
			memcpy(p, &b, sizeof(b));
			break;
		case COL_INT:
			n = (int)pgu_i64(res, 0, c);
			memcpy(p, &n, sizeof(n));
			break;
		case COL_I64:
			v = pgu_i64(res, 0, c);
			memcpy(p, &v, sizeof(v));
			break;
		case COL_I64_NULL:
			v = PQgetisnull(res, 0, c) ? -1 : pgu_i64(res, 0, c);
			memcpy(p, &v, sizeof(v));
			break;
		case COL_LSN:
			lsn = pgu_lsn(res, 0, c);
			memcpy(p, &lsn, sizeof(lsn));
			break;
		case COL_WAL:
			w = wal_status_parse(PQgetvalue(res, 0, c));
			memcpy(p, &w, sizeof(w));
			break;
		case COL_DOUBLE:
			d = strtod(PQgetvalue(res, 0, c), NULL);
			memcpy(p, &d, sizeof(d));
			break;
		case COL_FLAG:
			fl = slot_flag_of(res, c);
			memcpy(p, &fl, sizeof(fl));
			break;
		case COL_REASON:
			snprintf(p, SLOT_REASON_LEN, "%s", PQgetvalue(res, 0, c));
			break;
		}
	}
	PQclear(res);
	return 0;
}

/* ------------------------------------------------------------ standby */

/* The copy's columns after the five every version has, each selected as
 * its stand-in before the version that has it (a 15 or 16 standby
 * answers too: the copy is then missing or never synced). */
static const struct {
	const char *expr;
	int since;
	const char *older;
} standby_cols[] = {
	{ "s.synced", SLOT_PG_FAILOVER, "NULL::boolean" },
	{ "s.failover", SLOT_PG_FAILOVER, "NULL::boolean" },
	{ "coalesce(s.invalidation_reason, '')", SLOT_PG_FAILOVER,
	  "CASE WHEN s.wal_status = 'lost' THEN 'wal_removed' ELSE '' END" },
};

#define NSTANDBY_BASE 6
#define NSTANDBY (NSTANDBY_BASE + \
                  (int)(sizeof(standby_cols) / sizeof(standby_cols[0])))

char *slot_standby_sql(int version)
{
	char more[512] = "";
	size_t n = 0;
	char *sql;

	for (size_t i = 0; i < sizeof(standby_cols) / sizeof(standby_cols[0]); i++)
		n += (size_t)snprintf(more + n, sizeof(more) - n, ", %s",
		                      version < standby_cols[i].since
		                          ? standby_cols[i].older
		                          : standby_cols[i].expr);
	n = strlen(more) + 600;
	sql = xmalloc(n);
	/* One row whether or not the copy exists. */
	snprintf(sql, n,
	         "SELECT pg_catalog.pg_is_in_recovery(), "
	         "coalesce(pg_catalog.pg_last_wal_replay_lsn()::text, ''), "
	         "coalesce(pg_catalog.pg_last_wal_receive_lsn()::text, ''), "
	         "s.slot_name IS NOT NULL, "
	         "coalesce(s.confirmed_flush_lsn::text, ''), "
	         "coalesce(s.restart_lsn::text, '')%s "
	         "FROM (SELECT 1) AS one "
	         "LEFT JOIN pg_catalog.pg_replication_slots s "
	         "ON s.slot_name = $1", more);
	return sql;
}

int slot_standby_read(PGconn *conn, const char *name, int64_t deadline_us,
                      struct slot_standby *sb, struct pgu_status *st,
                      char *err, size_t errlen)
{
	const char *params[1] = { name };
	int version = PQserverVersion(conn);
	char *sql = slot_standby_sql(version);
	PGresult *res = pgu_query(conn, sql, 1, params, deadline_us,
	                          PGRES_TUPLES_OK, "reading the standby's slot",
	                          st, err, errlen);

	free(sql);
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1 || PQnfields(res) != NSTANDBY) {
		st->outcome = PGU_Q_NO_ANSWER;
		errbuf_set(err, errlen, "reading the standby's slot: %d rows of %d "
		           "columns", PQntuples(res), PQnfields(res));
		PQclear(res);
		return -1;
	}
	sb->server_version = version;
	sb->in_recovery = pgu_bool(res, 0, 0);
	sb->replay_lsn = pgu_lsn(res, 0, 1);
	sb->receive_lsn = pgu_lsn(res, 0, 2);
	sb->slot_exists = pgu_bool(res, 0, 3);
	sb->confirmed_flush_lsn = pgu_lsn(res, 0, 4);
	sb->restart_lsn = pgu_lsn(res, 0, 5);
	sb->synced = slot_flag_of(res, NSTANDBY_BASE);
	sb->failover = slot_flag_of(res, NSTANDBY_BASE + 1);
	snprintf(sb->invalidation_reason, sizeof(sb->invalidation_reason), "%s",
	         PQgetvalue(res, 0, NSTANDBY_BASE + 2));
	PQclear(res);
	return 0;
}

/* ------------------------------------------------------------ server */

static int text_int(const char *v)
{
	long n = strtol(v, NULL, 10);

	return n > INT_MAX || n < INT_MIN ? 0 : (int)n;
}

int slot_server_read(PGconn *conn, int64_t deadline_us, struct slot_server *s,
                     struct pgu_status *st, char *err, size_t errlen)
{
	PGresult *res = pgu_query(conn,
		"SELECT current_setting('server_version_num')::int, "
		"current_setting('server_version'), current_setting('wal_level'), "
		"current_setting('max_replication_slots')::int, "
		"(SELECT count(*) FROM pg_catalog.pg_replication_slots), "
		"current_setting('max_wal_senders')::int, "
		"(SELECT count(*) FROM pg_catalog.pg_stat_activity "
		" WHERE backend_type = 'walsender'), "
		"(SELECT setting FROM pg_catalog.pg_settings "
		" WHERE name = 'output_plugin_libraries'), "
		"current_setting('max_slot_wal_keep_size'), "
		"r.rolreplication, r.rolsuper, current_user::text, "
		"r.rolsuper OR pg_catalog.pg_has_role('pg_read_all_settings', 'USAGE'), "
		/* 17's and 18's settings: NULL where the server has none. */
		"pg_catalog.pg_is_in_recovery(), "
		"(SELECT setting FROM pg_catalog.pg_settings "
		" WHERE name = 'synchronized_standby_slots'), "
		"(SELECT setting FROM pg_catalog.pg_settings "
		" WHERE name = 'idle_replication_slot_timeout'), "
		"(SELECT coalesce(string_agg(slot_name::text, ',' ORDER BY slot_name), "
		" '') FROM pg_catalog.pg_replication_slots "
		" WHERE slot_type = 'physical'), "
		"(SELECT coalesce(string_agg(slot_name::text, ',' ORDER BY slot_name), "
		" '') FROM pg_catalog.pg_replication_slots "
		" WHERE slot_type = 'physical' AND active), "
		"(SELECT count(*) FROM pg_catalog.pg_stat_replication x "
		" WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_replication_slots p "
		"  WHERE p.active_pid = x.pid)) "
		"FROM pg_catalog.pg_roles r WHERE r.rolname = current_user",
		0, NULL, deadline_us, PGRES_TUPLES_OK, "reading the server settings",
		st, err, errlen);

	memset(s, 0, sizeof(*s));
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1) {
		st->outcome = PGU_Q_NO_ANSWER;
		errbuf_set(err, errlen, "reading the server settings: %d rows",
		           PQntuples(res));
		PQclear(res);
		return -1;
	}
	s->version_num = text_int(PQgetvalue(res, 0, 0));
	snprintf(s->version, sizeof(s->version), "%s", PQgetvalue(res, 0, 1));
	snprintf(s->wal_level, sizeof(s->wal_level), "%s", PQgetvalue(res, 0, 2));
	s->max_slots = text_int(PQgetvalue(res, 0, 3));
	s->used_slots = text_int(PQgetvalue(res, 0, 4));
	s->max_senders = text_int(PQgetvalue(res, 0, 5));
	s->used_senders = text_int(PQgetvalue(res, 0, 6));
	s->plugin_libs_known = !PQgetisnull(res, 0, 7);
	snprintf(s->plugin_libs, sizeof(s->plugin_libs), "%s",
	         PQgetvalue(res, 0, 7));
	snprintf(s->max_slot_wal_keep_size, sizeof(s->max_slot_wal_keep_size),
	         "%s", PQgetvalue(res, 0, 8));
	s->replication = pgu_bool(res, 0, 9);
	s->superuser = pgu_bool(res, 0, 10);
	snprintf(s->user, sizeof(s->user), "%s", PQgetvalue(res, 0, 11));
	s->read_all_settings = pgu_bool(res, 0, 12);
	s->in_recovery = pgu_bool(res, 0, 13);
	s->standby_slots_known = !PQgetisnull(res, 0, 14);
	snprintf(s->standby_slots, sizeof(s->standby_slots), "%s",
	         PQgetvalue(res, 0, 14));
	s->idle_timeout_s = PQgetisnull(res, 0, 15) ? -1 : pgu_i64(res, 0, 15);
	snprintf(s->physical, sizeof(s->physical), "%s", PQgetvalue(res, 0, 16));
	snprintf(s->physical_active, sizeof(s->physical_active), "%s",
	         PQgetvalue(res, 0, 17));
	s->slotless_senders = text_int(PQgetvalue(res, 0, 18));
	PQclear(res);
	return 0;
}

/* The next name of a comma-separated list into name (unquoted; an
 * unquoted name lower-cased, as PostgreSQL reads an identifier list).
 * Returns the rest of the list, or NULL at its end. */
static const char *next_name(const char *p, char *name, size_t len)
{
	size_t n = 0;

	while (*p == ' ' || *p == '\t' || *p == ',')
		p++;
	if (*p == '\0')
		return NULL;
	if (*p == '"') {
		for (p++; *p != '\0'; p++) {
			if (*p == '"' && p[1] == '"')
				p++;
			else if (*p == '"') {
				p++;
				break;
			}
			if (n + 1 < len)
				name[n++] = *p;
		}
	} else {
		for (; *p != '\0' && *p != ',' && *p != ' ' && *p != '\t'; p++)
			if (n + 1 < len)
				name[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
	}
	name[n] = '\0';
	while (*p != '\0' && *p != ',')
		p++;
	return p;
}

static bool list_has(const char *list, const char *name)
{
	char item[128];
	const char *p = list;

	while ((p = next_name(p, item, sizeof(item))) != NULL)
		if (strcmp(item, name) == 0)
			return true;
	return false;
}

static void list_add(char *out, size_t len, const char *name)
{
	size_t n = strlen(out);

	snprintf(out + n, len - n, "%s%s", n ? ", " : "", name);
}

void slot_standby_compare(const char *setting, const char *physical,
                          const char *active, char *missing, size_t misslen,
                          char *unknown, size_t unknownlen, char *idle,
                          size_t idlelen)
{
	char name[128];
	const char *p;

	missing[0] = unknown[0] = idle[0] = '\0';
	/* "*" is not a slot name: 17 refuses it in this setting. */
	for (p = active; (p = next_name(p, name, sizeof(name))) != NULL;)
		if (!list_has(setting, name))
			list_add(missing, misslen, name);
	for (p = setting; (p = next_name(p, name, sizeof(name))) != NULL;) {
		if (!list_has(physical, name))
			list_add(unknown, unknownlen, name);
		else if (!list_has(active, name))
			list_add(idle, idlelen, name);
	}
}
