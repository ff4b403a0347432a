/* SPDX-License-Identifier: Apache-2.0 */
/* session.c -- one session with PostgreSQL: connect and check the slot,
 * START_REPLICATION from the slot's confirmed position, read and decode
 * each record (wal2json text or a pgoutput message: slot.plugin), hand
 * each event to delivery.c, and end the session (restart()) when
 * anything fails. The next session replays from the slot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "relay/relay_int.h"

int64_t backoff_us(struct relay *r)
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

/* The server's WAL is not the WAL this process published from: the
 * database was restored, rewound or replaced. Nothing is confirmed past
 * the slot's own position; an operator decides (runbook). */
void rewound_stop(struct relay *r)
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

/* START_REPLICATION was accepted: the session is open against the
 * server srv describes. Returns what the tracker makes of it. */
enum lsn_resume session_open(struct relay *r, const struct lsn_server *srv)
{
	r->ever_streamed = true;
	r->perm_failures = 0;
	r->reason[0] = '\0';
	relay_goto(r, ST_STREAMING, "START_REPLICATION");
	r->session_start_us = now_mono_us();
	r->last_rx_us = r->session_start_us;
	r->pinged = false;
	r->server_wal_end = srv->wal_end;
	return lsn_resume(&r->lt, srv);
}

void try_connect(struct relay *r)
{
	const struct tli_switch *history;
	int history_len, promotions;
	enum lsn_resume resume;
	enum repl_err rc;
	char err[1024];
	const bool *notnull;
	unsigned present;

	/* Exactly-once opens its producer once the slot is this process's
	 * (txn_session_start()). */
	if (!r->tx.on && !kafka_open(r))
		return;
	/* The server describes every relation again in each session, and
	 * one cached from the last may have changed since. */
	pgo_reset(&r->pgo);
	ss_restore_trace(&r->ss);
	rc = repl_start(&r->rs, r->cfg->pg_conninfo, r->cfg->slot_name, &r->ss,
	                r->cfg->pg_receive_timeout_ms, err, sizeof(err));
	switch (rc) {
	case REPL_OK:
		r->have_rs = true;
		/* json-schema's optional flags follow the table's NOT NULL,
		 * as Debezium's schema does (schema.*: the defaults). */
		if (repl_table(&r->rs, &notnull, &present)) {
			r->ss.env.key_optional = !notnull[REC_COL_KEY];
			r->ss.env.payload_optional = !notnull[REC_COL_PAYLOAD];
			ss_drop_absent_trace(&r->ss, present);
		}
		promotions = lsn_promotions(&r->lt);
		history = repl_history(&r->rs, &history_len);
		resume = session_open(r, &(struct lsn_server){
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
		/* Exactly-once: older producers fenced before the ledger is
		 * read, so that none commits after the read (txn.c). */
		if (r->tx.on && !(txn_name(r) && kafka_open(r) &&
		                  txn_session_start(r)))
			return;
		/* The slot against the ledger. */
		if (r->lg.key[0] != '\0' && !ledger_verify(r, now_mono_us()))
			return;
		/* At once, not after status.interval.ms: a relay restarted often
		 * must still confirm, and pg_stat_replication shows it alive. */
		send_status(r, false);
		return;
	case REPL_ERR_SLOT_BUSY:
		if (r->st.state != ST_STANDBY)
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

/* Ends the session: final status, close, and (for Kafka failures) a new
 * producer. The next session starts from the slot after a backoff. */
void restart(struct relay *r)
{
	int64_t d;

	if (r->have_rs) {
		send_status(r, false);
		repl_close(&r->rs);
		r->have_rs = false;
	}
	/* Exactly-once closes its producer with every session: what its
	 * transaction holds is aborted, and the next session's producer
	 * fences it (txn.c). */
	if (r->tx.on && r->st.state != ST_REBUILDING && r->pub != NULL) {
		kafka_close(r);
		window_reset(r);
	}
	if (r->st.state == ST_REBUILDING && r->pub != NULL) {
		r->ctr.kafka_restarts++;
		kafka_close(r); /* purges: reports come back and are dropped */
		window_reset(r);
		/* A report served by the teardown may have named the refused
		 * record (stopping then); otherwise the backstop decides. */
		if (relay_stopping(r) || !kafka_failed(r)) {
			relay_goto(r, r->st.exit_code == RELAY_EXIT_DATAERR
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
	r->ctr.n_reconnects++;
	/* A record refused on its own is tried again on the policy's
	 * schedule (poison.retry.backoff.ms), not the reconnect's. */
	if ((d = poison_backoff_us(r)) < 0)
		d = backoff_us(r);
	relay_goto(r, ST_BACKOFF, "session ended");
	r->retry_at_us = now_mono_us() + d;
	snprintf(r->reason, sizeof(r->reason), "session ended; replaying from "
	         "the slot after a backoff");
	log_warn("replaying from slot \"%s\" in %lld ms (confirmed " LSN_FMT ")",
	         r->cfg->slot_name, (long long)(d / 1000),
	         LSN_ARGS(lsn_confirmed(&r->lt)));
}

/* Poison input: stop reading, let what is in flight be acked, confirm
 * up to (not including) the bad transaction, exit non-zero. */
static enum handled fail_stop(struct relay *r, const struct repl_msg *m,
                              const char *what)
{
	/* Exactly-once: the open Kafka transaction holds records of this
	 * transaction, so it cannot commit, and the healthy transactions
	 * before it in it would wait for the poison event to be resolved.
	 * Once, the session replays with each transaction committed alone:
	 * they are published, and the stop meets this one again. */
	if (r->tx.on && !txn_whole(r) && !r->tx.single) {
		log_warn("poison event at LSN " LSN_FMT " (xid %lld) inside a "
		         "transaction that has produced events: replaying from "
		         "the slot once, each transaction committed alone, so "
		         "that those before it are published before the stop",
		         LSN_ARGS(m->wal_start), (long long)r->txn.xid);
		r->tx.single = true;
		session_end(r, false, "poison event: commit what precedes it");
		return H_STOP;
	}
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

enum handled handle_msg(struct relay *r, const struct repl_msg *m)
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
		poison_txn_begin(r);
		break;
	}
	case EV_COMMIT:
		r->ctr.n_txns++;
		if (!lsn_commit(&r->lt, er.rec.nextlsn)) {
			rewound_stop(r);
			h = H_STOP;
		}
		txn_after_commit(r);
		break;
	case EV_EVENT:
		h = handle_event(r, &er.ev);
		if (h == H_POISON)
			h = fail_stop(r, m, r->err);
		poison_handed(r, h);
		break;
	case EV_HEARTBEAT:
		/* Everything before it was sent, so with nothing open or in
		 * flight its LSN is safe to confirm. */
		if (er.heartbeat_sent_us > 0)
			r->ctr.hb_rtt_us = now_wall_us() - er.heartbeat_sent_us;
		r->ctr.hb_seen++;
		if (!lsn_idle(&r->lt, er.rec.lsn)) {
			rewound_stop(r);
			h = H_STOP;
		}
		break;
	case EV_POISON:
		/* poison.policy: parked or skipped, or the stop. */
		h = poison_decode(r, &er);
		if (h == H_POISON)
			h = fail_stop(r, m, er.reason);
		if (er.is_event)
			poison_handed(r, h);
		break;
	case EV_SKIP:
		if (er.invalid_op) {
			r->ctr.n_invalid_ops++;
			if (r->ss.env.op_invalid == SS_OP_ERROR)
				log_error("%s (table.op.invalid.behavior = error)",
				          er.reason);
			else
				log_warn("%s (table.op.invalid.behavior = warn)",
				         er.reason);
		}
		break;
	}
	ev_record_clear(&er);
	return h;
}

/* One frame read (or the one held back): handled, or held back again
 * when the window or the producer's queue has no room for it. Returns
 * false when reading stops for this turn. */
bool take_frame(struct relay *r, const struct repl_msg *m)
{
	switch (handle_msg(r, m)) {
	case H_OK:
		return true;
	case H_BLOCKED:
		r->pending = *m;
		r->have_pending = true;
		return false;
	case H_STOP:
	case H_POISON:
		return false;
	}
	return false;
}

void read_stream(struct relay *r)
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
		if (!take_frame(r, &m))
			return;
	}
	/* libpq may hold more complete frames than the socket shows: do not
	 * let poll() sleep on a quiet socket while they wait. */
	r->more_input = reading_allowed(r);
}
