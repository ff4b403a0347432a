/* SPDX-License-Identifier: Apache-2.0 */
/* cli_int.h -- what the runbook actions in src/cli/ share: output,
 * connections, reading a slot's pending events, the slot ledger and a
 * Kafka client. Not for use outside src/cli/. */
#ifndef RELAY_CLI_INT_H
#define RELAY_CLI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>

#include "cli/cli.h"
#include "lib/common.h"
#include "lib/config.h"
#include "decode/event.h"
#include "kafka/kafka_conf.h"
#include "kafka/ledger.h"
#include "pg/slot.h"
#include "health/health.h"
#include "decode/stream_spec.h"

#define CLI_SHOW_IDS 10             /* ids named in a summary line */
#define CLI_ID_LEN 80

/* An action: the configuration and the parsed command line. */
typedef int (*cli_action_fn)(const struct relay_config *cfg,
                             const struct cli_args *a);

int act_check(const struct relay_config *cfg, const struct cli_args *a);
int act_create_slot(const struct relay_config *cfg, const struct cli_args *a);
int act_drop_slot(const struct relay_config *cfg, const struct cli_args *a);
int act_advance_slot(const struct relay_config *cfg, const struct cli_args *a);
int act_accept_slot(const struct relay_config *cfg, const struct cli_args *a);
int act_slot_status(const struct relay_config *cfg, const struct cli_args *a);
int act_skip_txn(const struct relay_config *cfg, const struct cli_args *a);
int act_dry_run(const struct relay_config *cfg, const struct cli_args *a);
int act_drain(const struct relay_config *cfg, const struct cli_args *a);
int act_from_debezium(const struct relay_config *cfg,
                      const struct cli_args *a);
int act_reconcile(const struct relay_config *cfg, const struct cli_args *a);

/* ---- output (cli_out.c) ---- */

/* "outbox-relay: <message>" on stderr. */
void cli_err(const char *fmt, ...) RELAY_PRINTF(1, 2);

/* JSON values: a string (bytes that are not UTF-8 pass through), NULL as
 * null; an LSN as "X/X", null for 0/0 (unknown). */
json_t *cli_jstrn(const char *p, size_t n);
json_t *cli_jstr(const char *p);
json_t *cli_jlsn(uint64_t lsn);

/* One compact JSON document and a newline on stdout; steals o. */
void cli_json_out(json_t *o);

/* "s" for a count that is not one. */
const char *cli_pl(uint64_t n);

/* Up to CLI_SHOW_IDS event ids, and how many were counted. */
struct cli_ids {
	char id[CLI_SHOW_IDS][CLI_ID_LEN];
	size_t n;
	uint64_t total;
};

void cli_ids_add(struct cli_ids *ids, const char *id);
/* "a, b, c, ..." ("..." when more were counted than named). */
void cli_ids_text(const struct cli_ids *ids, char *buf, size_t len);
json_t *cli_ids_json(const struct cli_ids *ids);

/* ---- PostgreSQL (cli_pg.c) ---- */

/* Every statement of an action but a peek ends by this (a server that
 * stops answering must not hang an operator's command forever). */
int64_t cli_deadline(void);

/* pg.conninfo must be present and pass cfg_check_conninfo(); 0 or
 * RELAY_EXIT_CONFIG after saying why. */
int cli_require_pg(const struct relay_config *cfg);

/* A connection with pg.conninfo and the connection defaults of
 * pgutil.h; statement_timeout_ms > 0 bounds each statement on the
 * server. Returns NULL with err filled. */
PGconn *cli_connect(const struct relay_config *cfg, bool replication,
                    int64_t statement_timeout_ms, char *err, size_t errlen);

/* Connects and reads the slot, refusing what allow does not allow
 * (slot.h). Returns the connection with *row filled, or NULL after
 * printing why with *code the exit code. */
PGconn *cli_open_slot(const struct relay_config *cfg, bool replication,
                      int64_t statement_timeout_ms, unsigned allow,
                      struct slot_row *row, int *code);

/* ---- reading pending events (cli_peek.c) ---- */

/* One record of a peek, as the relay would take it. */
struct cli_row {
	const struct slot_peek_row *raw;
	const struct ev_record *er;
	const struct ev_txn *txn;   /* after the record */
};

/* Returns 0 to go on, 1 to stop. */
typedef int (*cli_row_fn)(void *ctx, const struct cli_row *row);

struct cli_peek {
	const char *slot;           /* the slot to peek (real one or a copy) */
	uint64_t upto_lsn;          /* 0: no bound */
	int64_t upto_nchanges;      /* 0: no bound */
	cli_row_fn on_row;
	void *ctx;
	/* Out. */
	uint64_t rows;
	bool stopped, timed_out, busy;
};

/* Peeks (nothing is consumed) with the relay's wal2json options and hands
 * each record to pk->on_row read by the relay's rules (event.h). Returns
 * 0, or -1 with err filled. */
int cli_peek_run(PGconn *conn, const struct relay_config *cfg,
                 struct cli_peek *pk, char *err, size_t errlen);

/* ---- the slot ledger (cli_ledger.c) ---- */

/* The slot's ledger key (IDENTIFY_SYSTEM over a replication connection).
 * Returns 0, or -1 with err. */
int cli_ledger_key(const struct relay_config *cfg, const char *database,
                   char *key, size_t keylen, char *err, size_t errlen);

/* One read of the ledger. */
int cli_ledger_read(const struct relay_config *cfg, const char *key,
                    bool create, struct ledger_entry *e, char *err,
                    size_t errlen);

/* Records, before the slot moves there, that it is at lsn (what: who
 * moves it). Returns 0 (also when the ledger is off), or -1 after
 * printing why; then the caller must not move the slot. */
int cli_ledger_record(const struct relay_config *cfg, const char *database,
                      uint64_t lsn, const char *what);

/* pg_replication_slot_advance to target after the ledger record; prints
 * the AUDIT line. Returns 0 or RELAY_EXIT_UNAVAILABLE. */
int cli_advance(const struct relay_config *cfg, PGconn *conn,
                const struct slot_row *s, uint64_t target, uint64_t events,
                const char *ids, const char *what, uint64_t *moved_to);

/* ---- Kafka (cli_kafka.c) ---- */

/* What librdkafka's callbacks tell, on this thread (inside
 * rd_kafka_poll() and rd_kafka_flush()). */
struct cli_kafka {
	rd_kafka_t *rk;
	struct kc_secrets *secrets;
	char last_error[512];       /* redacted */
	uint64_t acked, failed;
	char first_failure[512];
};

/* A runbook client (kafka_conf.h) whose messages time out after
 * timeout_ms, so that nothing here waits forever. Returns 0, or -1 with
 * err filled (secrets withheld). */
int cli_kafka_open(struct cli_kafka *k, const struct relay_config *cfg,
                   int64_t timeout_ms, char *err, size_t errlen);
void cli_kafka_close(struct cli_kafka *k);

#endif
