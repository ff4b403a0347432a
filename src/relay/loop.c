/* SPDX-License-Identifier: Apache-2.0 */
/* loop.c -- relay_run(): one thread, one poll() loop over the
 * replication socket, the producer's event fd, the signal pipe and
 * timers.
 *
 * Each turn is a list of named steps, in this order:
 *
 *   monitor_turn    figures to /readyz and /metrics; a lost slot stops
 *   (drained)       a stopping relay ends once nothing is in flight
 *   connect_if_due  the first connect, or the next after a backoff
 *   wait_turn       poll() until a socket, a signal or a timer is due
 *   drain_signals   SIGTERM/SIGINT begin the stop
 *   serve_kafka     delivery reports, a failed or refused producer
 *   serve_pg        what the server sent and what we owe it; read
 *   txn_turn        exactly-once: a due Kafka transaction committed
 *   ledger_turn     the slot ledger: a retried read, the next record
 *   nudge_turn      send what lingers when the input ran dry
 *   confirm_turn    standby status updates: the confirm
 *   liveness_turn   a silent server is pinged, then given up
 *   replay_turn     the backstop, the isolated replay and a refused
 *                   record's retries end once past
 *   stats_turn      a stats line every stats.interval.ms
 *   end_turn        a session that ended is restarted, or the loop ends
 *
 * A step that ends the session (session_end()) or begins the stop
 * (begin_stop()) only changes the state; the steps after it read the
 * state and skip what no longer applies (session_ending()), and
 * end_turn() acts on it. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/log.h"
#include "health/monitor.h"
#include "relay/relay.h"
#include "relay/relay_int.h"

struct relay *relay_new(const struct relay_config *cfg,
                        const struct kafka_port *kp)
{
	struct relay *r = xcalloc(1, sizeof(*r));

	r->cfg = cfg;
	r->kp = kp;
	ss_init(&r->ss, cfg);
	pgo_init(&r->pgo, &r->ss.spec);
	ev_txn_reset(&r->txn);
	lsn_init(&r->lt);
	poison_init(r);
	txn_init_relay(r);
	hist_reset(&r->ctr.lat);
	r->st.state = r->st.conn_state = ST_CONNECTING; /* the start state */
	r->ctr.hb_rtt_us = -1;
	r->ctr.kstats = (struct pub_stats){ -1, -1, -1, -1, -1, -1 };
	return r;
}

/* The producer and the session must be gone (finish()); the ledger
 * reader is closed if relay_run() did not. */
void relay_free(struct relay *r)
{
	if (r == NULL)
		return;
	ledger_close(r->lg.ledger);
	txn_free(r);
	lsn_free(&r->lt);
	pgo_free(&r->pgo);
	ss_free(&r->ss);
	free(r);
}

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

/* How long poll() may sleep: until the first timer is due. */
static int compute_timeout(const struct relay *r, int64_t now)
{
	int64_t t = 1000 * 1000; /* wake at least once a second */

	if (r->have_rs && r->last_status_us + status_period_us(r) - now < t)
		t = r->last_status_us + status_period_us(r) - now;
	if (r->have_rs && confirm_due(r) &&
	    r->last_status_us + r->cfg->status_min_interval_ms * 1000 - now < t)
		t = r->last_status_us + r->cfg->status_min_interval_ms * 1000 - now;
	if (ledger_due(r) &&
	    r->lg.sent_us + r->cfg->status_min_interval_ms * 1000 - now < t)
		t = r->lg.sent_us + r->cfg->status_min_interval_ms * 1000 - now;
	/* Exactly-once: an open transaction is due after its interval, if
	 * it can commit then; inside a PostgreSQL transaction that has
	 * produced, or with a record waiting for room, what lets it commit
	 * (the rest of the stream, reports) wakes the loop itself, and a
	 * timer in the past would spin it (helper B's bench-smoke: 1.0 s of
	 * CPU for 10,000 events, 0.11 s without). */
	if (r->tx.open && !r->tx.committing && txn_whole(r) && !r->have_pending &&
	    r->tx.begun_us + r->cfg->delivery_txn_interval_ms * 1000 - now < t)
		t = r->tx.begun_us + r->cfg->delivery_txn_interval_ms * 1000 - now;
	if (r->have_rs && r->lg.key[0] != '\0' && !r->lg.verified &&
	    r->lg.retry_us - now < t)
		t = r->lg.retry_us - now;
	if ((r->st.state == ST_BACKOFF || r->st.state == ST_STANDBY) &&
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
	if (r->reply_now || session_ending(r) || r->st.state == ST_CONNECTING ||
	    r->more_input)
		t = 0;
	/* While librdkafka holds events, poll it often enough for reports
	 * even if its fd is quiet. */
	if (r->win.events > 0 && t > 100 * 1000)
		t = 100 * 1000;
	if (t < 0)
		t = 0;
	return (int)((t + 999) / 1000);
}

/* ------------------------------- TEST HOOKS -------------------------------
 * Only in a build with -DOUTBOX_RELAY_TEST_HOOKS: the test build
 * (make test-build, build/test/; t300 needs it), never make, make install
 * or the image. RELAY_TEST_STALL_MS is read once, in relay_run(); main.c
 * installs the SIGUSR1 handler only when it is set.
 * RELAY_TEST_KILL_AT_COMMIT=N kills the process with SIGKILL right after
 * its Nth Kafka commit, before the tracker hears of it (txn.c): the one
 * moment where only the ledger's skip keeps a read_committed consumer
 * from duplicates (t195 (f)). */
#ifdef OUTBOX_RELAY_TEST_HOOKS
static void test_hook_init(struct relay *r)
{
	const char *v = getenv("RELAY_TEST_STALL_MS");

	if (v != NULL)
		r->stall_ms = strtoll(v, NULL, 10);
	v = getenv("RELAY_TEST_KILL_AT_COMMIT");
	if (v != NULL)
		r->kill_at_commit = strtoull(v, NULL, 10);
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
		         (unsigned long long)r->win.events);
		begin_stop(r, RELAY_EXIT_OK);
	}
}

/* True once a stopping relay may exit: everything of this session was
 * acked, or the shutdown timeout ran out. */
bool drained(struct relay *r, int64_t now)
{
	/* Acked, and recorded in the ledger so the final update confirms it
	 * (exactly-once: committed, txn.c). */
	bool ledger_behind = ledger_due(r) || r->lg.sending != 0;

	if (r->pub == NULL || (r->tx.on ? txn_drained(r)
	                                : lsn_inflight(&r->lt) == 0 && !ledger_behind))
		return true;
	if (now >= r->st.drain_deadline_us) {
		log_warn("shutdown timeout: %llu events not acked; the slot replays "
		         "them on the next start",
		         (unsigned long long)lsn_inflight(&r->lt));
		return true;
	}
	return false;
}

/* The end: the final status update, then the producer's teardown (what
 * it still holds is purged). */
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
	kafka_close(r);
}


static void connect_if_due(struct relay *r, int64_t now)
{
	if (r->st.state == ST_CONNECTING ||
	    ((r->st.state == ST_BACKOFF || r->st.state == ST_STANDBY) &&
	     now >= r->retry_at_us))
		try_connect(r);
}

/* What one poll() waits on, and what it said. */
struct turn {
	struct pollfd fds[3];
	int nfds, isig, ipub, ipg;
	bool held;          /* reads are held back (pg.read.coalesce.us) */
};

/* Returns the time after poll(): the steps of the turn read it. */
static int64_t wait_turn(struct relay *r, int sigfd, struct turn *t,
                         int64_t now)
{
	int64_t after;

	t->nfds = 0;
	t->ipub = t->ipg = -1;
	t->isig = t->nfds;
	t->fds[t->nfds++] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
	if (r->pub != NULL) {
		t->ipub = t->nfds;
		t->fds[t->nfds++] = (struct pollfd){ .fd = r->kp->event_fd(r->pub),
		                                     .events = POLLIN };
	}
	t->held = r->have_rs && reading_allowed(r) && now < r->rx_hold_us;
	if (r->have_rs) {
		t->ipg = t->nfds;
		t->fds[t->nfds] = (struct pollfd){ .fd = repl_socket(&r->rs) };
		if (reading_allowed(r) && !t->held)
			t->fds[t->nfds].events |= POLLIN;
		if (repl_wants_write(&r->rs))
			t->fds[t->nfds].events |= POLLOUT;
		t->nfds++;
	}
	now = now_mono_us();
	if (poll(t->fds, (nfds_t)t->nfds, compute_timeout(r, now)) < 0 &&
	    errno != EINTR) {
		log_error("poll: %s", strerror(errno));
		begin_stop(r, RELAY_EXIT_SOFTWARE);
	}
	/* The drain's profile: a wait with the window full is Kafka's, one
	 * with reading allowed is the server's. */
	after = now_mono_us();
	if (r->have_rs && r->st.state == ST_STREAMING) {
		if (!window_open(r))
			r->ctr.wait_kafka_us += (uint64_t)(after - now);
		else if (!t->held)
			r->ctr.wait_pg_us += (uint64_t)(after - now);
	}
	return after;
}

/* Delivery reports (on_dr(), inside kp->poll()), then the producer's
 * own failures. fd_ready: its event fd was readable. */
void serve_kafka(struct relay *r, bool fd_ready)
{
	if (r->pub == NULL)
		return;
	if (fd_ready)
		r->kp->event_fd_drain(r->pub);
	r->kp->poll(r->pub, 0);
	if (!session_ending(r) && !relay_stopping(r) &&
	    r->kp->fatal(r->pub, r->err, sizeof(r->err), NULL)) {
		log_error("kafka: %s", r->err);
		backstop_note(r, r->err, 200);
		session_end(r, true, "producer failed");
	}
	/* Refused credentials: librdkafka would retry them forever while
	 * nothing can be published; stop instead (77). */
	if (!relay_stopping(r) &&
	    r->kp->auth_failed(r->pub, r->err, sizeof(r->err))) {
		log_error("kafka: %s", r->err);
		snprintf(r->reason, sizeof(r->reason), "Kafka refuses the "
		         "relay's credentials (see the log)");
		begin_stop(r, RELAY_EXIT_NOPERM);
	}
}

static void serve_pg(struct relay *r, const struct turn *t, int64_t now)
{
	if (r->have_rs && t->ipg >= 0) {
		short rev = t->fds[t->ipg].revents;
		/* Also when a hold is over: what came meanwhile is on the
		 * socket, which poll() was not asked about. */
		if ((rev & (POLLIN | POLLERR | POLLHUP)) ||
		    (t->held && now >= r->rx_hold_us)) {
			if (repl_consume(&r->rs, r->err, sizeof(r->err)) < 0) {
				log_warn("%s", r->err);
				session_end(r, false, "stream receive failed");
			}
		}
		if (!session_ending(r) && (rev & POLLOUT) &&
		    repl_flush(&r->rs, r->err, sizeof(r->err)) < 0) {
			log_warn("%s", r->err);
			session_end(r, false, "stream send failed");
		}
	}
	if (r->have_rs && !session_ending(r) && now >= r->rx_hold_us)
		read_stream(r);
}

static void ledger_turn(struct relay *r, int64_t now)
{
	/* A ledger that could not be read at the session's start. */
	if (r->have_rs && !session_ending(r) && !relay_stopping(r) &&
	    r->lg.key[0] != '\0' && !r->lg.verified && now >= r->lg.retry_us)
		(void)ledger_verify(r, now);
	/* The ledger first (at most one record per status.min.interval.ms),
	 * then the confirm it allows. */
	if (!session_ending(r) && ledger_due(r) &&
	    now - r->lg.sent_us >= r->cfg->status_min_interval_ms * 1000)
		ledger_record(r, now);
}

/* The input has run dry between transactions: what the producer lingers
 * on goes out now if it began after a quiet period (a lone commit:
 * nothing to batch it with), or if the one-at-a-time replay waits for
 * its ack. Not in the middle of a transaction: the walsender writes one
 * frame by frame, so a pause there only means the rest is on its way,
 * and a nudge would send the first events alone and leave the rest to
 * the linger (the producer is no longer quiet then; t268). Under load
 * the linger keeps batching (pub_nudge()). */
void nudge_turn(struct relay *r)
{
	if (r->pub != NULL && !session_ending(r) &&
	    (r->win.iso_wait || r->tx.committing ||
	     (!r->more_input && !lsn_in_txn(&r->lt))))
		r->kp->nudge(r->pub, r->win.iso_wait || r->tx.committing);
}

/* Status updates go out as soon as the watermark moves (at most one per
 * status.min.interval.ms), and on the keepalive timer whatever else is
 * happening, also while Kafka is stalled and reads are paused. */
static void confirm_turn(struct relay *r, int64_t now)
{
	if (r->have_rs && !session_ending(r) &&
	    (r->reply_now || now - r->last_status_us >= status_period_us(r) ||
	     (confirm_due(r) &&
	      now - r->last_status_us >= r->cfg->status_min_interval_ms * 1000))) {
		send_status(r, false);
		if (now - r->session_start_us > SESSION_STABLE_US)
			r->attempt = 0;
	}
}

/* A connection that stays silent while we read is dead or stuck (a
 * half-open TCP connection, a stopped walsender): ask for an answer at a
 * quarter of pg.receive.timeout.ms, give up at the whole. While reads
 * are paused, silence means nothing. */
static void liveness_turn(struct relay *r, int64_t now)
{
	int64_t quiet, limit;

	if (!r->have_rs || session_ending(r))
		return;
	quiet = now - r->last_rx_us;
	limit = r->cfg->pg_receive_timeout_ms * 1000;
	if (!reading_allowed(r)) {
		r->last_rx_us = now;
	} else if (quiet >= limit) {
		log_warn("no message from PostgreSQL for %lld ms "
		         "(pg.receive.timeout.ms): the connection is dead or the "
		         "walsender stuck; reconnecting", (long long)(quiet / 1000));
		session_end(r, false, "receive timeout");
	} else if (quiet >= limit / 4 && !r->pinged) {
		send_status_req(r, false, true);
		r->pinged = true;
	}
}

/* The transactions that failed in Kafka are confirmed now: the backstop
 * starts over, and the one-at-a-time replay ends. */
static void replay_turn(struct relay *r)
{
	backstop_turn(r);
	isolation_turn(r);
	poison_turn(r);
}

static void stats_turn(struct relay *r, int64_t now)
{
	if (r->cfg->stats_interval_ms > 0 && now >= r->next_stats_us) {
		log_stats(r, "stats");
		r->next_stats_us = now + r->cfg->stats_interval_ms * 1000;
	}
}

/* The session that ended this turn is restarted. Returns false when the
 * loop ends: stopping, and the session broke as well. */
bool end_turn(struct relay *r)
{
	if (r->st.state == ST_RESTARTING || r->st.state == ST_REBUILDING)
		restart(r);
	else if (r->st.state == ST_EXITING)
		return false; /* stopping anyway: nothing more can be acked */
	return true;
}

int relay_run(const struct relay_config *cfg, int sigfd)
{
	struct relay *r = relay_new(cfg, kafka_port_rd());
	struct rusage ru;
	uint64_t unacked;
	int code;

	test_hook_init(r);
	r->mon = mon_start(cfg, r->err, sizeof(r->err));
	if (r->mon == NULL) {
		log_error("%s", r->err);
		relay_free(r);
		return RELAY_EXIT_UNAVAILABLE;
	}
	srandom((unsigned)(now_wall_us() ^ getpid()));
	r->next_stats_us = now_mono_us() + cfg->stats_interval_ms * 1000;

	for (;;) {
		struct turn t;
		int64_t now = now_mono_us();

		monitor_turn(r, now);
		if (relay_stopping(r) && drained(r, now))
			break;
		connect_if_due(r, now);
		now = wait_turn(r, sigfd, &t, now);
		if (t.fds[t.isig].revents & POLLIN)
			drain_signals(r, sigfd);
		serve_kafka(r, t.ipub >= 0 && (t.fds[t.ipub].revents & POLLIN));
		serve_pg(r, &t, now);
		txn_turn(r, now);
		ledger_turn(r, now);
		nudge_turn(r);
		confirm_turn(r, now);
		liveness_turn(r, now);
		replay_turn(r);
		stats_turn(r, now);
		if (!end_turn(r))
			break;
	}

	unacked = r->win.events; /* finish() purges what is left */
	finish(r);
	mon_stop(r->mon);
	ledger_close(r->lg.ledger);
	r->lg.ledger = NULL;
	getrusage(RUSAGE_SELF, &ru);
	log_stats(r, "summary");
	log_info("summary: peak_rss_kb=%ld unacked_at_exit=%llu exit=%d",
	         ru.ru_maxrss, (unsigned long long)unacked, r->st.exit_code);
	code = r->st.exit_code;
	relay_free(r);
	return code;
}
