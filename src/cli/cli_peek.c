/* SPDX-License-Identifier: Apache-2.0 */
/* cli_peek.c -- a slot's pending records, read by the relay's rules.
 *
 * The peek asks the output plugin with the relay's own options
 * (stream_spec.h) and every record goes through ev_next_at() (event.h),
 * so an action sees exactly the events the relay would publish: table
 * rows and outbox_emit() messages alike, from wal2json or pgoutput. */
#include <stdlib.h>

#include "cli_int.h"

struct peek_ctx {
	const struct stream_spec *ss;
	struct pgo_state pgo;       /* pgoutput: the peek's relation cache */
	struct ev_txn txn;
	struct cli_peek *pk;
};

static int on_raw(void *ctx, const struct slot_peek_row *raw)
{
	struct peek_ctx *c = ctx;
	bool pgoutput = c->ss->plugin == SS_PLUGIN_PGOUTPUT;
	struct ev_record er;
	struct cli_row row = { .raw = raw, .er = &er, .txn = &c->txn };
	int rc;

	/* A peek row carries one pgoutput message, and its lsn is what the
	 * XLogData frame's dataStart would be on the stream. */
	ev_next_at(c->ss, pgoutput ? &c->pgo : NULL, raw->data, raw->len,
	           raw->lsn, &c->txn, &er);
	rc = c->pk->on_row(c->pk->ctx, &row);
	ev_record_clear(&er);
	return rc;
}

int cli_peek_run(PGconn *conn, const struct relay_config *cfg,
                 struct cli_peek *pk, char *err, size_t errlen)
{
	struct stream_spec ss;
	struct peek_ctx c = { .ss = &ss, .pk = pk };
	struct slot_peek sp = { 0 };
	int rc;

	ss_init(&ss, cfg);
	/* Every peek is a session of its own: pgoutput sends the Relation
	 * messages again in each, so the cache starts empty. */
	pgo_init(&c.pgo, &ss.spec);
	ev_txn_reset(&c.txn);
	sp.slot = pk->slot;
	sp.function = ss_peek_function(&ss);
	sp.options = ss_peek_options(&ss);
	sp.upto_lsn = pk->upto_lsn;
	sp.upto_nchanges = pk->upto_nchanges;
	sp.on_row = on_raw;
	sp.ctx = &c;
	rc = slot_peek_run(conn, &sp, err, errlen);
	pk->rows = sp.rows;
	pk->stopped = sp.stopped;
	pk->timed_out = sp.timed_out;
	pk->busy = sp.busy;
	free((char *)sp.options);
	pgo_free(&c.pgo);
	ss_free(&ss);
	return rc;
}
