/* SPDX-License-Identifier: Apache-2.0 */
/* cli_common.c -- what the runbook actions share (cli_int.h): output,
 * connections, the slot ledger, a Kafka client. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_int.h"
#include "pg/pgutil.h"

#define CLI_STATEMENT_BOUND_US (600 * INT64_C(1000000))
#define CLI_LEDGER_TIMEOUT_MS 10000

/* ------------------------------------------------------------ output */

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fputs("outbox-relay: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

json_t *cli_jstrn(const char *p, size_t n)
{
	json_t *s = json_stringn(p, n);

	return s != NULL ? s : json_stringn_nocheck(p, n);
}

json_t *cli_jstr(const char *p)
{
	return p != NULL ? cli_jstrn(p, strlen(p)) : json_null();
}

json_t *cli_jlsn(uint64_t lsn)
{
	char buf[32];

	if (lsn == LSN_INVALID)
		return json_null();
	snprintf(buf, sizeof(buf), LSN_FMT, LSN_ARGS(lsn));
	return json_string(buf);
}

void cli_json_out(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);

	if (s != NULL) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
	json_decref(o);
	fflush(stdout);
}

const char *cli_pl(uint64_t n)
{
	return n == 1 ? "" : "s";
}

void cli_ids_add(struct cli_ids *ids, const char *id)
{
	if (ids->n < CLI_SHOW_IDS)
		snprintf(ids->id[ids->n++], sizeof(ids->id[0]), "%s", id);
	ids->total++;
}

void cli_ids_text(const struct cli_ids *ids, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ids->n && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
		                      ids->id[i]);
	if (ids->total > ids->n && n < len)
		snprintf(buf + n, len - n, "%s...", ids->n ? ", " : "");
}

json_t *cli_ids_json(const struct cli_ids *ids)
{
	json_t *a = json_array();

	for (size_t i = 0; i < ids->n; i++)
		json_array_append_new(a, cli_jstr(ids->id[i]));
	return a;
}

/* ------------------------------------------------------------ PostgreSQL */

int64_t cli_deadline(void)
{
	return now_mono_us() + CLI_STATEMENT_BOUND_US;
}

int cli_require_pg(const struct relay_config *cfg)
{
	char err[512];

	if (cfg->pg_conninfo == NULL || cfg->pg_conninfo[0] == '\0') {
		cli_err("pg.conninfo is required");
		return RELAY_EXIT_CONFIG;
	}
	if (cfg_check_conninfo(cfg, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		return RELAY_EXIT_CONFIG;
	}
	return 0;
}

PGconn *cli_connect(const struct relay_config *cfg, bool replication,
                    int64_t statement_timeout_ms, char *err, size_t errlen)
{
	char opts[64];
	enum pgu_class cls;

	snprintf(opts, sizeof(opts), "-c statement_timeout=%lld",
	         (long long)statement_timeout_ms);
	return pgu_connect(cfg->pg_conninfo, "outbox-relay-cli", replication,
	                   statement_timeout_ms > 0 ? opts : NULL, &cls, err,
	                   errlen);
}

PGconn *cli_open_slot(const struct relay_config *cfg, bool replication,
                      int64_t statement_timeout_ms, unsigned allow,
                      struct slot_row *row, int *code)
{
	struct pgu_status st;
	enum slot_refusal why;
	char err[1400];
	PGconn *conn = cli_connect(cfg, replication, statement_timeout_ms, err,
	                           sizeof(err));

	*code = RELAY_EXIT_UNAVAILABLE;
	if (conn == NULL) {
		cli_err("%s", err);
		return NULL;
	}
	if (slot_read(conn, cfg->slot_name, cli_deadline(), row, &st, err,
	              sizeof(err)) < 0) {
		cli_err("%s", err);
		PQfinish(conn);
		return NULL;
	}
	why = slot_judge(row, cfg->slot_plugin, allow);
	if (why != SLOT_USABLE) {
		slot_refusal_text(why, row, cfg->slot_name, true, err, sizeof(err));
		cli_err("%s", err);
		PQfinish(conn);
		return NULL;
	}
	*code = 0;
	return conn;
}

/* ------------------------------------------------------------ ledger */

int cli_ledger_key(const struct relay_config *cfg, const char *database,
                   char *key, size_t keylen, char *err, size_t errlen)
{
	PGconn *conn = cli_connect(cfg, true, 0, err, errlen);
	struct pgu_system sys;
	struct pgu_status st;
	int rc = -1;

	if (conn == NULL)
		return -1;
	if (pgu_identify(conn, cli_deadline(), &sys, &st, err, errlen) == 0) {
		if (ledger_key(sys.system_id, database, cfg->slot_name, key,
		               keylen) < 0)
			errbuf_set(err, errlen, "slot ledger key too long");
		else
			rc = 0;
	}
	PQfinish(conn);
	return rc;
}

int cli_ledger_read(const struct relay_config *cfg, const char *key,
                    bool create, struct ledger_entry *e, char *err,
                    size_t errlen)
{
	struct ledger *l = ledger_open(cfg, err, errlen);
	int rc;

	if (l == NULL)
		return -1;
	rc = ledger_read(l, key, create, e, CLI_LEDGER_TIMEOUT_MS, err, errlen);
	ledger_close(l);
	return rc;
}

int cli_ledger_record(const struct relay_config *cfg, const char *database,
                      uint64_t lsn, const char *what)
{
	char key[256], err[1400], sysid[32];
	char *value;
	int rc;

	if (cfg->slot_ledger_topic[0] == '\0')
		return 0;
	if (cli_ledger_key(cfg, database, key, sizeof(key), err, sizeof(err)) < 0) {
		cli_err("slot ledger: %s", err);
		return -1;
	}
	snprintf(sysid, sizeof(sysid), "%.*s", (int)strcspn(key, "/"), key);
	value = ledger_value(sysid, database, cfg->slot_name, lsn, what, NULL);
	rc = ledger_write(cfg, key, value, CLI_LEDGER_TIMEOUT_MS, err,
	                  sizeof(err));
	free(value);
	if (rc < 0) {
		cli_err("slot ledger: %s", err);
		return -1;
	}
	return 0;
}

int cli_advance(const struct relay_config *cfg, PGconn *conn,
                const struct slot_row *s, uint64_t target, uint64_t events,
                const char *ids, const char *what, uint64_t *moved_to)
{
	const char *name = cfg->slot_name;
	struct pgu_status st;
	char err[1400], now[32];
	time_t t = time(NULL);
	struct tm tm;

	/* The ledger first: a slot found past it is refused by the relay. */
	if (cli_ledger_record(cfg, s->database, target,
	                      what[0] ? "skip-transaction" : "advance-slot") < 0) {
		cli_err("slot \"%s\" was not advanced", name);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (slot_advance(conn, name, target, cli_deadline(), moved_to, &st, err,
	                 sizeof(err)) < 0) {
		cli_err("advancing slot \"%s\": %s", name, err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(stderr, "AUDIT: slot %s advanced from " LSN_FMT " to " LSN_FMT
	        " by user %s at %s, skipping %llu events (ids %s)%s\n", name,
	        LSN_ARGS(s->confirmed_lsn), LSN_ARGS(*moved_to), s->user, now,
	        (unsigned long long)events, ids[0] ? ids : "none", what);
	fflush(stderr);
	return 0;
}

/* ------------------------------------------------------------ Kafka */

static void on_error(rd_kafka_t *rk, int err, const char *reason,
                     void *opaque)
{
	struct cli_kafka *k = opaque;
	char buf[512];

	(void)rk;
	snprintf(buf, sizeof(buf), "%s: %s",
	         rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
	kc_redact(k->secrets, buf, k->last_error, sizeof(k->last_error));
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf)
{
	/* Errors reach on_error; the chatter stays out of a CLI. */
	(void)rk, (void)level, (void)fac, (void)buf;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
	struct cli_kafka *k = opaque;

	(void)rk;
	if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
		k->acked++;
		return;
	}
	if (k->failed++ == 0)
		snprintf(k->first_failure, sizeof(k->first_failure), "%s",
		         rd_kafka_err2str(m->err));
}

int cli_kafka_open(struct cli_kafka *k, const struct relay_config *cfg,
                   int64_t timeout_ms, char *err, size_t errlen)
{
	char num[32], kerr[512], safe[600];
	const struct kc_extra extra[] = {
		{ "message.timeout.ms", num, true },
	};
	rd_kafka_conf_t *kc;

	memset(k, 0, sizeof(*k));
	snprintf(num, sizeof(num), "%lld", (long long)timeout_ms);
	kc = kc_conf_new(cfg, KC_RUNBOOK, extra, 1, err, errlen);
	if (kc == NULL)
		return -1;
	k->secrets = kc_secrets_new(cfg);
	rd_kafka_conf_set_opaque(kc, k);
	rd_kafka_conf_set_error_cb(kc, on_error);
	rd_kafka_conf_set_log_cb(kc, on_log);
	rd_kafka_conf_set_dr_msg_cb(kc, on_delivery);
	/* rd_kafka_new() takes ownership of kc on success only. */
	k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, kerr, sizeof(kerr));
	if (k->rk == NULL) {
		kc_redact(k->secrets, kerr, safe, sizeof(safe));
		errbuf_set(err, errlen, "creating a Kafka client: %s", safe);
		rd_kafka_conf_destroy(kc);
		kc_secrets_free(k->secrets);
		k->secrets = NULL;
		return -1;
	}
	return 0;
}

void cli_kafka_close(struct cli_kafka *k)
{
	if (k->rk != NULL)
		rd_kafka_destroy(k->rk);
	k->rk = NULL;
	kc_secrets_free(k->secrets);
	k->secrets = NULL;
}
