/* SPDX-License-Identifier: Apache-2.0 */
/* relay.c -- the pipeline and its poll() loop.
 *
 * Life of a session: connect and check the slot, START_REPLICATION from
 * the slot's confirmed position, decode each record (wal2json text or a
 * pgoutput message: slot.plugin), produce each event to Kafka, and
 * confirm commit-end LSNs as the tracker allows. Any failure ends the
 * session; the next one replays from the slot. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/hist.h"
#include "kafka/ledger.h"
#include "lib/log.h"
#include "relay/lsn_tracker.h"
#include "health/monitor.h"
#include "health/notify.h"
#include "kafka/publisher.h"
#include "decode/event.h"
#include "relay/relay.h"
#include "pg/repl.h"
#include "decode/stream_spec.h"

#define READ_BUDGET 4096          /* frames per loop turn, keeps timers fair */
#define LEDGER_TOKEN UINT64_MAX   /* delivery token of the ledger's records */
#define LEDGER_READ_TIMEOUT_MS 2000 /* blocks the loop: well within
                                     * http.livez.timeout.ms */
#define LEDGER_RETRY_US (10 * INT64_C(1000000)) /* after a failed read */
#define SESSION_STABLE_US (30 * INT64_C(1000000))

/* ---------------------------- THE STATE MACHINE ----------------------------
 *
 * The relay's lifecycle is r->state and nothing else; every change goes
 * through relay_goto(), which checks it against allowed[] below.
 *
 *   CONNECTING    the first turn: open a producer, START_REPLICATION
 *   BACKOFF       waiting until retry_at_us before connecting again
 *   STANDBY       the slot is held by another process; retry every
 *                 standby.retry.ms
 *   STREAMING     a session is open (have_rs): reading, publishing,
 *                 confirming
 *   RESTARTING    the session ends at the end of this loop turn; the
 *                 producer is kept (a PostgreSQL-side failure)
 *   REBUILDING    the same, and the producer is freed and built again
 *                 (a Kafka-side failure): backstop and isolated replay
 *   STOPPING      no more reads; exit once everything in flight is acked
 *                 or shutdown.timeout.ms runs out (exit_code set)
 *   FAIL_STOPPED  the same with exit 65: a poison event
 *   EXITING       stopping, and the session broke as well: nothing more
 *                 can be acked, the loop ends at the end of this turn
 *
 * Transitions (from -> to: trigger):
 *
 *   CONNECTING, BACKOFF, STANDBY -> STREAMING      START_REPLICATION accepted
 *   CONNECTING, BACKOFF, STANDBY -> BACKOFF        transient connect error, or
 *                                 a permanent one with pg.permanent.error.
 *                                 retries left
 *   CONNECTING, BACKOFF, STANDBY -> STANDBY        the slot is active elsewhere
 *   STREAMING -> RESTARTING       a read, write, status update or receive
 *                                 timeout failed on the PostgreSQL side
 *   STREAMING, BACKOFF, STANDBY, RESTARTING -> REBUILDING
 *                                 Kafka: a delivery or ledger record
 *                                 failed, a produce call or the producer
 *                                 failed fatally (reports of an older
 *                                 session may arrive between sessions)
 *   RESTARTING, REBUILDING -> BACKOFF   restart(): session closed, replay
 *                                 from the slot after a backoff
 *   CONNECTING, BACKOFF, STANDBY, STREAMING -> STOPPING, FAIL_STOPPED
 *                                 begin_stop(): a signal, a fatal error,
 *                                 a rewound database, a refused slot or
 *                                 ledger, a lost slot, a poison event (65)
 *   RESTARTING, REBUILDING -> EXITING   begin_stop() in the turn that ends
 *                                 the session
 *   STOPPING, FAIL_STOPPED -> EXITING   the session broke while draining
 *   EXITING -> STOPPING, FAIL_STOPPED   restart() had already closed the
 *                                 session when the stop began (the
 *                                 producer's teardown named a poison
 *                                 event, or the backstop fired): what is
 *                                 left drains at once
 *
 * STOPPING and FAIL_STOPPED end the loop when drained(); EXITING at the end
 * of the turn. Nothing goes back to CONNECTING: a new session is tried
 * from BACKOFF or STANDBY.
 *
 * conn_state is derived, set by relay_goto() alone: the last of CONNECTING
 * .. STREAMING entered. Stats lines (state=) always show it, and the
 * figures show it while a session is ending: where the connection was.
 *
 * What is not in the state, because it is orthogonal to it:
 *   have_rs, pub != NULL  resources: the session and the producer. A stop
 *                 keeps both until finish(); a stop between sessions has
 *                 a producer and no session.
 *   tearing_down  the producer is inside pub_free(): its reports are
 *                 purges of that producer. It spans a state change (a
 *                 report served by the teardown may begin a stop), so it
 *                 cannot be a state of its own.
 *   have_pending  the reader holds one frame librdkafka had no room for;
 *                 only meaningful while STREAMING, dropped by restart().
 *   queue_full, iso_wait, reply_now, pinged, more_input  flow control of
 *                 one session, not lifecycle. */
enum relay_state {
	ST_CONNECTING,
	ST_BACKOFF,
	ST_STANDBY,
	ST_STREAMING,
	ST_RESTARTING,
	ST_REBUILDING,
	ST_STOPPING,
	ST_FAIL_STOPPED,
	ST_EXITING,
	ST_COUNT
};

static const char *const state_name[ST_COUNT] = {
	[ST_CONNECTING] = "connecting",     [ST_BACKOFF] = "backoff",
	[ST_STANDBY] = "standby",           [ST_STREAMING] = "streaming",
	[ST_RESTARTING] = "restarting",     [ST_REBUILDING] = "rebuilding",
	[ST_STOPPING] = "stopping",         [ST_FAIL_STOPPED] = "fail_stopped",
	[ST_EXITING] = "exiting",
};

#define S(st) (1u << (st))
/* allowed[from]: the states it may go to (the table above). */
static const unsigned allowed[ST_COUNT] = {
	[ST_CONNECTING] = S(ST_STREAMING) | S(ST_BACKOFF) | S(ST_STANDBY) |
	                  S(ST_STOPPING) | S(ST_FAIL_STOPPED),
	[ST_BACKOFF] = S(ST_STREAMING) | S(ST_BACKOFF) | S(ST_STANDBY) |
	               S(ST_REBUILDING) | S(ST_STOPPING) | S(ST_FAIL_STOPPED),
	[ST_STANDBY] = S(ST_STREAMING) | S(ST_BACKOFF) | S(ST_STANDBY) |
	               S(ST_REBUILDING) | S(ST_STOPPING) | S(ST_FAIL_STOPPED),
	[ST_STREAMING] = S(ST_RESTARTING) | S(ST_REBUILDING) | S(ST_STOPPING) |
	                 S(ST_FAIL_STOPPED),
	[ST_RESTARTING] = S(ST_REBUILDING) | S(ST_BACKOFF) | S(ST_EXITING),
	[ST_REBUILDING] = S(ST_BACKOFF) | S(ST_EXITING),
	[ST_STOPPING] = S(ST_EXITING),
	[ST_FAIL_STOPPED] = S(ST_EXITING),
	[ST_EXITING] = S(ST_STOPPING) | S(ST_FAIL_STOPPED),
};
#undef S

/* How /readyz, /slot and /metrics name each (health.h). A session that
 * is ending is still named by where the connection was (conn_state). */
static const enum relay_phase state_phase[ST_COUNT] = {
	[ST_CONNECTING] = RELAY_PHASE_CONNECTING,
	[ST_BACKOFF] = RELAY_PHASE_BACKOFF,
	[ST_STANDBY] = RELAY_PHASE_STANDBY,
	[ST_STREAMING] = RELAY_PHASE_STREAMING,
	[ST_STOPPING] = RELAY_PHASE_STOPPING,
	[ST_FAIL_STOPPED] = RELAY_PHASE_FAIL_STOPPED,
};

/* What became of a frame: handled, to be tried again (the window or
 * librdkafka's queue is full), or the end of reading (a stop, a
 * restart), H_POISON only inside handle_msg(). */
enum handled { H_OK, H_BLOCKED, H_STOP, H_POISON };

struct relay {
	const struct relay_config *cfg; /* borrowed */
	struct stream_spec ss;          /* what is asked of the plugin; owned */
	struct pgo_state pgo;           /* pgoutput's relation cache and open
	                                 * transaction; owned, lives as long
	                                 * as the relay, emptied before each
	                                 * START_REPLICATION (unused for
	                                 * wal2json) */
	struct ev_txn txn;              /* the transaction being read */
	struct lsn_tracker lt;
	struct publisher *pub;          /* owned; NULL between sessions */
	struct repl_stream rs;
	bool have_rs;
	enum relay_state state;         /* the lifecycle: see the table above */
	enum relay_state conn_state;    /* the last of CONNECTING .. STREAMING
	                                 * entered: what stats lines and the
	                                 * figures of an ending session show */
	int64_t retry_at_us;
	unsigned attempt;
	bool ever_streamed;             /* a session reached START_REPLICATION */
	int64_t perm_failures;          /* permanent connect errors in a row */
	int64_t session_start_us;
	int64_t last_status_us;         /* when the last status update went out */
	uint64_t server_wal_end;        /* highest WAL end the server reported
	                                 * this session: never confirm past it */
	int64_t rx_hold_us;             /* no read before this (mono us):
	                                 * pg.read.coalesce.us after a turn
	                                 * that emptied the stream */
	int64_t rx_turn_us;             /* now_mono_us() when read_stream()
	                                 * began: the frames' arrival time */
	int64_t last_rx_us;             /* last frame from the server (while
	                                 * reading; reset while paused) */
	bool pinged;                    /* a reply was requested since then */
	int64_t next_stats_us;
	bool reply_now;
	bool more_input;                /* read budget ran out: frames may wait in libpq */

	/* The in-flight window, over every session: decremented by each
	 * delivery report, whatever session it belongs to. */
	uint64_t win_events;
	uint64_t win_bytes;
	bool queue_full;                /* librdkafka said QUEUE_FULL */
	bool iso_wait;                  /* an isolated event waits for the
	                                 * previous one's report */

	/* A frame that could not be produced yet (QUEUE_FULL); it points
	 * into rs.copybuf, which stays valid until the next repl_read(). */
	bool have_pending;
	struct repl_msg pending;

	uint64_t n_received, n_acked, n_failed, n_stale, n_txns, n_reconnects;
	uint64_t n_skipped;             /* events acked in an earlier session,
	                                 * not published again */
	uint64_t n_status;              /* standby status updates sent */
	uint64_t bytes_acked;
	struct hist lat;

	int exit_code;                  /* set by begin_stop() */
	int64_t drain_deadline_us;
	bool tearing_down;              /* inside pub_free(): see the table */

	/* Failed deliveries of this session (see record_failure()). */
	struct {
		bool permanent;             /* one with a permanent error */
		uint64_t first_end, last_end; /* commit ends of their txns */
		uint64_t first_any;         /* oldest txn with any failure */
		int err;                    /* the first permanent error */
		char what[512];             /* its report */
	} fail;
	/* Transactions whose commit end is in [iso_from, iso_to] publish one
	 * event at a time: a batch the broker refused is replayed record by
	 * record, so the healthy records before the refused one get through
	 * and the refused one is named. 0/0: off. */
	uint64_t iso_from, iso_to;
	/* The slot ledger (ledger.h): the relay confirms nothing past what
	 * the ledger holds for the slot; it records the watermark first. */
	struct ledger *ledger;          /* owned; the reader, NULL until used */
	char ledger_key[256];           /* "" while the ledger is off */
	bool ledger_verified;           /* this session's slot was checked */
	int64_t ledger_retry_us;        /* when to try reading it again */
	uint64_t ledger_lsn;            /* recorded and acked */
	uint64_t ledger_sending;        /* a record for this in flight; 0 none */
	int64_t ledger_sent_us;         /* when the last one was produced */
	/* The backstop: the same transaction failing again and again. */
	uint64_t replay_lsn;            /* its commit end */
	int64_t replay_count;           /* failures in a row */
	char replay_err[256];           /* the last one */

	char err[2048];

	/* Health figures (see monitor.h). */
	struct monitor *mon;            /* owned */
	char reason[256];               /* why not streaming; no server text */
	int64_t last_ack_wall_us;
	int64_t last_confirm_wall_us;
	int64_t hb_rtt_us;
	uint64_t hb_seen;
	uint64_t kafka_restarts;
	char topics[16][128];           /* low-cardinality metric labels */
	uint64_t topic_events[16];
	size_t ntopics;
#ifdef OUTBOX_RELAY_TEST_HOOKS
	int64_t stall_ms;               /* test hook: SIGUSR1 blocks the loop */
#endif
};

static bool relay_stopping(const struct relay *r)
{
	return r->state == ST_STOPPING || r->state == ST_FAIL_STOPPED ||
	       r->state == ST_EXITING;
}

/* The session ends at the end of this loop turn (with a restart, or with
 * the exit). Most of a turn's work is skipped then. */
static bool session_ending(const struct relay *r)
{
	return r->state == ST_RESTARTING || r->state == ST_REBUILDING ||
	       r->state == ST_EXITING;
}

/* The one place r->state changes. A transition not in allowed[] is a bug
 * in the relay: it is logged as an error and made anyway, so a gap in the
 * table never changes what the relay does. */
static void relay_goto(struct relay *r, enum relay_state to, const char *why)
{
	enum relay_state from = r->state;

	if (!(allowed[from] & (1u << to)))
		log_error("internal: state transition %s -> %s (%s) is not in the "
		          "table", state_name[from], state_name[to], why);
	else
		log_debug("state: %s -> %s (%s)", state_name[from], state_name[to],
		          why);
	r->state = to;
	if (to <= ST_STREAMING)
		r->conn_state = to;
}

/* The session ends at the end of this turn; kafka: the producer is
 * rebuilt too. While stopping, there is nothing left to ack: exit. */
static void session_end(struct relay *r, bool kafka, const char *why)
{
	switch (r->state) {
	case ST_RESTARTING:
		if (kafka)
			relay_goto(r, ST_REBUILDING, why);
		return;
	case ST_REBUILDING:
	case ST_EXITING:
		return;
	case ST_STOPPING:
	case ST_FAIL_STOPPED:
		relay_goto(r, ST_EXITING, why);
		return;
	default:
		relay_goto(r, kafka ? ST_REBUILDING : ST_RESTARTING, why);
		return;
	}
}

/* The phase /readyz and /metrics show. */
static enum relay_phase phase_of(const struct relay *r)
{
	switch (r->state) {
	case ST_RESTARTING:
	case ST_REBUILDING:
		return state_phase[r->conn_state];
	case ST_EXITING:
		return r->exit_code == RELAY_EXIT_DATAERR ? RELAY_PHASE_FAIL_STOPPED
		                                          : RELAY_PHASE_STOPPING;
	default:
		return state_phase[r->state];
	}
}

static int64_t backoff_us(struct relay *r)
{
	int64_t base = r->cfg->reconnect_backoff_ms * 1000;
	int64_t cap = r->cfg->reconnect_backoff_max_ms * 1000;
	unsigned shift = r->attempt < 20 ? r->attempt : 20;
	int64_t d = base << shift;

	if (d > cap || d <= 0)
		d = cap;
	r->attempt++;
	/* Jitter: several relays (or restarts) must not retry in lockstep. */
	return d / 2 + (int64_t)(random() % (d / 2 + 1));
}

/* Delivery report: runs inside pub_poll() on the loop thread. */
static void count_topic(struct relay *r, const char *topic)
{
	size_t i;

	for (i = 0; i < r->ntopics; i++)
		if (strcmp(r->topics[i], topic) == 0)
			break;
	if (i == r->ntopics) {
		if (r->ntopics == 16)
			return; /* labels stay bounded; the totals still count */
		snprintf(r->topics[i], sizeof(r->topics[i]), "%s", topic);
		r->ntopics++;
	}
	r->topic_events[i]++;
}

static void begin_stop(struct relay *r, int code);

static bool isolated(const struct relay *r, uint64_t end_lsn)
{
	return r->iso_to != 0 && end_lsn >= r->iso_from && end_lsn <= r->iso_to;
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

/* The broker refuses the slot ledger's record for good. Without it no
 * confirm may go out (the ledger must hold what the slot is confirmed
 * to), so the relay stops with exit 65 and names the topic and the fix;
 * the slot keeps everything since the last confirm. */
static void ledger_refused(struct relay *r, const struct pub_report *rep)
{
	const char *advice = pub_err_advice(rep->err);

	log_error("fail-stop at LSN " LSN_FMT ": Kafka refuses the slot ledger "
	          "record (topic %s, slot.ledger.topic): %s (%s). Nothing past "
	          "this LSN is confirmed and the slot keeps it. %s%s",
	          LSN_ARGS(lsn_confirmed(&r->lt)), rep->topic,
	          pub_err_str(rep->err), pub_err_name(rep->err), advice,
	          advice[0] ? "; then start the relay again" : "");
	snprintf(r->reason, sizeof(r->reason), "Kafka refuses the slot ledger "
	         "record (%s)", pub_err_name(rep->err));
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
		if (!relay_stopping(r))
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

static void on_dr(void *opaque, const struct pub_report *rep)
{
	struct relay *r = opaque;
	const struct lsn_txn *t;
	int64_t ts = 0;

	if (rep->token == LEDGER_TOKEN) {
		uint64_t lsn = r->ledger_sending;
		r->ledger_sending = 0;
		/* An ack counts even while stopping: the final confirm needs it. */
		if (rep->ok) {
			if (lsn > r->ledger_lsn)
				r->ledger_lsn = lsn;
			return;
		}
		if (relay_stopping(r))
			return;
		/* Authorization, an unknown topic, a size limit: every replay
		 * would be refused the same way, so stop now and say what to
		 * grant or change (also from the teardown, where the report of
		 * a fatal producer error may only be served). */
		if (pub_err_classify(rep->err) == PUB_ERR_PERMANENT) {
			ledger_refused(r, rep);
			return;
		}
		if (r->tearing_down)
			return;
		snprintf(r->replay_err, sizeof(r->replay_err), "%.200s", rep->errstr);
		log_error("kafka: writing the slot ledger failed: %s; the producer is "
		          "rebuilt and the slot replays", rep->errstr);
		session_end(r, true, "ledger record failed");
		return;
	}
	r->win_events--;
	r->win_bytes -= rep->bytes;
	r->queue_full = false;
	if (!rep->ok)
		log_debug("kafka: delivery failed (%s): %s",
		          r->tearing_down ? "producer torn down" : "live", rep->errstr);
	if (!rep->ok && pub_err_classify(rep->err) != PUB_ERR_PURGED &&
	    (t = lsn_find(&r->lt, rep->token)) != NULL)
		record_failure(r, rep, t);
	if (r->tearing_down)
		return;
	if (!lsn_ack(&r->lt, rep->token, rep->ok, &ts)) {
		r->n_stale++; /* from a session that was already torn down */
		return;
	}
	if (rep->ok) {
		r->n_acked++;
		r->bytes_acked += rep->bytes;
		r->last_ack_wall_us = rep->at_wall_us;
		if (ts > 0)
			hist_record(&r->lat, r->last_ack_wall_us - ts);
		count_topic(r, rep->topic);
		return;
	}
	r->n_failed++;
	if (relay_stopping(r))
		return; /* the poison path above, or a stop in progress */
	snprintf(r->replay_err, sizeof(r->replay_err), "%s", rep->errstr);
	log_error("kafka: delivery failed: %s; nothing past it is confirmed, the "
	          "producer is rebuilt and the slot replays", rep->errstr);
	session_end(r, true, "delivery failed");
}

static bool reading_allowed(const struct relay *r);

/* While reads are paused (window full, Kafka stalled) keepalives sit
 * unread in the socket, so a reply request cannot be seen: answer on a
 * short timer instead, whatever wal_sender_timeout is. */
static int64_t status_period_us(const struct relay *r)
{
	int64_t us = r->cfg->status_interval_ms * 1000;

	if (r->have_rs && !reading_allowed(r) && us > 1000000)
		us = 1000000;
	return us;
}

static void send_status_req(struct relay *r, bool force_log, bool ping);

/* What may be confirmed now: the watermark, bounded by the server's WAL
 * end and by what the slot ledger holds. */
static uint64_t confirm_target(const struct relay *r)
{
	uint64_t t = lsn_confirmable(&r->lt);

	if (t > r->server_wal_end)
		t = r->server_wal_end;
	if (r->ledger_key[0] != '\0' &&
	    t > (r->ledger_verified ? r->ledger_lsn : lsn_confirmed(&r->lt)))
		t = r->ledger_verified ? r->ledger_lsn : lsn_confirmed(&r->lt);
	return t;
}

static bool confirm_due(const struct relay *r)
{
	return confirm_target(r) > lsn_confirmed(&r->lt);
}

/* The ledger is behind the watermark: a record is due. */
static bool ledger_due(const struct relay *r)
{
	uint64_t w = lsn_confirmable(&r->lt);

	if (w > r->server_wal_end)
		w = r->server_wal_end;
	return r->ledger_key[0] != '\0' && r->ledger_verified && r->pub != NULL &&
	       r->have_rs && r->ledger_sending == 0 && w > r->ledger_lsn &&
	       w > lsn_confirmed(&r->lt);
}

/* Records the watermark in the slot ledger, through the relay's own
 * producer; the confirm follows its ack (on_dr). */
static void ledger_record(struct relay *r, int64_t now)
{
	uint64_t w = lsn_confirmable(&r->lt);
	char err[256], *value;

	if (w > r->server_wal_end)
		w = r->server_wal_end;
	value = ledger_value(repl_system_id(&r->rs),
	                     repl_slot(&r->rs)->database, r->cfg->slot_name, w,
	                     "relay");
	switch (pub_send(r->pub, r->cfg->slot_ledger_topic, r->ledger_key,
	                 strlen(r->ledger_key), value, strlen(value), NULL,
	                 LEDGER_TOKEN, err, sizeof(err))) {
	case PUB_SENT:
		r->ledger_sending = w;
		r->ledger_sent_us = now;
		break;
	case PUB_FULL:
		break; /* the next turn tries again */
	case PUB_REJECTED:
	case PUB_FATAL:
		log_error("kafka: writing the slot ledger: %s", err);
		session_end(r, true, "ledger record refused");
		break;
	}
	free(value);
}

static void send_status(struct relay *r, bool force_log)
{
	send_status_req(r, force_log, false);
}

/* ping: ask the server to answer at once (replyRequested), to learn
 * whether it is still there. */
static void send_status_req(struct relay *r, bool force_log, bool ping)
{
	uint64_t flush = lsn_confirmable(&r->lt);
	uint64_t confirmed = lsn_confirmed(&r->lt); /* the last one sent */
	uint64_t recv;
	char err[512];

	if (!r->have_rs || !repl_in_copy(&r->rs))
		return;
	/* Every LSN the tracker can hold came from this server's stream, so
	 * this never bites; it is the last line against confirming WAL the
	 * server has not written (a restored or lagging copy). */
	if (flush > r->server_wal_end) {
		log_error("internal: confirmable " LSN_FMT " is past the server's "
		          "WAL end " LSN_FMT "; sending the WAL end", LSN_ARGS(flush),
		          LSN_ARGS(r->server_wal_end));
		flush = r->server_wal_end;
	}
	/* Nothing past what the slot ledger holds: a slot moved past it is
	 * refused at the next start (a recreated slot). */
	if (r->ledger_key[0] != '\0' &&
	    flush > (r->ledger_verified ? r->ledger_lsn : confirmed))
		flush = r->ledger_verified ? r->ledger_lsn : confirmed;
	if (flush < confirmed)
		flush = confirmed;
	recv = lsn_received_max(&r->lt);
	if (recv < flush)
		recv = flush;
	if (repl_send_status(&r->rs, recv, flush, ping, err, sizeof(err)) < 0) {
		log_warn("%s", err);
		session_end(r, false, "status update failed");
		return;
	}
	if (flush != confirmed || force_log) {
		log_debug("confirmed flush LSN " LSN_FMT, LSN_ARGS(flush));
		r->last_confirm_wall_us = now_wall_us();
	}
	lsn_mark_confirmed(&r->lt, flush);
	r->n_status++;
	r->reply_now = false;
	r->last_status_us = now_mono_us();
}

static void log_stats(struct relay *r, const char *prefix)
{
	log_info("%s: state=%s received=%llu acked=%llu failed=%llu stale=%llu "
	         "skipped=%llu republished=%llu txns=%llu reconnects=%llu inflight=%llu "
	         "inflight_bytes=%llu held=%llu status_updates=%llu "
	         "received_lsn=" LSN_FMT " confirmed_lsn=" LSN_FMT
	         " latency_p50_ms=%.1f latency_p99_ms=%.1f latency_max_ms=%.1f",
	         prefix, relay_phase_name(state_phase[r->conn_state]),
	         (unsigned long long)r->n_received,
	         (unsigned long long)r->n_acked, (unsigned long long)r->n_failed,
	         (unsigned long long)r->n_stale, (unsigned long long)r->n_skipped,
	         (unsigned long long)lsn_replayed(&r->lt),
	         (unsigned long long)r->n_txns,
	         (unsigned long long)r->n_reconnects,
	         (unsigned long long)r->win_events, (unsigned long long)r->win_bytes,
	         (unsigned long long)lsn_held_events(&r->lt),
	         (unsigned long long)r->n_status,
	         LSN_ARGS(lsn_received_max(&r->lt)),
	         LSN_ARGS(lsn_confirmed(&r->lt)),
	         hist_percentile(&r->lat, 0.50) / 1000.0,
	         hist_percentile(&r->lat, 0.99) / 1000.0, r->lat.max_us / 1000.0);
}

/* After a Kafka failure, before the replay: the backstop (the same
 * transaction failing kafka.failure.max.replays times in a row is poison)
 * and the isolated replay of a batch the broker refused. Returns false
 * when the relay stops instead. */
static bool kafka_failed(struct relay *r)
{
	const struct lsn_txn *head = lsn_head(&r->lt);
	uint64_t key = r->fail.first_any != 0 ? r->fail.first_any
	               : head != NULL ? head->own.end_lsn
	                              : lsn_confirmable(&r->lt);

	if (key == r->replay_lsn) {
		r->replay_count++;
	} else {
		r->replay_lsn = key;
		r->replay_count = 1;
	}
	/* Replays can follow each other faster than the monitor's period:
	 * the count must reach /readyz and the log before the next one. */
	mon_poke(r->mon);
	if (r->replay_count >= r->cfg->kafka_failure_max_replays) {
		log_error("fail-stop at LSN " LSN_FMT ": Kafka failed the same "
		          "transaction %lld times in a row (kafka.failure.max.replays); "
		          "last error: %s. Nothing at or after it is confirmed and the "
		          "slot keeps it (runbook: poison event)", LSN_ARGS(key),
		          (long long)r->replay_count,
		          r->replay_err[0] ? r->replay_err : "see the log");
		snprintf(r->reason, sizeof(r->reason), "Kafka failed the transaction "
		         "at LSN " LSN_FMT " %lld times in a row", LSN_ARGS(key),
		         (long long)r->replay_count);
		begin_stop(r, RELAY_EXIT_DATAERR); /* EXITING; restart() drains */
		return false;
	}
	if (r->fail.permanent) {
		if (r->iso_to == 0 || r->fail.first_end < r->iso_from)
			r->iso_from = r->fail.first_end;
		if (r->fail.last_end > r->iso_to)
			r->iso_to = r->fail.last_end;
		log_warn("kafka refused a batch (%s): the events of the commits "
		         LSN_FMT " to " LSN_FMT " are replayed one at a time, to "
		         "publish the healthy ones and name the refused one",
		         pub_err_name(r->fail.err), LSN_ARGS(r->iso_from),
		         LSN_ARGS(r->iso_to));
	}
	memset(&r->fail, 0, sizeof(r->fail));
	return true;
}

/* Ends the session: final status, close, and (for Kafka failures) a new
 * producer. The next session starts from the slot after a backoff. */
static void restart(struct relay *r)
{
	int64_t d;

	if (r->have_rs) {
		send_status(r, false);
		repl_close(&r->rs);
		r->have_rs = false;
	}
	if (r->state == ST_REBUILDING && r->pub != NULL) {
		r->kafka_restarts++;
		r->tearing_down = true;
		pub_free(r->pub); /* purges: reports come back and are dropped */
		r->tearing_down = false;
		r->pub = NULL;
		r->win_events = r->win_bytes = 0;
		r->queue_full = false;
		/* A report served by the teardown may have named the refused
		 * record (stopping then); otherwise the backstop decides. */
		if (relay_stopping(r) || !kafka_failed(r)) {
			relay_goto(r, r->exit_code == RELAY_EXIT_DATAERR
			                      ? ST_FAIL_STOPPED : ST_STOPPING,
			           "stop began with the session closed");
			return;
		}
	}
	r->have_pending = false;
	/* Acks of the old session's events must not move the new watermark;
	 * what was acked is kept for lsn_resume() to check. */
	lsn_end_session(&r->lt);
	ev_txn_reset(&r->txn);
	r->n_reconnects++;
	d = backoff_us(r);
	relay_goto(r, ST_BACKOFF, "session ended");
	r->retry_at_us = now_mono_us() + d;
	snprintf(r->reason, sizeof(r->reason), "session ended; replaying from "
	         "the slot after a backoff");
	log_warn("replaying from slot \"%s\" in %lld ms (confirmed " LSN_FMT ")",
	         r->cfg->slot_name, (long long)(d / 1000),
	         LSN_ARGS(lsn_confirmed(&r->lt)));
}

/* The first stop decides the exit code. A session already ending goes to
 * EXITING: with it gone, nothing more can be acked. */
static void begin_stop(struct relay *r, int code)
{
	if (relay_stopping(r))
		return;
	relay_goto(r, r->state == ST_RESTARTING || r->state == ST_REBUILDING
	                      ? ST_EXITING
	              : code == RELAY_EXIT_DATAERR ? ST_FAIL_STOPPED : ST_STOPPING,
	           "stop");
	r->exit_code = code;
	r->drain_deadline_us = now_mono_us() + r->cfg->shutdown_timeout_ms * 1000;
	notify_stopping(); /* systemd: STOPPING=1, whatever the cause */
}

/* The server's WAL is not the WAL this process published from: the
 * database was restored, rewound or replaced. Nothing is confirmed past
 * the slot's own position; an operator decides (runbook). */
static void rewound_stop(struct relay *r)
{
	log_error("%s. Nothing past the slot's position " LSN_FMT " was "
	          "confirmed. Reconcile what consumers did with those events, "
	          "then start the relay again: a new process streams from the "
	          "slot as this database has it (runbook: the database went "
	          "back in time)", lsn_rewound_reason(&r->lt),
	          LSN_ARGS(lsn_confirmed(&r->lt)));
	snprintf(r->reason, sizeof(r->reason), "the database went back in time "
	         "(see the log)");
	begin_stop(r, RELAY_EXIT_UNAVAILABLE);
}

/* An error no retry can fix. Before the relay ever streamed it is a
 * misconfiguration: stop at once. After, a failed connect may be a
 * password being rotated under a running relay: pg.permanent.error.
 * retries attempts in a row first, with the usual backoff. */
static void permanent_error(struct relay *r, enum repl_err rc, const char *err)
{
	int code = rc == REPL_ERR_AUTH     ? RELAY_EXIT_NOPERM
	           : rc == REPL_ERR_CONFIG ? RELAY_EXIT_CONFIG
	                                   : RELAY_EXIT_UNAVAILABLE;

	if (repl_connect_failed(&r->rs) && r->ever_streamed &&
	    ++r->perm_failures < r->cfg->pg_permanent_error_retries) {
		int64_t d = backoff_us(r);
		log_warn("%s; attempt %lld of %lld, retrying in %lld ms", err,
		         (long long)r->perm_failures,
		         (long long)r->cfg->pg_permanent_error_retries,
		         (long long)(d / 1000));
		relay_goto(r, ST_BACKOFF, "permanent error, retries left");
		snprintf(r->reason, sizeof(r->reason), "PostgreSQL refuses the "
		         "connection (see the log); retrying");
		r->retry_at_us = now_mono_us() + d;
		return;
	}
	log_error("%s", err);
	snprintf(r->reason, sizeof(r->reason), "PostgreSQL refuses the relay "
	         "(see the log)");
	begin_stop(r, code);
}

/* Reads the slot's ledger record and checks the slot against it (see
 * ledger_session_start()). Returns false when the slot is refused (the
 * relay stops); a failed read returns true with ledger_verified still
 * false and a retry scheduled: the session streams on, but nothing past
 * the slot's own position is confirmed before the check. */
static bool ledger_verify(struct relay *r, int64_t now)
{
	struct ledger_entry e;
	char err[1024];

	if (r->ledger == NULL &&
	    (r->ledger = ledger_open(r->cfg, err, sizeof(err))) == NULL) {
		log_error("slot ledger: %s", err);
		begin_stop(r, RELAY_EXIT_CONFIG);
		return false;
	}
	if (ledger_read(r->ledger, r->ledger_key, true, &e, LEDGER_READ_TIMEOUT_MS,
	                err, sizeof(err)) < 0) {
		if (r->ledger_retry_us == 0)
			log_warn("%s; streaming on, but nothing is confirmed past the "
			         "slot's position until the ledger can be read (retried "
			         "every %lld s)", err,
			         (long long)(LEDGER_RETRY_US / 1000000));
		r->ledger_retry_us = now + LEDGER_RETRY_US;
		return true;
	}
	if (r->ledger_retry_us != 0)
		log_info("slot ledger: read again");
	r->ledger_retry_us = 0;
	if (ledger_check(&e, r->cfg->slot_name, repl_slot(&r->rs)->confirmed_lsn,
	                 err, sizeof(err)) < 0) {
		log_error("%s", err);
		snprintf(r->reason, sizeof(r->reason), "the slot was moved without "
		         "the relay (see the log)");
		begin_stop(r, RELAY_EXIT_UNAVAILABLE);
		return false;
	}
	if (!e.found)
		log_info("slot ledger: no record of slot \"%s\" in %s yet; the first "
		         "confirm writes one", r->cfg->slot_name,
		         r->cfg->slot_ledger_topic);
	if (e.found && e.lsn > r->ledger_lsn)
		r->ledger_lsn = e.lsn;
	else if (!e.found)
		r->ledger_lsn = 0;
	r->ledger_verified = true;
	return true;
}

/* The slot against the ledger, at the start of every session. Returns
 * false when the session cannot go on (the slot is refused). */
static bool ledger_session_start(struct relay *r)
{
	r->ledger_key[0] = '\0';
	r->ledger_verified = false;
	r->ledger_retry_us = 0;
	if (r->cfg->slot_ledger_topic[0] == '\0')
		return true;
	if (ledger_key(repl_system_id(&r->rs), repl_slot(&r->rs)->database,
	               r->cfg->slot_name, r->ledger_key,
	               sizeof(r->ledger_key)) < 0) {
		log_error("slot ledger: key for slot \"%s\" too long",
		          r->cfg->slot_name);
		begin_stop(r, RELAY_EXIT_CONFIG);
		return false;
	}
	return ledger_verify(r, now_mono_us());
}

/* A slot missing on a server that was promoted at some point (timeline
 * past 1): after a failover the first place to look, so say so. */
static void failover_hint(const struct relay *r, char *err, size_t errlen)
{
	size_t n = strlen(err);

	if (!repl_slot_missing(&r->rs) || repl_timeline(&r->rs) <= 1)
		return;
	snprintf(err + n, errlen - n, ". This server is on timeline %d: it was "
	         "promoted (or recovered to a point in time) since its cluster "
	         "began. If the primary failed over, the slot was not carried to "
	         "this standby (PostgreSQL 16 and older have no failover slots; "
	         "on 17 and later the slot lacked failover or was not synced "
	         "yet), and Kafka may hold events this server never committed. "
	         "Runbook: failover", repl_timeline(&r->rs));
}

static void try_connect(struct relay *r)
{
	const struct tli_switch *history;
	int history_len, promotions;
	enum lsn_resume resume;
	enum repl_err rc;
	char err[1024];

	if (r->pub == NULL) {
		r->pub = pub_new(r->cfg, on_dr, r, err, sizeof(err));
		if (r->pub == NULL) {
			log_error("%s", err);
			begin_stop(r, RELAY_EXIT_CONFIG);
			return;
		}
	}
	/* The server describes every relation again in each session, and
	 * one cached from the last may have changed since. */
	pgo_reset(&r->pgo);
	rc = repl_start(&r->rs, r->cfg->pg_conninfo, r->cfg->slot_name, &r->ss,
	                r->cfg->pg_receive_timeout_ms, err, sizeof(err));
	switch (rc) {
	case REPL_OK:
		r->have_rs = true;
		r->ever_streamed = true;
		r->perm_failures = 0;
		r->reason[0] = '\0';
		relay_goto(r, ST_STREAMING, "START_REPLICATION");
		r->session_start_us = now_mono_us();
		r->last_rx_us = r->session_start_us;
		r->pinged = false;
		r->server_wal_end = repl_wal_end(&r->rs);
		promotions = lsn_promotions(&r->lt);
		history = repl_history(&r->rs, &history_len);
		resume = lsn_resume(&r->lt, &(struct lsn_server){
			.system_id = repl_system_id(&r->rs),
			.timeline = repl_timeline(&r->rs),
			.wal_end = repl_wal_end(&r->rs),
			.slot_lsn = repl_slot(&r->rs)->confirmed_lsn,
			.history = history,
			.history_len = history_len,
		});
		if (lsn_promotions(&r->lt) != promotions)
			log_warn("the server is on timeline %d now: a promoted standby "
			         "(failover) whose WAL holds everything this process "
			         "published. Streaming on from its copy of slot \"%s\" "
			         "at " LSN_FMT "; events up to " LSN_FMT " that were "
			         "produced without an ack may be published again "
			         "(duplicates for consumers to drop)",
			         repl_timeline(&r->rs), r->cfg->slot_name,
			         LSN_ARGS(repl_slot(&r->rs)->confirmed_lsn),
			         LSN_ARGS(lsn_replay_upto(&r->lt)));
		log_info("streaming from slot \"%s\" (system %s, timeline %d): "
		         "confirmed_flush_lsn " LSN_FMT ", restart_lsn " LSN_FMT
		         ", server WAL at " LSN_FMT "%s", r->cfg->slot_name,
		         repl_system_id(&r->rs), repl_timeline(&r->rs),
		         LSN_ARGS(repl_slot(&r->rs)->confirmed_lsn),
		         LSN_ARGS(repl_slot(&r->rs)->restart_lsn),
		         LSN_ARGS(repl_wal_end(&r->rs)),
		         resume == LSN_RESUME_VERIFY
		             ? "; transactions already published are skipped" : "");
		if (resume == LSN_RESUME_VERIFY)
			log_info("the slot is behind what this process published (up "
			         "to commit " LSN_FMT ", xid %lld): replaying from the "
			         "slot without publishing again, once that commit is "
			         "seen unchanged",
			         LSN_ARGS(lsn_verifying(&r->lt)->end_lsn),
			         (long long)lsn_verifying(&r->lt)->xid);
		if (resume == LSN_RESUME_REWOUND) {
			rewound_stop(r);
			return;
		}
		if (!ledger_session_start(r))
			return;
		/* At once, not after status.interval.ms: a relay restarted often
		 * must still confirm, and pg_stat_replication shows it alive. */
		send_status(r, false);
		return;
	case REPL_ERR_SLOT_BUSY:
		if (r->state != ST_STANDBY)
			log_warn("standby: %s; retrying every %lld ms", err,
			         (long long)r->cfg->standby_retry_ms);
		relay_goto(r, ST_STANDBY, "slot busy");
		snprintf(r->reason, sizeof(r->reason), "slot active for PID %d "
		         "(standby)", repl_slot(&r->rs)->active_pid);
		r->retry_at_us = now_mono_us() + r->cfg->standby_retry_ms * 1000;
		return;
	case REPL_ERR_TRANSIENT: {
		int64_t d = backoff_us(r);
		r->perm_failures = 0;
		log_warn("%s; retrying in %lld ms", err, (long long)(d / 1000));
		relay_goto(r, ST_BACKOFF, "transient connect error");
		snprintf(r->reason, sizeof(r->reason), "cannot stream from "
		         "PostgreSQL (see the log); retrying");
		r->retry_at_us = now_mono_us() + d;
		return;
	}
	case REPL_ERR_FATAL:
		failover_hint(r, err, sizeof(err));
		permanent_error(r, rc, err);
		return;
	case REPL_ERR_CONFIG:
	case REPL_ERR_AUTH:
		permanent_error(r, rc, err);
		return;
	}
}

/* Poison input: stop reading, let what is in flight be acked, confirm
 * up to (not including) the bad transaction, exit non-zero. */
static enum handled fail_stop(struct relay *r, const struct repl_msg *m,
                              const char *what)
{
	log_error("fail-stop at LSN " LSN_FMT " (xid %lld): %s; nothing at or "
	          "after this transaction is confirmed and the slot keeps it. "
	          "Fix the cause or skip the transaction deliberately (see the "
	          "runbook: poison event)", LSN_ARGS(m->wal_start),
	          (long long)r->txn.xid, what);
	snprintf(r->reason, sizeof(r->reason), "poison event at LSN " LSN_FMT
	         " (xid %lld)", LSN_ARGS(m->wal_start), (long long)r->txn.xid);
	begin_stop(r, RELAY_EXIT_DATAERR);
	return H_STOP;
}

/* An outbox event (event.h): produced, unless its transaction was acked
 * in an earlier session. */
static enum handled handle_event(struct relay *r, const struct ev_event *ev)
{
	char err[512];
	uint64_t token;

	if (lsn_skipping(&r->lt)) {
		r->n_skipped++; /* acked in an earlier session */
		return H_OK;
	}
	/* While a refused batch is replayed, one event at a time, from the
	 * session's start until the watermark is past the batch: the
	 * previous event must be acked (or have failed) first, so a refusal
	 * names its record and nothing after it is published meanwhile. */
	if (r->iso_to != 0 && lsn_inflight(&r->lt) > 0) {
		r->iso_wait = true;
		return H_BLOCKED;
	}
	r->iso_wait = false;
	token = lsn_event(&r->lt, ev->bytes);
	switch (pub_send(r->pub, ev->topic, ev->key.ptr, ev->key.len,
	                 ev->value.ptr, ev->value.len, &ev->headers, token, err,
	                 sizeof(err))) {
	case PUB_SENT:
		r->n_received++;
		r->win_events++;
		r->win_bytes += ev->bytes;
		return H_OK;
	case PUB_FULL:
		lsn_event_undo(&r->lt, token, ev->bytes);
		r->queue_full = true;
		return H_BLOCKED;
	case PUB_REJECTED:
		lsn_event_undo(&r->lt, token, ev->bytes);
		snprintf(r->err, sizeof(r->err), "event id %s (topic %s, %zu bytes): "
		         "Kafka refuses it: %s", ev->id.ptr, ev->topic, ev->value.len,
		         err);
		return H_POISON;
	case PUB_FATAL:
		lsn_event_undo(&r->lt, token, ev->bytes);
		log_error("kafka: produce failed: %s", err);
		session_end(r, true, "produce failed");
		return H_STOP;
	}
	return H_STOP;
}

static enum handled handle_msg(struct relay *r, const struct repl_msg *m)
{
	struct ev_record er;
	enum handled h = H_OK;

	if (m->wal_end > r->server_wal_end)
		r->server_wal_end = m->wal_end;
	r->last_rx_us = r->rx_turn_us;
	r->pinged = false;
	if (m->type == 'k') {
		if (m->reply_requested)
			r->reply_now = true; /* else wal_sender_timeout ends the stream */
		if (!lsn_idle(&r->lt, m->wal_end)) {
			rewound_stop(r);
			return H_STOP;
		}
		return H_OK;
	}
	lsn_received(&r->lt, m->wal_start);
	/* m->data is bytes (a pgoutput message is binary): it goes to the
	 * decoder with its length, and never into a log line. */
	ev_next_at(&r->ss, r->ss.plugin == SS_PLUGIN_PGOUTPUT ? &r->pgo : NULL,
	           m->data, m->len, m->wal_start, &r->txn, &er);
	switch (er.kind) {
	case EV_BEGIN: {
		/* wal2json's B carries the commit end; pgoutput's Begin only the
		 * commit LSN, the end comes with its Commit (lsn_tracker.h). */
		enum lsn_verdict v =
			r->ss.plugin == SS_PLUGIN_PGOUTPUT
				? lsn_begin_final(&r->lt, er.rec.xid, er.rec.commit_ts_us,
				                  er.rec.lsn)
				: lsn_begin(&r->lt, er.rec.xid, er.rec.commit_ts_us,
				            er.rec.nextlsn);
		if (v == LSN_REWOUND) {
			rewound_stop(r);
			h = H_STOP;
		}
		break;
	}
	case EV_COMMIT:
		r->n_txns++;
		if (!lsn_commit(&r->lt, er.rec.nextlsn)) {
			rewound_stop(r);
			h = H_STOP;
		}
		break;
	case EV_EVENT:
		h = handle_event(r, &er.ev);
		if (h == H_POISON)
			h = fail_stop(r, m, r->err);
		break;
	case EV_HEARTBEAT:
		/* Everything before it was sent, so with nothing open or in
		 * flight its LSN is safe to confirm. */
		if (er.heartbeat_sent_us > 0)
			r->hb_rtt_us = now_wall_us() - er.heartbeat_sent_us;
		r->hb_seen++;
		if (!lsn_idle(&r->lt, er.rec.lsn)) {
			rewound_stop(r);
			h = H_STOP;
		}
		break;
	case EV_POISON:
		h = fail_stop(r, m, er.reason);
		break;
	case EV_SKIP:
		break;
	}
	ev_record_clear(&er);
	return h;
}

static bool reading_allowed(const struct relay *r)
{
	/* The window: events and bytes librdkafka holds (of any session),
	 * and the events between the watermark and the read position (see
	 * lsn_window_events()). One stuck event thus pauses reading instead
	 * of letting later, acked transactions pile up behind it. */
	uint64_t max_ev = (uint64_t)r->cfg->inflight_max_events;
	uint64_t max_b = (uint64_t)r->cfg->inflight_max_bytes;

	return r->state == ST_STREAMING && r->have_rs && !r->queue_full &&
	       !(r->iso_wait && lsn_inflight(&r->lt) > 0) &&
	       r->win_events < max_ev && r->win_bytes < max_b &&
	       lsn_window_events(&r->lt) < max_ev;
}

static void read_stream(struct relay *r)
{
	struct repl_msg m;
	char err[1024];

	r->more_input = false;
	/* Every frame this turn reads was waiting when it began: one clock
	 * read for all of them (a drain reads READ_BUDGET a turn). */
	r->rx_turn_us = now_mono_us();
	for (int i = 0; i < READ_BUDGET && reading_allowed(r); i++) {
		if (r->have_pending) {
			m = r->pending;
			r->have_pending = false;
		} else {
			int rc = repl_read(&r->rs, &m, err, sizeof(err));
			if (rc == 0) {
				/* Read everything there was, between transactions:
				 * under load the next commits come within the
				 * hold and one wake-up takes them all; a lone
				 * commit after a quiet spell is read at once. Not
				 * inside a transaction, whose rest is on its way. */
				if (i > 0 && !lsn_in_txn(&r->lt))
					r->rx_hold_us = r->rx_turn_us +
					                r->cfg->pg_read_coalesce_us;
				return;
			}
			if (rc < 0) {
				if (repl_stream_err(&r->rs) == REPL_ERR_FATAL ||
				    repl_stream_err(&r->rs) == REPL_ERR_CONFIG) {
					log_error("%s", err);
					begin_stop(r, RELAY_EXIT_UNAVAILABLE);
				} else {
					log_warn("%s", err);
					session_end(r, false, "stream read failed");
				}
				return;
			}
		}
		switch (handle_msg(r, &m)) {
		case H_OK:
			break;
		case H_BLOCKED:
			r->pending = m;
			r->have_pending = true;
			return;
		case H_STOP:
		case H_POISON:
			return;
		}
	}
	/* libpq may hold more complete frames than the socket shows: do not
	 * let poll() sleep on a quiet socket while they wait. */
	r->more_input = reading_allowed(r);
}

static int compute_timeout(const struct relay *r, int64_t now)
{
	int64_t t = 1000 * 1000; /* wake at least once a second */

	if (r->have_rs && r->last_status_us + status_period_us(r) - now < t)
		t = r->last_status_us + status_period_us(r) - now;
	if (r->have_rs && confirm_due(r) &&
	    r->last_status_us + r->cfg->status_min_interval_ms * 1000 - now < t)
		t = r->last_status_us + r->cfg->status_min_interval_ms * 1000 - now;
	if (ledger_due(r) &&
	    r->ledger_sent_us + r->cfg->status_min_interval_ms * 1000 - now < t)
		t = r->ledger_sent_us + r->cfg->status_min_interval_ms * 1000 - now;
	if (r->have_rs && r->ledger_key[0] != '\0' && !r->ledger_verified &&
	    r->ledger_retry_us - now < t)
		t = r->ledger_retry_us - now;
	if ((r->state == ST_BACKOFF || r->state == ST_STANDBY) &&
	    r->retry_at_us - now < t)
		t = r->retry_at_us - now;
	if (r->cfg->stats_interval_ms > 0 && r->next_stats_us - now < t)
		t = r->next_stats_us - now;
	if (r->have_rs && reading_allowed(r)) {
		int64_t limit = r->cfg->pg_receive_timeout_ms * 1000;
		int64_t due = r->last_rx_us + (r->pinged ? limit : limit / 4) - now;
		if (due < t)
			t = due;
	}
	if (r->have_rs && reading_allowed(r) && r->rx_hold_us > now &&
	    r->rx_hold_us - now < t)
		t = r->rx_hold_us - now;
	if (r->reply_now || session_ending(r) || r->state == ST_CONNECTING ||
	    r->more_input)
		t = 0;
	/* While librdkafka holds events, poll it often enough for reports
	 * even if its fd is quiet. */
	if (r->win_events > 0 && t > 100 * 1000)
		t = 100 * 1000;
	if (t < 0)
		t = 0;
	return (int)((t + 999) / 1000);
}

/* ------------------------------- TEST HOOKS -------------------------------
 * Only in a build with -DOUTBOX_RELAY_TEST_HOOKS (the Makefile's default,
 * TEST_HOOKS=1, because t300 needs it; TEST_HOOKS=0 and the image leave
 * it out). RELAY_TEST_STALL_MS is read once, in relay_run(); main.c
 * installs the SIGUSR1 handler only when it is set. */
#ifdef OUTBOX_RELAY_TEST_HOOKS
static void test_hook_init(struct relay *r)
{
	const char *v = getenv("RELAY_TEST_STALL_MS");

	if (v != NULL)
		r->stall_ms = strtoll(v, NULL, 10);
}

/* SIGUSR1: a stuck loop, for /livez. */
static void test_hook_stall(struct relay *r)
{
	if (r->stall_ms <= 0)
		return;
	log_warn("test hook: blocking the loop for %lld ms",
	         (long long)r->stall_ms);
	usleep((useconds_t)(r->stall_ms * 1000));
}
#else
static void test_hook_init(struct relay *r) { (void)r; }
static void test_hook_stall(struct relay *r) { (void)r; }
#endif

static void drain_signals(struct relay *r, int sigfd)
{
	char buf[16];
	ssize_t n = read(sigfd, buf, sizeof(buf));
	bool stop = false;

	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == (char)SIGHUP) {
			log_info("SIGHUP: the configuration is read only at start, "
			         "so nothing changes; restart the relay to apply a new "
			         "one (it replays nothing it has confirmed)");
		} else if (buf[i] == (char)SIGUSR1) {
			test_hook_stall(r);
		} else {
			stop = true;
		}
	}
	if (stop && !relay_stopping(r)) {
		log_info("signal received: stopping reads, waiting up to %lld ms for "
		         "%llu in-flight events", (long long)r->cfg->shutdown_timeout_ms,
		         (unsigned long long)r->win_events);
		begin_stop(r, RELAY_EXIT_OK);
	}
}

/* True once a stopping relay may exit: everything of this session was
 * acked, or the shutdown timeout ran out. */
static bool drained(struct relay *r, int64_t now)
{
	/* Acked, and recorded in the ledger so the final update confirms it. */
	bool ledger_behind = ledger_due(r) || r->ledger_sending != 0;

	if (r->pub == NULL || (lsn_inflight(&r->lt) == 0 && !ledger_behind))
		return true;
	if (now >= r->drain_deadline_us) {
		log_warn("shutdown timeout: %llu events not acked; the slot replays "
		         "them on the next start",
		         (unsigned long long)lsn_inflight(&r->lt));
		return true;
	}
	return false;
}

static void finish(struct relay *r)
{
	char err[512];

	if (r->have_rs) {
		send_status(r, true);
		/* Give the final status update a moment to leave the socket. */
		for (int i = 0; i < 50 && repl_wants_write(&r->rs); i++) {
			struct pollfd p = { .fd = repl_socket(&r->rs), .events = POLLOUT };
			(void)poll(&p, 1, 20);
			if (repl_flush(&r->rs, err, sizeof(err)) < 0)
				break;
		}
		repl_close(&r->rs);
		r->have_rs = false;
	}
	if (r->pub != NULL) {
		r->tearing_down = true;
		pub_free(r->pub);
		r->pub = NULL;
	}
}

static void fill_figures(struct relay *r, struct relay_figures *f)
{
	memset(f, 0, sizeof(*f));
	f->state = phase_of(r);
	snprintf(f->reason, sizeof(f->reason), "%s", r->reason);
	f->kafka_up = r->pub != NULL && pub_broker_up(r->pub);
	f->kafka_contact_age_us = r->pub != NULL ? pub_contact_age_us(r->pub) : -1;
	f->kafka_stale = f->kafka_contact_age_us >
	                 r->cfg->kafka_contact_timeout_ms * 1000;
	f->pg_rx_age_us = r->have_rs ? now_mono_us() - r->last_rx_us : -1;
	f->pg_stale = r->have_rs &&
	              f->pg_rx_age_us > r->cfg->pg_receive_timeout_ms * 1000 / 2;
	f->received_lsn = lsn_received_max(&r->lt);
	f->confirmable_lsn = lsn_confirmable(&r->lt);
	f->confirmed_lsn = lsn_confirmed(&r->lt);
	f->events_received = r->n_received;
	f->events_published = r->n_acked;
	f->events_failed = r->n_failed;
	f->bytes_published = r->bytes_acked;
	f->inflight_events = r->win_events;
	f->inflight_bytes = r->win_bytes;
	f->last_ack_us = r->last_ack_wall_us;
	f->last_confirm_us = r->last_confirm_wall_us;
	f->oldest_pending_commit_us = lsn_oldest_pending_ts(&r->lt);
	f->reconnects = r->n_reconnects;
	f->events_republished = lsn_replayed(&r->lt);
	f->failovers = (uint64_t)lsn_promotions(&r->lt);
	f->producer_errors = r->kafka_restarts + pub_error_count(r->pub);
	f->heartbeat_rtt_us = r->hb_seen > 0 ? r->hb_rtt_us : -1;
	f->heartbeats_seen = r->hb_seen;
	f->kafka_failures = r->replay_count;
	f->kafka_failures_max = r->cfg->kafka_failure_max_replays;
	f->kafka_failure_lsn = r->replay_lsn;
	pub_stats(r->pub, &f->broker_rtt_us, &f->kafka_queue_msgs);
	f->latency = r->lat;
}

/* A few times a second: health figures out to the endpoint, state
 * changes to the log and the webhook, and a lost slot stops the relay. */
static void monitor_turn(struct relay *r, int64_t now)
{
	struct relay_figures f;
	char why[512];
	bool fatal;

	mon_tick(r->mon, now);
	notify_watchdog(now); /* systemd: WATCHDOG=1, the loop turned */
	if (!mon_due(r->mon, now))
		return;
	fill_figures(r, &f);
	notify_figures(&f, now); /* systemd: READY=1 once serving, STATUS= */
	(void)mon_update(r->mon, &f, (const char (*)[128])r->topics,
	                 r->topic_events, r->ntopics, now, &fatal, why, sizeof(why));
	if (fatal && !relay_stopping(r)) {
		log_error("%s", why);
		snprintf(r->reason, sizeof(r->reason), "slot lost or missing");
		begin_stop(r, RELAY_EXIT_UNAVAILABLE);
	}
}

int relay_run(const struct relay_config *cfg, int sigfd)
{
	struct relay *r = xcalloc(1, sizeof(*r));
	struct rusage ru;
	uint64_t unacked;
	int code;

	r->cfg = cfg;
	ss_init(&r->ss, cfg);
	pgo_init(&r->pgo, &r->ss.spec);
	ev_txn_reset(&r->txn);
	lsn_init(&r->lt);
	hist_reset(&r->lat);
	r->state = r->conn_state = ST_CONNECTING; /* the start state */
	r->hb_rtt_us = -1;
	test_hook_init(r);
	r->mon = mon_start(cfg, r->err, sizeof(r->err));
	if (r->mon == NULL) {
		log_error("%s", r->err);
		lsn_free(&r->lt);
		pgo_free(&r->pgo);
		ss_free(&r->ss);
		free(r);
		return RELAY_EXIT_UNAVAILABLE;
	}
	srandom((unsigned)(now_wall_us() ^ getpid()));
	r->next_stats_us = now_mono_us() + cfg->stats_interval_ms * 1000;

	for (;;) {
		struct pollfd fds[3];
		int nfds = 0, isig, ipub = -1, ipg = -1;
		bool held;
		int64_t now = now_mono_us();

		monitor_turn(r, now);
		if (relay_stopping(r) && drained(r, now))
			break;
		if (r->state == ST_CONNECTING ||
		    ((r->state == ST_BACKOFF || r->state == ST_STANDBY) &&
		     now >= r->retry_at_us))
			try_connect(r);

		isig = nfds;
		fds[nfds++] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
		if (r->pub != NULL) {
			ipub = nfds;
			fds[nfds++] = (struct pollfd){ .fd = pub_event_fd(r->pub),
				                           .events = POLLIN };
		}
		held = r->have_rs && reading_allowed(r) && now < r->rx_hold_us;
		if (r->have_rs) {
			ipg = nfds;
			fds[nfds] = (struct pollfd){ .fd = repl_socket(&r->rs) };
			if (reading_allowed(r) && !held)
				fds[nfds].events |= POLLIN;
			if (repl_wants_write(&r->rs))
				fds[nfds].events |= POLLOUT;
			nfds++;
		}
		if (poll(fds, (nfds_t)nfds, compute_timeout(r, now_mono_us())) < 0 &&
		    errno != EINTR) {
			log_error("poll: %s", strerror(errno));
			begin_stop(r, RELAY_EXIT_SOFTWARE);
		}
		now = now_mono_us();

		if (fds[isig].revents & POLLIN)
			drain_signals(r, sigfd);

		if (r->pub != NULL) {
			if (ipub >= 0 && (fds[ipub].revents & POLLIN))
				pub_event_fd_drain(r->pub);
			pub_poll(r->pub, 0);
			if (!session_ending(r) && !relay_stopping(r) &&
			    pub_fatal(r->pub, r->err, sizeof(r->err), NULL)) {
				log_error("kafka: %s", r->err);
				snprintf(r->replay_err, sizeof(r->replay_err), "%.200s", r->err);
				session_end(r, true, "producer failed");
			}
			/* Refused credentials: librdkafka would retry them forever
			 * while nothing can be published; stop instead (77). */
			if (!relay_stopping(r) &&
			    pub_auth_failed(r->pub, r->err, sizeof(r->err))) {
				log_error("kafka: %s", r->err);
				snprintf(r->reason, sizeof(r->reason), "Kafka refuses the "
				         "relay's credentials (see the log)");
				begin_stop(r, RELAY_EXIT_NOPERM);
			}
		}

		if (r->have_rs && ipg >= 0) {
			/* Also when a hold is over: what came meanwhile is on
			 * the socket, which poll() was not asked about. */
			if ((fds[ipg].revents & (POLLIN | POLLERR | POLLHUP)) ||
			    (held && now >= r->rx_hold_us)) {
				if (repl_consume(&r->rs, r->err, sizeof(r->err)) < 0) {
					log_warn("%s", r->err);
					session_end(r, false, "stream receive failed");
				}
			}
			if (!session_ending(r) && (fds[ipg].revents & POLLOUT) &&
			    repl_flush(&r->rs, r->err, sizeof(r->err)) < 0) {
				log_warn("%s", r->err);
				session_end(r, false, "stream send failed");
			}
		}
		if (r->have_rs && !session_ending(r) && now >= r->rx_hold_us)
			read_stream(r);

		/* A ledger that could not be read at the session's start. */
		if (r->have_rs && !session_ending(r) && !relay_stopping(r) &&
		    r->ledger_key[0] != '\0' && !r->ledger_verified &&
		    now >= r->ledger_retry_us)
			(void)ledger_verify(r, now);
		/* The ledger first (at most one record per status.min.interval.
		 * ms), then the confirm it allows. */
		if (!session_ending(r) && ledger_due(r) &&
		    now - r->ledger_sent_us >= r->cfg->status_min_interval_ms * 1000)
			ledger_record(r, now);
		/* The input has run dry between transactions: what librdkafka
		 * lingers on goes out now if it began after a quiet period (a
		 * lone commit: nothing to batch it with), or if the one-at-a-time
		 * replay waits for its ack. Not in the middle of a transaction:
		 * the walsender writes one frame by frame, so a pause there only
		 * means the rest is on its way, and a nudge would send the first
		 * events alone and leave the rest to the linger (the producer is
		 * no longer quiet then; t268). Under load the linger keeps
		 * batching (pub_nudge()). */
		if (r->pub != NULL && !session_ending(r) && !r->more_input &&
		    (r->iso_wait || !lsn_in_txn(&r->lt)))
			pub_nudge(r->pub, r->iso_wait);
		/* Status updates go out as soon as the watermark moves (at most
		 * one per status.min.interval.ms), and on the keepalive timer
		 * whatever else is happening, also while Kafka is stalled and
		 * reads are paused. */
		if (r->have_rs && !session_ending(r) &&
		    (r->reply_now || now - r->last_status_us >= status_period_us(r) ||
		     (confirm_due(r) &&
		      now - r->last_status_us >=
		          r->cfg->status_min_interval_ms * 1000))) {
			send_status(r, false);
			if (now - r->session_start_us > SESSION_STABLE_US)
				r->attempt = 0;
		}
		/* A connection that stays silent while we read is dead or stuck
		 * (a half-open TCP connection, a stopped walsender): ask for an
		 * answer at a quarter of pg.receive.timeout.ms, give up at the
		 * whole. While reads are paused, silence means nothing. */
		if (r->have_rs && !session_ending(r)) {
			int64_t quiet = now - r->last_rx_us;
			int64_t limit = r->cfg->pg_receive_timeout_ms * 1000;
			if (!reading_allowed(r)) {
				r->last_rx_us = now;
			} else if (quiet >= limit) {
				log_warn("no message from PostgreSQL for %lld ms "
				         "(pg.receive.timeout.ms): the connection is dead or "
				         "the walsender stuck; reconnecting",
				         (long long)(quiet / 1000));
				session_end(r, false, "receive timeout");
			} else if (quiet >= limit / 4 && !r->pinged) {
				send_status_req(r, false, true);
				r->pinged = true;
			}
		}
		/* The transactions that failed in Kafka are confirmed now: the
		 * backstop starts over, and the one-at-a-time replay ends. */
		if (r->replay_count > 0 &&
		    lsn_confirmed(&r->lt) >= r->replay_lsn && !session_ending(r)) {
			r->replay_count = 0;
			r->replay_err[0] = '\0';
		}
		if (r->iso_to != 0 && lsn_confirmed(&r->lt) >= r->iso_to &&
		    !session_ending(r)) {
			log_info("kafka: the events of commits " LSN_FMT " to " LSN_FMT
			         " were all published one at a time: the broker refused "
			         "their batch, not one record; check kafka.batch.size "
			         "against the topic's max.message.bytes",
			         LSN_ARGS(r->iso_from), LSN_ARGS(r->iso_to));
			r->iso_from = r->iso_to = 0;
		}
		if (r->cfg->stats_interval_ms > 0 && now >= r->next_stats_us) {
			log_stats(r, "stats");
			r->next_stats_us = now + r->cfg->stats_interval_ms * 1000;
		}
		if (r->state == ST_RESTARTING || r->state == ST_REBUILDING)
			restart(r);
		else if (r->state == ST_EXITING)
			break; /* stopping anyway: nothing more can be acked */
	}

	unacked = r->win_events; /* finish() purges what is left */
	finish(r);
	mon_stop(r->mon);
	ledger_close(r->ledger);
	getrusage(RUSAGE_SELF, &ru);
	log_stats(r, "summary");
	log_info("summary: peak_rss_kb=%ld unacked_at_exit=%llu exit=%d",
	         ru.ru_maxrss, (unsigned long long)unacked, r->exit_code);
	code = r->exit_code;
	lsn_free(&r->lt);
	pgo_free(&r->pgo);
	ss_free(&r->ss);
	free(r);
	return code;
}
