/* SPDX-License-Identifier: Apache-2.0 */
/* check_lsn_tracker.c -- the confirmable-LSN contract of lsn_tracker.h.
 *
 * The one invariant the relay cannot get wrong: the flush LSN sent to
 * PostgreSQL is the commit end of the longest prefix of transactions that
 * are committed and fully acked by Kafka, and it never goes back. The
 * example tests pin single rules; the property test checks the invariant
 * after every step of random streams with acks in random order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "lsn_tracker.h"

static struct lsn_tracker lt;

static void setup(void)
{
	lsn_init(&lt);
}

static void teardown(void)
{
	lsn_free(&lt);
}

/* A transaction with n events; returns the token of the last one (all
 * events of one transaction may share a token: tokens are opaque). */
static void txn(uint64_t *tokens, int n, int64_t ts, uint64_t end)
{
	lsn_begin(&lt, ts);
	for (int i = 0; i < n; i++)
		tokens[i] = lsn_event(&lt);
	lsn_commit(&lt, end);
}

static void ack_ok(uint64_t token)
{
	ck_assert(lsn_ack(&lt, token, true, NULL));
}

/* ------------------------------------------------------------- examples */

START_TEST(test_init)
{
	ck_assert_uint_eq(lsn_confirmable(&lt), 0);
	ck_assert_uint_eq(lt.inflight, 0);
	ck_assert(!lt.failed);
	ck_assert(!lt.in_txn);
}
END_TEST

START_TEST(test_one_txn_needs_every_ack)
{
	uint64_t t[3];
	int64_t ts = 0;

	lsn_reset(&lt, 0x100);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	txn(t, 3, 1234567, 0x200);
	ck_assert_uint_eq(lt.inflight, 3);
	ck_assert(lsn_ack(&lt, t[2], true, &ts));
	ck_assert_int_eq(ts, 1234567);
	ack_ok(t[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ack_ok(t[1]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x200);
	ck_assert_uint_eq(lt.inflight, 0);
}
END_TEST

START_TEST(test_not_before_commit)
{
	uint64_t tok;

	lsn_reset(&lt, 0x100);
	lsn_begin(&lt, 1);
	tok = lsn_event(&lt);
	/* Acked while the transaction is still open: the C record decides. */
	ack_ok(tok);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	lsn_commit(&lt, 0x180);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x180);
}
END_TEST

START_TEST(test_empty_txns)
{
	uint64_t t[1];

	lsn_reset(&lt, 0x100);
	/* Nothing pending: an empty transaction moves the watermark. */
	txn(t, 0, 1, 0x150);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x150);
	/* Behind a pending one it waits, then comes along with it. */
	txn(t, 1, 2, 0x200);
	txn(NULL, 0, 3, 0x250);
	txn(NULL, 0, 4, 0x260);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x150);
	ck_assert_uint_le(lt.len, 1);
	ack_ok(t[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x260);
}
END_TEST

START_TEST(test_acks_out_of_order)
{
	uint64_t a[2], b[1], c[2];

	lsn_reset(&lt, 0x10);
	txn(a, 2, 1, 0x100);
	txn(b, 1, 2, 0x200);
	txn(c, 2, 3, 0x300);
	ack_ok(c[1]);
	ack_ok(c[0]);
	ack_ok(b[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x10);
	ack_ok(a[1]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x10);
	ack_ok(a[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x300);
}
END_TEST

START_TEST(test_failed_ack_freezes)
{
	uint64_t a[1], b[1], c[1];
	int64_t ts = 0;

	lsn_reset(&lt, 0x10);
	txn(a, 1, 11, 0x100);
	txn(b, 1, 22, 0x200);
	ack_ok(a[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	/* The failed ack is not stale: it returns true and its time. */
	ck_assert(lsn_ack(&lt, b[0], false, &ts));
	ck_assert_int_eq(ts, 22);
	ck_assert(lt.failed);
	/* Nothing moves it any more: later acks, empty commits, idle. */
	txn(c, 1, 33, 0x300);
	ack_ok(c[0]);
	txn(NULL, 0, 44, 0x400);
	lsn_idle(&lt, 0x500);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ck_assert_uint_eq(lt.inflight, 0);

	/* A new session starts clean from the slot's position. */
	lsn_reset(&lt, 0x100);
	ck_assert(!lt.failed);
	txn(a, 1, 55, 0x600);
	ack_ok(a[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x600);
}
END_TEST

START_TEST(test_failure_in_head_txn)
{
	uint64_t a[2], b[1];

	lsn_reset(&lt, 0x10);
	txn(a, 2, 1, 0x100);
	txn(b, 1, 2, 0x200);
	ck_assert(lsn_ack(&lt, a[0], false, NULL));
	ack_ok(a[1]);
	ack_ok(b[0]);
	/* The failed event's transaction is never confirmed. */
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x10);
}
END_TEST

START_TEST(test_reset_makes_tokens_stale)
{
	uint64_t a[2], b[1];
	int64_t ts = -5;

	lsn_reset(&lt, 0x10);
	txn(a, 2, 1, 0x100);
	lsn_begin(&lt, 2);
	b[0] = lsn_event(&lt);
	/* Reconnect mid-transaction: the server resends from 0x90. */
	lsn_reset(&lt, 0x90);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x90);
	ck_assert_uint_eq(lt.inflight, 0);
	ck_assert(!lt.in_txn);
	ck_assert(!lsn_ack(&lt, a[0], true, &ts));
	ck_assert(!lsn_ack(&lt, b[0], false, &ts));
	ck_assert_int_eq(ts, -5); /* untouched for a stale token */
	ck_assert(!lt.failed);    /* a stale failure does not count */
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x90);

	/* New tokens differ from every old one and work normally. */
	txn(b, 1, 3, 0x120);
	ck_assert_uint_ne(b[0], a[0]);
	ck_assert_uint_ne(b[0], a[1]);
	ck_assert(!lsn_ack(&lt, a[1], true, NULL));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x90);
	ack_ok(b[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x120);
}
END_TEST

START_TEST(test_never_below_confirmed)
{
	lsn_reset(&lt, 0x100);
	txn(NULL, 0, 1, 0x300);
	lsn_mark_confirmed(&lt, 0x300);
	ck_assert_uint_eq(lt.confirmed, 0x300);
	/* A slot that lost its last confirm in a crash restarts earlier;
	 * what was sent stays sent. */
	lsn_reset(&lt, 0x200);
	ck_assert_uint_ge(lsn_confirmable(&lt), 0x300);
	ck_assert_uint_eq(lt.confirmed, 0x300);
}
END_TEST

START_TEST(test_idle)
{
	uint64_t a[1];

	lsn_reset(&lt, 0x100);
	lsn_idle(&lt, 0x180);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x180);
	lsn_idle(&lt, 0x170); /* never backwards */
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x180);

	/* Open transaction, even without events: no. */
	lsn_begin(&lt, 1);
	lsn_idle(&lt, 0x190);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x180);
	a[0] = lsn_event(&lt);
	lsn_commit(&lt, 0x200);
	/* Events in flight: no. */
	lsn_idle(&lt, 0x280);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x180);
	ack_ok(a[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x200);
	lsn_idle(&lt, 0x280);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x280);
}
END_TEST

START_TEST(test_event_undo)
{
	uint64_t a[3];

	lsn_reset(&lt, 0x10);
	lsn_begin(&lt, 1);
	a[0] = lsn_event(&lt);
	a[1] = lsn_event(&lt);
	lsn_event_undo(&lt, a[1]); /* produce() failed for the second */
	ck_assert_uint_eq(lt.inflight, 1);
	lsn_commit(&lt, 0x100);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x10);
	ack_ok(a[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);

	/* Every event undone: the transaction counts as done at commit. */
	lsn_begin(&lt, 2);
	a[2] = lsn_event(&lt);
	lsn_event_undo(&lt, a[2]);
	ck_assert_uint_eq(lt.inflight, 0);
	lsn_commit(&lt, 0x200);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x200);
}
END_TEST

START_TEST(test_received)
{
	lsn_received(&lt, 0x500);
	lsn_received(&lt, 0x400);
	ck_assert_uint_eq(lt.received_lsn, 0x500);
	/* Receiving is not confirming. */
	ck_assert_uint_eq(lsn_confirmable(&lt), 0);
}
END_TEST

/* Many transactions in flight at once: the ring grows and wraps. */
START_TEST(test_many_in_flight)
{
	enum { N = 5000 };
	static uint64_t tok[N];
	uint64_t end = 0x1000;

	lsn_reset(&lt, end);
	for (int round = 0; round < 3; round++) {
		uint64_t base = end;
		for (int i = 0; i < N; i++)
			txn(&tok[i], 1, i, base + 16 * (uint64_t)(i + 1));
		end = base + 16 * N;
		/* Acks newest first: nothing moves until the very last one. */
		for (int i = N - 1; i > 0; i--)
			ack_ok(tok[i]);
		ck_assert_uint_eq(lsn_confirmable(&lt), base);
		ack_ok(tok[0]);
		ck_assert_uint_eq(lsn_confirmable(&lt), end);
		ck_assert_uint_eq(lt.len, 0);
	}
}
END_TEST

/* ------------------------------------------------------------ property */

struct m_txn {
	uint64_t end;
	int64_t ts;
	int pending;
	bool committed;
};

struct m_tok {
	uint64_t token;
	int txn;
};

/* The reference: start (or the last idle/previous value), raised to the
 * end of the longest prefix of committed, fully acked transactions. */
static uint64_t model_watermark(const struct m_txn *t, int n, uint64_t prev,
                                bool failed)
{
	uint64_t wm = prev;

	if (failed)
		return prev;
	for (int i = 0; i < n; i++) {
		if (!t[i].committed || t[i].pending > 0)
			break;
		if (t[i].end > wm)
			wm = t[i].end;
	}
	return wm;
}

/* Check records every passing assertion (a pipe write per check in fork
 * mode), which would dominate millions of property checks: only a
 * failure goes through Check here. */
#define prop_check(cond, ...)                                              \
	do {                                                                   \
		if (!(cond))                                                       \
			ck_abort_msg(__VA_ARGS__);                                     \
	} while (0)

static void property_run(unsigned seed)
{
	enum { MAXTX = 48, MAXTOK = 4096 };
	struct m_txn t[MAXTX];
	struct m_tok out[MAXTOK];
	int ntx = 0, nout = 0, planned = 0, made = 0, target;
	int first_open = 0; /* transactions before this are all done */
	bool in_txn = false, failed = false;
	uint64_t last_end, wm, prev, conf;
	bool may_fail = seed % 4 == 0;

	srand(seed);
	target = 1 + rand() % MAXTX;
	lsn_init(&lt);
	last_end = 0x1000 + (uint64_t)(rand() % 0x1000);
	lsn_reset(&lt, last_end);
	wm = prev = last_end;

	for (int step = 0; step < 100000; step++) {
		int r = rand() % 100;

		if (ntx == target && !in_txn && nout == 0)
			break;
		if (r < 45 && nout > 0) {
			/* Ack a random outstanding event: any order. */
			int k = rand() % nout;
			bool ok = !(may_fail && rand() % 40 == 0);
			int64_t ts = -1;
			prop_check(lsn_ack(&lt, out[k].token, ok, &ts),
			           "seed %u: live token refused", seed);
			prop_check(ts == t[out[k].txn].ts, "seed %u: ts", seed);
			t[out[k].txn].pending--;
			out[k] = out[--nout];
			if (!ok)
				failed = true;
		} else if (!in_txn && ntx < target && r < 75) {
			int kind = rand() % 10;
			planned = kind < 3 ? 0 : kind < 8 ? 1 + rand() % 3
			                                  : 5 + rand() % 60;
			made = 0;
			t[ntx] = (struct m_txn){ .ts = 1000 + ntx };
			lsn_begin(&lt, t[ntx].ts);
			in_txn = true;
		} else if (in_txn && made < planned && nout < MAXTOK) {
			uint64_t tok = lsn_event(&lt);
			made++;
			if (rand() % 20 == 0) {
				/* produce() failed synchronously. */
				lsn_event_undo(&lt, tok);
			} else {
				out[nout++] = (struct m_tok){ tok, ntx };
				t[ntx].pending++;
			}
		} else if (in_txn && made >= planned) {
			last_end += 1 + (uint64_t)(rand() % 0x400);
			t[ntx].end = last_end;
			t[ntx].committed = true;
			lsn_commit(&lt, last_end);
			in_txn = false;
			ntx++;
		} else if (!in_txn && nout == 0 && rand() % 4 == 0) {
			/* Keepalive while idle: the WAL end may be confirmed. */
			last_end += (uint64_t)(rand() % 0x100);
			lsn_idle(&lt, last_end);
			if (!failed && last_end > wm)
				wm = last_end;
		} else {
			lsn_received(&lt, last_end + (uint64_t)(rand() % 8));
		}

		while (first_open < ntx && t[first_open].committed &&
		       t[first_open].pending == 0)
			first_open++;
		conf = lsn_confirmable(&lt);
		prop_check(conf >= prev, "seed %u step %d: went back from " LSN_FMT
		           " to " LSN_FMT, seed, step, LSN_ARGS(prev),
		           LSN_ARGS(conf));
		/* Never past a transaction with un-acked events, nor past the
		 * last commit while the next transaction is open. */
		if (first_open < ntx)
			prop_check(conf < t[first_open].end,
			           "seed %u step %d: past txn %d", seed, step,
			           first_open);
		prop_check(conf <= last_end, "seed %u step %d: beyond the stream",
		           seed, step);
		/* Exactly the longest committed, fully acked prefix (or what it
		 * was before, once frozen by a failure). */
		wm = model_watermark(t, ntx, wm, failed);
		prop_check(conf == wm,
		           "seed %u step %d: confirmable " LSN_FMT ", model " LSN_FMT,
		           seed, step, LSN_ARGS(conf), LSN_ARGS(wm));
		prop_check(lt.inflight == (uint64_t)nout,
		           "seed %u step %d: inflight %llu, model %d", seed, step,
		           (unsigned long long)lt.inflight, nout);
		prop_check(lt.failed == failed, "seed %u step %d: failed flag",
		           seed, step);
		prev = conf;
	}
	prop_check(ntx == target && nout == 0 && !in_txn,
	           "seed %u: run did not finish", seed);
	/* All acked: everything up to the last commit (or the last idle
	 * WAL end after it) is confirmable. */
	if (!failed)
		prop_check(lsn_confirmable(&lt) == last_end,
		           "seed %u: final " LSN_FMT ", want " LSN_FMT, seed,
		           LSN_ARGS(lsn_confirmable(&lt)), LSN_ARGS(last_end));
	lsn_free(&lt);
}

START_TEST(test_property_random_streams)
{
	for (unsigned seed = 1; seed <= 2000; seed++)
		property_run(seed);
}
END_TEST

Suite *lsn_tracker_suite(void)
{
	Suite *s = suite_create("lsn_tracker");
	TCase *ex = tcase_create("examples");
	TCase *prop = tcase_create("property");

	tcase_add_checked_fixture(ex, setup, teardown);
	tcase_add_test(ex, test_init);
	tcase_add_test(ex, test_one_txn_needs_every_ack);
	tcase_add_test(ex, test_not_before_commit);
	tcase_add_test(ex, test_empty_txns);
	tcase_add_test(ex, test_acks_out_of_order);
	tcase_add_test(ex, test_failed_ack_freezes);
	tcase_add_test(ex, test_failure_in_head_txn);
	tcase_add_test(ex, test_reset_makes_tokens_stale);
	tcase_add_test(ex, test_never_below_confirmed);
	tcase_add_test(ex, test_idle);
	tcase_add_test(ex, test_event_undo);
	tcase_add_test(ex, test_received);
	tcase_add_test(ex, test_many_in_flight);
	suite_add_tcase(s, ex);

	/* 2000 streams take a few seconds under valgrind. */
	tcase_set_timeout(prop, 120);
	tcase_add_test(prop, test_property_random_streams);
	suite_add_tcase(s, prop);
	return s;
}
