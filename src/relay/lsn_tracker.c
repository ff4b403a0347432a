/* SPDX-License-Identifier: Apache-2.0 */
/* lsn_tracker.c -- received / acked / confirmable LSN bookkeeping.
 *
 * The ring holds, in commit order, the transactions that have events in
 * flight. Their sequence numbers are contiguous, so the entry for a token
 * is found by subtraction, and acks in any order cost O(1). The watermark
 * moves only by popping complete, fully acked entries off the head. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relay/lsn_tracker.h"

#define LSN_RING_MIN 64

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static struct lsn_txn *entry_at(const struct lsn_tracker *lt, size_t i)
{
	return &lt->ring[(lt->head + i) & (lt->cap - 1)];
}

static struct lsn_txn *tail(struct lsn_tracker *lt)
{
	assert(lt->len > 0);
	return entry_at(lt, lt->len - 1);
}

static void grow(struct lsn_tracker *lt)
{
	size_t ncap = lt->cap ? lt->cap * 2 : LSN_RING_MIN;
	struct lsn_txn *nring = xcalloc(ncap, sizeof(*nring));

	for (size_t i = 0; i < lt->len; i++)
		nring[i] = *entry_at(lt, i);
	free(lt->ring);
	lt->ring = nring;
	lt->cap = ncap;
	lt->head = 0;
}

/* The watermark moves to a commit: remember which one, so that the next
 * session can check it is still there. */
static void move_to(struct lsn_tracker *lt, const struct lsn_commit_id *c)
{
	if (c->end_lsn >= lt->confirmable) {
		lt->confirmable = c->end_lsn;
		lt->last_commit = *c;
	}
}

/* Pops every complete, fully acked transaction off the head. */
static void advance(struct lsn_tracker *lt)
{
	while (lt->len > 0) {
		struct lsn_txn *t = entry_at(lt, 0);
		if (!t->complete || t->pending > 0)
			break;
		if (!lt->failed)
			move_to(lt, &t->newest);
		lt->held_events -= t->events;
		lt->held_bytes -= t->bytes;
		lt->head = (lt->head + 1) & (lt->cap - 1);
		lt->len--;
	}
}

void lsn_init(struct lsn_tracker *lt)
{
	memset(lt, 0, sizeof(*lt));
	lt->next_seq = 1; /* 0 is never a valid token */
	lt->session_base = 1;
}

void lsn_free(struct lsn_tracker *lt)
{
	free(lt->ring);
	lt->ring = NULL;
	lt->cap = lt->len = 0;
}

void lsn_end_session(struct lsn_tracker *lt)
{
	lt->head = 0;
	lt->len = 0;
	lt->session_base = lt->next_seq;
	lt->in_txn = false;
	lt->cur_has_events = false;
	lt->cur_skip = false;
	lt->cur_check = false;
	lt->inflight = 0;
	lt->held_events = 0;
	lt->held_bytes = 0;
	lt->failed = false;
	memset(&lt->verify, 0, sizeof(lt->verify));
}

/* Fills lt->rewound; the message names what Kafka may hold that the
 * database does not, as an LSN range an operator can match against the
 * records' pg_lsn header. */
static void rewound(struct lsn_tracker *lt, uint64_t from, uint64_t to,
                    const char *what)
{
	snprintf(lt->rewound, sizeof(lt->rewound),
	         "the database went back in time: %s. Kafka may hold events "
	         "with commit LSNs (pg_lsn header) above " LSN_FMT " and up to "
	         LSN_FMT " that this database does not have", what,
	         LSN_ARGS(from), LSN_ARGS(to));
	lt->failed = true;
}

/* Where timeline tli ended in history (its child's switch point), or 0
 * when history does not pass through it. */
static uint64_t switch_of(const struct tli_switch *history, int n, int tli)
{
	for (int i = 0; i < n; i++)
		if (history[i].tli == tli)
			return history[i].switch_lsn;
	return LSN_INVALID;
}

/* The server is on another timeline than before: fills what (and *from,
 * the start of the range Kafka may hold that it lacks) when it is not a
 * descendant that holds everything produced; returns the switch point
 * otherwise. */
static uint64_t judge_timeline(const struct lsn_tracker *lt,
                               const struct lsn_server *srv, char *what,
                               size_t whatlen, uint64_t *from)
{
	uint64_t sw;

	if (srv->history == NULL) {
		snprintf(what, whatlen, "the server is on timeline %d, not %d as "
		         "before, and its timeline history could not be read",
		         srv->timeline, lt->timeline);
		return LSN_INVALID;
	}
	sw = srv->timeline > lt->timeline
	         ? switch_of(srv->history, srv->history_len, lt->timeline)
	         : LSN_INVALID;
	if (sw == LSN_INVALID) {
		snprintf(what, whatlen, "the server is on timeline %d, which does "
		         "not descend from timeline %d streamed before (another "
		         "branch, or a recovery to a point in time)",
		         srv->timeline, lt->timeline);
		return LSN_INVALID;
	}
	if (lt->must_have > sw) {
		snprintf(what, whatlen, "the server is on timeline %d, which left "
		         "timeline %d at " LSN_FMT ", before WAL this process had "
		         "already published from (up to " LSN_FMT "): the promoted "
		         "standby never received it", srv->timeline, lt->timeline,
		         LSN_ARGS(sw), LSN_ARGS(lt->must_have));
		*from = sw;
		return LSN_INVALID;
	}
	return sw;
}

enum lsn_resume lsn_resume(struct lsn_tracker *lt, const struct lsn_server *srv)
{
	uint64_t acked = lt->confirmable, from = srv->slot_lsn;
	uint64_t upto = max_u64(acked, lt->must_have), sw = LSN_INVALID;
	char what[384];

	lt->rewound[0] = '\0';
	memset(&lt->verify, 0, sizeof(lt->verify));
	what[0] = '\0';
	if (lt->have_server) {
		if (strcmp(lt->system_id, srv->system_id) != 0)
			snprintf(what, sizeof(what), "the server's system identifier "
			         "is %s, not %s as before: another cluster answers",
			         srv->system_id, lt->system_id);
		else if (lt->timeline != srv->timeline)
			sw = judge_timeline(lt, srv, what, sizeof(what), &from);
		/* After a promotion, positions past the switch point name WAL
		 * of the old timeline: the new one's end says nothing of them. */
		else if (srv->wal_end < upto) {
			snprintf(what, sizeof(what), "the server's WAL ends at " LSN_FMT
			         ", before " LSN_FMT " which this process already "
			         "published%s", LSN_ARGS(srv->wal_end), LSN_ARGS(upto),
			         upto == acked ? " and confirmed" : "");
			from = srv->wal_end;
		}
	}
	/* What the server already has is never sent back lower. */
	lt->confirmable = srv->slot_lsn;
	lt->confirmed = srv->slot_lsn;
	lt->received_lsn = srv->slot_lsn;
	lt->replay_upto = lt->must_have;
	if (what[0] != '\0') {
		rewound(lt, from, upto, what);
		return LSN_RESUME_REWOUND;
	}
	lt->have_server = true;
	snprintf(lt->system_id, sizeof(lt->system_id), "%s", srv->system_id);
	if (sw != LSN_INVALID) {
		lt->promotions++;
		/* A commit the watermark passed above the switch point (one
		 * without events: every produced one is below it) is not on
		 * this timeline and cannot be looked for: replay from the slot
		 * without skipping. Duplicates, never a false alarm. */
		if (lt->last_commit.end_lsn > sw)
			memset(&lt->last_commit, 0, sizeof(lt->last_commit));
	}
	lt->timeline = srv->timeline;
	/* The slot is behind the newest commit acked before (its last update
	 * was lost with the connection, or a crash restored it from the last
	 * checkpoint, or the whole database was restored, or a failover slot
	 * was synced to the standby before its last update): replay from the
	 * slot, and skip what was acked only once that commit shows up again
	 * unchanged. Until then nothing past the slot is confirmable. */
	if (lt->last_commit.end_lsn > srv->slot_lsn) {
		lt->verify = lt->last_commit;
		lt->verify_from = srv->slot_lsn;
		lt->verify_acked = upto;
		return LSN_RESUME_VERIFY;
	}
	return LSN_RESUME_SLOT;
}

/* A transaction opens; cur names it by key (its end, or its commit LSN
 * for lsn_begin_final()). */
static void open_txn(struct lsn_tracker *lt, int64_t xid, int64_t commit_ts_us,
                     uint64_t key, bool final)
{
	lt->in_txn = true;
	lt->cur_final = final;
	lt->cur_has_events = false;
	lt->cur_skip = false;
	lt->cur_check = false;
	lt->cur = (struct lsn_commit_id){ .end_lsn = key, .xid = xid,
		                              .commit_ts_us = commit_ts_us };
}

/* A commit time as UTC text with microseconds. */
static void ts_text(int64_t us, char *buf, size_t len)
{
	time_t s = (time_t)(us / 1000000);
	struct tm tm;
	size_t n;

	gmtime_r(&s, &tm);
	n = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%06lld UTC",
	         (long long)((us % 1000000 + 1000000) % 1000000));
}

/* The commit looked for is not where it was: found names what came
 * instead. With the commit times: a restored database may reuse the
 * xid and the LSN, and only the time tells them apart (t170). */
static void not_found(struct lsn_tracker *lt, int64_t xid, const char *lsn_kind,
                      uint64_t lsn)
{
	const struct lsn_commit_id *v = &lt->verify;
	char what[320], was[40], now[40];

	ts_text(v->commit_ts_us, was, sizeof(was));
	ts_text(lt->cur.commit_ts_us, now, sizeof(now));
	snprintf(what, sizeof(what), "the transaction published with commit "
	         "LSN " LSN_FMT " (xid %lld, committed %s) is not in the "
	         "server's WAL any more; found xid %lld with %s " LSN_FMT
	         " (committed %s) instead", LSN_ARGS(v->end_lsn),
	         (long long)v->xid, was, (long long)xid, lsn_kind, LSN_ARGS(lsn),
	         now);
	rewound(lt, lt->verify_from, lt->verify_acked, what);
}

enum lsn_verdict lsn_begin(struct lsn_tracker *lt, int64_t xid,
                           int64_t commit_ts_us, uint64_t end_lsn)
{
	const struct lsn_commit_id *v = &lt->verify;

	open_txn(lt, xid, commit_ts_us, end_lsn, false);
	if (v->end_lsn == 0)
		return LSN_PUBLISH;
	if (end_lsn < v->end_lsn) {
		lt->cur_skip = true; /* before the commit looked for */
		return LSN_SKIP;
	}
	if (end_lsn == v->end_lsn && xid == v->xid &&
	    commit_ts_us == v->commit_ts_us) {
		/* The same transaction at the same place: the WAL up to it is
		 * the WAL this process published from. */
		memset(&lt->verify, 0, sizeof(lt->verify));
		lt->cur_skip = true;
		return LSN_SKIP;
	}
	not_found(lt, xid, "commit LSN", end_lsn);
	return LSN_REWOUND;
}

enum lsn_verdict lsn_begin_final(struct lsn_tracker *lt, int64_t xid,
                                 int64_t commit_ts_us, uint64_t final_lsn)
{
	open_txn(lt, xid, commit_ts_us, final_lsn, true);
	if (lt->verify.end_lsn == 0)
		return LSN_PUBLISH;
	if (final_lsn < lt->verify.end_lsn) {
		/* At or before the commit looked for (its end is at most that
		 * one's): skipped either way; which of the two, its C says. */
		lt->cur_skip = true;
		lt->cur_check = true;
		return LSN_SKIP;
	}
	/* It starts at or past the end looked for: that commit never came. */
	not_found(lt, xid, "its commit record at", final_lsn);
	return LSN_REWOUND;
}

/* The C of a transaction lsn_begin_final() could not place: before the
 * commit looked for, or that commit, unchanged. Returns false (rewound)
 * otherwise; clears the verification when it is the one. */
static bool check_at_commit(struct lsn_tracker *lt, uint64_t end_lsn)
{
	const struct lsn_commit_id *v = &lt->verify;

	if (end_lsn < v->end_lsn)
		return true;
	if (end_lsn == v->end_lsn && lt->cur.xid == v->xid &&
	    lt->cur.commit_ts_us == v->commit_ts_us) {
		memset(&lt->verify, 0, sizeof(lt->verify));
		return true;
	}
	not_found(lt, lt->cur.xid, "commit end", end_lsn);
	return false;
}

/* The WAL a server must hold to have the current transaction. */
static uint64_t cur_need(const struct lsn_tracker *lt)
{
	return lt->cur_final ? lt->cur.end_lsn + 1 : lt->cur.end_lsn;
}

uint64_t lsn_event(struct lsn_tracker *lt, size_t bytes)
{
	struct lsn_txn *t;

	assert(lt->in_txn && !lt->cur_skip);
	if (!lt->cur_has_events) {
		/* From here the transaction may reach Kafka: a server must hold
		 * its commit (a commit record has no other record boundary
		 * inside it, so past its start is as good as its end). */
		lt->must_have = max_u64(lt->must_have, cur_need(lt));
		if (lt->len == lt->cap)
			grow(lt);
		lt->len++;
		t = tail(lt);
		memset(t, 0, sizeof(*t));
		t->seq = lt->next_seq++;
		t->commit_ts_us = lt->cur.commit_ts_us;
		t->own = lt->cur;
		t->newest = lt->cur;
		lt->cur_has_events = true;
	}
	t = tail(lt);
	if (cur_need(lt) <= lt->replay_upto)
		lt->replayed++; /* produced before, never acked */
	t->pending++;
	t->events++;
	t->bytes += bytes;
	lt->inflight++;
	lt->held_events++;
	lt->held_bytes += bytes;
	return t->seq;
}

static struct lsn_txn *find(const struct lsn_tracker *lt, uint64_t token)
{
	uint64_t first;

	if (token < lt->session_base || lt->len == 0)
		return NULL;
	first = entry_at(lt, 0)->seq;
	if (token < first || token - first >= lt->len)
		return NULL;
	return entry_at(lt, (size_t)(token - first));
}

void lsn_event_undo(struct lsn_tracker *lt, uint64_t token, size_t bytes)
{
	struct lsn_txn *t = find(lt, token);

	assert(t != NULL && t->pending > 0);
	if (t == NULL || t->pending == 0)
		return;
	if (cur_need(lt) <= lt->replay_upto && lt->replayed > 0)
		lt->replayed--;
	t->pending--;
	t->events--;
	t->bytes -= bytes;
	lt->inflight--;
	lt->held_events--;
	lt->held_bytes -= bytes;
}

bool lsn_commit(struct lsn_tracker *lt, uint64_t end_lsn)
{
	struct lsn_commit_id c = lt->cur;
	bool ok = true;

	c.end_lsn = end_lsn;
	/* First: a commit verified here moves the watermark below, exactly
	 * as lsn_begin() verifying it at the B would have let it. */
	if (lt->cur_check && lt->verify.end_lsn != 0)
		ok = check_at_commit(lt, end_lsn);
	if (!ok) {
		/* rewound() set failed: nothing below moves. */
	} else if (lt->cur_has_events) {
		struct lsn_txn *t = tail(lt);
		t->end_lsn = end_lsn;
		t->newest = c;
		t->complete = true;
	} else if (lt->len > 0) {
		/* No events: confirming this commit is safe exactly when the
		 * newest pending transaction is, so fold it into that one. */
		struct lsn_txn *t = tail(lt);
		if (end_lsn >= t->end_lsn) {
			t->end_lsn = end_lsn;
			t->newest = c;
		}
	} else if (!lt->failed && lt->verify.end_lsn == 0) {
		/* (While verification is pending, skipped transactions do not
		 * move the watermark: they are only known good once the commit
		 * looked for has been seen.) */
		move_to(lt, &c);
	}
	lt->in_txn = false;
	lt->cur_has_events = false;
	lt->cur_skip = false;
	lt->cur_check = false;
	lt->received_lsn = max_u64(lt->received_lsn, end_lsn);
	advance(lt);
	return ok;
}

bool lsn_ack(struct lsn_tracker *lt, uint64_t token, bool ok,
             int64_t *commit_ts_us)
{
	struct lsn_txn *t = find(lt, token);

	if (t == NULL)
		return false;
	assert(t->pending > 0);
	if (commit_ts_us != NULL)
		*commit_ts_us = t->commit_ts_us;
	t->pending--;
	lt->inflight--;
	if (!ok)
		lt->failed = true;
	advance(lt);
	return true;
}

bool lsn_idle(struct lsn_tracker *lt, uint64_t wal_end)
{
	if (lt->verify.end_lsn != 0) {
		/* Frames arrive in WAL order: a server already past the commit
		 * looked for, which did not come, no longer has it. */
		if (wal_end >= lt->verify.end_lsn) {
			char what[256];
			snprintf(what, sizeof(what), "the transaction published with "
			         "commit LSN " LSN_FMT " (xid %lld) is not in the "
			         "server's WAL any more (the server is at " LSN_FMT ")",
			         LSN_ARGS(lt->verify.end_lsn), (long long)lt->verify.xid,
			         LSN_ARGS(wal_end));
			rewound(lt, lt->verify_from, lt->verify_acked, what);
			return false;
		}
		return true;
	}
	/* Everything the server sent before this keepalive was processed in
	 * stream order; with nothing open or in flight, all of it is done. */
	if (lt->failed || lt->in_txn || lt->len > 0)
		return true;
	lt->confirmable = max_u64(lt->confirmable, wal_end);
	lt->received_lsn = max_u64(lt->received_lsn, wal_end);
	return true;
}

void lsn_verify_commit(struct lsn_tracker *lt, const struct lsn_commit_id *c,
                       uint64_t slot_lsn, uint64_t upto)
{
	if (c->end_lsn <= slot_lsn || c->end_lsn <= lt->verify.end_lsn)
		return;
	lt->verify = *c;
	lt->verify_from = slot_lsn;
	lt->verify_acked = max_u64(upto, c->end_lsn);
}

const struct lsn_commit_id *lsn_newest_commit(const struct lsn_tracker *lt)
{
	return lt->len > 0 ? &entry_at(lt, lt->len - 1)->newest : &lt->last_commit;
}

uint64_t lsn_read_boundary(const struct lsn_tracker *lt)
{
	uint64_t b = lt->confirmable;

	if (lt->len > 0)
		b = max_u64(b, entry_at(lt, lt->len - 1)->end_lsn);
	return b;
}

void lsn_received(struct lsn_tracker *lt, uint64_t lsn)
{
	lt->received_lsn = max_u64(lt->received_lsn, lsn);
}

uint64_t lsn_confirmable(const struct lsn_tracker *lt)
{
	return max_u64(lt->confirmable, lt->confirmed);
}

bool lsn_confirm_due(const struct lsn_tracker *lt)
{
	return lt->confirmable > lt->confirmed;
}

int64_t lsn_oldest_pending_ts(const struct lsn_tracker *lt)
{
	for (size_t i = 0; i < lt->len; i++) {
		const struct lsn_txn *t = entry_at(lt, i);
		if (t->pending > 0)
			return t->commit_ts_us;
	}
	return 0;
}

void lsn_mark_confirmed(struct lsn_tracker *lt, uint64_t flush_lsn)
{
	lt->confirmed = max_u64(lt->confirmed, flush_lsn);
}

uint64_t lsn_window_events(const struct lsn_tracker *lt)
{
	uint64_t n = lt->held_events;

	if (lt->in_txn && lt->cur_has_events) {
		const struct lsn_txn *t = entry_at(lt, lt->len - 1);
		n -= t->events - t->pending;
	}
	return n;
}

const struct lsn_txn *lsn_head(const struct lsn_tracker *lt)
{
	return lt->len > 0 ? entry_at(lt, 0) : NULL;
}

const struct lsn_txn *lsn_find(const struct lsn_tracker *lt, uint64_t token)
{
	return find(lt, token);
}

uint64_t lsn_confirmed(const struct lsn_tracker *lt)
{
	return lt->confirmed;
}

uint64_t lsn_received_max(const struct lsn_tracker *lt)
{
	return lt->received_lsn;
}

uint64_t lsn_inflight(const struct lsn_tracker *lt)
{
	return lt->inflight;
}

uint64_t lsn_replayed(const struct lsn_tracker *lt)
{
	return lt->replayed;
}

uint64_t lsn_replay_upto(const struct lsn_tracker *lt)
{
	return lt->replay_upto;
}

int lsn_promotions(const struct lsn_tracker *lt)
{
	return lt->promotions;
}

uint64_t lsn_held_events(const struct lsn_tracker *lt)
{
	return lt->held_events;
}

bool lsn_skipping(const struct lsn_tracker *lt)
{
	return lt->cur_skip;
}

bool lsn_in_txn(const struct lsn_tracker *lt)
{
	return lt->in_txn;
}

const struct lsn_commit_id *lsn_verifying(const struct lsn_tracker *lt)
{
	return &lt->verify;
}

const char *lsn_rewound_reason(const struct lsn_tracker *lt)
{
	return lt->rewound;
}
