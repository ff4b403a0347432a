/* SPDX-License-Identifier: Apache-2.0 */
/* txn.c -- exactly-once (delivery.guarantee = exactly-once): Kafka
 * transactions around runs of whole PostgreSQL transactions. Owns r->tx.
 *
 * Each Kafka transaction carries the events of one or more whole
 * PostgreSQL transactions and, last, the slot ledger's record of the
 * slot (ledger.h) with the commit end they reach: the one record that
 * both guards the slot (a slot moved past it is refused) and says what
 * Kafka holds. Both commit together or neither does.
 *
 * The tracker hears of a record's ack only once its Kafka transaction
 * committed (txn_hold_ack() keeps them until then), so its watermark,
 * and with it every confirm, stays within what a read_committed
 * consumer can see. An aborted transaction acks nothing; the slot
 * replays it, and a read_committed consumer never sees the aborted
 * copies.
 *
 * A session begins after START_REPLICATION, when the slot is this
 * process's (PostgreSQL lets one walsender stream it): a new producer's
 * init fences every older producer of the slot's transactional.id (a
 * relay that lost the slot but still runs) and aborts the transaction
 * it left open. Only then is the ledger read, read_committed, and the
 * PostgreSQL transactions at or below its lsn are skipped whatever the
 * slot's confirmed position says: they are in Kafka, committed, even if
 * the confirm that followed was lost. Every session ends with its
 * producer closed (what is open is aborted), so each starts so.
 *
 * A transaction commits at a PostgreSQL commit, never inside one: when
 * it holds delivery.transaction.max.events, has been open for
 * delivery.transaction.interval.ms, or the relay stops. Reading pauses
 * from that commit until the Kafka commit is done. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "relay/relay_int.h"

void txn_init_relay(struct relay *r)
{
	r->tx.on = strcmp(r->cfg->delivery_guarantee, "exactly-once") == 0;
}

void txn_free(struct relay *r)
{
	free(r->tx.acks);
	r->tx.acks = NULL;
	r->tx.nacks = r->tx.cap = 0;
}

/* Reports still to come from the producer: the tracker's count does not
 * fall before a commit under exactly-once, the window's does. */
uint64_t unreported(const struct relay *r)
{
	return r->tx.on ? r->win.events : lsn_inflight(&r->lt);
}

/* How long a blocking transaction call may hold the loop: well within
 * the liveness probe's patience, at most the Kafka contact timeout. */
static int call_timeout_ms(const struct relay *r)
{
	int64_t ms = r->cfg->http_livez_timeout_ms / 2;

	if (ms > r->cfg->kafka_contact_timeout_ms)
		ms = r->cfg->kafka_contact_timeout_ms;
	return (int)ms;
}

static void reset(struct relay *r)
{
	r->tx.open = r->tx.want = r->tx.committing = false;
	r->tx.ledger_acked = false;
	r->tx.events = r->tx.at_commit = 0;
	r->tx.ledger_lsn = 0;
	r->tx.nacks = 0;
}

/* After START_REPLICATION and the ledger key: the transactional.id the
 * session's producer opens with (kafka_open()), the slot's. Always
 * true. */
bool txn_name(struct relay *r)
{
	reset(r);
	snprintf(r->tx.id, sizeof(r->tx.id), "outbox-relay:%s", r->lg.key);
	return true;
}

/* ... and once it is open: initialised, fencing the older ones. Returns
 * false when the session cannot go on (it ends, or the relay stops). */
bool txn_session_start(struct relay *r)
{
	char err[1024];
	int64_t t0;

	if (!r->tx.on)
		return true;
	t0 = now_mono_us();
	if (r->kp->txn_init(r->pub, call_timeout_ms(r), err, sizeof(err)) < 0) {
		log_warn("%s; the session starts again with a new producer", err);
		backstop_note(r, err, 200);
		snprintf(r->reason, sizeof(r->reason), "Kafka transactions cannot "
		         "be initialised (see the log)");
		session_end(r, true, "init_transactions failed");
		return false;
	}
	log_info("exactly-once: transactional producer ready in %lld ms; older "
	         "producers of this slot are fenced and their open transaction "
	         "aborted", (long long)((now_mono_us() - t0) / 1000));
	return true;
}

/* Before a record is produced: a transaction is open. Returns false
 * when none can be begun (the session ends). */
bool txn_gate(struct relay *r)
{
	char err[1024];

	if (!r->tx.on || r->tx.open)
		return true;
	if (r->kp->txn_begin(r->pub, err, sizeof(err)) < 0) {
		log_error("%s; the producer is rebuilt and the slot replays", err);
		session_end(r, true, "begin_transaction failed");
		return false;
	}
	r->tx.open = true;
	r->tx.begun_us = now_mono_us();
	return true;
}

/* A record's ack (rep->ok): counted now, told to the tracker when its
 * transaction commits. Returns false when its token is stale. */
bool txn_hold_ack(struct relay *r, const struct pub_report *rep)
{
	const struct lsn_txn *t = lsn_find(&r->lt, rep->token);

	if (t == NULL)
		return false;
	stats_ack(r, rep, t->commit_ts_us);
	if (r->tx.nacks > 0 && r->tx.acks[r->tx.nacks - 1].token == rep->token) {
		r->tx.acks[r->tx.nacks - 1].n++;
		return true;
	}
	if (r->tx.nacks == r->tx.cap) {
		r->tx.cap = r->tx.cap ? r->tx.cap * 2 : 64;
		r->tx.acks = xrealloc(r->tx.acks, r->tx.cap * sizeof(*r->tx.acks));
	}
	r->tx.acks[r->tx.nacks++] = (struct txn_acks){ rep->token, 1 };
	return true;
}

/* The report of the transaction's ledger record. A failure is handled
 * as at-least-once handles it (a refusal stops, anything else replays). */
void txn_ledger_report(struct relay *r, const struct pub_report *rep)
{
	if (rep->ok) {
		r->tx.ledger_acked = true;
		return;
	}
	ledger_report(r, rep);
}

static bool due(const struct relay *r, int64_t now)
{
	return r->tx.events >= (uint64_t)r->cfg->delivery_txn_max_events ||
	       now - r->tx.begun_us >= r->cfg->delivery_txn_interval_ms * 1000;
}

/* A PostgreSQL commit was read: when the transaction is due, reading
 * stops here so that it commits between two PostgreSQL transactions. */
void txn_after_commit(struct relay *r)
{
	r->tx.at_commit = r->tx.events;
	/* While a refused batch is replayed one event at a time, each
	 * PostgreSQL transaction commits alone: a refusal then aborts only
	 * its own transaction, and the healthy ones before it are
	 * published, as at-least-once publishes them. */
	if (r->tx.on && r->tx.open &&
	    (due(r, now_mono_us()) || r->iso.to != 0 || r->tx.single))
		r->tx.want = true;
}

bool txn_whole(const struct relay *r)
{
	return !lsn_in_txn(&r->lt) || r->tx.events == r->tx.at_commit;
}

/* At most one transaction with the ledger record alone a second: a
 * database busy with other tables moves the stream on all the time, and
 * each such transaction costs the broker four requests and two markers
 * (at-least-once writes a plain record per status.min.interval.ms). */
#define IDLE_TXN_US INT64_C(1000000)

/* The stream stands past what the ledger holds with no transaction
 * open (commits without events, keepalives): a transaction with the
 * ledger record alone is due, so that the slot is confirmed on. */
static bool idle_due(const struct relay *r, int64_t now)
{
	uint64_t b = lsn_read_boundary(&r->lt);
	int64_t gap = r->cfg->status_min_interval_ms * 1000;

	if (gap < IDLE_TXN_US)
		gap = IDLE_TXN_US;
	return !r->tx.open && r->lg.key[0] != '\0' && r->lg.verified &&
	       !lsn_in_txn(&r->lt) && lsn_inflight(&r->lt) == 0 &&
	       b > r->lg.lsn && b > lsn_confirmed(&r->lt) &&
	       now - r->lg.sent_us >= gap;
}

/* The ledger record goes last into the transaction; the commit follows
 * once every record of it was acked. */
static void begin_commit(struct relay *r, int64_t now)
{
	uint64_t lsn = lsn_read_boundary(&r->lt);
	const struct lsn_commit_id *c = lsn_newest_commit(&r->lt);
	struct ledger_commit lc = { 0 };

	if (lsn < r->lg.lsn)
		lsn = r->lg.lsn;
	/* The commit the next relay looks for before it skips. */
	if (c->end_lsn != 0 && c->end_lsn <= lsn)
		lc = (struct ledger_commit){ c->end_lsn, c->xid, c->commit_ts_us };
	switch (ledger_send(r, lsn, &lc, now)) {
	case PUB_SENT:
		r->tx.committing = true;
		r->tx.want = false;
		r->tx.ledger_lsn = lsn;
		break;
	case PUB_FULL:
		r->tx.want = true; /* the next turn tries again */
		break;
	case PUB_REJECTED:
	case PUB_FATAL:
		break; /* the session ends (ledger_send()) */
	}
}

/* Every record of the transaction was acked: commit it, then tell the
 * tracker, whose watermark the confirm follows. */
static void finish_commit(struct relay *r)
{
	int64_t t0 = now_mono_us();
	char err[1024];

	if (r->kp->txn_commit(r->pub, call_timeout_ms(r), err, sizeof(err)) < 0) {
		r->tx.n_aborts++;
		log_error("%s; the transaction is aborted (a read_committed "
		          "consumer sees none of it), the producer rebuilt and the "
		          "slot replays", err);
		backstop_note(r, err, 200);
		session_end(r, true, "commit_transaction failed");
		return;
	}
	r->tx.commit_us += (uint64_t)(now_mono_us() - t0);
	r->tx.n_commits++;
#ifdef OUTBOX_RELAY_TEST_HOOKS
	if (r->kill_at_commit != 0 && r->tx.n_commits == r->kill_at_commit) {
		log_warn("test hook: SIGKILL after Kafka commit %llu, before its "
		         "confirm", (unsigned long long)r->tx.n_commits);
		raise(SIGKILL);
	}
#endif
	for (size_t i = 0; i < r->tx.nacks; i++)
		for (uint64_t k = 0; k < r->tx.acks[i].n; k++)
			(void)lsn_ack(&r->lt, r->tx.acks[i].token, true, NULL);
	if (r->tx.ledger_lsn > r->lg.lsn)
		r->lg.lsn = r->tx.ledger_lsn;
	reset(r);
}

/* The loop's step: a due transaction's ledger record, the commit once
 * its records are all acked, the ledger's own transaction when idle. */
void txn_turn(struct relay *r, int64_t now)
{
	if (!r->tx.on || r->pub == NULL || !r->have_rs || session_ending(r))
		return;
	if (r->tx.open && !r->tx.committing && txn_whole(r) &&
	    (r->tx.want || due(r, now) || relay_stopping(r)))
		begin_commit(r, now);
	else if (idle_due(r, now) && txn_gate(r))
		begin_commit(r, now);
	if (r->tx.committing && r->tx.ledger_acked && r->win.events == 0 &&
	    !session_ending(r))
		finish_commit(r);
}

/* The producer is about to be closed: what is open is aborted now, not
 * when the broker's transaction.timeout.ms runs out, so read_committed
 * consumers are not held back meanwhile. Inside the teardown: the
 * reports of the aborted records are purges. */
void txn_abandon(struct relay *r)
{
	char err[1024];

	if (!r->tx.on)
		return;
	if (r->tx.open && r->pub != NULL &&
	    !r->kp->fatal(r->pub, err, sizeof(err), NULL)) {
		r->tx.n_aborts++;
		if (r->kp->txn_abort(r->pub, call_timeout_ms(r), err,
		                     sizeof(err)) < 0)
			log_warn("%s; the broker aborts it after the transaction "
			         "timeout, or the next producer's init does", err);
	} else if (r->tx.open) {
		r->tx.n_aborts++;
	}
	reset(r);
}

/* A stopping relay may exit: no transaction open (and the ledger has
 * caught up), or one that can never commit: the stream stopped inside
 * a PostgreSQL transaction (it is aborted, and replayed from the
 * slot). */
bool txn_drained(const struct relay *r)
{
	if (!r->tx.open)
		return !idle_due(r, now_mono_us()) || lsn_in_txn(&r->lt);
	return !r->tx.committing && !txn_whole(r);
}
