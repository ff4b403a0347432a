/* SPDX-License-Identifier: Apache-2.0 */
/* poison.c -- the dead-letter policy (poison.policy): what becomes of a
 * poison event, one the decoder refuses (event.h's EV_POISON: a payload
 * that is not JSON, a NULL key or id, a topic name Kafka does not allow)
 * or one Kafka refuses for good on its own.
 *
 *   fail  the relay stops (exit 65), as it always did: the default
 *   dlq   the event's dead-letter record (dlq.h) goes to
 *         poison.dlq.topic in its place, and the relay goes on
 *   skip  a WARN line and a count, and the relay goes on
 *
 * The safety rule of the relay holds for a parked event: its dead-letter
 * record takes the event's place in the LSN books (the same tracker
 * token, DLQ_TOKEN_BIT set), so the slot is confirmed past the event
 * only once Kafka acked the dead-letter record. A dead-letter topic that
 * refuses it for good stops the relay (exit 65) exactly as the event
 * would have; one that fails for a while is replayed like any record.
 *
 * A decode poison is the same in every replay: it goes to the dead-
 * letter topic at once. A record Kafka refuses is first replayed alone
 * (delivery.c, the isolated replay); refused alone, it is tried again in
 * the next sessions, poison.retries times, after poison.retry.backoff.ms
 * doubled each time (with jitter), and then parked (or skipped) when the
 * replay reaches it again: it is named by its transaction and its place
 * in it, which a replay of the same WAL reads the same. Owns r->pz. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "decode/dlq.h"
#include "relay/relay_int.h"

void poison_init(struct relay *r)
{
	const char *p = r->cfg->poison_policy;

	r->pz.policy = p != NULL && strcmp(p, "dlq") == 0    ? POISON_DLQ
	               : p != NULL && strcmp(p, "skip") == 0 ? POISON_SKIP
	                                                     : POISON_FAIL;
}

void poison_txn_begin(struct relay *r)
{
	r->pz.ord = 0;
}

/* An event (or a poison event) was handed on: the next one is the next
 * in its transaction. One held back (the window) is offered again. */
void poison_handed(struct relay *r, enum handled h)
{
	if (h != H_BLOCKED)
		r->pz.ord++;
}

/* The dead-letter topic refuses a record for good: nothing past it may
 * be confirmed, and every replay would be refused the same way. */
static void dlq_refused(struct relay *r, const char *what)
{
	log_error("fail-stop at LSN " LSN_FMT ": the dead-letter topic %s "
	          "(poison.dlq.topic) refuses the record of a parked event: %s. "
	          "Nothing at or after its transaction is confirmed and the slot "
	          "keeps it; fix the topic (it must exist, accept the relay's "
	          "writes and records as large as the events'), then start the "
	          "relay again (runbook: poison event)",
	          LSN_ARGS(lsn_confirmed(&r->lt)), r->cfg->poison_dlq_topic, what);
	snprintf(r->reason, sizeof(r->reason), "the dead-letter topic refuses "
	         "a parked event (see the log)");
	begin_stop(r, RELAY_EXIT_DATAERR);
}

/* Counts the poison event at hand once, however many replays meet it:
 * a refused record by its entry f (kept until the slot is past it), a
 * decode poison (f NULL) by the newest one counted, since every session
 * reads from the slot in WAL order and so met every earlier one first. */
static void count_once(struct relay *r, struct poison_ref *f, uint64_t *n)
{
	if (f != NULL) {
		if (!f->counted)
			(*n)++;
		f->counted = true;
		return;
	}
	if (r->txn.header_lsn > r->pz.seen_lsn ||
	    (r->txn.header_lsn == r->pz.seen_lsn && r->pz.ord >= r->pz.seen_ord)) {
		(*n)++;
		r->pz.seen_lsn = r->txn.header_lsn;
		r->pz.seen_ord = r->pz.ord + 1;
	}
}

/* Produces d in the event's place (f: the refused record it is, NULL for
 * a decode poison). */
static enum handled park(struct relay *r, const struct rec_str *key,
                         const struct rec_str *value,
                         const struct dlq_record *d, const char *id,
                         struct poison_ref *f)
{
	char err[512], what[768];
	enum handled h;

	h = produce(r, r->cfg->poison_dlq_topic, key, value, &d->h,
	            key->len + value->len, DLQ_TOKEN_BIT, err, sizeof(err));
	if (h == H_OK)
		count_once(r, f, &r->pz.n_parked);
	if (h != H_POISON)
		return h;
	snprintf(what, sizeof(what), "event id %s: %s", id, err);
	dlq_refused(r, what);
	return H_STOP;
}

static void log_parked(const struct relay *r, const char *id,
                       const char *reason)
{
	log_warn("poison event at LSN " LSN_FMT " (xid %lld), event id %s: %s; "
	         "%s (poison.policy = %s)", LSN_ARGS(r->txn.header_lsn),
	         (long long)r->txn.xid, id, reason,
	         r->pz.policy == POISON_DLQ ? "parked in the dead-letter topic"
	                                    : "skipped",
	         r->pz.policy == POISON_DLQ ? "dlq" : "skip");
}

/* A poison event from the decoder. Returns H_POISON when the policy does
 * not apply (fail, or a record that is not an event, or one outside a
 * transaction, which the books cannot place): the caller stops. */
enum handled poison_decode(struct relay *r, const struct ev_record *er)
{
	struct dlq_record d;
	const char *id = er->event_id[0] != '\0' ? er->event_id : "?";
	char topic[256], terr[512];
	enum handled h;

	if (r->pz.policy == POISON_FAIL || !er->is_event || !lsn_in_txn(&r->lt))
		return H_POISON;
	if (lsn_skipping(&r->lt)) {
		r->ctr.n_skipped++; /* its transaction was acked before */
		return H_OK;
	}
	if (r->pz.policy == POISON_SKIP) {
		log_parked(r, id, er->reason);
		count_once(r, NULL, &r->pz.n_skipped);
		return H_OK;
	}
	/* The topic it was meant for: routed, or routed now from the route
	 * column as read (it is left out when that fails too). */
	if (er->decoded)
		snprintf(topic, sizeof(topic), "%s", er->ev.topic);
	else if (er->rec.route.ptr == NULL ||
	         route_topic(r->ss.topic_template, er->rec.route.ptr,
	                     er->rec.route.len, topic, sizeof(topic), terr,
	                     sizeof(terr)) < 0)
		topic[0] = '\0';
	dlq_build_rec(&d, &er->rec, &(struct dlq_cause){
		.stage = DLQ_STAGE_DECODE,
		.reason = er->reason,
		.topic = topic,
		.slot = r->cfg->slot_name,
		.commit_lsn = r->txn.header_lsn,
		.xid = r->txn.xid,
		.tries = 1,
	});
	h = park(r, &er->rec.key, &er->rec.payload, &d, id, NULL);
	if (h == H_OK)
		log_parked(r, id, er->reason);
	return h;
}

/* A refused record whose tries are spent (or that no retry can change):
 * the replay parks it when it reaches it. */
static bool due(const struct relay *r, const struct poison_ref *f)
{
	return f->tries > 0 && (f->park || f->tries > r->cfg->poison_retries);
}

/* The refused record the event about to be produced is, when it is due
 * to be parked; NULL otherwise. */
static struct poison_ref *parked_ref(struct relay *r)
{
	if (r->pz.policy == POISON_FAIL)
		return NULL;
	for (size_t i = 0; i <= r->pz.nheld; i++) {
		struct poison_ref *f = i == 0 ? &r->pz.ref : &r->pz.held[i - 1];
		if (due(r, f) && f->lsn == r->txn.header_lsn &&
		    f->ord == r->pz.ord)
			return f;
	}
	return NULL;
}

/* The event about to be produced is one Kafka refused too often. */
bool poison_parks(struct relay *r)
{
	return parked_ref(r) != NULL;
}

/* That event: its dead-letter record (the record as it was produced),
 * or nothing (skip). */
enum handled poison_park(struct relay *r, const struct ev_event *ev)
{
	struct poison_ref *f = parked_ref(r);
	struct dlq_record d;
	const char *id = ev->id.ptr != NULL ? ev->id.ptr : "?";
	enum handled h;

	if (f == NULL)
		return H_POISON; /* not one: a bug in the caller */
	if (r->pz.policy == POISON_SKIP) {
		log_parked(r, id, f->what);
		count_once(r, f, &r->pz.n_skipped);
		return H_OK;
	}
	dlq_build(&d, &ev->headers, &(struct dlq_cause){
		.stage = DLQ_STAGE_PRODUCE,
		.reason = f->what,
		.error_name = f->err != 0 ? pub_err_name(f->err)
		                          : "PRODUCE_REJECTED",
		.topic = ev->topic,
		.slot = r->cfg->slot_name,
		.commit_lsn = r->txn.header_lsn,
		.xid = r->txn.xid,
		.tries = f->tries,
	});
	h = park(r, &ev->key, &ev->value, &d, id, f);
	if (h == H_OK)
		log_parked(r, id, f->what);
	return h;
}

/* A new refused record: the one being tried is kept when it is due to be
 * parked (the replay must park it again). False when there is no room
 * left for it. */
static bool new_ref(struct relay *r)
{
	if (due(r, &r->pz.ref)) {
		if (r->pz.nheld == POISON_HELD_MAX)
			return false;
		r->pz.held[r->pz.nheld++] = r->pz.ref;
	}
	memset(&r->pz.ref, 0, sizeof(r->pz.ref));
	return true;
}

/* The producer refused the event at once (it can never be produced:
 * its size against the producer's message.max.bytes): parked now, no
 * retry would change that. */
enum handled poison_rejected(struct relay *r, const struct ev_event *ev,
                             const char *err)
{
	if (!new_ref(r))
		return H_POISON;
	r->pz.ref.tries = 1;
	r->pz.ref.park = true;
	r->pz.ref.lsn = r->txn.header_lsn;
	r->pz.ref.ord = r->pz.ord;
	r->pz.ref.err = 0;
	snprintf(r->pz.ref.what, sizeof(r->pz.ref.what), "topic %s event id %s: "
	         "the producer refuses it: %s", ev->topic,
	         ev->id.ptr != NULL ? ev->id.ptr : "?", err);
	return poison_park(r, ev);
}

/* Kafka refused the event replayed alone (delivery.c): counted, and
 * tried again after a backoff, or parked at the next replay once tried
 * poison.retries + 1 times. Returns false when the policy is fail, or
 * the refused event cannot be named: the caller stops. */
bool poison_refused(struct relay *r, const struct pub_report *rep,
                    const struct lsn_txn *t)
{
	if (r->pz.policy == POISON_FAIL || !r->pz.sent_valid ||
	    r->pz.sent_lsn != t->own.end_lsn)
		return false;
	if (r->pz.ref.tries > 0 && r->pz.ref.lsn == r->pz.sent_lsn &&
	    r->pz.ref.ord == r->pz.sent_ord) {
		r->pz.ref.tries++;
	} else {
		if (!new_ref(r))
			return false; /* more than POISON_HELD_MAX: stop */
		r->pz.ref.tries = 1;
		r->pz.ref.lsn = r->pz.sent_lsn;
		r->pz.ref.ord = r->pz.sent_ord;
	}
	r->pz.ref.err = rep->err;
	snprintf(r->pz.ref.what, sizeof(r->pz.ref.what), "%s (%s)",
	         rep->errstr != NULL ? rep->errstr : pub_err_str(rep->err),
	         pub_err_name(rep->err));
	if (r->pz.ref.tries <= r->cfg->poison_retries)
		log_warn("Kafka refuses event id %s (topic %s) at LSN " LSN_FMT
		         " (xid %lld) sent alone: %s; try %lld of %lld, tried again "
		         "after a backoff (poison.retries)", rep->event_id,
		         rep->topic, LSN_ARGS(t->own.end_lsn), (long long)t->own.xid,
		         r->pz.ref.what, (long long)r->pz.ref.tries,
		         (long long)r->cfg->poison_retries + 1);
	else
		log_warn("Kafka refused event id %s (topic %s) at LSN " LSN_FMT
		         " (xid %lld) %lld times: %s; the replay %s it",
		         rep->event_id, rep->topic, LSN_ARGS(t->own.end_lsn),
		         (long long)t->own.xid, (long long)r->pz.ref.tries,
		         r->pz.ref.what,
		         r->pz.policy == POISON_DLQ ? "parks" : "skips");
	return true;
}

/* The report of a dead-letter record (on_dr(), token already stripped):
 * refused for good, the relay stops. Anything else fails the session
 * like any record's failure (on_dr() goes on). */
void poison_dlq_report(struct relay *r, const struct pub_report *rep)
{
	char what[768];

	if (rep->ok)
		return;
	/* A refusal that settles (a new topic's partitions not yet known
	 * everywhere) is replayed like a transient one, as the ledger's. */
	if (relay_stopping(r) ||
	    pub_err_classify(rep->err) != PUB_ERR_PERMANENT ||
	    pub_err_settles(rep->err))
		return;
	snprintf(what, sizeof(what), "%s (%s)",
	         rep->errstr != NULL ? rep->errstr : pub_err_str(rep->err),
	         pub_err_name(rep->err));
	dlq_refused(r, what);
}

/* The session failed on the transaction key while a refused record of
 * it is being tried again: the policy's replays, not the backstop's. */
bool poison_retrying(const struct relay *r, uint64_t key)
{
	return r->pz.policy != POISON_FAIL && r->pz.ref.tries > 0 &&
	       !r->pz.ref.park && r->pz.ref.tries <= r->cfg->poison_retries &&
	       r->pz.ref.lsn == key;
}

/* The delay before the next session while a refused record is tried
 * again: poison.retry.backoff.ms doubled per try, up to the max, with
 * jitter. -1: none pending (the usual backoff applies). */
int64_t poison_backoff_us(struct relay *r)
{
	int64_t base = r->cfg->poison_retry_backoff_ms * 1000;
	int64_t cap = r->cfg->poison_retry_backoff_max_ms * 1000;
	int64_t tries = r->pz.ref.tries;
	int64_t d;

	if (r->pz.policy == POISON_FAIL || tries <= 0 || r->pz.ref.park ||
	    tries > r->cfg->poison_retries)
		return -1;
	d = base << (tries - 1 < 20 ? tries - 1 : 20);
	if (d > cap || d < 0)
		d = cap;
	return d / 2 + (int64_t)(random() % (d / 2 + 1));
}

/* The refused records' transactions are confirmed: done with. */
void poison_turn(struct relay *r)
{
	uint64_t c = lsn_confirmed(&r->lt);
	size_t n = 0;

	if (session_ending(r))
		return;
	if (r->pz.ref.tries > 0 && c > r->pz.ref.lsn)
		memset(&r->pz.ref, 0, sizeof(r->pz.ref));
	for (size_t i = 0; i < r->pz.nheld; i++)
		if (c <= r->pz.held[i].lsn)
			r->pz.held[n++] = r->pz.held[i];
	r->pz.nheld = n;
}
