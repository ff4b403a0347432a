/* SPDX-License-Identifier: Apache-2.0 */
/* check_relay.c -- the relay loop through its states, with the fake
 * producer behind the Kafka seam (fake_kafka.h).
 *
 * No PostgreSQL: a session is opened with session_open() against a
 * made-up server, and frames (wal2json records) go to take_frame() as
 * read_stream() would hand them over. Kafka's side is serve_kafka(), the
 * loop's step, and end_turn(), which restarts what ended. Every test
 * checks each transition against allowed[] (state.c) and the confirm
 * rule: the confirm target is never past an event not acked, and moves
 * only to the end of a whole transaction whose events, and every earlier
 * one's, were all acked. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <librdkafka/rdkafka.h>

#include "lib/config.h"
#include "lib/log.h"
#include "relay/relay_int.h"
#include "fake_kafka.h"

#define SLOT_LSN UINT64_C(0x100)     /* the slot's confirmed position */
#define WAL_END UINT64_C(0x100000)   /* the server's WAL end */
#define MAX_TXNS 16
#define MAX_PATH 32

/* One transaction fed to the loop, as the test remembers it. */
struct txn {
	uint64_t end;       /* commit end (nextlsn) */
	size_t first, n;    /* its records: fk.msgs[first .. first + n) */
};

static struct relay_config cfg;
static struct fake_kafka fk;
static struct relay *r;
static struct txn txns[MAX_TXNS];
static size_t ntxns;
static char *frames[512];           /* owned: the data of every frame */
static size_t nframes;
static unsigned ids;                /* event ids handed out */
static enum relay_state path[MAX_PATH]; /* states entered, in order */
static size_t npath;

/* relay_goto()'s observer: every transition must be in the table. */
static void on_goto(void *ctx, enum relay_state from, enum relay_state to)
{
	(void)ctx;
	ck_assert_msg(relay_transition_allowed(from, to),
	              "transition %s -> %s is not in allowed[]",
	              relay_state_name(from), relay_state_name(to));
	if (npath < MAX_PATH)
		path[npath++] = to;
}

/* The states entered since the start, ending with ST_COUNT. */
static void expect_path(enum relay_state first, ...)
{
	va_list ap;
	size_t i = 0;

	va_start(ap, first);
	for (enum relay_state s = first; s != ST_COUNT;
	     s = va_arg(ap, enum relay_state), i++) {
		ck_assert_msg(i < npath, "state %zu: want %s, none entered", i,
		              relay_state_name(s));
		ck_assert_msg(path[i] == s, "state %zu: want %s, got %s", i,
		              relay_state_name(s), relay_state_name(path[i]));
	}
	va_end(ap);
	ck_assert_msg(i == npath, "%zu states entered, want %zu", npath, i);
}

static void setup(void)
{
	char err[256];

	/* The relay's errors are the tests' expectations, not their output
	 * (each test runs in its own process; CK_FORK=no keeps them). */
	if (getenv("CK_FORK") == NULL || strcmp(getenv("CK_FORK"), "no") != 0)
		(void)freopen("/dev/null", "w", stderr);
	cfg_init(&cfg);
	ck_assert_int_eq(cfg_set(&cfg, "shutdown.timeout.ms", "30000",
	                         CFG_SRC_FLAG, "test", err, sizeof(err)), 0);
	fake_kafka_init(&fk);
	r = relay_new(&cfg, &fk.port);
	r->st.on_goto = on_goto;
	ntxns = nframes = npath = 0;
	ids = 0;
}

static void teardown(void)
{
	kafka_close(r);
	relay_free(r);
	cfg_free(&cfg);
	for (size_t i = 0; i < nframes; i++)
		free(frames[i]);
}

/* A session against the made-up server: what try_connect() does once
 * START_REPLICATION was accepted. */
static void open_session(uint64_t wal_end)
{
	ck_assert(kafka_open(r));
	ck_assert_int_eq(session_open(r, &(struct lsn_server){
		.system_id = "7000000000000000001",
		.timeline = 1,
		.wal_end = wal_end,
		.slot_lsn = SLOT_LSN,
	}), LSN_RESUME_SLOT);
}

static char *lsn_text(uint64_t lsn, char *buf)
{
	sprintf(buf, "%X/%X", (unsigned)(lsn >> 32), (unsigned)lsn);
	return buf;
}

/* One frame of wal2json data at wal_start; true when the loop took it,
 * false when it is held back (r->have_pending) or reading stops. */
static bool feed(uint64_t wal_start, uint64_t wal_end, const char *fmt, ...)
{
	struct repl_msg m = { .type = 'w', .wal_start = wal_start,
	                      .wal_end = wal_end };
	va_list ap;
	char *data;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&data, fmt, ap), 0);
	va_end(ap);
	ck_assert_uint_lt(nframes, sizeof(frames) / sizeof(frames[0]));
	frames[nframes++] = data;
	m.data = data;
	m.len = strlen(data);
	return take_frame(r, &m);
}

/* The frame held back is offered again, as read_stream() does. */
static bool feed_pending(void)
{
	struct repl_msg m;

	ck_assert(r->have_pending);
	m = r->pending;
	r->have_pending = false;
	return take_frame(r, &m);
}

static void feed_begin(int xid, uint64_t base, uint64_t end, uint64_t wal_end)
{
	char a[24], b[24];

	ck_assert(feed(base, wal_end, "{\"action\":\"B\",\"xid\":%d,\"timestamp\":"
	               "\"2026-11-29 21:35:50.117+00\",\"lsn\":\"%s\",\"nextlsn\":"
	               "\"%s\"}", xid, lsn_text(base, a), lsn_text(end, b)));
}

/* Row i of transaction xid: an outbox row whose aggregate (the key)
 * differs per row, so the rows spread over the fake's partitions. */
static bool feed_row(int xid, uint64_t base, int i, uint64_t wal_end)
{
	char a[24];
	uint64_t lsn = base + 0x10 * (uint64_t)(i + 1);

	ids++;
	return feed(lsn, wal_end, "{\"action\":\"I\",\"xid\":%d,\"timestamp\":"
	            "\"2026-11-29 21:35:50.117+00\",\"lsn\":\"%s\",\"schema\":"
	            "\"public\",\"table\":\"outbox\",\"columns\":[{\"name\":\"id\","
	            "\"type\":\"uuid\",\"value\":\"a507c379-75ec-4340-9a3c-%012x\"},"
	            "{\"name\":\"aggregate_type\",\"type\":\"text\",\"value\":"
	            "\"Order\"},{\"name\":\"aggregate_id\",\"type\":\"text\","
	            "\"value\":\"o-%d-%d\"},{\"name\":\"event_type\",\"type\":"
	            "\"text\",\"value\":\"Placed\"},{\"name\":\"payload\",\"type\":"
	            "\"jsonb\",\"value\":\"{\\\"n\\\": %d}\"}]}", xid,
	            lsn_text(lsn, a), ids, xid, i, i);
}

static void feed_commit(int xid, uint64_t base, uint64_t end, uint64_t wal_end)
{
	char a[24], b[24];

	ck_assert(feed(end - 0x8, wal_end, "{\"action\":\"C\",\"xid\":%d,"
	               "\"timestamp\":\"2026-11-29 21:35:50.117+00\",\"lsn\":"
	               "\"%s\",\"nextlsn\":\"%s\"}", xid,
	               lsn_text(end - 0x8, a), lsn_text(end, b)));
	(void)base;
}

/* A whole transaction of n rows at base (commit end base + 0x800), each
 * row produced. Returns its index in txns[]. */
static size_t feed_txn(int xid, uint64_t base, size_t n)
{
	struct txn *t = &txns[ntxns];

	ck_assert_uint_lt(ntxns, MAX_TXNS);
	t->end = base + 0x800;
	t->first = fk.n;
	t->n = n;
	feed_begin(xid, base, t->end, WAL_END);
	for (size_t i = 0; i < n; i++)
		ck_assert(feed_row(xid, base, (int)i, WAL_END));
	feed_commit(xid, base, t->end, WAL_END);
	ck_assert_uint_eq(fk.n, t->first + n);
	return ntxns++;
}

/* The confirm rule, from what the fake delivered: the end of the newest
 * transaction such that it and every earlier one had every record acked
 * (the slot's position before any). */
static uint64_t model_confirmable(void)
{
	uint64_t w = SLOT_LSN;

	for (size_t t = 0; t < ntxns; t++) {
		for (size_t i = txns[t].first; i < txns[t].first + txns[t].n; i++)
			if (!fk.msgs[i].reported || !fk.msgs[i].ok)
				return w;
		w = txns[t].end;
	}
	return w;
}

/* Never past an event not acked; with no failure, exactly the model. */
static void check_confirm(bool exact)
{
	uint64_t target = confirm_target(r), model = model_confirmable();

	ck_assert_msg(target <= model, "confirm target %llX is past the model "
	              "%llX: an event not acked would be confirmed",
	              (unsigned long long)target, (unsigned long long)model);
	if (exact)
		ck_assert_msg(target == model, "confirm target %llX, want %llX",
		              (unsigned long long)target,
		              (unsigned long long)model);
}

/* Reports served by the loop's Kafka step, one at a time. */
static void deliver(size_t idx, bool ok, int err)
{
	fake_report(&fk, idx, ok, err);
	serve_kafka(r, false);
}

/* Reports in any order, across partitions: the confirm follows whole
 * acked transactions only, whatever order their records come back in. */
START_TEST(test_reports_in_any_order)
{
	static const size_t order[] = { 7, 2, 5, 0, 6, 1, 3, 4 };
	bool part[3] = { false, false, false };

	open_session(WAL_END);
	check_confirm(true);
	feed_txn(701, 0x1000, 3);
	feed_txn(702, 0x2000, 2);
	feed_txn(703, 0x3000, 3);
	ck_assert_uint_eq(fk.n, 8);
	ck_assert_uint_eq(r->win.events, 8);
	for (size_t i = 0; i < fk.n; i++)
		part[fk.msgs[i].partition] = true;
	ck_assert_msg(part[0] + part[1] + part[2] >= 2, "one partition only");
	for (size_t i = 0; i < 8; i++) {
		deliver(order[i], true, 0);
		check_confirm(true);
		ck_assert_int_eq(fk.port.depth((struct kp_producer *)&fk),
		                 (int)r->win.events);
	}
	ck_assert_uint_eq(confirm_target(r), txns[2].end);
	ck_assert(confirm_due(r));
	ck_assert_uint_eq(r->ctr.n_acked, 8);
	ck_assert_uint_eq(r->win.events, 0);
	ck_assert(reading_allowed(r) == false); /* no socket in a unit test */
	ck_assert(window_open(r));
	ck_assert(end_turn(r));
	expect_path(ST_STREAMING, ST_COUNT);
}
END_TEST

/* A failed report in the middle of a transaction: nothing of it or
 * after it is confirmed, the session ends with the producer rebuilt, and
 * the backstop counts the transaction once. */
START_TEST(test_failed_report_mid_transaction)
{
	size_t a, b, c;

	open_session(WAL_END);
	a = feed_txn(801, 0x1000, 2);
	b = feed_txn(802, 0x2000, 3);
	c = feed_txn(803, 0x3000, 1);
	deliver(txns[a].first, true, 0);
	deliver(txns[a].first + 1, true, 0);
	check_confirm(true);
	ck_assert_uint_eq(confirm_target(r), txns[a].end);
	deliver(txns[b].first, true, 0);
	deliver(txns[b].first + 1, false, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
	ck_assert_int_eq(r->st.state, ST_REBUILDING);
	ck_assert_uint_eq(r->ctr.n_failed, 1);
	/* Later acks, of its transaction and the next, move nothing. */
	deliver(txns[b].first + 2, true, 0);
	deliver(txns[c].first, true, 0);
	check_confirm(false);
	ck_assert_uint_eq(confirm_target(r), txns[a].end);
	ck_assert(end_turn(r));
	ck_assert_int_eq(r->st.state, ST_BACKOFF);
	ck_assert_ptr_null(r->pub);
	ck_assert_uint_eq(fk.closes, 1);
	ck_assert_int_eq(r->bs.count, 1);
	ck_assert_uint_eq(r->bs.lsn, txns[b].end);
	ck_assert_uint_eq(r->iso.to, 0); /* transient: no one-at-a-time replay */
	ck_assert_ptr_nonnull(strstr(r->bs.err, "event id"));
	ck_assert_uint_le(confirm_target(r), txns[a].end);
	expect_path(ST_STREAMING, ST_REBUILDING, ST_BACKOFF, ST_COUNT);
}
END_TEST

/* A full queue: the frame is held back, nothing is produced twice, and
 * the next report reopens the window. */
START_TEST(test_full_queue)
{
	uint64_t end = 0x1800;

	open_session(WAL_END);
	fk.full_at = 2;
	txns[0] = (struct txn){ .end = end, .first = 0, .n = 4 };
	ntxns = 1;
	feed_begin(901, 0x1000, end, WAL_END);
	ck_assert(feed_row(901, 0x1000, 0, WAL_END));
	ck_assert(feed_row(901, 0x1000, 1, WAL_END));
	ck_assert(!feed_row(901, 0x1000, 2, WAL_END));
	ck_assert(r->have_pending);
	ck_assert(r->win.queue_full);
	ck_assert(!window_open(r));
	ck_assert_uint_eq(lsn_inflight(&r->lt), 2); /* the refused one undone */
	ck_assert_uint_eq(fk.n, 2);
	check_confirm(true);
	deliver(0, true, 0);
	ck_assert(!r->win.queue_full);
	ck_assert(window_open(r));
	ck_assert(feed_pending());
	ck_assert(!feed_row(901, 0x1000, 3, WAL_END));
	ck_assert(r->win.queue_full);
	deliver(1, true, 0);
	ck_assert(feed_pending());
	feed_commit(901, 0x1000, end, WAL_END);
	ck_assert_uint_eq(fk.n, 4);
	ck_assert_uint_eq(r->ctr.n_received, 4);
	check_confirm(true);
	deliver(2, true, 0);
	check_confirm(true);
	ck_assert_uint_lt(confirm_target(r), end);
	deliver(3, true, 0);
	check_confirm(true);
	ck_assert_uint_eq(confirm_target(r), end);
	ck_assert_int_eq(r->st.state, ST_STREAMING);
	expect_path(ST_STREAMING, ST_COUNT);
}
END_TEST

/* A fatal producer error: the session ends with the producer rebuilt,
 * what it held is purged (no failure recorded for a purge), nothing
 * unacked is confirmed, and the next session starts after a backoff. */
START_TEST(test_fatal_error)
{
	size_t a;

	open_session(WAL_END);
	a = feed_txn(1001, 0x1000, 2);
	deliver(txns[a].first, true, 0);
	check_confirm(true);
	fk.fatal = true;
	fk.fatal_err = RD_KAFKA_RESP_ERR__FENCED;
	serve_kafka(r, false);
	ck_assert_int_eq(r->st.state, ST_REBUILDING);
	ck_assert_ptr_nonnull(strstr(r->bs.err, "fatal"));
	/* A second look in the same turn changes nothing. */
	serve_kafka(r, false);
	ck_assert_int_eq(r->st.state, ST_REBUILDING);
	ck_assert(end_turn(r));
	ck_assert_int_eq(r->st.state, ST_BACKOFF);
	ck_assert_uint_eq(fk.closes, 1);
	ck_assert(fk.msgs[txns[a].first + 1].reported);
	ck_assert(!fk.msgs[txns[a].first + 1].ok);
	ck_assert_uint_eq(r->fail.first_any, 0);
	ck_assert_uint_eq(r->win.events, 0);
	ck_assert_int_eq(r->bs.count, 1);
	ck_assert_uint_eq(r->bs.lsn, txns[a].end);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	/* The next session: a new producer. */
	open_session(WAL_END);
	ck_assert_uint_eq(fk.opens, 2);
	expect_path(ST_STREAMING, ST_REBUILDING, ST_BACKOFF, ST_STREAMING,
	            ST_COUNT);
}
END_TEST

/* A report served during teardown: the broker refused a batch, the
 * session replays it one event at a time, the producer fails fatally,
 * and the refusal of the lone event only comes back while the producer
 * is torn down. That report names the poison event: the relay stops
 * with 65 (EXITING, then FAIL_STOPPED once the session is closed). */
START_TEST(test_report_during_teardown)
{
	size_t b;
	uint64_t end;

	open_session(WAL_END);
	b = feed_txn(1101, 0x1000, 2);
	end = txns[b].end;
	deliver(txns[b].first, false, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	ck_assert_int_eq(r->st.state, ST_REBUILDING);
	ck_assert(r->fail.permanent);
	ck_assert(end_turn(r));
	ck_assert_int_eq(r->st.state, ST_BACKOFF);
	ck_assert_uint_eq(r->iso.from, end);
	ck_assert_uint_eq(r->iso.to, end);

	/* The replay: one event at a time. */
	open_session(WAL_END);
	ntxns = 0;
	txns[0] = (struct txn){ .end = end, .first = fk.n, .n = 2 };
	ntxns = 1;
	feed_begin(1101, 0x1000, end, WAL_END);
	ck_assert(feed_row(1101, 0x1000, 0, WAL_END));
	ck_assert(!feed_row(1101, 0x1000, 1, WAL_END));
	ck_assert(r->win.iso_wait);
	ck_assert_uint_eq(fk.n, 3);
	fk.fatal = true;
	fk.fatal_err = RD_KAFKA_RESP_ERR__INCONSISTENT;
	serve_kafka(r, false);
	ck_assert_int_eq(r->st.state, ST_REBUILDING);
	/* Queued now, served by close(). */
	fake_report(&fk, 2, false, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	ck_assert(end_turn(r));
	ck_assert_int_eq(r->st.state, ST_FAIL_STOPPED);
	ck_assert_int_eq(r->st.exit_code, RELAY_EXIT_DATAERR);
	ck_assert_ptr_nonnull(strstr(r->reason, "poison event"));
	ck_assert(drained(r, now_mono_us()));
	check_confirm(false);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	ck_assert_int_eq(phase_of(r), RELAY_PHASE_FAIL_STOPPED);
	expect_path(ST_STREAMING, ST_REBUILDING, ST_BACKOFF, ST_STREAMING,
	            ST_REBUILDING, ST_EXITING, ST_FAIL_STOPPED, ST_COUNT);
}
END_TEST

/* A shutdown with events in flight: reading stops, the loop waits for
 * their reports (a failure then ends nothing), confirms what was acked,
 * and gives up on the rest at the deadline. */
START_TEST(test_shutdown_in_flight)
{
	size_t a, b;
	int64_t now = now_mono_us();

	open_session(WAL_END);
	a = feed_txn(1201, 0x1000, 3);
	b = feed_txn(1202, 0x2000, 2);
	begin_stop(r, RELAY_EXIT_OK);
	ck_assert_int_eq(r->st.state, ST_STOPPING);
	ck_assert(!drained(r, now));
	for (size_t i = 0; i < 3; i++)
		deliver(txns[a].first + i, true, 0);
	ck_assert(!drained(r, now));
	check_confirm(true);
	ck_assert_uint_eq(confirm_target(r), txns[a].end);
	deliver(txns[b].first, true, 0);
	ck_assert(!drained(r, now));
	/* A second signal's stop, or a failure now, changes nothing. */
	begin_stop(r, RELAY_EXIT_UNAVAILABLE);
	ck_assert_int_eq(r->st.exit_code, RELAY_EXIT_OK);
	ck_assert(end_turn(r));
	ck_assert(!drained(r, now));
	/* The deadline ends the wait with the last event unacked. */
	ck_assert(drained(r, r->st.drain_deadline_us));
	check_confirm(true);
	ck_assert_uint_eq(confirm_target(r), txns[a].end);
	kafka_close(r);
	ck_assert(fk.msgs[txns[b].first + 1].reported);
	ck_assert_uint_eq(r->win.events, 0);
	ck_assert_uint_eq(confirm_target(r), txns[a].end);
	ck_assert(drained(r, now));
	expect_path(ST_STREAMING, ST_STOPPING, ST_COUNT);
}
END_TEST

/* The same, all reported: drained without the deadline. A failed report
 * while stopping begins no restart, and stops the watermark. */
START_TEST(test_shutdown_drains)
{
	size_t a, b, c;
	int64_t now = now_mono_us();

	open_session(WAL_END);
	a = feed_txn(1301, 0x1000, 2);
	b = feed_txn(1302, 0x2000, 1);
	c = feed_txn(1303, 0x3000, 1);
	begin_stop(r, RELAY_EXIT_OK);
	deliver(txns[b].first, true, 0);
	check_confirm(true);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	deliver(txns[c].first, false, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
	ck_assert_int_eq(r->st.state, ST_STOPPING);
	ck_assert_uint_eq(r->ctr.n_failed, 1);
	ck_assert(!drained(r, now));
	/* A failure stops the watermark for good in this session: the acks
	 * that follow drain the window but confirm nothing more. */
	deliver(txns[a].first + 1, true, 0);
	deliver(txns[a].first, true, 0);
	ck_assert(drained(r, now));
	check_confirm(false);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	ck_assert(end_turn(r));
	expect_path(ST_STREAMING, ST_STOPPING, ST_COUNT);
}
END_TEST

/* The clamp: never past the server's WAL end, never past what the slot
 * ledger holds (nothing past the last confirm before it was read), and
 * never back. */
START_TEST(test_confirm_clamp)
{
	uint64_t wal_end = 0x1800 - 0x10;
	size_t a;

	open_session(wal_end);
	txns[0] = (struct txn){ .end = 0x1800, .first = 0, .n = 1 };
	ntxns = 1;
	feed_begin(1401, 0x1000, 0x1800, wal_end);
	ck_assert(feed_row(1401, 0x1000, 0, wal_end));
	feed_commit(1401, 0x1000, 0x1800, wal_end);
	deliver(0, true, 0);
	ck_assert_uint_eq(lsn_confirmable(&r->lt), 0x1800);
	ck_assert_uint_eq(confirm_target(r), wal_end);
	ck_assert_uint_eq(ledger_target(r), wal_end);
	/* The next frame says the WAL goes further. */
	txns[1] = (struct txn){ .end = 0x2800, .first = fk.n, .n = 1 };
	a = ntxns++;
	feed_begin(1402, 0x2000, 0x2800, WAL_END);
	ck_assert_uint_eq(confirm_target(r), 0x1800);
	ck_assert(feed_row(1402, 0x2000, 0, WAL_END));
	feed_commit(1402, 0x2000, 0x2800, WAL_END);
	deliver(txns[a].first, true, 0);
	check_confirm(true);
	/* The ledger gate. */
	snprintf(r->lg.key, sizeof(r->lg.key), "k");
	r->lg.verified = false;
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	ck_assert(!confirm_due(r));
	r->lg.verified = true;
	r->lg.lsn = 0x1800;
	ck_assert_uint_eq(confirm_target(r), 0x1800);
	ck_assert_uint_eq(ledger_target(r), txns[a].end);
	r->lg.lsn = txns[a].end;
	ck_assert_uint_eq(confirm_target(r), txns[a].end);
	check_confirm(true);
	expect_path(ST_STREAMING, ST_COUNT);
}
END_TEST

/* The slot ledger's record (confirm.c) in one session: the watermark is
 * recorded and acked before the confirm may pass it. Returns the index
 * of the ledger record in fk.msgs. */
static size_t ledger_round(int xid)
{
	size_t a, idx;

	open_session(WAL_END);
	snprintf(r->lg.key, sizeof(r->lg.key), "test-slot");
	r->lg.verified = true;
	a = feed_txn(xid, 0x1000, 1);
	deliver(txns[a].first, true, 0);
	/* ledger_due() also wants a replication stream, which a unit test
	 * has not: the target it would record is checked instead. */
	ck_assert_uint_eq(ledger_target(r), txns[a].end);
	idx = fk.n;
	ledger_record(r, 0);
	ck_assert_uint_eq(fk.n, idx + 1);
	ck_assert_uint_eq(fk.msgs[idx].token, LEDGER_TOKEN);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN); /* not before its ack */
	return idx;
}

/* A new ledger topic on a fresh cluster: a broker that does not know the
 * topic yet answers its metadata with no partition, and librdkafka fails
 * the queued record with _UNKNOWN_PARTITION (t800, a three-node cluster
 * under load). That settles within seconds: the session is rebuilt and
 * the record written again, with the backstop counting, instead of the
 * fail-stop (65) a refusal that every replay repeats gets. */
START_TEST(test_ledger_unknown_partition)
{
	size_t idx = ledger_round(1301);

	deliver(idx, false, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION);
	ck_assert_int_eq(r->st.state, ST_REBUILDING);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	ck_assert(end_turn(r));
	ck_assert_int_eq(r->st.state, ST_BACKOFF);
	ck_assert_int_eq(r->bs.count, 1);
	expect_path(ST_STREAMING, ST_REBUILDING, ST_BACKOFF, ST_COUNT);
}
END_TEST

/* A refusal every replay repeats (an ACL): the relay stops with 65 at
 * once and confirms nothing past the slot. */
START_TEST(test_ledger_refused)
{
	size_t idx = ledger_round(1401);

	deliver(idx, false, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
	ck_assert_int_eq(r->st.state, ST_FAIL_STOPPED);
	ck_assert_int_eq(r->st.exit_code, RELAY_EXIT_DATAERR);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	expect_path(ST_STREAMING, ST_FAIL_STOPPED, ST_COUNT);
}
END_TEST

/* ---------------------------------------------------------- exactly-once */

/* A relay with delivery.guarantee = exactly-once (interval ms as given)
 * and a session opened as try_connect() opens one: the ledger key, the
 * transactional producer, its init. */
static void eos_session(const char *interval_ms)
{
	char err[256];

	kafka_close(r);
	relay_free(r);
	ck_assert_int_eq(cfg_set(&cfg, "delivery.guarantee", "exactly-once",
	                         CFG_SRC_FLAG, "test", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(&cfg, "delivery.transaction.interval.ms",
	                         interval_ms, CFG_SRC_FLAG, "test", err,
	                         sizeof(err)), 0);
	r = relay_new(&cfg, &fk.port);
	r->st.on_goto = on_goto;
	ck_assert(r->tx.on);
	ck_assert_int_eq(session_open(r, &(struct lsn_server){
		.system_id = "7000000000000000001",
		.timeline = 1,
		.wal_end = WAL_END,
		.slot_lsn = SLOT_LSN,
	}), LSN_RESUME_SLOT);
	snprintf(r->lg.key, sizeof(r->lg.key), "7000000000000000001/db/slot");
	ck_assert(txn_name(r) && kafka_open(r) && txn_session_start(r));
	ck_assert_str_eq(fk.txn_id, "outbox-relay:7000000000000000001/db/slot");
	ck_assert_uint_eq(fk.txn_inits, 1);
	r->lg.verified = true;
}

/* The loop's transaction step; a unit test has no replication stream,
 * which the step otherwise waits for. */
static void eos_turn(void)
{
	r->have_rs = true;
	txn_turn(r, now_mono_us());
	r->have_rs = false;
}

/* The ledger record the last turn produced: its lsn. */
static uint64_t ledger_lsn_of(size_t idx)
{
	struct ledger_entry e;

	ck_assert_uint_eq(fk.msgs[idx].token, LEDGER_TOKEN);
	ck_assert_int_eq(ledger_parse(fk.msgs[idx].value,
	                              strlen(fk.msgs[idx].value), &e), 0);
	return e.lsn;
}

/* Acks do not confirm anything before the Kafka transaction that holds
 * them commits; the transaction closes with the ledger record of the
 * commit end it reaches, at a PostgreSQL commit; the confirm follows the
 * commit. At-least-once confirms at the acks (test_reports_in_any_order):
 * here the same acks move nothing. */
START_TEST(test_eos_confirm_after_commit)
{
	size_t a, b, led;

	eos_session("60000");
	a = feed_txn(2001, 0x1000, 3);
	b = feed_txn(2002, 0x2000, 2);
	ck_assert_uint_eq(fk.txn_begins, 1);
	for (size_t i = 0; i < 5; i++)
		deliver(txns[a].first + i, true, 0);
	ck_assert_uint_eq(r->ctr.n_acked, 5);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	/* The tracker itself has not heard: a session that ended now would
	 * not take these as published (test_eos_pg_session_end_aborts). */
	ck_assert_uint_eq(lsn_confirmable(&r->lt), SLOT_LSN);
	eos_turn(); /* not due yet: open for less than the interval */
	ck_assert_uint_eq(fk.n, txns[b].first + 2);
	r->tx.begun_us -= 60 * INT64_C(1000000);
	eos_turn();
	led = txns[b].first + 2;
	ck_assert_uint_eq(fk.n, led + 1);
	ck_assert_uint_eq(ledger_lsn_of(led), txns[b].end);
	/* ... and names the commit a restarted relay looks for. */
	ck_assert_ptr_nonnull(strstr(fk.msgs[led].value, "\"xid\":2002"));
	ck_assert(!reading_allowed(r) && !window_open(r));
	eos_turn(); /* the ledger record not acked: no commit */
	ck_assert_uint_eq(fk.txn_commits, 0);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	deliver(led, true, 0);
	eos_turn();
	ck_assert_uint_eq(fk.txn_commits, 1);
	for (size_t i = 0; i <= led; i++)
		ck_assert(fk.msgs[i].committed);
	ck_assert_uint_eq(confirm_target(r), txns[b].end);
	ck_assert_uint_eq(r->lg.lsn, txns[b].end);
	ck_assert(window_open(r));
	ck_assert_uint_eq(r->tx.n_commits, 1);
	ck_assert_uint_eq(fk.txn_violations, 0);
}
END_TEST

/* A Kafka transaction never ends inside a PostgreSQL one: with the
 * interval 0 it is due at once, and still waits for the commit. */
START_TEST(test_eos_commit_between_txns)
{
	size_t led;

	eos_session("0");
	feed_begin(2101, 0x1000, 0x1800, WAL_END);
	ck_assert(feed_row(2101, 0x1000, 0, WAL_END));
	ck_assert(feed_row(2101, 0x1000, 1, WAL_END));
	deliver(0, true, 0);
	deliver(1, true, 0);
	eos_turn();
	ck_assert_uint_eq(fk.n, 2); /* no ledger record inside it */
	ck_assert(reading_allowed(r) || !r->have_rs);
	ck_assert(!r->tx.want);
	feed_commit(2101, 0x1000, 0x1800, WAL_END);
	ck_assert(r->tx.want); /* reading stops at this commit */
	ck_assert(!window_open(r));
	eos_turn();
	led = 2;
	ck_assert_uint_eq(ledger_lsn_of(led), 0x1800);
	deliver(led, true, 0);
	eos_turn();
	ck_assert_uint_eq(fk.txn_commits, 1);
	ck_assert_uint_eq(confirm_target(r), 0x1800);
	ck_assert_uint_eq(fk.txn_violations, 0);
}
END_TEST

/* A commit that fails: nothing is confirmed, the session ends, the
 * producer (and with it the transaction) goes, and the next session's
 * producer starts with a new init. */
START_TEST(test_eos_commit_fails)
{
	size_t a;

	eos_session("0");
	a = feed_txn(2201, 0x1000, 2);
	deliver(txns[a].first, true, 0);
	deliver(txns[a].first + 1, true, 0);
	eos_turn();
	deliver(txns[a].first + 2, true, 0);
	fk.txn_commit_fails = true;
	eos_turn();
	ck_assert_uint_eq(fk.txn_commits, 0);
	ck_assert_int_eq(r->st.state, ST_REBUILDING);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	ck_assert_uint_eq(r->tx.n_aborts, 1);
	ck_assert(end_turn(r));
	ck_assert(r->pub == NULL);
	ck_assert_int_eq(r->st.state, ST_BACKOFF);
	ck_assert(!fk.msgs[txns[a].first].committed);
	ck_assert_uint_eq(fk.txn_violations, 0);
}
END_TEST

/* A session that ends for PostgreSQL's sake (a receive timeout) closes
 * the producer too: what its transaction holds is aborted, not left
 * open for read_committed consumers to wait on, and the acks it held
 * confirm nothing. */
START_TEST(test_eos_pg_session_end_aborts)
{
	size_t a;

	eos_session("60000");
	a = feed_txn(2301, 0x1000, 2);
	deliver(txns[a].first, true, 0);
	deliver(txns[a].first + 1, true, 0);
	session_end(r, false, "receive timeout");
	ck_assert(end_turn(r));
	ck_assert(r->pub == NULL);
	ck_assert_uint_eq(fk.txn_aborts, 1);
	ck_assert_uint_eq(r->tx.n_aborts, 1);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	ck_assert(!r->tx.open);
	ck_assert_uint_eq(r->tx.nacks, 0);
	/* The next session skips nothing it did not commit. */
	ck_assert_int_eq(session_open(r, &(struct lsn_server){
		.system_id = "7000000000000000001", .timeline = 1,
		.wal_end = WAL_END, .slot_lsn = SLOT_LSN,
	}), LSN_RESUME_SLOT);
	ck_assert(txn_name(r) && kafka_open(r) && txn_session_start(r));
	ck_assert_uint_eq(fk.txn_inits, 2);
	a = feed_txn(2301, 0x1000, 2);
	ck_assert_uint_eq(txns[a].n, 2);
}
END_TEST

/* The ledger's record at a session's start: the transactions up to the
 * commit it names are in Kafka, committed, and are skipped although the
 * slot is behind (the confirm after the commit was lost), once that
 * commit shows up unchanged; a record past the server's WAL end stops the
 * relay (the database went back in time). */
#define FEED_TS_US INT64_C(1795988150117000) /* feed_begin()'s timestamp */
START_TEST(test_eos_skip_committed)
{
	struct ledger_entry e = { .found = true, .lsn = 0x1800,
		                      .commit = { 0x1800, 2401, FEED_TS_US } };
	size_t n0;

	eos_session("60000");
	r->server_wal_end = WAL_END;
	r->lg.lsn = e.lsn; /* as ledger_verify() records what it read */
	ck_assert(ledger_skip_committed(r, &e));
	n0 = fk.n;
	feed_begin(2401, 0x1000, 0x1800, WAL_END);
	ck_assert(feed_row(2401, 0x1000, 0, WAL_END));
	feed_commit(2401, 0x1000, 0x1800, WAL_END);
	ck_assert_uint_eq(fk.n, n0); /* skipped */
	ck_assert_uint_eq(r->ctr.n_skipped, 1);
	ck_assert_uint_eq(confirm_target(r), 0x1800);
	feed_begin(2402, 0x2000, 0x2800, WAL_END);
	ck_assert(feed_row(2402, 0x2000, 0, WAL_END));
	feed_commit(2402, 0x2000, 0x2800, WAL_END);
	ck_assert_uint_eq(fk.n, n0 + 1); /* published */

	e.lsn = WAL_END + 0x10;
	ck_assert(!ledger_skip_committed(r, &e));
	ck_assert_int_eq(r->st.exit_code, RELAY_EXIT_UNAVAILABLE);
}
END_TEST

/* A database restored to a copy from before the ledger's commit, which
 * has since committed other transactions there: they are not skipped
 * into oblivion. The commit looked for does not come; another one at or
 * past it stops the relay (exit 69) with nothing confirmed, instead of
 * streaming on past events it never published (t196). */
START_TEST(test_eos_skip_restored)
{
	struct ledger_entry e = { .found = true, .lsn = 0x1800,
		                      .commit = { 0x1800, 2401, FEED_TS_US } };

	eos_session("60000");
	r->server_wal_end = WAL_END;
	r->lg.lsn = e.lsn;
	ck_assert(ledger_skip_committed(r, &e));
	/* Another transaction (xid 9001) where 2401 was, then one past it. */
	feed_begin(9001, 0x1000, 0x1400, WAL_END);
	ck_assert(feed_row(9001, 0x1000, 0, WAL_END));
	feed_commit(9001, 0x1000, 0x1400, WAL_END);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN); /* not past it */
	(void)feed(0x1900, WAL_END, "{\"action\":\"B\",\"xid\":9002,"
	           "\"timestamp\":\"2026-11-29 21:35:50.117+00\",\"lsn\":"
	           "\"0/1900\",\"nextlsn\":\"0/2100\"}");
	ck_assert_int_eq(r->st.exit_code, RELAY_EXIT_UNAVAILABLE);
	ck_assert(relay_stopping(r));
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
}
END_TEST

/* A stop inside a PostgreSQL transaction: nothing of it can commit, so
 * the relay does not wait for the deadline; the transaction is aborted
 * and replayed by the next start. At a PostgreSQL commit the stop
 * commits what is open first. */
START_TEST(test_eos_stop)
{
	int64_t now = now_mono_us();
	size_t a, led;

	eos_session("60000");
	a = feed_txn(2501, 0x1000, 1);
	deliver(txns[a].first, true, 0);
	begin_stop(r, RELAY_EXIT_OK);
	ck_assert(!drained(r, now));
	eos_turn(); /* stopping: due at once */
	led = txns[a].first + 1;
	ck_assert_uint_eq(ledger_lsn_of(led), txns[a].end);
	ck_assert(!drained(r, now));
	deliver(led, true, 0);
	eos_turn();
	ck_assert_uint_eq(fk.txn_commits, 1);
	ck_assert(drained(r, now));
	ck_assert_uint_eq(confirm_target(r), txns[a].end);
	teardown();
	setup();

	eos_session("60000");
	feed_begin(2502, 0x1000, 0x1800, WAL_END);
	ck_assert(feed_row(2502, 0x1000, 0, WAL_END));
	deliver(0, true, 0);
	begin_stop(r, RELAY_EXIT_OK);
	ck_assert(drained(r, now));
	kafka_close(r);
	ck_assert_uint_eq(fk.txn_aborts, 1);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
}
END_TEST

/* The table itself: what the header comment in state.c says. */
START_TEST(test_transition_table)
{
	ck_assert(relay_transition_allowed(ST_REBUILDING, ST_EXITING));
	ck_assert(relay_transition_allowed(ST_EXITING, ST_FAIL_STOPPED));
	ck_assert(!relay_transition_allowed(ST_REBUILDING, ST_FAIL_STOPPED));
	ck_assert(!relay_transition_allowed(ST_STOPPING, ST_STREAMING));
	for (int s = 0; s < ST_COUNT; s++)
		ck_assert(!relay_transition_allowed((enum relay_state)s,
		                                    ST_CONNECTING));
	/* session_end() while stopping: nothing left to ack, exit. */
	open_session(WAL_END);
	begin_stop(r, RELAY_EXIT_OK);
	session_end(r, true, "test");
	ck_assert_int_eq(r->st.state, ST_EXITING);
	ck_assert(!end_turn(r));
	expect_path(ST_STREAMING, ST_STOPPING, ST_EXITING, ST_COUNT);
}
END_TEST

/* ------------------------------------------------------ poison.policy */

/* The policy under test, set before the relay is made (relay_new()
 * reads it). */
static void policy(const char *pol, const char *retries)
{
	char err[256];

	kafka_close(r);
	relay_free(r);
	ck_assert_int_eq(cfg_set(&cfg, "poison.policy", pol, CFG_SRC_FLAG,
	                         "test", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(&cfg, "poison.dlq.topic", "outbox.dlq",
	                         CFG_SRC_FLAG, "test", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(&cfg, "poison.retries", retries, CFG_SRC_FLAG,
	                         "test", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(&cfg, "poison.retry.backoff.ms", "100",
	                         CFG_SRC_FLAG, "test", err, sizeof(err)), 0);
	ck_assert_int_eq(cfg_set(&cfg, "poison.retry.backoff.max.ms", "150",
	                         CFG_SRC_FLAG, "test", err, sizeof(err)), 0);
	r = relay_new(&cfg, &fk.port);
	r->st.on_goto = on_goto;
}

/* A row the decoder refuses: its aggregate id (the key) is NULL. */
static bool feed_null_key_row(int xid, uint64_t base, int i)
{
	char a[24];
	uint64_t lsn = base + 0x10 * (uint64_t)(i + 1);

	return feed(lsn, WAL_END, "{\"action\":\"I\",\"xid\":%d,\"timestamp\":"
	            "\"2026-11-29 21:35:50.117+00\",\"lsn\":\"%s\",\"schema\":"
	            "\"public\",\"table\":\"outbox\",\"columns\":[{\"name\":\"id\","
	            "\"type\":\"uuid\",\"value\":\"poison-%d\"},{\"name\":"
	            "\"aggregate_type\",\"type\":\"text\",\"value\":\"Order\"},"
	            "{\"name\":\"aggregate_id\",\"type\":\"text\",\"value\":null},"
	            "{\"name\":\"event_type\",\"type\":\"text\",\"value\":"
	            "\"Placed\"},{\"name\":\"payload\",\"type\":\"jsonb\","
	            "\"value\":\"{\\\"n\\\": 7}\"}]}", xid, lsn_text(lsn, a), i);
}

/* A transaction of three rows, the middle one refused by the decoder. */
static uint64_t feed_poison_txn(int xid)
{
	uint64_t base = 0x1000, end = base + 0x800;

	feed_begin(xid, base, end, WAL_END);
	ck_assert(feed_row(xid, base, 0, WAL_END));
	ck_assert(feed_null_key_row(xid, base, 1));
	ck_assert(feed_row(xid, base, 2, WAL_END));
	feed_commit(xid, base, end, WAL_END);
	return end;
}

/* poison.policy = dlq: a decode poison goes to the dead-letter topic in
 * its place, with the row's value, a NULL key and headers naming the
 * cause; the slot is confirmed past it only once that record is acked. */
START_TEST(test_poison_decode_parked)
{
	uint64_t end;
	const struct fake_msg *d;

	policy("dlq", "3");
	open_session(WAL_END);
	end = feed_poison_txn(1501);
	ck_assert_int_eq(r->st.state, ST_STREAMING);
	ck_assert_uint_eq(fk.n, 3);
	d = &fk.msgs[1];
	ck_assert_str_eq(d->topic, "outbox.dlq");
	ck_assert(d->key_null);
	ck_assert_str_eq(d->value, "{\"n\": 7}");
	ck_assert_str_eq(fake_header(d, "id"), "poison-1");
	ck_assert_str_eq(fake_header(d, "pg_lsn"), "0/1800");
	ck_assert_str_eq(fake_header(d, "pg_xid"), "1501");
	ck_assert_str_eq(fake_header(d, "__connect.errors.topic"),
	                 "outbox.event.Order");
	ck_assert_str_eq(fake_header(d, "__connect.errors.stage"), "TASK_POLL");
	ck_assert_str_eq(fake_header(d, "__connect.errors.exception.class.name"),
	                 "outbox_relay.decode");
	ck_assert_ptr_nonnull(strstr(fake_header(d,
	        "__connect.errors.exception.message"), "aggregate_id"));
	ck_assert_str_eq(fake_header(d, "outbox.dlq.tries"), "1");
	ck_assert_str_eq(fk.msgs[2].topic, "outbox.event.Order");
	deliver(0, true, 0);
	deliver(2, true, 0);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN); /* the DLQ's ack first */
	ck_assert_uint_eq(r->pz.n_parked, 1); /* counted when produced */
	deliver(1, true, 0);
	ck_assert_uint_eq(confirm_target(r), end);
	ck_assert_uint_eq(r->pz.n_parked, 1);
	ck_assert_int_eq(r->st.state, ST_STREAMING);
	expect_path(ST_STREAMING, ST_COUNT);
}
END_TEST

/* The dead-letter topic refuses the record for good: the relay stops
 * with 65, as it would for the event, and nothing is confirmed past it
 * whatever else is acked. */
START_TEST(test_poison_dlq_refused)
{
	policy("dlq", "3");
	open_session(WAL_END);
	(void)feed_poison_txn(1601);
	deliver(0, true, 0);
	deliver(1, false, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
	ck_assert_int_eq(r->st.state, ST_FAIL_STOPPED);
	ck_assert_int_eq(r->st.exit_code, RELAY_EXIT_DATAERR);
	ck_assert_ptr_nonnull(strstr(r->reason, "dead-letter"));
	deliver(2, true, 0);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	ck_assert(drained(r, now_mono_us()));
	expect_path(ST_STREAMING, ST_FAIL_STOPPED, ST_COUNT);
}
END_TEST

/* The same when the producer refuses it at once (PUB_REJECTED). */
START_TEST(test_poison_dlq_rejected)
{
	policy("dlq", "3");
	open_session(WAL_END);
	feed_begin(1651, 0x1000, 0x1800, WAL_END);
	ck_assert(feed_row(1651, 0x1000, 0, WAL_END));
	fk.next_send = PUB_REJECTED;
	ck_assert(!feed_null_key_row(1651, 0x1000, 1));
	ck_assert_int_eq(r->st.state, ST_FAIL_STOPPED);
	ck_assert_int_eq(r->st.exit_code, RELAY_EXIT_DATAERR);
	deliver(0, true, 0);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	expect_path(ST_STREAMING, ST_FAIL_STOPPED, ST_COUNT);
}
END_TEST

/* poison.policy = skip: nothing is written for it, it is counted, and
 * the slot moves past it with the rest of its transaction. */
START_TEST(test_poison_skip)
{
	uint64_t end;

	policy("skip", "3");
	open_session(WAL_END);
	end = feed_poison_txn(1701);
	ck_assert_uint_eq(fk.n, 2);
	ck_assert_str_eq(fk.msgs[0].topic, "outbox.event.Order");
	ck_assert_str_eq(fk.msgs[1].topic, "outbox.event.Order");
	ck_assert_uint_eq(r->pz.n_skipped, 1);
	deliver(0, true, 0);
	ck_assert_uint_eq(confirm_target(r), SLOT_LSN);
	deliver(1, true, 0);
	ck_assert_uint_eq(confirm_target(r), end);
	expect_path(ST_STREAMING, ST_COUNT);
}
END_TEST

/* The default stays the fail-stop (65) on a decode poison. */
START_TEST(test_poison_fail_default)
{
	open_session(WAL_END);
	feed_begin(1751, 0x1000, 0x1800, WAL_END);
	ck_assert(feed_row(1751, 0x1000, 0, WAL_END));
	ck_assert(!feed_null_key_row(1751, 0x1000, 1));
	ck_assert_int_eq(r->st.state, ST_FAIL_STOPPED);
	ck_assert_uint_eq(fk.n, 1);
	expect_path(ST_STREAMING, ST_FAIL_STOPPED, ST_COUNT);
}
END_TEST

/* One session of the isolated replay of txn 1801 (two rows, the second
 * refused by the broker): the first row is acked, the second sent alone
 * and refused. Returns the index of the second record. */
static size_t refused_round(void)
{
	size_t idx;

	open_session(WAL_END);
	feed_begin(1801, 0x1000, 0x1800, WAL_END);
	ck_assert(feed_row(1801, 0x1000, 0, WAL_END));
	ck_assert(!feed_row(1801, 0x1000, 1, WAL_END)); /* one at a time */
	deliver(fk.n - 1, true, 0);
	ck_assert(feed_pending());
	idx = fk.n - 1;
	ck_assert_str_eq(fk.msgs[idx].topic, "outbox.event.Order");
	deliver(idx, false, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	return idx;
}

/* A record the broker refuses on its own is tried again poison.retries
 * times, each after the policy's backoff (doubling, with jitter, up to
 * the max), the backstop not counting those replays; then the replay
 * parks it: its dead-letter record, as produced, with the tries. */
START_TEST(test_poison_refused_retries)
{
	int64_t now;
	size_t idx;
	uint64_t end = 0x1800;

	policy("dlq", "2");
	open_session(WAL_END);
	feed_begin(1801, 0x1000, end, WAL_END);
	ck_assert(feed_row(1801, 0x1000, 0, WAL_END));
	ck_assert(feed_row(1801, 0x1000, 1, WAL_END));
	feed_commit(1801, 0x1000, end, WAL_END);
	/* The batch is refused: replayed one at a time. */
	deliver(1, false, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	ck_assert(end_turn(r));
	ck_assert_uint_eq(r->iso.to, end);
	ck_assert_int_eq(r->bs.count, 1);
	for (int64_t tries = 1; tries <= 3; tries++) {
		(void)refused_round();
		ck_assert_int_eq(r->st.state, ST_REBUILDING);
		ck_assert_int_eq(r->pz.ref.tries, tries);
		now = now_mono_us();
		ck_assert(end_turn(r));
		ck_assert_int_eq(r->st.state, ST_BACKOFF);
		/* The policy's replays; the last, which parks, the backstop's. */
		ck_assert_int_eq(r->bs.count, tries <= 2 ? 1 : 2);
		if (tries == 1) /* 100 ms, jitter: 50-100 */
			ck_assert(r->retry_at_us - now >= 50000 &&
			          r->retry_at_us - now <= 101000);
		if (tries == 2) /* 200 ms, capped at 150: 75-150 */
			ck_assert(r->retry_at_us - now >= 75000 &&
			          r->retry_at_us - now <= 151000);
	}
	/* The replay that parks it. */
	open_session(WAL_END);
	feed_begin(1801, 0x1000, end, WAL_END);
	ck_assert(feed_row(1801, 0x1000, 0, WAL_END));
	ck_assert(!feed_row(1801, 0x1000, 1, WAL_END));
	deliver(fk.n - 1, true, 0);
	ck_assert(feed_pending());
	idx = fk.n - 1;
	ck_assert_str_eq(fk.msgs[idx].topic, "outbox.dlq");
	ck_assert_str_eq(fake_header(&fk.msgs[idx], "outbox.dlq.tries"), "3");
	ck_assert_str_eq(fake_header(&fk.msgs[idx], "__connect.errors.stage"),
	                 "KAFKA_PRODUCE");
	ck_assert_str_eq(fake_header(&fk.msgs[idx],
	                 "__connect.errors.exception.class.name"),
	                 "outbox_relay.kafka.MSG_SIZE_TOO_LARGE");
	ck_assert_str_eq(fake_header(&fk.msgs[idx], "__connect.errors.topic"),
	                 "outbox.event.Order");
	ck_assert_str_eq(fake_header(&fk.msgs[idx], "event_type"), "Placed");
	ck_assert_str_eq(fk.msgs[idx].key, fk.msgs[1].key);
	feed_commit(1801, 0x1000, end, WAL_END);
	ck_assert_uint_lt(confirm_target(r), end);
	deliver(idx, true, 0);
	ck_assert_uint_eq(confirm_target(r), end);
	ck_assert_uint_eq(r->pz.n_parked, 1);
	ck_assert_int_eq(r->st.state, ST_STREAMING);
}
END_TEST

/* Without the policy the refusal alone is the fail-stop, as before. */
START_TEST(test_poison_refused_fail)
{
	open_session(WAL_END);
	feed_begin(1801, 0x1000, 0x1800, WAL_END);
	ck_assert(feed_row(1801, 0x1000, 0, WAL_END));
	ck_assert(feed_row(1801, 0x1000, 1, WAL_END));
	feed_commit(1801, 0x1000, 0x1800, WAL_END);
	deliver(1, false, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	ck_assert(end_turn(r));
	(void)refused_round();
	ck_assert_int_eq(r->st.state, ST_FAIL_STOPPED);
}
END_TEST

/* The producer refuses an event before sending it (over its own
 * message.max.bytes): no retry changes that, it is parked at once. */
START_TEST(test_poison_rejected_parked)
{
	const struct fake_msg *d;

	policy("dlq", "3");
	open_session(WAL_END);
	feed_begin(1901, 0x1000, 0x1800, WAL_END);
	fk.next_send = PUB_REJECTED;
	ck_assert(feed_row(1901, 0x1000, 0, WAL_END));
	feed_commit(1901, 0x1000, 0x1800, WAL_END);
	ck_assert_int_eq(r->st.state, ST_STREAMING);
	ck_assert_uint_eq(fk.n, 1);
	d = &fk.msgs[0];
	ck_assert_str_eq(d->topic, "outbox.dlq");
	ck_assert_str_eq(fake_header(d, "outbox.dlq.tries"), "1");
	ck_assert_str_eq(fake_header(d, "__connect.errors.exception.class.name"),
	                 "outbox_relay.kafka.PRODUCE_REJECTED");
	deliver(0, true, 0);
	ck_assert_uint_eq(confirm_target(r), 0x1800);
	ck_assert_uint_eq(r->pz.n_parked, 1);
}
END_TEST

/* One row of txn 2001 in the one-at-a-time replay: fed (after the
 * previous one's report when it is held back), then reported: ok, or
 * refused for its size when the record went to its own topic and
 * refuse is set. Returns its record's index. */
static size_t iso_row(int i, bool refuse)
{
	size_t idx;

	if (!feed_row(2001, 0x1000, i, WAL_END))
		ck_assert(feed_pending());
	idx = fk.n - 1;
	if (refuse && strcmp(fk.msgs[idx].topic, "outbox.dlq") != 0)
		deliver(idx, false, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	else
		deliver(idx, true, 0);
	return idx;
}

/* Two records of one transaction refused: the first, due to be parked,
 * stays parked by every replay while the second is tried (before, the
 * second replaced it, and each replay sent the first to its topic
 * again: refused, tried, parked, and so on without end). */
START_TEST(test_poison_two_refused)
{
	uint64_t end = 0x1800;

	policy("dlq", "0");
	open_session(WAL_END);
	feed_begin(2001, 0x1000, end, WAL_END);
	for (int i = 0; i < 3; i++)
		ck_assert(feed_row(2001, 0x1000, i, WAL_END));
	feed_commit(2001, 0x1000, end, WAL_END);
	deliver(0, false, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
	ck_assert(end_turn(r));
	/* Row 0 refused alone: due to be parked (no retries). */
	open_session(WAL_END);
	feed_begin(2001, 0x1000, end, WAL_END);
	(void)iso_row(0, true);
	ck_assert_int_eq(r->st.state, ST_REBUILDING);
	ck_assert(end_turn(r));
	/* Row 0 parked, row 1 through, row 2 refused. */
	open_session(WAL_END);
	feed_begin(2001, 0x1000, end, WAL_END);
	ck_assert_str_eq(fk.msgs[iso_row(0, true)].topic, "outbox.dlq");
	ck_assert_str_eq(fk.msgs[iso_row(1, false)].topic, "outbox.event.Order");
	ck_assert_str_eq(fk.msgs[iso_row(2, true)].topic, "outbox.event.Order");
	ck_assert_int_eq(r->st.state, ST_REBUILDING);
	ck_assert(end_turn(r));
	/* Both parked: confirmed. */
	open_session(WAL_END);
	feed_begin(2001, 0x1000, end, WAL_END);
	ck_assert_str_eq(fk.msgs[iso_row(0, true)].topic, "outbox.dlq");
	ck_assert_str_eq(fk.msgs[iso_row(1, false)].topic, "outbox.event.Order");
	ck_assert_str_eq(fk.msgs[iso_row(2, true)].topic, "outbox.dlq");
	feed_commit(2001, 0x1000, end, WAL_END);
	ck_assert_int_eq(r->st.state, ST_STREAMING);
	ck_assert_uint_eq(confirm_target(r), end);
	ck_assert_uint_eq(r->pz.n_parked, 2);
}
END_TEST

Suite *relay_suite(void)
{
	Suite *s = suite_create("relay");
	TCase *tc = tcase_create("loop");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reports_in_any_order);
	tcase_add_test(tc, test_failed_report_mid_transaction);
	tcase_add_test(tc, test_full_queue);
	tcase_add_test(tc, test_fatal_error);
	tcase_add_test(tc, test_report_during_teardown);
	tcase_add_test(tc, test_shutdown_in_flight);
	tcase_add_test(tc, test_shutdown_drains);
	tcase_add_test(tc, test_confirm_clamp);
	tcase_add_test(tc, test_transition_table);
	tcase_add_test(tc, test_ledger_unknown_partition);
	tcase_add_test(tc, test_ledger_refused);
	tcase_add_test(tc, test_eos_confirm_after_commit);
	tcase_add_test(tc, test_eos_commit_between_txns);
	tcase_add_test(tc, test_eos_commit_fails);
	tcase_add_test(tc, test_eos_pg_session_end_aborts);
	tcase_add_test(tc, test_eos_skip_committed);
	tcase_add_test(tc, test_eos_skip_restored);
	tcase_add_test(tc, test_eos_stop);
	tcase_add_test(tc, test_poison_decode_parked);
	tcase_add_test(tc, test_poison_dlq_refused);
	tcase_add_test(tc, test_poison_dlq_rejected);
	tcase_add_test(tc, test_poison_skip);
	tcase_add_test(tc, test_poison_fail_default);
	tcase_add_test(tc, test_poison_refused_retries);
	tcase_add_test(tc, test_poison_refused_fail);
	tcase_add_test(tc, test_poison_rejected_parked);
	tcase_add_test(tc, test_poison_two_refused);
	suite_add_tcase(s, tc);
	return s;
}
