/* SPDX-License-Identifier: Apache-2.0 */
/* relay_int.h -- inside the relay loop: struct relay and the functions
 * its files (src/relay/) share with each other and with the unit tests
 * (tests/unit/check_relay.c) and the fuzz harness (tests/fuzz/
 * fuzz_relay.c). Nothing outside src/relay/ and those tests includes it;
 * the daemon sees relay.h only.
 *
 * Who owns what (the file that writes a part; the others read it):
 *
 *   state.c     st: the lifecycle, its table (allowed[]) and the stop
 *   delivery.c  win, iso, fail: the in-flight window, the one-at-a-time
 *               replay of a refused batch, this session's failed
 *               deliveries; delivery reports (on_dr) and produce calls
 *   confirm.c   lg: the slot ledger gate; the one confirm clamp and the
 *               standby status updates that send it
 *   backstop.c  bs: the same transaction failing again and again
 *   stats.c     ctr: counters, per-topic counts, latency, figures
 *   produce.c   one record to Kafka (an event or its dead-letter
 *               record) into the books and the window
 *   poison.c    pz: the dead-letter policy (poison.policy): poison
 *               events parked in the dead-letter topic or skipped
 *   txn.c       tx: exactly-once, the Kafka transactions and the acks
 *               they hold back until they commit
 *   session.c   the session: connect, read, decode, end and restart
 *   loop.c      relay_run(): the poll() loop as named steps
 *
 * The LSN books have one owner, lsn_tracker.c (r->lt), read through its
 * functions only (make boundaries). */
#ifndef RELAY_RELAY_INT_H
#define RELAY_RELAY_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/config.h"
#include "lib/hist.h"
#include "decode/event.h"
#include "decode/stream_spec.h"
#include "health/health.h"
#include "kafka/ledger.h"
#include "kafka/publisher.h"
#include "pg/repl.h"
#include "relay/kafka_port.h"
#include "relay/lsn_tracker.h"

#define READ_BUDGET 4096          /* frames per loop turn, keeps timers fair */
#define LEDGER_TOKEN UINT64_MAX   /* delivery token of the ledger's records */
/* A dead-letter record's token: the tracker's token of the event it
 * replaces, with this bit set, so that it counts in the LSN books
 * exactly like that event and its report is told apart (poison.c). */
#define DLQ_TOKEN_BIT (UINT64_C(1) << 62)
#define LEDGER_READ_TIMEOUT_MS 2000 /* blocks the loop: well within
                                     * http.livez.timeout.ms */
#define LEDGER_RETRY_US (10 * INT64_C(1000000)) /* after a failed read */
#define SESSION_STABLE_US (30 * INT64_C(1000000))

/* The lifecycle: see the table in state.c. */
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

/* poison.policy (poison.c). */
enum poison_policy { POISON_FAIL, POISON_DLQ, POISON_SKIP };

/* A record Kafka refused on its own (poison.c). */
struct poison_ref {
	int64_t tries;          /* 0: none */
	bool park;              /* parked at the next replay whatever
	                         * tries says (refused before it was sent) */
	uint64_t lsn, ord;      /* its transaction (own.end_lsn) and place
	                         * in it */
	int err;                /* the broker's error; 0 none */
	bool counted;           /* parked (or skipped) and counted */
	char what[512];         /* its report */
};
#define POISON_HELD_MAX 8

/* What became of a frame: handled, to be tried again (the window or
 * the producer's queue is full), or the end of reading (a stop, a
 * restart), H_POISON only inside handle_msg(). */
enum handled { H_OK, H_BLOCKED, H_STOP, H_POISON };

/* Called by relay_goto() after each change (NULL: none); the unit tests
 * check every transition against the table with it. */
typedef void (*relay_goto_fn)(void *ctx, enum relay_state from,
                              enum relay_state to);

struct relay {
	const struct relay_config *cfg; /* borrowed */
	struct stream_spec ss;          /* what is asked of the plugin; owned */
	struct pgo_state pgo;           /* pgoutput's relation cache and open
	                                 * transaction; owned, lives as long
	                                 * as the relay, emptied before each
	                                 * START_REPLICATION (unused for
	                                 * wal2json) */
	struct ev_txn txn;              /* the transaction being read */
	struct lsn_tracker lt;          /* the LSN books: lsn_tracker.c's */

	/* The producer, behind the seam. */
	const struct kafka_port *kp;    /* borrowed */
	struct kp_producer *pub;        /* owned; NULL between sessions */
	bool tearing_down;              /* inside kp->close(): its reports are
	                                 * purges of that producer. It spans a
	                                 * state change (a report served by the
	                                 * teardown may begin a stop), so it
	                                 * cannot be a state of its own */

	/* The session (session.c). */
	struct repl_stream rs;
	bool have_rs;
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
	bool reply_now;
	bool more_input;                /* read budget ran out: frames may wait
	                                 * in libpq */
	/* A frame that could not be produced yet (QUEUE_FULL); it points
	 * into rs.copybuf, which stays valid until the next repl_read(). */
	bool have_pending;
	struct repl_msg pending;
	int64_t next_stats_us;

	/* The lifecycle (state.c). */
	struct {
		enum relay_state state;     /* see the table in state.c */
		enum relay_state conn_state; /* the last of CONNECTING ..
		                             * STREAMING entered: what stats lines
		                             * and the figures of an ending session
		                             * show */
		int exit_code;              /* set by begin_stop() */
		int64_t drain_deadline_us;
		relay_goto_fn on_goto;      /* tests only; NULL in the daemon */
		void *on_goto_ctx;
	} st;

	/* The in-flight window, over every session: decremented by each
	 * delivery report, whatever session it belongs to (delivery.c). */
	struct {
		uint64_t events;
		uint64_t bytes;
		bool queue_full;            /* the producer said QUEUE_FULL */
		bool iso_wait;              /* an isolated event waits for the
		                             * previous one's report */
	} win;

	/* Transactions whose commit end is in [from, to] publish one event
	 * at a time: a batch the broker refused is replayed record by
	 * record, so the healthy records before the refused one get through
	 * and the refused one is named. 0/0: off (delivery.c). */
	struct {
		uint64_t from, to;
	} iso;

	/* Failed deliveries of this session (record_failure(), delivery.c). */
	struct {
		bool permanent;             /* one with a permanent error */
		uint64_t first_end, last_end; /* commit ends of their txns */
		uint64_t first_any;         /* oldest txn with any failure */
		int err;                    /* the first permanent error */
		char what[512];             /* its report */
	} fail;

	/* The slot ledger gate (ledger.h, confirm.c): the relay confirms
	 * nothing past what the ledger holds for the slot; it records the
	 * watermark first. */
	struct {
		struct ledger *ledger;      /* owned; the reader, NULL until used */
		char key[256];              /* "" while the ledger is off */
		bool verified;              /* this session's slot was checked */
		int64_t retry_us;           /* when to try reading it again */
		uint64_t lsn;               /* recorded and acked */
		uint64_t sending;           /* a record for this in flight; 0 none */
		int64_t sent_us;            /* when the last one was produced */
	} lg;

	/* The backstop: the same transaction failing again and again
	 * (backstop.c). */
	struct {
		uint64_t lsn;               /* its commit end */
		int64_t count;              /* failures in a row */
		char err[256];              /* the last one */
	} bs;

	/* The dead-letter policy (poison.c). */
	struct {
		enum poison_policy policy;
		uint64_t ord;               /* events of the open transaction
		                             * handed on so far: the next one's
		                             * place in it */
		/* The last event produced to its topic (delivery.c): while a
		 * refused batch is replayed one at a time, the refused one. */
		bool sent_valid;
		uint64_t sent_lsn, sent_ord;
		/* A record Kafka refused on its own, tried again in the
		 * following sessions until it gets through, or is parked or
		 * skipped when tries passes poison.retries. */
		struct poison_ref ref;
		/* Refused records of the replayed range already due to be
		 * parked when another one was refused: still parked by each
		 * replay until the slot is past them. */
		struct poison_ref held[POISON_HELD_MAX];
		size_t nheld;
		/* The newest decode poison counted (its transaction and
		 * place): a replay meets the ones before it again, and those
		 * are not counted twice. */
		uint64_t seen_lsn, seen_ord;
		uint64_t n_parked;          /* poison events whose dead-letter
		                             * record was produced, each once */
		uint64_t n_skipped;         /* poison events skipped */
	} pz;

	/* Exactly-once (txn.c): delivery.guarantee = exactly-once. */
	struct {
		bool on;                    /* the guarantee is exactly-once */
		char id[300];               /* the producer's transactional.id */
		bool open;                  /* a Kafka transaction is begun */
		bool want;                  /* it is due: reading stops at the
		                             * next commit of the stream */
		bool committing;            /* its ledger record is produced:
		                             * reading waits, the commit follows
		                             * the last report */
		bool ledger_acked;          /* ... and that record was acked */
		bool single;                /* each PostgreSQL transaction
		                             * commits alone, up to a poison
		                             * event met inside one (session.c's
		                             * fail_stop()) */
		int64_t begun_us;           /* when it began (mono) */
		uint64_t events;            /* records produced in it */
		uint64_t at_commit;         /* ... of them at the last
		                             * PostgreSQL commit read */
		uint64_t ledger_lsn;        /* the lsn its ledger record holds */
		/* Records of it Kafka acked, not yet told to the tracker:
		 * (token, how many) runs, one per PostgreSQL transaction
		 * mostly. Owned. */
		struct txn_acks {
			uint64_t token, n;
		} *acks;
		size_t nacks, cap;
		uint64_t n_commits, n_aborts;
		uint64_t commit_us;         /* time spent in commits, total */
	} tx;

	/* Counters and figures (stats.c renders them; each is bumped where
	 * what it counts happens). */
	struct {
		uint64_t n_received, n_acked, n_failed, n_stale, n_txns;
		uint64_t n_reconnects;
		uint64_t n_invalid_ops;     /* updates of outbox rows logged and
		                             * stepped over (table.op.invalid.
		                             * behavior warn or error) */
		uint64_t n_skipped;         /* events acked in an earlier session,
		                             * not published again */
		uint64_t n_status;          /* standby status updates sent */
		uint64_t bytes_acked;
		struct hist lat;
		int64_t last_ack_wall_us;
		int64_t last_confirm_wall_us;
		int64_t hb_rtt_us;
		uint64_t hb_seen;
		uint64_t kafka_restarts;
		/* Where the loop waits while streaming (wait_turn()): in poll()
		 * with the window open, for the server to send (wait_pg_us), or
		 * with the window full, for Kafka's acks (wait_kafka_us). */
		uint64_t wait_pg_us, wait_kafka_us;
		struct pub_stats kstats;    /* the producer's, as last read: the
		                             * summary line comes after its close */
		char topics[16][128];       /* low-cardinality metric labels */
		uint64_t topic_events[16];
		size_t ntopics;
	} ctr;

	char err[2048];

	/* Health (see monitor.h). */
	struct monitor *mon;            /* owned; NULL in unit tests */
	char reason[256];               /* why not streaming; no server text */
#ifdef OUTBOX_RELAY_TEST_HOOKS
	int64_t stall_ms;               /* test hook: SIGUSR1 blocks the loop */
	uint64_t kill_at_commit;        /* test hook: SIGKILL right after this
	                                 * Kafka commit, before its confirm */
#endif
};

/* A relay in CONNECTING with everything but the monitor and the
 * connection (loop.c; relay_run() and the tests). Never NULL (xcalloc).
 * kp is borrowed and must outlive r; relay_free() frees what is owned. */
struct relay *relay_new(const struct relay_config *cfg,
                        const struct kafka_port *kp);
void relay_free(struct relay *r);

/* state.c */
const char *relay_state_name(enum relay_state s);
bool relay_transition_allowed(enum relay_state from, enum relay_state to);
bool relay_stopping(const struct relay *r);
bool session_ending(const struct relay *r);
void relay_goto(struct relay *r, enum relay_state to, const char *why);
void session_end(struct relay *r, bool kafka, const char *why);
void begin_stop(struct relay *r, int code);
enum relay_phase phase_of(const struct relay *r);
enum relay_phase state_phase_of(enum relay_state s);

/* confirm.c */
uint64_t confirm_target(const struct relay *r);
uint64_t ledger_target(const struct relay *r);
bool confirm_due(const struct relay *r);
bool ledger_due(const struct relay *r);
enum pub_send_result ledger_send(struct relay *r, uint64_t lsn,
                                 const struct ledger_commit *c, int64_t now);
void ledger_record(struct relay *r, int64_t now);
bool ledger_verify(struct relay *r, int64_t now);
bool ledger_skip_committed(struct relay *r, const struct ledger_entry *e);
bool ledger_session_start(struct relay *r);
void ledger_report(struct relay *r, const struct pub_report *rep);
void send_status(struct relay *r, bool force_log);
void send_status_req(struct relay *r, bool force_log, bool ping);

/* delivery.c */
void on_dr(void *opaque, const struct pub_report *rep);
enum handled handle_event(struct relay *r, const struct ev_event *ev);
bool window_open(const struct relay *r);
bool reading_allowed(const struct relay *r);
bool kafka_open(struct relay *r);
void kafka_close(struct relay *r);
void window_reset(struct relay *r);
bool kafka_failed(struct relay *r);
void isolation_turn(struct relay *r);

/* produce.c: one record to Kafka, the event's or its dead-letter
 * record (dlq), counted in the tracker and the window. */
enum handled produce(struct relay *r, const char *topic,
                     const struct rec_str *key, const struct rec_str *value,
                     const struct route_headers *h, size_t bytes,
                     uint64_t mark, char *err, size_t errlen);

/* poison.c */
void poison_init(struct relay *r);
void poison_txn_begin(struct relay *r);
void poison_handed(struct relay *r, enum handled h);
enum handled poison_decode(struct relay *r, const struct ev_record *er);
bool poison_parks(struct relay *r);
enum handled poison_park(struct relay *r, const struct ev_event *ev);
enum handled poison_rejected(struct relay *r, const struct ev_event *ev,
                             const char *err);
bool poison_refused(struct relay *r, const struct pub_report *rep,
                    const struct lsn_txn *t);
void poison_dlq_report(struct relay *r, const struct pub_report *rep);
bool poison_retrying(const struct relay *r, uint64_t key);
int64_t poison_backoff_us(struct relay *r);
void poison_turn(struct relay *r);

/* txn.c */
void txn_init_relay(struct relay *r);
void txn_free(struct relay *r);
bool txn_name(struct relay *r);
bool txn_session_start(struct relay *r);
bool txn_gate(struct relay *r);
bool txn_hold_ack(struct relay *r, const struct pub_report *rep);
void txn_ledger_report(struct relay *r, const struct pub_report *rep);
void txn_after_commit(struct relay *r);
/* Every record of the open Kafka transaction belongs to whole
 * PostgreSQL transactions: between two of them, or inside one that has
 * produced nothing yet (a poison event as its first, say: the stop can
 * commit what came before it). */
bool txn_whole(const struct relay *r);
void txn_turn(struct relay *r, int64_t now);
void txn_abandon(struct relay *r);
bool txn_drained(const struct relay *r);
uint64_t unreported(const struct relay *r);

/* backstop.c */
void backstop_note(struct relay *r, const char *err, int max);
bool backstop_count(struct relay *r, uint64_t key);
void backstop_turn(struct relay *r);

/* stats.c */
void stats_ack(struct relay *r, const struct pub_report *rep, int64_t ts);
void log_stats(struct relay *r, const char *prefix);
void fill_figures(struct relay *r, struct relay_figures *f);
void monitor_turn(struct relay *r, int64_t now);

/* session.c */
int64_t backoff_us(struct relay *r);
enum lsn_resume session_open(struct relay *r, const struct lsn_server *srv);
void try_connect(struct relay *r);
void restart(struct relay *r);
void rewound_stop(struct relay *r);
enum handled handle_msg(struct relay *r, const struct repl_msg *m);
bool take_frame(struct relay *r, const struct repl_msg *m);
void read_stream(struct relay *r);

/* loop.c: the steps of one turn that need no connection of their own. */
void serve_kafka(struct relay *r, bool fd_ready);
void nudge_turn(struct relay *r);
bool drained(struct relay *r, int64_t now);
bool end_turn(struct relay *r);

#endif
