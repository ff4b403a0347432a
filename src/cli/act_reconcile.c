/* SPDX-License-Identifier: Apache-2.0 */
/* act_reconcile.c -- --reconcile: per event type (reconcile.<name>.*),
 * what the database did in a window (the type's SQL, one read-only
 * snapshot for all types) against the distinct events in its topic with
 * a timestamp in the window plus reconcile.grace.ms (kafka/window.h).
 * Exit 0 when nothing is missing, 1 when events are missing: a write
 * that bypassed the outbox, or a lost event. The comparison is pure
 * (cli/reconcile.h); docs/reconcile.md says what it proves. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli_int.h"
#include "cli/reconcile.h"
#include "kafka/window.h"
#include "pg/pgutil.h"

/* A bound of the window as PostgreSQL read it. */
struct bound {
	int64_t ms;                     /* since the epoch */
	char text[40];                  /* RFC 3339, UTC, microseconds */
};

/* flag's value as a timestamptz, or else as an interval before now().
 * Returns 0, or an exit code after saying why. */
static int resolve(PGconn *conn, const char *flag, const char *value,
                   struct bound *b)
{
	static const char *const sql[] = {
		"SELECT (extract(epoch FROM t) * 1000)::bigint, to_char(t AT TIME "
		"ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM (SELECT "
		"$1::timestamptz AS t) s",
		"SELECT (extract(epoch FROM t) * 1000)::bigint, to_char(t AT TIME "
		"ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM (SELECT "
		"now() - $1::interval AS t) s",
	};
	struct pgu_status st;
	char err[1024], first[1024] = "";
	PGresult *res;

	for (size_t i = 0; i < 2; i++) {
		res = pgu_query(conn, sql[i], 1, &value, cli_deadline(),
		                PGRES_TUPLES_OK, flag, &st, err, sizeof(err));
		if (res != NULL) {
			b->ms = pgu_i64(res, 0, 0);
			snprintf(b->text, sizeof(b->text), "%s", PQgetvalue(res, 0, 1));
			PQclear(res);
			return 0;
		}
		if (st.outcome != PGU_Q_REFUSED) {
			cli_err("%s", err);
			return RELAY_EXIT_UNAVAILABLE;
		}
		if (i == 0)
			snprintf(first, sizeof(first), "%s", err);
	}
	cli_err("%s (nor an interval before now)", first);
	return RELAY_EXIT_USAGE;
}

/* The type's SQL with $1, $2 = the window. Returns 0, or an exit code
 * after saying why. */
static int db_side(PGconn *conn, const struct rc_type *t,
                   const struct bound *since, const struct bound *until,
                   struct rc_db *d)
{
	const char *params[2] = { since->text, until->text };
	char what[128], err[1400];
	struct pgu_status st;
	PGresult *res;

	snprintf(what, sizeof(what), "reconcile.%s.sql", t->name);
	res = pgu_query(conn, t->sql, 2, params, cli_deadline(), PGRES_TUPLES_OK,
	                what, &st, err, sizeof(err));
	if (res == NULL) {
		cli_err("%s", err);
		return st.outcome == PGU_Q_REFUSED ? RELAY_EXIT_CONFIG
		                                   : RELAY_EXIT_UNAVAILABLE;
	}
	/* One column named count: a count. Anything else: keys, the first
	 * column of each row. */
	if (PQnfields(res) == 1 && strcmp(PQfname(res, 0), "count") == 0) {
		const char *v = PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "";
		char *end;
		long long n = strtoll(v, &end, 10);
		rc_db_init(d, false);
		if (v[0] == '\0' || *end != '\0' || n < 0) {
			cli_err("%s: a column named count must be one row with a "
			        "count, got %d rows%s%s", what, PQntuples(res),
			        PQntuples(res) == 1 ? " with " : "",
			        PQntuples(res) == 1 ? v : "");
			PQclear(res);
			return RELAY_EXIT_CONFIG;
		}
		d->count = (uint64_t)n;
	} else {
		rc_db_init(d, true);
		for (int r = 0; r < PQntuples(res); r++)
			if (!PQgetisnull(res, r, 0))
				rc_db_add_key(d, PQgetvalue(res, r, 0),
				              (size_t)PQgetlength(res, r, 0));
	}
	PQclear(res);
	return 0;
}

static void on_record(void *ctx, const struct kw_record *r)
{
	rc_tally_offer(ctx, r);
}

static int write_metrics(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;
	int ok;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >=
	    (int)sizeof(tmp)) {
		cli_err("--metrics-file: path too long");
		return -1;
	}
	f = fopen(tmp, "w");
	if (f == NULL) {
		cli_err("--metrics-file: cannot write %s: %s", tmp, strerror(errno));
		return -1;
	}
	ok = fputs(text, f) >= 0;
	ok = fflush(f) == 0 && ok;
	ok = fsync(fileno(f)) == 0 && ok;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) < 0) {
		cli_err("--metrics-file: cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

static double now_s(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void print_text(const struct rc_type *t, const struct rc_db *d,
                       const struct rc_tally *k, const struct rc_result *r,
                       const struct kw_stats *ks)
{
	printf("%s: database %llu%s, kafka %llu event%s in %s%s%s (%llu "
	       "duplicate record%s), missing %llu", t->name,
	       (unsigned long long)r->database, d->by_keys ? " keys" : "",
	       (unsigned long long)r->kafka_events, cli_pl(r->kafka_events),
	       t->topic, t->type ? " of type " : "", t->type ? t->type : "",
	       (unsigned long long)r->duplicates, cli_pl(r->duplicates),
	       (unsigned long long)r->missing);
	for (size_t i = 0; i < r->nnamed; i++)
		printf("%s%s", i ? ", " : " (keys ", r->named[i]);
	if (r->nnamed > 0)
		printf("%s)", r->missing > r->nnamed ? ", ..." : "");
	printf(", surplus %llu%s\n", (unsigned long long)r->surplus,
	       ks->no_topic ? " [the topic does not exist]" : "");
	if (k->without_id > 0)
		cli_err("%s: %llu record%s without an id header, each counted as an "
		        "event", t->name, (unsigned long long)k->without_id,
		        cli_pl(k->without_id));
}

static json_t *result_json(const struct rc_type *t, const struct rc_db *d,
                           const struct rc_tally *k, const struct rc_result *r,
                           const struct kw_stats *ks)
{
	json_t *o = json_object(), *named = json_array();

	for (size_t i = 0; i < r->nnamed; i++)
		json_array_append_new(named, cli_jstr(r->named[i]));
	json_object_set_new(o, "name", cli_jstr(t->name));
	json_object_set_new(o, "topic", cli_jstr(t->topic));
	json_object_set_new(o, "type", cli_jstr(t->type));
	json_object_set_new(o, "by_keys", json_boolean(d->by_keys));
	json_object_set_new(o, "database", json_integer((json_int_t)r->database));
	json_object_set_new(o, "kafka_events",
	                    json_integer((json_int_t)r->kafka_events));
	json_object_set_new(o, "duplicates",
	                    json_integer((json_int_t)r->duplicates));
	json_object_set_new(o, "missing", json_integer((json_int_t)r->missing));
	json_object_set_new(o, "missing_keys", named);
	json_object_set_new(o, "surplus", json_integer((json_int_t)r->surplus));
	json_object_set_new(o, "records_without_id",
	                    json_integer((json_int_t)k->without_id));
	json_object_set_new(o, "topic_exists", json_boolean(!ks->no_topic));
	return o;
}

int act_reconcile(const struct relay_config *cfg, const struct cli_args *a)
{
	int64_t timeout = a->timeout_ms > 0 ? a->timeout_ms : 120000;
	struct rc_type *types = NULL;
	struct rc_db *dbs = NULL;
	struct rc_result *res = NULL;
	const char **names = NULL;
	struct kw_reader *kr = NULL;
	struct bound since, until;
	struct pgu_status st;
	json_t *jtypes = NULL;
	char err[1400];
	PGconn *conn = NULL;
	PGresult *r;
	uint64_t missing = 0;
	int n, done = 0, rc;

	if (a->since == NULL || a->until == NULL) {
		cli_err("--reconcile needs --since and --until");
		return RELAY_EXIT_USAGE;
	}
	if ((n = rc_types(cfg, &types, err, sizeof(err))) < 0) {
		cli_err("%s", err);
		return RELAY_EXIT_CONFIG;
	}
	/* kc_validate_config() only reads; its signature predates const. */
	if (kc_validate_config((struct relay_config *)cfg, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		free(types);
		return RELAY_EXIT_CONFIG;
	}
	dbs = xcalloc((size_t)n, sizeof(*dbs));
	res = xcalloc((size_t)n, sizeof(*res));
	names = xcalloc((size_t)n, sizeof(*names));
	rc = RELAY_EXIT_UNAVAILABLE;
	conn = cli_connect(cfg, false, timeout, err, sizeof(err));
	if (conn == NULL) {
		cli_err("%s", err);
		goto out;
	}
	if ((rc = resolve(conn, "--since", a->since, &since)) != 0 ||
	    (rc = resolve(conn, "--until", a->until, &until)) != 0)
		goto out;
	if (since.ms >= until.ms) {
		cli_err("--since (%s) must be before --until (%s)", since.text,
		        until.text);
		rc = RELAY_EXIT_USAGE;
		goto out;
	}
	/* One snapshot for every type, and nothing the SQL could write. */
	rc = RELAY_EXIT_UNAVAILABLE;
	r = pgu_query(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0,
	              NULL, cli_deadline(), PGRES_COMMAND_OK, "BEGIN", &st, err,
	              sizeof(err));
	if (r == NULL) {
		cli_err("%s", err);
		goto out;
	}
	PQclear(r);
	for (int i = 0; i < n; i++) {
		names[i] = types[i].name;
		done = i + 1;
		if ((rc = db_side(conn, &types[i], &since, &until, &dbs[i])) != 0)
			goto out;
	}
	PQfinish(conn);
	conn = NULL;

	rc = RELAY_EXIT_UNAVAILABLE;
	kr = kw_open(cfg, err, sizeof(err));
	if (kr == NULL) {
		cli_err("%s", err);
		goto out;
	}
	if (a->json)
		jtypes = json_array();
	else
		printf("window [%s, %s) in the database, Kafka records to %lld ms "
		       "past its end\n", since.text, until.text,
		       (long long)cfg->reconcile_grace_ms);
	for (int i = 0; i < n; i++) {
		const struct rc_type *t = &types[i];
		struct rc_tally k;
		struct kw_stats ks;
		rc_tally_init(&k, since.ms, until.ms + cfg->reconcile_grace_ms,
		              t->type, cfg->key_format);
		if (kw_read(kr, t->topic, t->type ? t->type_header : NULL, since.ms,
		            (int)timeout, on_record, &k, &ks, err, sizeof(err)) < 0) {
			cli_err("reconcile.%s: %s (raise --timeout-ms if it timed out)",
			        t->name, err);
			rc_tally_free(&k);
			json_decref(jtypes);
			jtypes = NULL;
			goto out;
		}
		rc_compare(&dbs[i], &k, &res[i]);
		missing += res[i].missing;
		if (a->json)
			json_array_append_new(jtypes, result_json(t, &dbs[i], &k, &res[i],
			                                          &ks));
		else
			print_text(t, &dbs[i], &k, &res[i], &ks);
		rc_tally_free(&k);
	}
	fflush(stdout);
	if (a->json) {
		json_t *o = json_object();
		json_object_set_new(o, "since", cli_jstr(since.text));
		json_object_set_new(o, "until", cli_jstr(until.text));
		json_object_set_new(o, "grace_ms",
		                    json_integer((json_int_t)cfg->reconcile_grace_ms));
		json_object_set_new(o, "types", jtypes);
		json_object_set_new(o, "missing", json_integer((json_int_t)missing));
		cli_json_out(o);
	}
	rc = missing > 0 ? RELAY_EXIT_FAILURE : RELAY_EXIT_OK;
out:
	if (conn != NULL)
		PQfinish(conn);
	kw_close(kr);
	if (a->metrics_file != NULL && a->metrics_file[0] != '\0') {
		bool success = rc == RELAY_EXIT_OK || rc == RELAY_EXIT_FAILURE;
		char *text = rc_metrics_text(names, res, success ? (size_t)n : 0,
		                             now_s(), success);
		if (write_metrics(a->metrics_file, text) < 0 && success)
			rc = RELAY_EXIT_CONFIG;
		free(text);
	}
	for (int i = 0; i < done; i++)
		rc_db_free(&dbs[i]);
	free(dbs);
	free(res);
	free(names);
	free(types);
	return rc;
}
