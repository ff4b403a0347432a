/* SPDX-License-Identifier: Apache-2.0 */
/* delivery.c -- the relay's side of the producer: produce calls, the
 * delivery reports that come back, the in-flight window they open and
 * close, the failures they bring and the one-at-a-time replay of a batch
 * the broker refused.
 *
 * Reports are served inside kp->poll() and kp->close(), on the loop's
 * thread (kafka_port.h). Owns r->win, r->iso and r->fail. */
#include <stdio.h>
#include <string.h>

#include "lib/log.h"
#include "relay/relay_int.h"

static bool isolated(const struct relay *r, uint64_t end_lsn)
{
	return r->iso.to != 0 && end_lsn >= r->iso.from && end_lsn <= r->iso.to;
}

/* The broker refuses one record for good: it was replayed alone, so it
 * is this one and not its batch. Poison: nothing is confirmed from its
 * transaction on, the relay exits 65 after the final status update. */
static void kafka_poison(struct relay *r, const struct pub_report *rep,
                         const struct lsn_txn *t)
{
	const char *advice = pub_err_advice(rep->err);

	log_error("fail-stop at LSN " LSN_FMT " (xid %lld): Kafka refuses event "
	          "id %s (topic %s, partition %d, %zu bytes) sent alone: %s (%s). "
	          "Nothing at or after this transaction is confirmed and the slot "
	          "keeps it. %s%s(runbook: poison event)",
	          LSN_ARGS(t->own.end_lsn), (long long)t->own.xid, rep->event_id,
	          rep->topic, (int)rep->partition, rep->bytes,
	          pub_err_str(rep->err), pub_err_name(rep->err), advice,
	          advice[0] ? "; then start the relay again, or skip the "
	                      "transaction deliberately " : "");
	snprintf(r->reason, sizeof(r->reason), "poison event at LSN " LSN_FMT
	         " (xid %lld): Kafka refuses it (%s)", LSN_ARGS(t->own.end_lsn),
	         (long long)t->own.xid, pub_err_name(rep->err));
	begin_stop(r, RELAY_EXIT_DATAERR);
}

/* A failed delivery of a live token. A permanent error inside the
 * isolated range is the refused record itself; elsewhere it may be its
 * batch's fault, so the range of its transactions is noted for the
 * replay. Also called while the producer is torn down: reports of the
 * failed batch may only be served then. */
static void record_failure(struct relay *r, const struct pub_report *rep,
                           const struct lsn_txn *t)
{
	uint64_t end = t->own.end_lsn;

	if (r->fail.first_any == 0 || end < r->fail.first_any)
		r->fail.first_any = end;
	if (pub_err_classify(rep->err) != PUB_ERR_PERMANENT)
		return;
	/* Replayed alone, refused again: this record. (With the gapless
	 * guarantee the fatal error comes first and this report only while
	 * the producer is torn down.) */
	if (isolated(r, end)) {
		if (!relay_stopping(r) && !poison_refused(r, rep, t))
			kafka_poison(r, rep, t);
		return;
	}
	if (!r->fail.permanent || end < r->fail.first_end) {
		r->fail.first_end = end;
		r->fail.err = rep->err;
		snprintf(r->fail.what, sizeof(r->fail.what), "%s", rep->errstr);
	}
	if (end > r->fail.last_end)
		r->fail.last_end = end;
	r->fail.permanent = true;
}

/* The delivery report callback (pub_dr_fn): runs inside kp->poll() or
 * kp->close() on the loop thread. */
void on_dr(void *opaque, const struct pub_report *orig)
{
	struct relay *r = opaque;
	const struct lsn_txn *t;
	struct pub_report own;
	const struct pub_report *rep = &own;
	bool dlq;
	int64_t ts = 0;

	if (orig->token == LEDGER_TOKEN) {
		if (r->tx.on)
			txn_ledger_report(r, orig);
		else
			ledger_report(r, orig);
		return;
	}
	/* A dead-letter record counts as the event it replaces. */
	own = *orig;
	dlq = (own.token & DLQ_TOKEN_BIT) != 0;
	own.token &= ~DLQ_TOKEN_BIT;
	if (dlq)
		poison_dlq_report(r, rep);
	r->win.events--;
	r->win.bytes -= rep->bytes;
	r->win.queue_full = false;
	if (!rep->ok)
		log_debug("kafka: delivery failed (%s): %s",
		          r->tearing_down ? "producer torn down" : "live", rep->errstr);
	if (!rep->ok && !dlq && pub_err_classify(rep->err) != PUB_ERR_PURGED &&
	    (t = lsn_find(&r->lt, rep->token)) != NULL)
		record_failure(r, rep, t);
	if (r->tearing_down)
		return;
	/* Exactly-once: the tracker hears of it when its transaction
	 * commits (txn.c). */
	if (rep->ok && r->tx.on) {
		if (!txn_hold_ack(r, rep))
			r->ctr.n_stale++;
		return;
	}
	if (!lsn_ack(&r->lt, rep->token, rep->ok, &ts)) {
		r->ctr.n_stale++; /* from a session that was already torn down */
		return;
	}
	if (rep->ok) {
		stats_ack(r, rep, ts);
		return;
	}
	r->ctr.n_failed++;
	if (relay_stopping(r))
		return; /* the poison path above, or a stop in progress */
	backstop_note(r, rep->errstr, (int)sizeof(r->bs.err));
	log_error("kafka: delivery failed: %s; nothing past it is confirmed, the "
	          "producer is rebuilt and the slot replays", rep->errstr);
	session_end(r, true, "delivery failed");
}

/* An outbox event (event.h): produced, unless its transaction was acked
 * in an earlier session, or it is the one Kafka refused poison.retries
 * times more than once (poison.c). */
enum handled handle_event(struct relay *r, const struct ev_event *ev)
{
	char err[512];
	enum handled h;

	if (lsn_skipping(&r->lt)) {
		r->ctr.n_skipped++; /* acked in an earlier session */
		return H_OK;
	}
	if (poison_parks(r))
		return poison_park(r, ev);
	h = produce(r, ev->topic, &ev->key, &ev->value, &ev->headers, ev->bytes,
	            0, err, sizeof(err));
	if (h != H_POISON)
		return h;
	if (r->pz.policy != POISON_FAIL)
		return poison_rejected(r, ev, err);
	snprintf(r->err, sizeof(r->err), "event id %s (topic %s, %zu bytes): "
	         "Kafka refuses it: %s", ev->id.ptr, ev->topic, ev->value.len, err);
	return H_POISON;
}

/* The window: events and bytes the producer holds (of any session), and
 * the events between the watermark and the read position (see
 * lsn_window_events()). One stuck event thus pauses reading instead of
 * letting later, acked transactions pile up behind it. */
bool window_open(const struct relay *r)
{
	uint64_t max_ev = (uint64_t)r->cfg->inflight_max_events;
	uint64_t max_b = (uint64_t)r->cfg->inflight_max_bytes;

	/* Exactly-once holds every ack until its transaction commits,
	 * which is at a PostgreSQL commit: the tracker's count cannot bound
	 * reading inside a transaction larger than the window. The
	 * producer's can, and the transaction's size bounds the rest. */
	return !r->win.queue_full && !r->tx.want && !r->tx.committing &&
	       !(r->win.iso_wait && unreported(r) > 0) &&
	       r->win.events < max_ev && r->win.bytes < max_b &&
	       (r->tx.on || lsn_window_events(&r->lt) < max_ev);
}

bool reading_allowed(const struct relay *r)
{
	return r->st.state == ST_STREAMING && r->have_rs && window_open(r);
}

/* A producer for the next session, unless one is left. Returns false
 * when none can be made: the relay stops (a configuration the client
 * refuses). */
bool kafka_open(struct relay *r)
{
	char err[1024];

	if (r->pub != NULL)
		return true;
	r->pub = r->kp->open(r->kp->ctx, r->cfg, r->tx.on ? r->tx.id : NULL,
	                     on_dr, r, err, sizeof(err));
	if (r->pub == NULL) {
		log_error("%s", err);
		begin_stop(r, RELAY_EXIT_CONFIG);
		return false;
	}
	return true;
}

/* Frees the producer. It purges what it holds first: those reports come
 * back (failed) inside kp->close(), with tearing_down set. */
void kafka_close(struct relay *r)
{
	if (r->pub == NULL)
		return;
	r->tearing_down = true;
	txn_abandon(r);
	r->kp->close(r->pub);
	r->tearing_down = false;
	r->pub = NULL;
}

/* Every report of the freed producer came back: nothing is in flight. */
void window_reset(struct relay *r)
{
	r->win.events = r->win.bytes = 0;
	r->win.queue_full = false;
}

/* After a Kafka failure, before the replay: the backstop (the same
 * transaction failing kafka.failure.max.replays times in a row is poison)
 * and the isolated replay of a batch the broker refused. Returns false
 * when the relay stops instead. */
bool kafka_failed(struct relay *r)
{
	const struct lsn_txn *head = lsn_head(&r->lt);
	uint64_t key = r->fail.first_any != 0 ? r->fail.first_any
	               : head != NULL ? head->own.end_lsn
	                              : lsn_confirmable(&r->lt);

	/* A record refused on its own is tried poison.retries times before
	 * it is parked: those replays are the policy's, not the backstop's. */
	if (!poison_retrying(r, key) && !backstop_count(r, key))
		return false;
	if (r->fail.permanent) {
		if (r->iso.to == 0 || r->fail.first_end < r->iso.from)
			r->iso.from = r->fail.first_end;
		if (r->fail.last_end > r->iso.to)
			r->iso.to = r->fail.last_end;
		log_warn("kafka refused a batch (%s): the events of the commits "
		         LSN_FMT " to " LSN_FMT " are replayed one at a time, to "
		         "publish the healthy ones and name the refused one",
		         pub_err_name(r->fail.err), LSN_ARGS(r->iso.from),
		         LSN_ARGS(r->iso.to));
	}
	memset(&r->fail, 0, sizeof(r->fail));
	return true;
}

/* The transactions replayed one at a time are confirmed now: the
 * isolated replay ends. */
void isolation_turn(struct relay *r)
{
	if (r->iso.to != 0 && lsn_confirmed(&r->lt) >= r->iso.to &&
	    !session_ending(r)) {
		log_info("kafka: the events of commits " LSN_FMT " to " LSN_FMT
		         " were all published one at a time: the broker refused "
		         "their batch, not one record; check kafka.batch.size "
		         "against the topic's max.message.bytes",
		         LSN_ARGS(r->iso.from), LSN_ARGS(r->iso.to));
		r->iso.from = r->iso.to = 0;
	}
}
