/* SPDX-License-Identifier: Apache-2.0 */
/* act_skip.c -- --skip-transaction: skips the first pending (poison)
 * transaction, and only when it is the one named; --to-dlq first copies
 * its events, as the relay would have produced them, to a dead-letter
 * topic and waits for every ack. Then the slot moves to exactly its
 * commit end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"
#include "decode/dlq.h"
#include "decode/route.h"

#define SHOW_EVENTS 100             /* events listed */
#define DLQ_REASON "skipped by operator"

struct skip_event {
	char id[CLI_ID_LEN];
	char topic[256];
	char error[1024];
};

struct skip {
	int64_t want_xid;
	int64_t first_xid;          /* -1 until the first B */
	bool done;                  /* the first transaction's C was seen */
	uint64_t commit_end;
	struct cli_ids ids;         /* ids.total: its events */
	struct skip_event *shown;   /* SHOW_EVENTS */
	size_t nshown;
	/* Second pass, --to-dlq only. */
	struct cli_kafka *k;
	const char *dlq;
	const char *slot;           /* slot.name, for the record's headers */
	uint64_t produced;
	char produce_error[512];
};

static void skip_reset(struct skip *k)
{
	k->first_xid = -1;
	k->done = false;
	memset(&k->ids, 0, sizeof(k->ids));
	k->nshown = 0;
	k->produced = 0;
}

/* One event of the first transaction to the dead-letter topic: the
 * record the relay would have produced (a refused one: its columns as
 * read; a record that is not even an event: the raw record), in the
 * relay's dead-letter format (dlq.h, the one builder both use) with the
 * operator's reason and the error. */
static int skip_produce(struct skip *k, const struct cli_row *row,
                        const char *id, const char *topic, const char *error)
{
	const struct ev_record *er = row->er;
	const struct ev_event *ev = er->decoded || er->kind == EV_EVENT ? &er->ev
	                                                                : NULL;
	struct dlq_cause cause = {
		.stage = DLQ_STAGE_SKIP_TXN,
		.topic = topic,
		.slot = k->slot,
		/* The commit end from the first pass: a pgoutput Begin does
		 * not carry it (txn->commit_lsn is 0 until the Commit),
		 * wal2json's B carries this same LSN. */
		.commit_lsn = k->commit_end,
		.xid = row->raw->xid,
		.tries = 0,
	};
	struct dlq_record d;
	struct rec_str key = { NULL, 0 }, value = { row->raw->data,
		                                        row->raw->len };
	char reason[1200];
	rd_kafka_headers_t *hdrs;
	rd_kafka_resp_err_t e;

	snprintf(reason, sizeof(reason), "%s%s%s", DLQ_REASON,
	         error[0] != '\0' ? ": " : "", error);
	cause.reason = reason;
	if (ev != NULL) {
		dlq_build(&d, &ev->headers, &cause);
		key = ev->key;
		value = ev->value;
	} else {
		dlq_build_rec(&d, &er->rec, &cause);
		if (er->is_event) {
			key = er->rec.key;
			value = er->rec.payload;
		}
	}
	hdrs = rd_kafka_headers_new(route_header_count(&d.h));
	for (size_t i = 0; i < route_header_count(&d.h); i++) {
		const char *hn, *hv;
		size_t hl;
		if (route_header_at(&d.h, i, &hn, &hv, &hl))
			rd_kafka_header_add(hdrs, hn, -1, hv, (ssize_t)hl);
	}
	for (;;) {
		/* F_COPY: the record's buffers are reused for the next row.
		 * Headers are librdkafka's once producev succeeds. */
		e = rd_kafka_producev(
			k->k->rk, RD_KAFKA_V_TOPIC(k->dlq),
			RD_KAFKA_V_KEY(key.ptr, key.len),
			RD_KAFKA_V_VALUE((void *)value.ptr, value.len),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(hdrs),
			RD_KAFKA_V_END);
		if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			break;
		rd_kafka_poll(k->k->rk, 100);
	}
	if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
		rd_kafka_headers_destroy(hdrs);
		snprintf(k->produce_error, sizeof(k->produce_error),
		         "event id %s: %s", id, rd_kafka_err2str(e));
		return 1;
	}
	k->produced++;
	rd_kafka_poll(k->k->rk, 0);
	return 0;
}

static int skip_row(void *ctx, const struct cli_row *row)
{
	struct skip *k = ctx;
	const struct ev_record *er = row->er;
	char id[CLI_ID_LEN], topic[256] = "", error[1024] = "";

	if (er->kind == EV_BEGIN && k->first_xid < 0)
		k->first_xid = er->rec.xid;
	if (k->first_xid < 0 || (er->kind != EV_COMMIT && !row->txn->open))
		return 0; /* non-transactional messages before it */
	if (er->kind == EV_COMMIT) {
		k->done = true;
		k->commit_end = er->rec.nextlsn;
		return 1;
	}
	if (er->kind == EV_EVENT) {
		snprintf(id, sizeof(id), "%s", er->event_id);
		snprintf(topic, sizeof(topic), "%s", er->ev.topic);
	} else if (er->kind == EV_POISON) {
		/* Every record the relay would stop at is listed (and copied). */
		snprintf(id, sizeof(id), "%s", er->is_event ? er->event_id
		                                            : "(undecodable record)");
		snprintf(error, sizeof(error), "%s", er->reason);
	} else {
		return 0;
	}
	cli_ids_add(&k->ids, id);
	if (k->shown != NULL && k->nshown < SHOW_EVENTS) {
		struct skip_event *ev = &k->shown[k->nshown++];
		snprintf(ev->id, sizeof(ev->id), "%s", id);
		snprintf(ev->topic, sizeof(ev->topic), "%s", topic);
		snprintf(ev->error, sizeof(ev->error), "%s", error);
	}
	if (k->k != NULL && k->first_xid == k->want_xid)
		return skip_produce(k, row, id, topic, error);
	return 0;
}

/* Finds the first pending transaction: peeks a few rows, then more when
 * non-transactional messages came first. Returns 0 or -1 (err). */
static int skip_find(PGconn *conn, const struct relay_config *cfg,
                     struct cli_peek *pk, struct skip *k, char *err,
                     size_t errlen)
{
	for (int64_t n = 16;; n = n < INT32_MAX / 64 ? n * 64 : 0) {
		skip_reset(k);
		pk->upto_nchanges = n;
		if (cli_peek_run(conn, cfg, pk, err, errlen) < 0)
			return -1;
		if (k->done || n == 0 || pk->rows < (uint64_t)n)
			return 0;
	}
}

static void skip_report(const struct cli_args *a, const char *name,
                        const struct skip *k, uint64_t from, uint64_t moved)
{
	if (a->json) {
		json_t *j = json_object(), *evs = json_array();
		for (size_t i = 0; i < k->nshown; i++) {
			json_t *e = json_object();
			json_object_set_new(e, "id", cli_jstr(k->shown[i].id));
			json_object_set_new(e, "topic", k->shown[i].topic[0]
			                                    ? cli_jstr(k->shown[i].topic)
			                                    : json_null());
			json_object_set_new(e, "error", k->shown[i].error[0]
			                                    ? cli_jstr(k->shown[i].error)
			                                    : json_null());
			json_array_append_new(evs, e);
		}
		json_object_set_new(j, "slot", cli_jstr(name));
		json_object_set_new(j, "xid", json_integer(k->want_xid));
		json_object_set_new(j, "from", cli_jlsn(from));
		json_object_set_new(j, "to", cli_jlsn(moved));
		json_object_set_new(j, "skipped_events",
		                    json_integer((json_int_t)k->ids.total));
		json_object_set_new(j, "events", evs);
		json_object_set_new(j, "dlq_topic", a->dlq_topic ? cli_jstr(a->dlq_topic)
		                                                  : json_null());
		json_object_set_new(j, "dlq_published",
		                    json_integer((json_int_t)k->produced));
		cli_json_out(j);
		return;
	}
	printf("skipped transaction %lld in slot \"%s\": " LSN_FMT " -> " LSN_FMT
	       ", %llu outbox event%s%s\n", (long long)k->want_xid, name,
	       LSN_ARGS(from), LSN_ARGS(moved), (unsigned long long)k->ids.total,
	       cli_pl(k->ids.total),
	       k->produced ? " (first published to the dead-letter topic)" : "");
	for (size_t i = 0; i < k->nshown; i++)
		printf("  event %s%s%s%s%s\n", k->shown[i].id,
		       k->shown[i].topic[0] ? " topic " : "", k->shown[i].topic,
		       k->shown[i].error[0] ? ": " : "", k->shown[i].error);
	if (k->ids.total > k->nshown)
		printf("  ... and %llu more\n",
		       (unsigned long long)(k->ids.total - k->nshown));
}

/* Publishes the first transaction's events to the dead-letter topic and
 * waits for every delivery report. Returns 0 or an exit code. */
static int skip_to_dlq(const struct relay_config *cfg, PGconn *conn,
                       struct cli_peek *pk, struct skip *k, int64_t timeout_ms)
{
	struct cli_kafka kst;
	char err[1400];
	uint64_t events = k->ids.total;
	int rc = RELAY_EXIT_UNAVAILABLE;

	/* kc_validate_config() only reads; its signature predates const. */
	if (kc_validate_config((struct relay_config *)cfg, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		return RELAY_EXIT_CONFIG;
	}
	if (cli_kafka_open(&kst, cfg, timeout_ms, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		return RELAY_EXIT_CONFIG;
	}
	k->k = &kst;
	pk->upto_lsn = k->commit_end;    /* exactly up to that transaction */
	pk->upto_nchanges = 0;
	skip_reset(k);
	if (cli_peek_run(conn, cfg, pk, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		goto out;
	}
	if (k->produce_error[0] != '\0') {
		cli_err("dead-letter topic: %s; nothing was advanced",
		        k->produce_error);
		goto out;
	}
	if (!k->done || k->first_xid != k->want_xid || k->ids.total != events) {
		cli_err("the slot changed while the dead-letter copy was made "
		        "(first pending xid now %lld); nothing was advanced",
		        (long long)k->first_xid);
		goto out;
	}
	rd_kafka_flush(kst.rk, (int)timeout_ms);
	rd_kafka_poll(kst.rk, 0);
	if (kst.acked != k->produced) {
		cli_err("dead-letter topic: %llu of %llu events acknowledged (%s%s%s); "
		        "nothing was advanced", (unsigned long long)kst.acked,
		        (unsigned long long)k->produced,
		        kst.failed ? kst.first_failure : "timed out",
		        kst.last_error[0] ? "; last error: " : "", kst.last_error);
		goto out;
	}
	rc = 0;
out:
	cli_kafka_close(&kst);
	k->k = NULL;
	return rc;
}

/* XID, --to-dlq and --yes. Returns 0 or RELAY_EXIT_USAGE. */
static int skip_args(const struct cli_args *a, int64_t *xid)
{
	char topic[256], err[512], *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(a->arg, &end, 10);
	if (errno != 0 || end == a->arg || *end != '\0' || a->arg[0] == '-' ||
	    v > UINT32_MAX) {
		cli_err("--skip-transaction: \"%s\" is not a transaction id", a->arg);
		return RELAY_EXIT_USAGE;
	}
	*xid = (int64_t)v;
	if (a->dlq_topic != NULL &&
	    route_topic(a->dlq_topic, "", 0, topic, sizeof(topic), err,
	                sizeof(err)) < 0) {
		cli_err("--to-dlq: %s", err);
		return RELAY_EXIT_USAGE;
	}
	if (!a->yes) {
		cli_err("refusing to skip transaction %llu without --yes: its "
		        "events are then never published%s", v,
		        a->dlq_topic ? " to their topics" : "");
		return RELAY_EXIT_USAGE;
	}
	return 0;
}

/* Finds the first pending transaction and checks that it is k->want_xid.
 * Returns 0, RELAY_EXIT_DATAERR (not first, nothing pending) or
 * RELAY_EXIT_UNAVAILABLE. */
static int skip_locate(PGconn *conn, const struct relay_config *cfg,
                       struct cli_peek *pk, struct skip *k,
                       const struct slot_row *s)
{
	const char *name = pk->slot;
	char err[1400];

	if (skip_find(conn, cfg, pk, k, err, sizeof(err)) < 0) {
		cli_err("%s (nothing was skipped)", err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (k->first_xid < 0 || !k->done) {
		cli_err("slot \"%s\" has no pending transaction (confirmed_flush_lsn "
		        LSN_FMT "): nothing to skip", name, LSN_ARGS(s->confirmed_lsn));
		return RELAY_EXIT_DATAERR;
	}
	if (k->first_xid != k->want_xid) {
		cli_err("refusing to skip transaction %lld: the first pending "
		        "transaction in slot \"%s\" is %lld (commit end " LSN_FMT
		        ", %llu outbox event%s); only the first one can be skipped",
		        (long long)k->want_xid, name, (long long)k->first_xid,
		        LSN_ARGS(k->commit_end), (unsigned long long)k->ids.total,
		        cli_pl(k->ids.total));
		return RELAY_EXIT_DATAERR;
	}
	return 0;
}

int act_skip_txn(const struct relay_config *cfg, const struct cli_args *a)
{
	const char *name = cfg->slot_name;
	struct skip k = { 0 };
	struct cli_peek pk = { 0 };
	struct slot_row s;
	char ids[1024], what[512];
	uint64_t moved = 0;
	PGconn *conn;
	int rc;

	if ((rc = skip_args(a, &k.want_xid)) != 0)
		return rc;
	conn = cli_open_slot(cfg, false, 0, 0, &s, &rc);
	if (conn == NULL)
		return rc;
	k.shown = xcalloc(SHOW_EVENTS, sizeof(*k.shown));
	k.dlq = a->dlq_topic;
	k.slot = name;
	pk.slot = name;
	pk.upto_lsn = s.current_lsn;
	pk.on_row = skip_row;
	pk.ctx = &k;
	if ((rc = skip_locate(conn, cfg, &pk, &k, &s)) != 0)
		goto out;
	if (a->dlq_topic != NULL &&
	    (rc = skip_to_dlq(cfg, conn, &pk, &k, a->timeout_ms)) != 0)
		goto out;
	rc = RELAY_EXIT_UNAVAILABLE;
	cli_ids_text(&k.ids, ids, sizeof(ids));
	snprintf(what, sizeof(what), " of transaction %lld%s%s",
	         (long long)k.want_xid,
	         k.produced ? ", published first to dead-letter topic " : "",
	         k.produced ? a->dlq_topic : "");
	if (cli_advance(cfg, conn, &s, k.commit_end, k.ids.total, ids, what,
	                &moved) != 0)
		goto out;
	if (moved != k.commit_end) {
		cli_err("slot \"%s\" ended at " LSN_FMT ", not at the commit end "
		        LSN_FMT, name, LSN_ARGS(moved), LSN_ARGS(k.commit_end));
		rc = RELAY_EXIT_SOFTWARE;
		goto out;
	}
	skip_report(a, name, &k, s.confirmed_lsn, moved);
	rc = RELAY_EXIT_OK;
out:
	free(k.shown);
	PQfinish(conn);
	return rc;
}
