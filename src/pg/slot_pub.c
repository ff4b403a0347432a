/* SPDX-License-Identifier: Apache-2.0 */
/* slot_pub.c -- the relay's publication (slot.plugin = pgoutput): the
 * catalogs read, the rules that judge them, and the statement that
 * creates one (slot.h, "the publication").
 *
 * Apart from slot.c because it is pgoutput's alone: wal2json has no
 * publication, and a publication that leaves a table, a row or a column
 * out drops events on the server with no error anywhere, so its rules
 * are a concern of their own (docs/pgoutput.md). */
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/slot.h"
#include "slot_int.h"

/* ------------------------------------------------------------ publication */

/* name as a quoted identifier ("a""b"), cut at outlen. */
static size_t quote_ident(const char *name, char *out, size_t outlen)
{
	size_t n = 0;

	if (outlen < 3) {
		if (outlen > 0)
			out[0] = '\0';
		return 0;
	}
	out[n++] = '"';
	for (const char *p = name; *p != '\0' && n + 3 < outlen; p++) {
		if (*p == '"')
			out[n++] = '"';
		out[n++] = *p;
	}
	out[n++] = '"';
	out[n] = '\0';
	return n;
}

/* The publication's target: "s"."t", or TABLES IN SCHEMA "s". */
static void pub_target(const struct record_spec *spec, char *out, size_t outlen)
{
	char s[160], t[160];

	quote_ident(spec->schema, s, sizeof(s));
	if (strcmp(spec->table, "*") == 0) {
		snprintf(out, outlen, "TABLES IN SCHEMA %s", s);
		return;
	}
	quote_ident(spec->table, t, sizeof(t));
	snprintf(out, outlen, "TABLE %s.%s", s, t);
}

void slot_pub_create_sql(const char *pub, const struct record_spec *spec,
                         char *out, size_t outlen)
{
	char q[160], target[400];

	quote_ident(pub, q, sizeof(q));
	pub_target(spec, target, sizeof(target));
	/* Inserts only: the outbox is insert-only, and pgoutput would
	 * otherwise send every update and delete for pgo.c to step over. */
	snprintf(out, outlen, "CREATE PUBLICATION %s FOR %s WITH (publish = "
	         "'insert');", q, target);
}

int slot_pub_create(PGconn *conn, const char *pub, const struct record_spec *spec,
                    int64_t deadline_us, struct pgu_status *st, char *err,
                    size_t errlen)
{
	char sql[800];
	PGresult *res;

	slot_pub_create_sql(pub, spec, sql, sizeof(sql));
	res = pgu_query(conn, sql, 0, NULL, deadline_us, PGRES_COMMAND_OK,
	                "creating the publication", st, err, errlen);
	PQclear(res);
	return res != NULL ? 0 : -1;
}

int slot_pub_read(PGconn *conn, const char *pub, const struct record_spec *spec,
                  int64_t deadline_us, struct slot_pub *p,
                  struct pgu_status *st, char *err, size_t errlen)
{
	const char *cols[REC_NCOLS];
	char *lit[REC_NCOLS + 3] = { 0 };
	char *sql = NULL, tables[600];
	PGresult *res;
	size_t n;
	int rc = -1, i;

	memset(p, 0, sizeof(*p));
	slot_spec_cols(spec, cols);
	for (i = 0; i < REC_NCOLS; i++)
		if ((lit[i] = slot_literal(conn, cols[i], st, err, errlen)) ==
		    NULL)
			goto out;
	if ((lit[REC_NCOLS] = slot_literal(conn, pub, st, err, errlen)) ==
	        NULL ||
	    (lit[REC_NCOLS + 1] = slot_literal(conn, spec->schema, st, err,
	                                       errlen)) == NULL ||
	    (lit[REC_NCOLS + 2] = slot_literal(conn, spec->table, st, err,
	                                       errlen)) == NULL)
		goto out;
	/* The rows of pg_publication_tables that are the outbox: one
	 * table, or every table of the schema. */
	snprintf(tables, sizeof(tables),
	         "FROM pg_catalog.pg_publication_tables t "
	         "WHERE t.pubname = p.pubname AND t.schemaname = %s "
	         "AND (%s = '*' OR t.tablename = %s)",
	         lit[REC_NCOLS + 1], lit[REC_NCOLS + 2], lit[REC_NCOLS + 2]);
	n = 4000 + 3 * strlen(tables);
	for (i = 0; i < REC_NCOLS + 3; i++)
		n += 3 * strlen(lit[i]);
	sql = xmalloc(n);
	snprintf(sql, n,
	         "SELECT p.pubinsert, p.puballtables, "
	         "pg_catalog.pg_get_userbyid(p.pubowner)::text, "
	         "concat_ws(', ', CASE WHEN p.pubinsert THEN 'insert' END, "
	         "CASE WHEN p.pubupdate THEN 'update' END, "
	         "CASE WHEN p.pubdelete THEN 'delete' END, "
	         "CASE WHEN p.pubtruncate THEN 'truncate' END), "
	         /* schema.*: a table created later must be published too,
	          * so the schema itself must be in the publication. */
	         "CASE WHEN %s = '*' THEN p.puballtables OR EXISTS ("
	         " SELECT 1 FROM pg_catalog.pg_publication_namespace pn "
	         " JOIN pg_catalog.pg_namespace s ON s.oid = pn.pnnspid "
	         " WHERE pn.pnpubid = p.oid AND s.nspname = %s) "
	         "ELSE EXISTS (SELECT 1 %s) END, "
	         "(SELECT pg_catalog.format('%%I.%%I', t.schemaname, t.tablename) %s "
	         " AND t.rowfilter IS NOT NULL ORDER BY t.tablename LIMIT 1), "
	         "(SELECT pg_catalog.format('%%I.%%I', t.schemaname, t.tablename) %s "
	         " AND EXISTS (SELECT 1 FROM unnest(ARRAY[%s, %s, %s, %s, %s]) c "
	         "  WHERE c::name <> ALL (t.attnames)) "
	         " ORDER BY t.tablename LIMIT 1), "
	         "(SELECT x.c FROM (SELECT t.attnames %s "
	         "  AND EXISTS (SELECT 1 FROM unnest(ARRAY[%s, %s, %s, %s, %s]) c "
	         "   WHERE c::name <> ALL (t.attnames)) "
	         "  ORDER BY t.tablename LIMIT 1) a, "
	         " unnest(ARRAY[%s, %s, %s, %s, %s]) WITH ORDINALITY AS x(c, n) "
	         " WHERE x.c::name <> ALL (a.attnames) ORDER BY x.n LIMIT 1) "
	         "FROM pg_catalog.pg_publication p WHERE p.pubname = %s",
	         lit[REC_NCOLS + 2], lit[REC_NCOLS + 1], tables, tables, tables,
	         lit[0], lit[1], lit[2], lit[3], lit[4], tables,
	         lit[0], lit[1], lit[2], lit[3], lit[4],
	         lit[0], lit[1], lit[2], lit[3], lit[4], lit[REC_NCOLS]);
	res = pgu_query(conn, sql, 0, NULL, deadline_us, PGRES_TUPLES_OK,
	                "reading the publication", st, err, errlen);
	if (res == NULL)
		goto out;
	rc = 0;
	if (PQntuples(res) == 1) {
		p->exists = true;
		p->pubinsert = pgu_bool(res, 0, 0);
		p->all_tables = pgu_bool(res, 0, 1);
		snprintf(p->owner, sizeof(p->owner), "%s", PQgetvalue(res, 0, 2));
		snprintf(p->publish, sizeof(p->publish), "%s", PQgetvalue(res, 0, 3));
		p->covered = pgu_bool(res, 0, 4);
		snprintf(p->filtered, sizeof(p->filtered), "%s", PQgetvalue(res, 0, 5));
		snprintf(p->cut_table, sizeof(p->cut_table), "%s",
		         PQgetvalue(res, 0, 6));
		snprintf(p->cut_column, sizeof(p->cut_column), "%s",
		         PQgetvalue(res, 0, 7));
		if (p->cut_table[0] == '\0')
			p->cut_column[0] = '\0';
	}
	PQclear(res);
out:
	for (i = 0; i < REC_NCOLS + 3; i++)
		PQfreemem(lit[i]);
	free(sql);
	return rc;
}

enum slot_pub_verdict slot_pub_judge(const struct slot_pub *p)
{
	if (!p->exists)
		return PUB_MISSING;
	if (!p->pubinsert)
		return PUB_NO_INSERT;
	if (!p->covered)
		return PUB_NOT_COVERED;
	if (p->filtered[0] != '\0')
		return PUB_ROW_FILTER;
	if (p->cut_table[0] != '\0')
		return PUB_COLUMN_LIST;
	return PUB_OK;
}

void slot_pub_text(enum slot_pub_verdict v, const struct slot_pub *p,
                   const char *pub, const struct record_spec *spec, char *what,
                   size_t whatlen, char *fix, size_t fixlen)
{
	bool schema = strcmp(spec->table, "*") == 0;
	char sql[800], q[160], target[400], outbox[300];

	quote_ident(pub, q, sizeof(q));
	pub_target(spec, target, sizeof(target));
	if (schema)
		snprintf(outbox, sizeof(outbox), "schema %s", spec->schema);
	else
		snprintf(outbox, sizeof(outbox), "%s.%s", spec->schema, spec->table);
	fix[0] = '\0';
	switch (v) {
	case PUB_OK:
		snprintf(what, whatlen, "\"%s\" publishes the inserts into %s%s, "
		         "every column, no row filter", pub, outbox,
		         p->all_tables ? " (FOR ALL TABLES)" : "");
		return;
	case PUB_MISSING:
		slot_pub_create_sql(pub, spec, sql, sizeof(sql));
		snprintf(what, whatlen, "\"%s\" does not exist", pub);
		/* A pgoutput slot reads its publication as of each change, so
		 * changes older than the publication cannot be decoded. */
		snprintf(fix, fixlen, "outbox-relay --create-slot creates it before "
		         "the slot; or, as %s%s%s: %s (an existing slot cannot "
		         "decode changes written before it)",
		         schema ? "a superuser" : "the owner of ", schema ? "" : outbox,
		         schema ? "" : " or a superuser", sql);
		return;
	case PUB_NO_INSERT:
		snprintf(what, whatlen, "\"%s\" does not publish inserts (publish = "
		         "'%s')", pub, p->publish);
		snprintf(fix, fixlen, "ALTER PUBLICATION %s SET (publish = '%s%s"
		         "insert'); (inserts committed before it are not published "
		         "from this slot)", q, p->publish, p->publish[0] ? ", " : "");
		return;
	case PUB_NOT_COVERED:
		snprintf(what, whatlen, "\"%s\" does not publish %s%s", pub, outbox,
		         schema ? " (a table created there later would be left "
		                  "out: the schema itself must be in it)" : "");
		snprintf(fix, fixlen, "ALTER PUBLICATION %s ADD %s; (inserts "
		         "committed before it are not published from this slot)", q,
		         target);
		return;
	case PUB_ROW_FILTER:
		snprintf(what, whatlen, "\"%s\" has a row filter on %s: the server "
		         "would drop every event it filters out, silently", pub,
		         p->filtered);
		/* One transaction: the table is never out of the publication
		 * for a commit to miss it, and other tables stay as they are. */
		snprintf(fix, fixlen, "BEGIN; ALTER PUBLICATION %s DROP TABLE %s; "
		         "ALTER PUBLICATION %s ADD TABLE %s; COMMIT; (adds it back "
		         "without the WHERE clause)", q, p->filtered, q, p->filtered);
		return;
	case PUB_COLUMN_LIST:
		snprintf(what, whatlen, "\"%s\" leaves out column \"%s\" of %s (a "
		         "column list): the relay could not read the events", pub,
		         p->cut_column, p->cut_table);
		snprintf(fix, fixlen, "BEGIN; ALTER PUBLICATION %s DROP TABLE %s; "
		         "ALTER PUBLICATION %s ADD TABLE %s; COMMIT; (adds it back "
		         "with every column)", q, p->cut_table, q, p->cut_table);
		return;
	}
}
