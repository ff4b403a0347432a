/* SPDX-License-Identifier: Apache-2.0 */
/* lsn_tracker.c -- received / acked / confirmable LSN bookkeeping.
 *
 * The ring holds, in commit order, the transactions that have events in
 * flight. Their sequence numbers are contiguous, so the entry for a token
 * is found by subtraction, and acks in any order cost O(1). The watermark
 * moves only by popping complete, fully acked entries off the head. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "lsn_tracker.h"

#define LSN_RING_MIN 64

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static struct lsn_txn *entry_at(struct lsn_tracker *lt, size_t i)
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

/* Pops every complete, fully acked transaction off the head. */
static void advance(struct lsn_tracker *lt)
{
	while (lt->len > 0) {
		struct lsn_txn *t = entry_at(lt, 0);
		if (!t->complete || t->pending > 0)
			break;
		if (!lt->failed)
			lt->confirmable = max_u64(lt->confirmable, t->end_lsn);
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

void lsn_reset(struct lsn_tracker *lt, uint64_t start_lsn)
{
	lt->head = 0;
	lt->len = 0;
	lt->session_base = lt->next_seq;
	lt->in_txn = false;
	lt->cur_has_events = false;
	lt->inflight = 0;
	lt->failed = false;
	/* Never go below what was already confirmed: those events were
	 * acked, even if the server's copy of the slot regressed after a
	 * crash (it only persists confirmed_flush at checkpoints). */
	lt->confirmable = max_u64(start_lsn, lt->confirmed);
	lt->received_lsn = lt->confirmable;
}

void lsn_begin(struct lsn_tracker *lt, int64_t commit_ts_us)
{
	lt->in_txn = true;
	lt->cur_has_events = false;
	lt->cur_commit_ts = commit_ts_us;
}

uint64_t lsn_event(struct lsn_tracker *lt)
{
	struct lsn_txn *t;

	assert(lt->in_txn);
	if (!lt->cur_has_events) {
		if (lt->len == lt->cap)
			grow(lt);
		lt->len++;
		t = tail(lt);
		t->seq = lt->next_seq++;
		t->end_lsn = 0;
		t->commit_ts_us = lt->cur_commit_ts;
		t->pending = 0;
		t->complete = false;
		lt->cur_has_events = true;
	}
	t = tail(lt);
	t->pending++;
	lt->inflight++;
	return t->seq;
}

static struct lsn_txn *find(struct lsn_tracker *lt, uint64_t token)
{
	uint64_t first;

	if (token < lt->session_base || lt->len == 0)
		return NULL;
	first = entry_at(lt, 0)->seq;
	if (token < first || token - first >= lt->len)
		return NULL;
	return entry_at(lt, (size_t)(token - first));
}

void lsn_event_undo(struct lsn_tracker *lt, uint64_t token)
{
	struct lsn_txn *t = find(lt, token);

	assert(t != NULL && t->pending > 0);
	if (t == NULL || t->pending == 0)
		return;
	t->pending--;
	lt->inflight--;
}

void lsn_commit(struct lsn_tracker *lt, uint64_t end_lsn)
{
	if (lt->cur_has_events) {
		struct lsn_txn *t = tail(lt);
		t->end_lsn = end_lsn;
		t->complete = true;
	} else if (lt->len > 0) {
		/* No events: confirming this commit is safe exactly when the
		 * newest pending transaction is, so fold it into that one. */
		struct lsn_txn *t = tail(lt);
		t->end_lsn = max_u64(t->end_lsn, end_lsn);
	} else if (!lt->failed) {
		lt->confirmable = max_u64(lt->confirmable, end_lsn);
	}
	lt->in_txn = false;
	lt->cur_has_events = false;
	lt->received_lsn = max_u64(lt->received_lsn, end_lsn);
	advance(lt);
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

void lsn_idle(struct lsn_tracker *lt, uint64_t wal_end)
{
	/* Everything the server sent before this keepalive was processed in
	 * stream order; with nothing open or in flight, all of it is done. */
	if (lt->failed || lt->in_txn || lt->len > 0)
		return;
	lt->confirmable = max_u64(lt->confirmable, wal_end);
	lt->received_lsn = max_u64(lt->received_lsn, wal_end);
}

void lsn_received(struct lsn_tracker *lt, uint64_t lsn)
{
	lt->received_lsn = max_u64(lt->received_lsn, lsn);
}

uint64_t lsn_confirmable(const struct lsn_tracker *lt)
{
	return max_u64(lt->confirmable, lt->confirmed);
}

int64_t lsn_oldest_pending_ts(const struct lsn_tracker *lt)
{
	for (size_t i = 0; i < lt->len; i++) {
		const struct lsn_txn *t = &lt->ring[(lt->head + i) & (lt->cap - 1)];
		if (t->pending > 0)
			return t->commit_ts_us;
	}
	return 0;
}

void lsn_mark_confirmed(struct lsn_tracker *lt, uint64_t flush_lsn)
{
	lt->confirmed = max_u64(lt->confirmed, flush_lsn);
}
