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

#include "relay/lsn_tracker.h"
#include "unit_scale.h"

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
	lsn_begin(&lt, 1, ts, 0);
	for (int i = 0; i < n; i++)
		tokens[i] = lsn_event(&lt, 0);
	ck_assert(lsn_commit(&lt, end));
}

static void ack_ok(uint64_t token)
{
	ck_assert(lsn_ack(&lt, token, true, NULL));
}

/* A new session on the same server, whose slot is at slot_lsn. */
static enum lsn_resume resume(uint64_t slot_lsn, uint64_t wal_end)
{
	struct lsn_server srv = { .system_id = "7311", .timeline = 1,
		                      .wal_end = wal_end, .slot_lsn = slot_lsn };
	lsn_end_session(&lt);
	return lsn_resume(&lt, &srv);
}

static void reset(uint64_t slot_lsn)
{
	ck_assert_int_eq(resume(slot_lsn, UINT64_MAX), LSN_RESUME_SLOT);
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

	reset(0x100);
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

	reset(0x100);
	lsn_begin(&lt, 1, 1, 0);
	tok = lsn_event(&lt, 0);
	/* Acked while the transaction is still open: the C record decides. */
	ack_ok(tok);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ck_assert(lsn_commit(&lt, 0x180));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x180);
}
END_TEST

START_TEST(test_empty_txns)
{
	uint64_t t[1];

	reset(0x100);
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

	reset(0x10);
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

	reset(0x10);
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
	ck_assert(lsn_idle(&lt, 0x500));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ck_assert_uint_eq(lt.inflight, 0);

	/* A new session starts clean from the slot's position. */
	reset(0x100);
	ck_assert(!lt.failed);
	txn(a, 1, 55, 0x600);
	ack_ok(a[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x600);
}
END_TEST

START_TEST(test_failure_in_head_txn)
{
	uint64_t a[2], b[1];

	reset(0x10);
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

	reset(0x10);
	txn(a, 2, 1, 0x100);
	lsn_begin(&lt, 1, 2, 0);
	b[0] = lsn_event(&lt, 0);
	/* Reconnect mid-transaction: the server resends from 0x90. */
	reset(0x90);
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

/* One transaction with n events, xid and commit time given: for the
 * resume tests, where the identity of a commit matters. */
static void txn_id(uint64_t *tokens, int n, int64_t xid, int64_t ts,
                   uint64_t end)
{
	ck_assert_int_eq(lsn_begin(&lt, xid, ts, end), LSN_PUBLISH);
	for (int i = 0; i < n; i++)
		tokens[i] = lsn_event(&lt, 10);
	ck_assert(lsn_commit(&lt, end));
}

START_TEST(test_resume_first_session)
{
	struct lsn_server srv = { .system_id = "7311", .timeline = 1,
		                      .wal_end = 0x900, .slot_lsn = 0x100 };

	ck_assert_int_eq(lsn_resume(&lt, &srv), LSN_RESUME_SLOT);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	/* What the slot has counts as sent: a confirm is due only past it. */
	ck_assert_uint_eq(lt.confirmed, 0x100);
	ck_assert(!lsn_confirm_due(&lt));
}
END_TEST

/* A reconnect after acks whose confirm never reached the server: the
 * acked transactions are skipped, not published again, once the newest
 * of them is seen unchanged. */
START_TEST(test_resume_skips_acked)
{
	uint64_t t[4];

	reset(0x100);
	txn_id(t, 1, 10, 1000, 0x200);
	txn_id(t + 1, 2, 11, 1001, 0x300);
	ack_ok(t[0]);
	ack_ok(t[1]);
	ack_ok(t[2]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x300);
	lsn_mark_confirmed(&lt, 0x200); /* 0x300 was never sent */

	ck_assert_int_eq(resume(0x200, 0x400), LSN_RESUME_VERIFY);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x200);
	ck_assert_int_eq(lsn_begin(&lt, 11, 1001, 0x300), LSN_SKIP);
	ck_assert(lsn_commit(&lt, 0x300));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x300);
	ck_assert(lsn_confirm_due(&lt));
	/* After it: published as usual. */
	txn_id(t + 3, 1, 12, 1002, 0x400);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x300);
	ack_ok(t[3]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x400);
}
END_TEST

/* A slot restored from an older checkpoint (server crash): several acked
 * transactions come again; none moves the watermark before the newest
 * is confirmed to be the same one. */
START_TEST(test_resume_skips_several)
{
	uint64_t t[3];

	reset(0x100);
	txn_id(t, 1, 20, 5, 0x200);
	txn_id(t + 1, 0, 21, 6, 0x280); /* no events: folded */
	txn_id(t + 2, 1, 22, 7, 0x300);
	ack_ok(t[2]);
	ack_ok(t[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x300);
	ck_assert_uint_eq(lt.last_commit.end_lsn, 0x300);
	ck_assert_int_eq(lt.last_commit.xid, 22);

	ck_assert_int_eq(resume(0x100, 0x300), LSN_RESUME_VERIFY);
	ck_assert_int_eq(lsn_begin(&lt, 20, 5, 0x200), LSN_SKIP);
	ck_assert(lsn_commit(&lt, 0x200));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ck_assert(lsn_idle(&lt, 0x2f0)); /* not yet at 0x300: no verdict */
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ck_assert_int_eq(lsn_begin(&lt, 21, 6, 0x280), LSN_SKIP);
	ck_assert(lsn_commit(&lt, 0x280));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ck_assert_int_eq(lsn_begin(&lt, 22, 7, 0x300), LSN_SKIP);
	ck_assert(lsn_commit(&lt, 0x300));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x300);
	ck_assert_uint_eq(lt.verify.end_lsn, 0);
}
END_TEST

/* The last acked commit was folded from an event-less transaction: its
 * identity, not the event's, is the one looked for. */
START_TEST(test_resume_folded_identity)
{
	uint64_t t[1];

	reset(0x100);
	txn_id(t, 1, 30, 1, 0x200);
	txn_id(NULL, 0, 31, 2, 0x250);
	ack_ok(t[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x250);
	ck_assert_int_eq(lt.last_commit.xid, 31);
	ck_assert_int_eq(resume(0x100, 0x300), LSN_RESUME_VERIFY);
	ck_assert_int_eq(lsn_begin(&lt, 30, 1, 0x200), LSN_SKIP);
	ck_assert(lsn_commit(&lt, 0x200));
	ck_assert_int_eq(lsn_begin(&lt, 31, 2, 0x250), LSN_SKIP);
	ck_assert(lsn_commit(&lt, 0x250));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x250);
}
END_TEST

START_TEST(test_resume_slot_ahead)
{
	uint64_t t[1];

	reset(0x100);
	txn_id(t, 1, 40, 1, 0x200);
	ack_ok(t[0]);
	/* Another relay moved the slot on meanwhile: start there. */
	ck_assert_int_eq(resume(0x500, 0x600), LSN_RESUME_SLOT);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x500);
	ck_assert_int_eq(lsn_begin(&lt, 41, 2, 0x550), LSN_PUBLISH);
}
END_TEST

/* Acked only up to a keepalive past the last commit: nothing published
 * lies between the slot and the watermark, so there is nothing to check
 * (and the watermark is the slot's again until the next keepalive). */
START_TEST(test_resume_idle_only)
{
	uint64_t t[1];

	reset(0x100);
	txn_id(t, 1, 50, 1, 0x200);
	ack_ok(t[0]);
	ck_assert(lsn_idle(&lt, 0x400));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x400);
	ck_assert_int_eq(resume(0x200, 0x400), LSN_RESUME_SLOT);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x200);
}
END_TEST

START_TEST(test_resume_wal_behind)
{
	uint64_t t[1];
	struct lsn_server srv = { .system_id = "7311", .timeline = 1,
		                      .wal_end = 0x280, .slot_lsn = 0x100 };

	reset(0x100);
	txn_id(t, 1, 60, 1, 0x300);
	ack_ok(t[0]);
	lsn_mark_confirmed(&lt, 0x300);
	lsn_end_session(&lt);
	/* A restored copy: its WAL ends before what was confirmed. */
	ck_assert_int_eq(lsn_resume(&lt, &srv), LSN_RESUME_REWOUND);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ck_assert(lt.failed);
	ck_assert_ptr_nonnull(strstr(lt.rewound, "went back in time"));
	ck_assert_ptr_nonnull(strstr(lt.rewound, "0/280"));
	ck_assert_ptr_nonnull(strstr(lt.rewound, "0/300"));
	/* Frozen: nothing moves it. */
	ck_assert(lsn_idle(&lt, 0x900));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
}
END_TEST

START_TEST(test_resume_other_system)
{
	struct lsn_server srv = { .system_id = "9999", .timeline = 1,
		                      .wal_end = 0x900, .slot_lsn = 0x100 };

	reset(0x100);
	lsn_end_session(&lt);
	ck_assert_int_eq(lsn_resume(&lt, &srv), LSN_RESUME_REWOUND);
	ck_assert_ptr_nonnull(strstr(lt.rewound, "system identifier"));
	srv.system_id = "7311";
	srv.timeline = 2;
	lsn_end_session(&lt);
	ck_assert_int_eq(lsn_resume(&lt, &srv), LSN_RESUME_REWOUND);
	ck_assert_ptr_nonnull(strstr(lt.rewound, "timeline 2"));
}
END_TEST

/* ---- a new timeline: a promotion that holds everything, or not ---- */

/* A session on timeline tli of the same system, its history given. */
static enum lsn_resume resume_tli(int tli, const struct tli_switch *h, int n,
                                  uint64_t slot_lsn, uint64_t wal_end)
{
	struct lsn_server srv = { .system_id = "7311", .timeline = tli,
		                      .wal_end = wal_end, .slot_lsn = slot_lsn,
		                      .history = h, .history_len = n };
	lsn_end_session(&lt);
	return lsn_resume(&lt, &srv);
}

/* The standby had everything (synchronized_standby_slots): the session
 * goes on from its slot, acked transactions are skipped once the newest
 * is verified, the one produced without an ack is published again and
 * counted. */
START_TEST(test_promotion_holds_everything)
{
	static const struct tli_switch h[] = { { 1, 0x400 } };
	uint64_t t[3];

	reset(0x100);
	txn_id(t, 1, 10, 1, 0x200);
	txn_id(t + 1, 1, 11, 2, 0x300);
	txn_id(t + 2, 1, 12, 3, 0x380);
	ack_ok(t[0]);
	ack_ok(t[1]);
	lsn_mark_confirmed(&lt, 0x300);
	ck_assert_uint_eq(lt.must_have, 0x380);
	/* The synced copy of the slot lags the primary's. */
	ck_assert_int_eq(resume_tli(2, h, 1, 0x200, 0x500), LSN_RESUME_VERIFY);
	ck_assert_int_eq(lsn_promotions(&lt), 1);
	ck_assert(!lt.failed);
	ck_assert_uint_eq(lsn_verifying(&lt)->end_lsn, 0x300);
	ck_assert_uint_eq(lsn_replay_upto(&lt), 0x380);
	ck_assert_int_eq(lsn_begin(&lt, 11, 2, 0x300), LSN_SKIP);
	ck_assert(lsn_commit(&lt, 0x300));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x300);
	/* Produced before without an ack: published again, counted. */
	txn_id(t, 1, 12, 3, 0x380);
	ck_assert_uint_eq(lsn_replayed(&lt), 1);
	txn_id(t + 1, 1, 13, 4, 0x480);
	ck_assert_uint_eq(lsn_replayed(&lt), 1);
	ack_ok(t[0]);
	ack_ok(t[1]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x480);
	/* The next reconnect on timeline 2 is an ordinary one. */
	ck_assert_int_eq(resume_tli(2, h, 1, 0x480, 0x500), LSN_RESUME_SLOT);
	ck_assert_int_eq(lsn_promotions(&lt), 1);
}
END_TEST

/* The standby lacked WAL the relay had published from: stop, naming the
 * range between the switch point and the newest produced commit, acked
 * or not. */
START_TEST(test_promotion_lacks_wal)
{
	static const struct tli_switch h[] = { { 1, 0x250 } };
	uint64_t t[2];

	reset(0x100);
	txn_id(t, 1, 10, 1, 0x200);
	txn_id(t + 1, 1, 11, 2, 0x300);
	ack_ok(t[0]); /* 0x300 produced, never acked: it may be in Kafka */
	ck_assert_int_eq(resume_tli(2, h, 1, 0x200, 0x900), LSN_RESUME_REWOUND);
	ck_assert(lt.failed);
	ck_assert_int_eq(lsn_promotions(&lt), 0);
	ck_assert_ptr_nonnull(strstr(lt.rewound, "left timeline 1 at 0/250"));
	ck_assert_ptr_nonnull(strstr(lt.rewound, "above 0/250 and up to 0/300"));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x200);
	ck_assert(lsn_idle(&lt, 0x900));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x200);
}
END_TEST

/* A history that does not pass through the old timeline, a timeline
 * going down, an unread history: all refused. */
START_TEST(test_promotion_not_descendant)
{
	static const struct tli_switch other[] = { { 3, 0x900 } };
	static const struct tli_switch two[] = { { 1, 0x900 }, { 2, 0x950 } };

	reset(0x100);
	ck_assert_int_eq(resume_tli(4, other, 1, 0x100, 0x990), LSN_RESUME_REWOUND);
	ck_assert_ptr_nonnull(strstr(lt.rewound, "does not descend"));
	lsn_free(&lt);
	lsn_init(&lt);
	reset(0x100);
	ck_assert_int_eq(resume_tli(3, two, 2, 0x100, 0x990), LSN_RESUME_SLOT);
	ck_assert_int_eq(lsn_promotions(&lt), 1);
	/* Back to 2 from 3: not a descendant. */
	ck_assert_int_eq(resume_tli(2, two, 1, 0x100, 0x990), LSN_RESUME_REWOUND);
	lsn_free(&lt);
	lsn_init(&lt);
	reset(0x100);
	ck_assert_int_eq(resume_tli(2, NULL, 0, 0x100, 0x990), LSN_RESUME_REWOUND);
	ck_assert_ptr_nonnull(strstr(lt.rewound, "could not be read"));
}
END_TEST

/* pgoutput names a transaction by its commit LSN until the Commit: the
 * switch point must be past the start of the commit record. */
START_TEST(test_promotion_final_lsn)
{
	static const struct tli_switch at_start[] = { { 1, 0x3e0 } };
	static const struct tli_switch past[] = { { 1, 0x400 } };

	for (int v = 0; v < 2; v++) {
		lsn_free(&lt);
		lsn_init(&lt);
		reset(0x100);
		/* Produced, its Commit never read (the connection broke). */
		ck_assert_int_eq(lsn_begin_final(&lt, 30, 9, 0x3e0), LSN_PUBLISH);
		(void)lsn_event(&lt, 10);
		ck_assert_uint_eq(lt.must_have, 0x3e1);
		if (v == 0)
			ck_assert_int_eq(resume_tli(2, at_start, 1, 0x100, 0x900),
			                 LSN_RESUME_REWOUND);
		else
			ck_assert_int_eq(resume_tli(2, past, 1, 0x100, 0x900),
			                 LSN_RESUME_SLOT);
	}
}
END_TEST

/* The watermark passed a commit without events above the switch point
 * (the standby lacked it, nothing was published from it): accepted, but
 * that commit cannot be looked for, so nothing is skipped. */
START_TEST(test_promotion_idle_commit_above_switch)
{
	static const struct tli_switch h[] = { { 1, 0x400 } };
	uint64_t t[1];

	reset(0x100);
	txn_id(t, 1, 10, 1, 0x300);
	ack_ok(t[0]);
	txn_id(NULL, 0, 11, 2, 0x450);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x450);
	ck_assert_int_eq(resume_tli(2, h, 1, 0x200, 0x900), LSN_RESUME_SLOT);
	ck_assert(!lt.failed);
	ck_assert_uint_eq(lsn_verifying(&lt)->end_lsn, 0);
	/* So the acked 0x300 is published again (a duplicate, no loss). */
	ck_assert_int_eq(lsn_begin(&lt, 10, 1, 0x300), LSN_PUBLISH);
}
END_TEST

/* A commit produced and never acked may be in Kafka all the same (its
 * ack came after the connection dropped): the range of a rewind ends at
 * it, not at the watermark, and a server whose WAL ends before it has
 * lost it. Found by t527 (b): a ghost at a pg_lsn past the range. */
START_TEST(test_rewound_range_covers_inflight)
{
	uint64_t t[2];

	reset(0x100);
	txn_id(t, 1, 10, 1, 0x200);
	txn_id(t + 1, 1, 11, 2, 0x300);
	ack_ok(t[0]);
	/* The WAL ends between the acked 0x200 and the produced 0x300. */
	ck_assert_int_eq(resume(0x200, 0x280), LSN_RESUME_REWOUND);
	ck_assert_ptr_nonnull(strstr(lt.rewound, "above 0/280 and up to 0/300"));
	/* Verification that fails: the range ends at 0x300 too. */
	lsn_free(&lt);
	lsn_init(&lt);
	reset(0x100);
	txn_id(t, 1, 10, 1, 0x200);
	txn_id(t + 1, 1, 11, 2, 0x300);
	ack_ok(t[0]);
	ck_assert_int_eq(resume(0x100, 0x900), LSN_RESUME_VERIFY);
	ck_assert_int_eq(lsn_begin(&lt, 99, 1, 0x200), LSN_REWOUND);
	ck_assert_ptr_nonnull(strstr(lt.rewound, "above 0/100 and up to 0/300"));
}
END_TEST

/* Restored, then written to past the old watermark before the relay came
 * back: the WAL end alone cannot tell, the commit looked for can. */
START_TEST(test_resume_rewound_other_txn)
{
	uint64_t t[1];

	for (int variant = 0; variant < 4; variant++) {
		lsn_free(&lt);
		lsn_init(&lt);
		reset(0x100);
		txn_id(t, 1, 70, 1, 0x300);
		ack_ok(t[0]);
		ck_assert_int_eq(resume(0x100, 0x500), LSN_RESUME_VERIFY);
		switch (variant) {
		case 0: /* same place, another xid */
			ck_assert_int_eq(lsn_begin(&lt, 71, 1, 0x300), LSN_REWOUND);
			break;
		case 1: /* same place and xid, another commit time */
			ck_assert_int_eq(lsn_begin(&lt, 70, 9, 0x300), LSN_REWOUND);
			break;
		case 2: /* a commit past it, it never came */
			ck_assert_int_eq(lsn_begin(&lt, 70, 1, 0x310), LSN_REWOUND);
			break;
		case 3: /* a keepalive past it */
			ck_assert(!lsn_idle(&lt, 0x300));
			break;
		}
		ck_assert(lt.failed);
		ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
		ck_assert_ptr_nonnull(strstr(lt.rewound, "0/300"));
	}
}
END_TEST

/* ---------------------------------------- Begin without its end (pgoutput) */

/* A pgoutput transaction: Begin names the commit by final_lsn (here the
 * end minus 0x20: a commit record's start), the end comes with the
 * Commit. */
static void txn_final(uint64_t *tokens, int n, int64_t xid, int64_t ts,
                      uint64_t end)
{
	ck_assert_int_eq(lsn_begin_final(&lt, xid, ts, end - 0x20), LSN_PUBLISH);
	for (int i = 0; i < n; i++)
		tokens[i] = lsn_event(&lt, 10);
	ck_assert(lsn_commit(&lt, end));
}

/* The watermark and the commit verification looks for are commit ends
 * under pgoutput too: Begin's final_lsn only names the transaction. */
START_TEST(test_final_confirms_commit_ends)
{
	uint64_t t[2];

	reset(0x100);
	txn_final(t, 2, 10, 1000, 0x200);
	ck_assert_uint_eq(lsn_head(&lt)->own.end_lsn, 0x1e0); /* its key */
	ack_ok(t[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ack_ok(t[1]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x200);
	ck_assert_uint_eq(lt.last_commit.end_lsn, 0x200);
	ck_assert_int_eq(lt.last_commit.xid, 10);
	ck_assert_int_eq(lt.last_commit.commit_ts_us, 1000);
}
END_TEST

/* The pgoutput form of test_resume_skips_several: the transactions
 * acked before a reconnect are skipped on final_lsn alone, the watermark
 * waits for the commit looked for, checked at its Commit, and what
 * follows is published. Fed to lsn_begin() with the end 0 that a
 * pgoutput Begin carries, every transaction would be "before" the
 * commit looked for: all skipped, forever, nothing published again. */
START_TEST(test_final_resume_skips_acked)
{
	uint64_t t[4];

	reset(0x100);
	txn_final(t, 1, 20, 5, 0x200);
	txn_final(t + 1, 1, 21, 6, 0x280);
	txn_final(t + 2, 1, 22, 7, 0x300);
	for (int i = 0; i < 3; i++)
		ack_ok(t[i]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x300);
	lsn_mark_confirmed(&lt, 0x100); /* none of it reached the server */

	ck_assert_int_eq(resume(0x100, 0x900), LSN_RESUME_VERIFY);
	ck_assert_uint_eq(lsn_verifying(&lt)->end_lsn, 0x300);
	ck_assert_int_eq(lsn_begin_final(&lt, 20, 5, 0x1e0), LSN_SKIP);
	ck_assert(lsn_skipping(&lt));
	ck_assert(lsn_commit(&lt, 0x200));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ck_assert_int_eq(lsn_begin_final(&lt, 21, 6, 0x260), LSN_SKIP);
	ck_assert(lsn_commit(&lt, 0x280));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	/* The commit looked for: skipped at its Begin, verified at its
	 * Commit, which then moves the watermark. */
	ck_assert_int_eq(lsn_begin_final(&lt, 22, 7, 0x2e0), LSN_SKIP);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	ck_assert_uint_eq(lsn_verifying(&lt)->end_lsn, 0x300);
	ck_assert(lsn_commit(&lt, 0x300));
	ck_assert_uint_eq(lsn_verifying(&lt)->end_lsn, 0);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x300);
	/* Published as usual after it. */
	ck_assert_int_eq(lsn_begin_final(&lt, 23, 8, 0x3e0), LSN_PUBLISH);
	ck_assert(!lsn_skipping(&lt));
	t[3] = lsn_event(&lt, 10);
	ck_assert(lsn_commit(&lt, 0x400));
	ack_ok(t[3]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x400);
}
END_TEST

/* A keepalive while the commit looked for is being read (its Begin came,
 * its Commit not yet) carries a position before that commit: no false
 * "rewound". */
START_TEST(test_final_keepalive_inside_verified_txn)
{
	uint64_t t[1];

	reset(0x100);
	txn_final(t, 1, 30, 1, 0x300);
	ack_ok(t[0]);
	ck_assert_int_eq(resume(0x100, 0x900), LSN_RESUME_VERIFY);
	ck_assert_int_eq(lsn_begin_final(&lt, 30, 1, 0x2e0), LSN_SKIP);
	ck_assert(lsn_idle(&lt, 0x2e0));
	ck_assert(lsn_commit(&lt, 0x300));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x300);
	ck_assert(!lt.failed);
}
END_TEST

/* The pgoutput form of test_resume_rewound_other_txn: each way the WAL
 * can differ is caught, at the Begin when final_lsn is already past the
 * end looked for, else at the Commit; the watermark stays at the slot. */
START_TEST(test_final_rewound)
{
	uint64_t t[1];

	for (int variant = 0; variant < 5; variant++) {
		lsn_free(&lt);
		lsn_init(&lt);
		reset(0x100);
		txn_final(t, 1, 70, 1, 0x300);
		ack_ok(t[0]);
		ck_assert_int_eq(resume(0x100, 0x900), LSN_RESUME_VERIFY);
		switch (variant) {
		case 0: /* same place, another xid */
			ck_assert_int_eq(lsn_begin_final(&lt, 71, 1, 0x2e0), LSN_SKIP);
			ck_assert(!lsn_commit(&lt, 0x300));
			break;
		case 1: /* same place and xid, another commit time */
			ck_assert_int_eq(lsn_begin_final(&lt, 70, 9, 0x2e0), LSN_SKIP);
			ck_assert(!lsn_commit(&lt, 0x300));
			break;
		case 2: /* starts before the end looked for, ends past it */
			ck_assert_int_eq(lsn_begin_final(&lt, 70, 1, 0x2e0), LSN_SKIP);
			ck_assert(!lsn_commit(&lt, 0x320));
			break;
		case 3: /* starts at that end: the commit never came */
			ck_assert_int_eq(lsn_begin_final(&lt, 70, 1, 0x300),
			                 LSN_REWOUND);
			break;
		case 4: /* a keepalive past it */
			ck_assert(!lsn_idle(&lt, 0x300));
			break;
		}
		ck_assert(lt.failed);
		ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
		ck_assert_ptr_nonnull(strstr(lt.rewound, "0/300"));
		/* Nothing later moves it either. */
		ck_assert(!lsn_idle(&lt, 0x900));
		ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);
	}
}
END_TEST

/* A stuck event at the head holds every later transaction's events in
 * the window, acked or not, until it is acked. */
START_TEST(test_held_window)
{
	uint64_t t[100];

	reset(0x100);
	txn_id(t, 1, 1, 1, 0x200);
	for (int i = 1; i < 100; i++)
		txn_id(t + i, 1, 1 + i, 1, 0x200 + 0x10 * (uint64_t)i);
	for (int i = 1; i < 100; i++)
		ack_ok(t[i]);
	ck_assert_uint_eq(lt.inflight, 1);
	ck_assert_uint_eq(lt.held_events, 100);
	ck_assert_uint_eq(lt.held_bytes, 1000);
	ck_assert_uint_eq(lt.len, 100);
	ck_assert_ptr_eq(lsn_head(&lt), lsn_find(&lt, t[0]));
	ck_assert_uint_eq(lsn_window_events(&lt), 100);
	ack_ok(t[0]);
	ck_assert_uint_eq(lt.held_events, 0);
	ck_assert_uint_eq(lt.held_bytes, 0);
	ck_assert_uint_eq(lt.len, 0);
	ck_assert_uint_eq(lsn_window_events(&lt), 0);
	ck_assert_ptr_null(lsn_head(&lt));
}
END_TEST

/* One transaction larger than any window: its acked events must not
 * count while it is open, or reading would stop before its commit. */
START_TEST(test_window_open_txn)
{
	uint64_t tok;

	reset(0x100);
	ck_assert_int_eq(lsn_begin(&lt, 9, 1, 0x900), LSN_PUBLISH);
	for (int i = 0; i < 1000; i++) {
		tok = lsn_event(&lt, 10);
		if (i % 10 != 0)
			ack_ok(tok);
	}
	ck_assert_uint_eq(lt.held_events, 1000);
	ck_assert_uint_eq(lsn_window_events(&lt), 100); /* the unacked ones */
	ck_assert(lsn_commit(&lt, 0x900));
	/* Closed, not confirmable yet: all of it counts now. */
	ck_assert_uint_eq(lsn_window_events(&lt), 1000);
}
END_TEST

START_TEST(test_idle)
{
	uint64_t a[1];

	reset(0x100);
	ck_assert(lsn_idle(&lt, 0x180));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x180);
	ck_assert(lsn_idle(&lt, 0x170)); /* never backwards */
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x180);

	/* Open transaction, even without events: no. */
	lsn_begin(&lt, 1, 1, 0);
	ck_assert(lsn_idle(&lt, 0x190));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x180);
	a[0] = lsn_event(&lt, 0);
	ck_assert(lsn_commit(&lt, 0x200));
	/* Events in flight: no. */
	ck_assert(lsn_idle(&lt, 0x280));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x180);
	ack_ok(a[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x200);
	ck_assert(lsn_idle(&lt, 0x280));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x280);
}
END_TEST

START_TEST(test_event_undo)
{
	uint64_t a[3];

	reset(0x10);
	lsn_begin(&lt, 1, 1, 0);
	a[0] = lsn_event(&lt, 0);
	a[1] = lsn_event(&lt, 0);
	lsn_event_undo(&lt, a[1], 0); /* produce() failed for the second */
	ck_assert_uint_eq(lt.inflight, 1);
	ck_assert(lsn_commit(&lt, 0x100));
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x10);
	ack_ok(a[0]);
	ck_assert_uint_eq(lsn_confirmable(&lt), 0x100);

	/* Every event undone: the transaction counts as done at commit. */
	lsn_begin(&lt, 1, 2, 0);
	a[2] = lsn_event(&lt, 0);
	lsn_event_undo(&lt, a[2], 0);
	ck_assert_uint_eq(lt.inflight, 0);
	ck_assert(lsn_commit(&lt, 0x200));
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

	reset(end);
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
	reset(last_end);
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
			lsn_begin(&lt, 1, t[ntx].ts, 0);
			in_txn = true;
		} else if (in_txn && made < planned && nout < MAXTOK) {
			uint64_t tok = lsn_event(&lt, 0);
			made++;
			if (rand() % 20 == 0) {
				/* produce() failed synchronously. */
				lsn_event_undo(&lt, tok, 0);
			} else {
				out[nout++] = (struct m_tok){ tok, ntx };
				t[ntx].pending++;
			}
		} else if (in_txn && made >= planned) {
			last_end += 1 + (uint64_t)(rand() % 0x400);
			t[ntx].end = last_end;
			t[ntx].committed = true;
			ck_assert(lsn_commit(&lt, last_end));
			in_txn = false;
			ntx++;
		} else if (!in_txn && nout == 0 && rand() % 4 == 0) {
			/* Keepalive while idle: the WAL end may be confirmed. */
			last_end += (uint64_t)(rand() % 0x100);
			prop_check(lsn_idle(&lt, last_end), "seed %u: idle refused", seed);
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

/* Sessions over one WAL. The "server" holds a list of transactions; the
 * relay streams them, acks some, and the session breaks at a random
 * point. The next session starts from a slot position somewhere at or
 * below what was sent (a lost last update, or a crash that restored an
 * older checkpoint), and, in some runs, from a WAL that was rewritten
 * after a random point (a restore followed by new writes). Checked:
 *  - the same WAL is never called rewound, and a rewritten one is,
 *    exactly when the rewrite reaches back to the newest acked commit;
 *  - a transaction acked in an earlier session is never published again
 *    (LSN_SKIP), every other one is published;
 *  - the watermark never passes the slot's position before the check. */
struct w_txn {
	uint64_t end;
	int64_t xid, ts;
	int events;
	bool acked_ever;   /* all its events acked in some session */
};

static void resume_run(unsigned seed)
{
	enum { NTX = 60 };
	struct w_txn w[NTX];
	uint64_t end = 0x1000, sent = 0x1000, acked_wm;
	int pos = 0, sessions = 0;
	bool rewrite = seed % 3 == 0, rewritten = false;

	srand(seed);
	for (int i = 0; i < NTX; i++) {
		end += 1 + (uint64_t)(rand() % 0x100);
		w[i] = (struct w_txn){ .end = end, .xid = 100 + i, .ts = 5000 + i,
			                   .events = rand() % 3 };
	}
	lsn_init(&lt);
	{
		struct lsn_server srv = { "7311", 1, UINT64_MAX, 0x1000, NULL, 0 };
		prop_check(lsn_resume(&lt, &srv) == LSN_RESUME_SLOT, "seed %u", seed);
	}
	while (pos < NTX && sessions < 50) {
		uint64_t tok[NTX * 3];
		int ntok = 0, stop = pos + rand() % 12;
		uint64_t slot;
		enum lsn_resume rs;
		struct lsn_server srv;

		sessions++;
		/* Stream some transactions; ack a random subset, in order or
		 * not: the watermark takes the acked prefix. */
		for (; pos < NTX && pos < stop; pos++) {
			enum lsn_verdict v = lsn_begin(&lt, w[pos].xid, w[pos].ts,
			                               w[pos].end);
			prop_check(v != LSN_REWOUND, "seed %u: rewound on the same WAL",
			           seed);
			if (v == LSN_SKIP) {
				prop_check(w[pos].acked_ever, "seed %u: skipped txn %d that "
				           "was never acked", seed, pos);
			} else {
				prop_check(!w[pos].acked_ever || w[pos].events == 0,
				           "seed %u: txn %d published again", seed, pos);
				for (int e = 0; e < w[pos].events; e++)
					tok[ntok++] = lsn_event(&lt, 1);
			}
			ck_assert(lsn_commit(&lt, w[pos].end));
		}
		for (int k = 0; k < ntok; k++)
			if (rand() % 5 != 0)
				(void)lsn_ack(&lt, tok[k], true, NULL);
		acked_wm = lsn_confirmable(&lt);
		for (int i = 0; i < NTX; i++)
			if (w[i].end <= acked_wm)
				w[i].acked_ever = true;
		if (rand() % 2)
			sent = acked_wm;
		lsn_mark_confirmed(&lt, sent);
		/* The next session's slot: what was sent, or older. */
		slot = sent;
		if (rand() % 3 == 0) {
			int back = rand() % (pos + 1);
			slot = back == 0 ? 0x1000 : w[back - 1].end;
			if (slot > sent)
				slot = sent;
		}
		/* Rewind: transactions after the slot are replaced by others. */
		if (rewrite && !rewritten && rand() % 3 == 0) {
			int first = 0;
			bool reaches;
			while (first < NTX && w[first].end <= slot)
				first++;
			reaches = lt.last_commit.end_lsn > slot;
			for (int i = first; i < NTX; i++) {
				w[i].xid += 1000;
				w[i].acked_ever = false;
			}
			rewritten = true;
			lsn_end_session(&lt);
			srv = (struct lsn_server){ "7311", 1, UINT64_MAX, slot, NULL, 0 };
			rs = lsn_resume(&lt, &srv);
			if (!reaches) {
				prop_check(rs == LSN_RESUME_SLOT, "seed %u: rewrite after "
				           "the acked part needs no check", seed);
				pos = first;
				continue;
			}
			prop_check(rs == LSN_RESUME_VERIFY, "seed %u", seed);
			for (pos = first; pos < NTX; pos++) {
				enum lsn_verdict v = lsn_begin(&lt, w[pos].xid, w[pos].ts,
				                               w[pos].end);
				prop_check(v != LSN_PUBLISH, "seed %u: published from a "
				           "rewound WAL before the check", seed);
				prop_check(lsn_confirmable(&lt) == slot, "seed %u: past the "
				           "slot before the check", seed);
				if (v == LSN_REWOUND)
					break;
				ck_assert(lsn_commit(&lt, w[pos].end));
			}
			prop_check(lt.failed && lt.rewound[0] != '\0',
			           "seed %u: rewound WAL not detected", seed);
			lsn_free(&lt);
			return;
		}
		lsn_end_session(&lt);
		srv = (struct lsn_server){ "7311", 1, UINT64_MAX, slot, NULL, 0 };
		rs = lsn_resume(&lt, &srv);
		prop_check(rs != LSN_RESUME_REWOUND, "seed %u: %s", seed, lt.rewound);
		prop_check(lsn_confirmable(&lt) == slot, "seed %u: watermark", seed);
		pos = 0;
		while (pos < NTX && w[pos].end <= slot)
			pos++;
	}
	lsn_free(&lt);
}

START_TEST(test_property_resume)
{
	for (unsigned seed = 1; seed <= (unsigned)unit_rounds(3000); seed++)
		resume_run(seed);
}
END_TEST

START_TEST(test_property_random_streams)
{
	for (unsigned seed = 1; seed <= (unsigned)unit_rounds(2000); seed++)
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
	tcase_add_test(ex, test_resume_first_session);
	tcase_add_test(ex, test_resume_skips_acked);
	tcase_add_test(ex, test_resume_skips_several);
	tcase_add_test(ex, test_resume_folded_identity);
	tcase_add_test(ex, test_resume_slot_ahead);
	tcase_add_test(ex, test_resume_idle_only);
	tcase_add_test(ex, test_resume_wal_behind);
	tcase_add_test(ex, test_resume_other_system);
	tcase_add_test(ex, test_resume_rewound_other_txn);
	tcase_add_test(ex, test_promotion_holds_everything);
	tcase_add_test(ex, test_promotion_lacks_wal);
	tcase_add_test(ex, test_promotion_not_descendant);
	tcase_add_test(ex, test_promotion_final_lsn);
	tcase_add_test(ex, test_promotion_idle_commit_above_switch);
	tcase_add_test(ex, test_rewound_range_covers_inflight);
	tcase_add_test(ex, test_final_confirms_commit_ends);
	tcase_add_test(ex, test_final_resume_skips_acked);
	tcase_add_test(ex, test_final_keepalive_inside_verified_txn);
	tcase_add_test(ex, test_final_rewound);
	tcase_add_test(ex, test_held_window);
	tcase_add_test(ex, test_window_open_txn);
	tcase_add_test(ex, test_idle);
	tcase_add_test(ex, test_event_undo);
	tcase_add_test(ex, test_received);
	tcase_add_test(ex, test_many_in_flight);
	suite_add_tcase(s, ex);

	/* 2000 streams take a few seconds under valgrind. */
	tcase_set_timeout(prop, 120);
	tcase_add_test(prop, test_property_random_streams);
	tcase_add_test(prop, test_property_resume);
	suite_add_tcase(s, prop);
	return s;
}
