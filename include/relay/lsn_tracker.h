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
 * transaction that has events in flight.
 *
 * The tracker outlives sessions (reconnects). What it acked in an earlier
 * session is not trusted blindly in the next one: lsn_resume() compares
 * it with what the server says (system, timeline, WAL end, the slot's
 * position) and, when the slot is behind, has the session replay from the
 * slot while skipping the transactions already acked, checking on the way
 * that the newest of them is still in the server's WAL (same commit LSN,
 * xid and commit time). A database restored to an earlier point fails
 * that check; a crash that only lost the slot's last confirm passes it. */
#ifndef RELAY_LSN_TRACKER_H
#define RELAY_LSN_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"

/* A commit, as identified in the WAL: enough to tell whether the commit
 * at end_lsn is the same transaction after a reconnect. */
struct lsn_commit_id {
	uint64_t end_lsn;      /* 0: none */
	int64_t xid;
	int64_t commit_ts_us;
};

struct lsn_txn {
	uint64_t seq;          /* global transaction sequence (ack token) */
	uint64_t end_lsn;      /* commit end; 0 until the C record */
	int64_t commit_ts_us;  /* commit time, for latency figures */
	struct lsn_commit_id own;    /* this transaction as its B named it:
	                        * end_lsn is the commit end (wal2json), or
	                        * the commit LSN where B carries no end
	                        * (pgoutput's final_lsn, lsn_begin_final()).
	                        * Either orders transactions the same way;
	                        * the relay's logs and replay ranges use it */
	struct lsn_commit_id newest; /* newest commit folded into this entry */
	uint64_t pending;      /* events produced and not yet acked */
	uint64_t events;       /* events produced (acked or not) */
	uint64_t bytes;        /* their key + value bytes */
	bool complete;         /* C record seen */
};

/* What the server says at the start of a session. */
struct lsn_server {
	const char *system_id; /* IDENTIFY_SYSTEM systemid */
	int timeline;          /* IDENTIFY_SYSTEM timeline */
	uint64_t wal_end;      /* IDENTIFY_SYSTEM xlogpos: the server's WAL end */
	uint64_t slot_lsn;     /* the slot's confirmed_flush_lsn */
	/* The ancestors of timeline (TIMELINE_HISTORY), oldest first; NULL
	 * when they could not be read. Only read when the timeline is not
	 * the one this process streamed from before. */
	const struct tli_switch *history;
	int history_len;
};

enum lsn_resume {
	LSN_RESUME_SLOT,       /* stream from the slot; nothing to check */
	LSN_RESUME_VERIFY,     /* stream from the slot, skip what was acked
	                        * up to lsn_tracker.verify.end_lsn, check it */
	LSN_RESUME_REWOUND,    /* the database went back in time: stop */
};

/* What to do with a transaction that begins (lsn_begin()). */
enum lsn_verdict {
	LSN_PUBLISH,           /* publish its events */
	LSN_SKIP,              /* acked in an earlier session: do not publish */
	LSN_REWOUND,           /* the WAL differs from what was acked: stop */
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
	bool cur_skip;         /* current transaction is being skipped */
	bool cur_final;        /* cur.end_lsn holds the commit LSN (a B of
	                        * lsn_begin_final()), not the end */
	bool cur_check;        /* its B had no end LSN and it may be the
	                        * commit verification looks for: decided at
	                        * its C (lsn_begin_final()) */
	struct lsn_commit_id cur; /* the current transaction (from its B) */

	uint64_t received_lsn; /* highest LSN seen in the stream */
	uint64_t confirmable;  /* watermark: safe to send as flush LSN */
	uint64_t confirmed;    /* last flush LSN actually sent (this session) */
	uint64_t inflight;     /* events produced, not acked (this session) */
	uint64_t held_events;  /* events in ring entries (acked or not) */
	uint64_t held_bytes;   /* their bytes */
	bool failed;           /* a delivery failed: confirm nothing more */

	/* Across sessions. */
	struct lsn_commit_id last_commit; /* newest commit at or below the
	                        * watermark; what verification looks for */
	bool have_server;      /* a session has streamed: identity known */
	char system_id[32];
	int timeline;
	uint64_t must_have;    /* WAL a server must hold for every event this
	                        * process produced (acked or not, so possibly
	                        * in Kafka): the newest such commit's end, or
	                        * its commit LSN + 1 before the end is read */
	uint64_t replay_upto;  /* must_have when this session started: what
	                        * it publishes at or below was produced
	                        * before, without an ack */
	uint64_t replayed;     /* events produced again that way (all
	                        * sessions) */
	int promotions;        /* timeline changes accepted (failovers) */
	struct lsn_commit_id verify; /* end_lsn != 0: verification pending */
	uint64_t verify_from;  /* the slot position the check replays from */
	uint64_t verify_acked; /* the end of the range Kafka may hold if the
	                        * check fails: the watermark carried into the
	                        * session, or the newest commit produced when
	                        * that is later (sent, never acked) */
	char rewound[768];     /* why LSN_*REWOUND was returned */
};

void lsn_init(struct lsn_tracker *lt);
void lsn_free(struct lsn_tracker *lt);

/* Ends a session: drops all entries (their acks become stale and are
 * ignored) and closes any open transaction. The watermark and the newest
 * acked commit are kept for lsn_resume(). */
void lsn_end_session(struct lsn_tracker *lt);

/* Starts a session against srv (after lsn_end_session(), or the first
 * time). Returns:
 *  - LSN_RESUME_SLOT: the watermark is now the slot's position;
 *  - LSN_RESUME_VERIFY: the same, and the transactions up to the newest
 *    commit acked before are skipped (lsn_begin() says LSN_SKIP) once it
 *    has been seen again unchanged; nothing is confirmable past the slot
 *    until then;
 *  - LSN_RESUME_REWOUND: another system, a WAL end behind what was
 *    acked, or a timeline other than before that does not descend from
 *    it past everything produced: lt->rewound says which, with the LSN
 *    range Kafka may hold that the database no longer has. The
 *    watermark is then the slot's position and failed is set: nothing
 *    more moves.
 *
 * A new timeline is a promotion (or a recovery to a point in time). Its
 * WAL below the point where it branched off the timeline streamed before
 * is that timeline's WAL, so when everything this process produced lies
 * below that switch point (lt->must_have), the new server holds every
 * event that may be in Kafka: the session goes on (SLOT or VERIFY, as on
 * the same timeline) and lt->promotions counts it. A failover slot whose
 * primary waited for its standby (synchronized_standby_slots) is such a
 * case; a standby that lacked WAL the relay had read is not. */
enum lsn_resume lsn_resume(struct lsn_tracker *lt, const struct lsn_server *srv);

/* B record: the transaction's xid, commit time and commit end (wal2json
 * puts nextlsn on B too). During verification this decides whether it is
 * skipped; LSN_REWOUND fills lt->rewound. */
enum lsn_verdict lsn_begin(struct lsn_tracker *lt, int64_t xid,
                           int64_t commit_ts_us, uint64_t end_lsn);

/* The same for a B record that names the commit by its commit LSN
 * (final_lsn: where the commit record starts) instead of its end, as
 * pgoutput's Begin does; the end comes with lsn_commit(). Commits are
 * totally ordered in the WAL and a commit record's start and end have no
 * other record boundary between them, so "final_lsn < the end looked
 * for" holds exactly when "end <= the end looked for": the decision to
 * skip is the same as lsn_begin()'s. Only the identity (end LSN, xid,
 * commit time) of the commit looked for waits for its C, where
 * lsn_commit() checks it. */
enum lsn_verdict lsn_begin_final(struct lsn_tracker *lt, int64_t xid,
                                 int64_t commit_ts_us, uint64_t final_lsn);

/* One event of the current transaction, of `bytes` key + value bytes, is
 * about to be produced. Returns the token to attach to it; pass it to
 * lsn_ack() from the delivery report. Only between lsn_begin() (which
 * said LSN_PUBLISH) and lsn_commit(). */
uint64_t lsn_event(struct lsn_tracker *lt, size_t bytes);

/* The produce call for the event with this token failed synchronously:
 * undo lsn_event(). */
void lsn_event_undo(struct lsn_tracker *lt, uint64_t token, size_t bytes);

/* C record with its nextlsn (the commit end). Returns false when the
 * check a lsn_begin_final() left for the C fails: the commit looked for
 * is not in the server's WAL as it was acked (lt->rewound says how); the
 * watermark then stays. Always true after lsn_begin(). */
bool lsn_commit(struct lsn_tracker *lt, uint64_t end_lsn) RELAY_MUSTCHECK;

/* Delivery report. ok=false marks the tracker failed: the watermark
 * stops for good until lsn_end_session(). Returns false when the token
 * is stale (an earlier session). *commit_ts_us, when not NULL, receives
 * the transaction's commit time. */
bool lsn_ack(struct lsn_tracker *lt, uint64_t token, bool ok,
             int64_t *commit_ts_us);

/* Keepalive or non-transactional message at wal_end: when nothing is in
 * flight and no transaction is open, everything before it was processed,
 * so it may be confirmed and an idle outbox does not pin WAL. Returns
 * false when verification is pending and the server is already past the
 * commit being looked for (lt->rewound says so): the database rewound. */
bool lsn_idle(struct lsn_tracker *lt, uint64_t wal_end) RELAY_MUSTCHECK;

/* This session skips the transactions up to commit c, as it skips those
 * acked in an earlier session (LSN_RESUME_VERIFY): only once c shows up
 * unchanged in the stream, and with LSN_REWOUND when something else
 * does. Exactly-once's ledger names c: its Kafka transactions up to
 * there committed (relay/txn.c), whatever process committed them. upto
 * is what Kafka may hold, for the message should the check fail. Does
 * nothing when the slot (slot_lsn) is already at or past c. Call after
 * lsn_resume(). */
void lsn_verify_commit(struct lsn_tracker *lt, const struct lsn_commit_id *c,
                       uint64_t slot_lsn, uint64_t upto);

/* The newest commit read (with events or not); end_lsn 0 when none. */
const struct lsn_commit_id *lsn_newest_commit(const struct lsn_tracker *lt);

/* Where the stream stands between two transactions: the commit end of
 * the newest transaction read (with events or not), or the watermark
 * when that is later (a keepalive). Every transaction at or below it
 * was read whole. Only meaningful while no transaction is open. */
uint64_t lsn_read_boundary(const struct lsn_tracker *lt);

/* Records that a record with this LSN was received. */
void lsn_received(struct lsn_tracker *lt, uint64_t lsn);

/* The LSN to send as flush position now. Never decreases in a session. */
uint64_t lsn_confirmable(const struct lsn_tracker *lt);

/* True when the watermark is ahead of what was last sent. */
bool lsn_confirm_due(const struct lsn_tracker *lt);

/* Commit time of the oldest transaction with an event not yet acked;
 * 0 when nothing is pending. For the outbox-lag figure. */
int64_t lsn_oldest_pending_ts(const struct lsn_tracker *lt);

/* Records that flush_lsn was sent to the server. */
void lsn_mark_confirmed(struct lsn_tracker *lt, uint64_t flush_lsn);

/* Events between the watermark and the read position that bound memory
 * and pause reading when a stuck event holds the watermark: every event
 * of a transaction the watermark has not passed, except the acked events
 * of the transaction still open (it cannot be confirmed before its C
 * record is read, so counting those would stall any transaction larger
 * than the window; they cost a counter, not memory). */
uint64_t lsn_window_events(const struct lsn_tracker *lt);

/* The oldest transaction still holding an event, or NULL: the one a
 * failed delivery blocks. Borrowed until the next call that changes lt. */
const struct lsn_txn *lsn_head(const struct lsn_tracker *lt);

/* The entry of a live token, or NULL when the token is stale. Borrowed
 * until the next call that changes lt. */
const struct lsn_txn *lsn_find(const struct lsn_tracker *lt, uint64_t token);

/* Read-only views for the relay loop and its figures: the relay reads
 * the tracker through these, never its fields (make boundaries). */
uint64_t lsn_confirmed(const struct lsn_tracker *lt);      /* last sent */
uint64_t lsn_received_max(const struct lsn_tracker *lt);   /* highest read */
uint64_t lsn_inflight(const struct lsn_tracker *lt);       /* this session */
uint64_t lsn_replayed(const struct lsn_tracker *lt);  /* events produced
                                          * again after a reconnect: they
                                          * were produced before without an
                                          * ack (duplicates, at most) */
uint64_t lsn_replay_upto(const struct lsn_tracker *lt); /* up to where */
int lsn_promotions(const struct lsn_tracker *lt);     /* failovers followed */
uint64_t lsn_held_events(const struct lsn_tracker *lt);    /* in the ring */
bool lsn_skipping(const struct lsn_tracker *lt);  /* current txn was acked
                                                   * in an earlier session */
bool lsn_in_txn(const struct lsn_tracker *lt);    /* between a B and its C */
/* The commit verification looks for (end_lsn 0: none pending). */
const struct lsn_commit_id *lsn_verifying(const struct lsn_tracker *lt);
/* Why LSN_*REWOUND was returned ("" otherwise). */
const char *lsn_rewound_reason(const struct lsn_tracker *lt);

#endif
