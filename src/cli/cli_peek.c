/* SPDX-License-Identifier: Apache-2.0 */
/* cli_peek.c -- a slot's pending records, read by the relay's rules.
 *
 * The peek asks the output plugin with the relay's own options
 * (stream_spec.h) and every record goes through ev_next_at() (event.h),
 * so an action sees exactly the events the relay would publish: table
 * rows and outbox_emit() messages alike, from wal2json or pgoutput. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"

/* pgoutput: a relation of this peek, from its Relation message. */
struct peek_rel {
	uint32_t relid;
	bool outbox;                /* the outbox table (or one of schema.*) */
	int id_col;                 /* the event id's column; -1 none */
};

struct peek_ctx {
	const struct stream_spec *ss;
	struct pgo_state pgo;       /* pgoutput: the peek's relation cache */
	struct peek_rel *rels;      /* owned */
	size_t nrels, caprels;
	struct ev_txn txn;
	struct cli_peek *pk;
};

/* ---- an undecodable pgoutput insert, by its bytes ----
 *
 * When pgo_decode() refuses an insert into the outbox (a text payload
 * that is not JSON, say), the record is still an event, and the actions
 * that list and count what they skip or lose must say so, by its id, as
 * event.c's raw scan does for a wal2json line. The decoder's relation
 * cache is private to it, so the few fields needed are read here again:
 * the Relation message's names and the Insert's id column. Every read
 * is bounded; anything unexpected just leaves the record as it was. */

struct rd {
	const unsigned char *p, *end;
};

static bool rd_take(struct rd *r, size_t n, const unsigned char **out)
{
	if ((size_t)(r->end - r->p) < n)
		return false;
	*out = r->p;
	r->p += n;
	return true;
}

static bool rd_be(struct rd *r, size_t n, uint32_t *v)
{
	const unsigned char *b;

	if (!rd_take(r, n, &b))
		return false;
	*v = 0;
	for (size_t i = 0; i < n; i++)
		*v = *v << 8 | b[i];
	return true;
}

/* A NUL-terminated string inside the message. */
static bool rd_cstr(struct rd *r, const char **s)
{
	const unsigned char *nul = memchr(r->p, '\0', (size_t)(r->end - r->p));

	if (nul == NULL)
		return false;
	*s = (const char *)r->p;
	r->p = nul + 1;
	return true;
}

static struct peek_rel *rel_find(struct peek_ctx *c, uint32_t relid)
{
	for (size_t i = 0; i < c->nrels; i++)
		if (c->rels[i].relid == relid)
			return &c->rels[i];
	return NULL;
}

/* A Relation message: 'R', relid, namespace ("" is pg_catalog), name,
 * replica identity, then each column's flags, name, type and typmod. */
static void note_relation(struct peek_ctx *c, const char *data, size_t len)
{
	const struct w2j_spec *spec = &c->ss->w2j;
	struct rd r = { (const unsigned char *)data,
		            (const unsigned char *)data + len };
	const unsigned char *b;
	const char *nsp, *name, *col;
	struct peek_rel rel = { .id_col = -1 }, *slot;
	uint32_t natts, skip;

	if (!rd_take(&r, 1, &b) || !rd_be(&r, 4, &rel.relid) ||
	    !rd_cstr(&r, &nsp) || !rd_cstr(&r, &name) || !rd_take(&r, 1, &b) ||
	    !rd_be(&r, 2, &natts))
		return;
	rel.outbox = strcmp(nsp[0] ? nsp : "pg_catalog", spec->schema) == 0 &&
	             (strcmp(spec->table, "*") == 0 ||
	              strcmp(name, spec->table) == 0);
	for (uint32_t i = 0; i < natts; i++) {
		if (!rd_take(&r, 1, &b) || !rd_cstr(&r, &col) ||
		    !rd_be(&r, 4, &skip) || !rd_be(&r, 4, &skip))
			return;
		/* The first column of that name, as pgo.c matches it. */
		if (rel.id_col < 0 && strcmp(col, spec->col_id) == 0)
			rel.id_col = (int)i;
	}
	slot = rel_find(c, rel.relid);
	if (slot == NULL) {
		if (c->nrels == c->caprels) {
			c->caprels = c->caprels ? c->caprels * 2 : 8;
			c->rels = xrealloc(c->rels, c->caprels * sizeof(*c->rels));
		}
		slot = &c->rels[c->nrels++];
	}
	*slot = rel; /* after DDL a relation is described again */
}

/* An Insert message: 'I', relid, 'N', the column count, then each
 * column: 'n' null, 'u' unchanged, 't'/'b' a length and the bytes. */
static void undecodable_insert(struct peek_ctx *c, const char *data,
                               size_t len, struct ev_record *er)
{
	struct rd r = { (const unsigned char *)data,
		            (const unsigned char *)data + len };
	const unsigned char *b, *v;
	struct peek_rel *rel;
	uint32_t relid, ncols, vlen;

	if (!rd_take(&r, 1, &b) || b[0] != 'I' || !rd_be(&r, 4, &relid) ||
	    (rel = rel_find(c, relid)) == NULL || !rel->outbox)
		return;
	er->is_event = true;
	snprintf(er->event_id, sizeof(er->event_id), "?");
	if (!rd_take(&r, 1, &b) || b[0] != 'N' || !rd_be(&r, 2, &ncols))
		return;
	for (uint32_t i = 0; i < ncols; i++) {
		if (!rd_take(&r, 1, &b))
			return;
		if (b[0] != 't' && b[0] != 'b')
			continue;
		if (!rd_be(&r, 4, &vlen) || !rd_take(&r, vlen, &v))
			return;
		if ((int)i == rel->id_col && b[0] == 't') {
			snprintf(er->event_id, sizeof(er->event_id), "%.*s",
			         (int)(vlen < sizeof(er->event_id) ? vlen
			                                          : sizeof(er->event_id) - 1),
			         (const char *)v);
			return;
		}
	}
}

/* ---- the peek ---- */

static int on_raw(void *ctx, const struct slot_peek_row *raw)
{
	struct peek_ctx *c = ctx;
	bool pgoutput = c->ss->plugin == SS_PLUGIN_PGOUTPUT;
	struct ev_record er;
	struct cli_row row = { .raw = raw, .er = &er, .txn = &c->txn };
	int rc;

	if (pgoutput && raw->len > 0 && raw->data[0] == 'R')
		note_relation(c, raw->data, raw->len);
	/* A peek row carries one pgoutput message, and its lsn is what the
	 * XLogData frame's dataStart would be on the stream. */
	ev_next_at(c->ss, pgoutput ? &c->pgo : NULL, raw->data, raw->len,
	           raw->lsn, &c->txn, &er);
	if (pgoutput && er.kind == EV_POISON && !er.is_event)
		undecodable_insert(c, raw->data, raw->len, &er);
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
	pgo_init(&c.pgo, &ss.w2j);
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
	free(c.rels);
	pgo_free(&c.pgo);
	ss_free(&ss);
	return rc;
}
