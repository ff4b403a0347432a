/* SPDX-License-Identifier: Apache-2.0 */
/* lsn_tracker.h -- the one place that decides which LSN may be confirmed.
 *
 * Transactions enter in commit order (the order wal2json sends them).
 * Each carries a count of events handed to Kafka and not yet acked. The
 * confirmable LSN is the commit end (wal2json "nextlsn" of the C record)
 * of the newest transaction such that it and every earlier one are
 * complete and fully acked. Acks may arrive in any order.
 *
 * Transactions without events never take a slot: they only raise the
 * end LSN of the newest pending transaction (or the watermark itself when
 * nothing is pending), so the ring holds at most one entry per
 * transaction that has events in flight. */
#ifndef RELAY_LSN_TRACKER_H
#define RELAY_LSN_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

struct lsn_txn {
	uint64_t seq;          /* global transaction sequence (ack token) */
	uint64_t end_lsn;      /* commit end; 0 until the C record */
	int64_t commit_ts_us;  /* commit time, for latency figures */
	uint64_t pending;      /* events produced and not yet acked */
	bool complete;         /* C record seen */
};

struct lsn_tracker {
	struct lsn_txn *ring;  /* owned; grows on demand */
	size_t cap;            /* power of two */
	size_t head;           /* index of oldest entry */
	size_t len;            /* entries in use */
	uint64_t next_seq;     /* seq of the next transaction with events */
	uint64_t session_base; /* acks with seq below this are stale */

	bool in_txn;           /* between B and C */
	bool cur_has_events;   /* current transaction has a ring entry */
	int64_t cur_commit_ts;

	uint64_t received_lsn; /* highest LSN seen in the stream */
	uint64_t confirmable;  /* watermark: safe to send as flush LSN */
	uint64_t confirmed;    /* last flush LSN actually sent */
	uint64_t inflight;     /* events produced, not acked (this session) */
	bool failed;           /* a delivery failed: confirm nothing more */
};

void lsn_init(struct lsn_tracker *lt);
void lsn_free(struct lsn_tracker *lt);

/* Starts a new session after a reconnect: drops all entries (their acks
 * become stale and are ignored), keeps `confirmed`, and sets the
 * watermark to start_lsn (the slot's confirmed_flush_lsn). */
void lsn_reset(struct lsn_tracker *lt, uint64_t start_lsn);

/* B record. */
void lsn_begin(struct lsn_tracker *lt, int64_t commit_ts_us);

/* One event of the current transaction is about to be produced. Returns
 * the token to attach to it; pass it to lsn_ack() from the delivery
 * report. Only call between lsn_begin() and lsn_commit(). */
uint64_t lsn_event(struct lsn_tracker *lt);

/* The produce call for the event with this token failed synchronously:
 * undo lsn_event(). */
void lsn_event_undo(struct lsn_tracker *lt, uint64_t token);

/* C record with its nextlsn. */
void lsn_commit(struct lsn_tracker *lt, uint64_t end_lsn);

/* Delivery report. ok=false marks the tracker failed: the watermark
 * stops for good until lsn_reset(). Returns false when the token is
 * stale (an earlier session). *commit_ts_us, when not NULL, receives the
 * transaction's commit time. */
bool lsn_ack(struct lsn_tracker *lt, uint64_t token, bool ok,
             int64_t *commit_ts_us);

/* Keepalive: when nothing is in flight and no transaction is open, the
 * server's WAL end may be confirmed so an idle outbox does not pin WAL. */
void lsn_idle(struct lsn_tracker *lt, uint64_t wal_end);

/* Records that a record with this LSN was received. */
void lsn_received(struct lsn_tracker *lt, uint64_t lsn);

/* The LSN to send as flush position now. Never decreases. */
uint64_t lsn_confirmable(const struct lsn_tracker *lt);

/* Commit time of the oldest transaction with an event not yet acked;
 * 0 when nothing is pending. For the outbox-lag figure. */
int64_t lsn_oldest_pending_ts(const struct lsn_tracker *lt);

/* Records that flush_lsn was sent to the server. */
void lsn_mark_confirmed(struct lsn_tracker *lt, uint64_t flush_lsn);

#endif
