/* SPDX-License-Identifier: Apache-2.0 */
/* confirm.c -- what the relay confirms to PostgreSQL, and the slot
 * ledger gate in front of it.
 *
 * The tracker (lsn_tracker.c) says what is safe: the commit end of the
 * newest transaction such that it and every earlier one were acked. Two
 * more bounds apply, both in confirm_clamp(), the one place they are
 * written: never past the server's WAL end, and never past what the
 * slot ledger holds (the ledger records the watermark first; the confirm
 * follows its ack). Owns r->lg. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "relay/relay_int.h"

/* The one clamp. w is the tracker's watermark; the result never passes
 * the server's WAL end (every LSN the tracker holds came from this
 * server, so this is the last line against confirming WAL it has not
 * written: a restored or lagging copy), with ledger set never what the
 * slot ledger holds (before the ledger was read this session: nothing
 * past what was confirmed), and never goes below what was already
 * confirmed (the position only moves forward). */
static uint64_t confirm_clamp(const struct relay *r, uint64_t w, bool ledger)
{
	uint64_t confirmed = lsn_confirmed(&r->lt);

	if (w > r->server_wal_end)
		w = r->server_wal_end;
	if (ledger && r->lg.key[0] != '\0') {
		uint64_t held = r->lg.verified ? r->lg.lsn : confirmed;
		if (w > held)
			w = held;
	}
	if (w < confirmed)
		w = confirmed;
	return w;
}

/* What may be confirmed now. */
uint64_t confirm_target(const struct relay *r)
{
	return confirm_clamp(r, lsn_confirmable(&r->lt), true);
}

/* What the slot ledger should record: the same, less the ledger's own
 * bound. */
uint64_t ledger_target(const struct relay *r)
{
	return confirm_clamp(r, lsn_confirmable(&r->lt), false);
}

bool confirm_due(const struct relay *r)
{
	return confirm_target(r) > lsn_confirmed(&r->lt);
}

/* The ledger is behind the watermark: a record is due. */
bool ledger_due(const struct relay *r)
{
	uint64_t w = ledger_target(r);

	return !r->tx.on && r->lg.key[0] != '\0' && r->lg.verified &&
	       r->pub != NULL &&
	       r->have_rs && r->lg.sending == 0 && w > r->lg.lsn &&
	       w > lsn_confirmed(&r->lt);
}

/* Produces the slot's ledger record of lsn (and commit c, exactly-once:
 * NULL otherwise) through the relay's own producer. A record the
 * producer refuses ends the session; PUB_FULL: the next turn tries
 * again. */
enum pub_send_result ledger_send(struct relay *r, uint64_t lsn,
                                 const struct ledger_commit *c, int64_t now)
{
	enum pub_send_result res;
	char err[256], *value;

	value = ledger_value(repl_system_id(&r->rs),
	                     repl_slot(&r->rs)->database, r->cfg->slot_name, lsn,
	                     "relay", c);
	res = r->kp->send(r->pub, r->cfg->slot_ledger_topic, r->lg.key,
	                  strlen(r->lg.key), value, strlen(value), NULL,
	                  LEDGER_TOKEN, err, sizeof(err));
	free(value);
	if (res == PUB_SENT) {
		r->lg.sent_us = now;
	} else if (res != PUB_FULL) {
		log_error("kafka: writing the slot ledger: %s", err);
		session_end(r, true, "ledger record refused");
	}
	return res;
}

/* Records the watermark in the slot ledger; the confirm follows its ack
 * (ledger_report()). */
void ledger_record(struct relay *r, int64_t now)
{
	uint64_t w = ledger_target(r);

	if (ledger_send(r, w, NULL, now) == PUB_SENT)
		r->lg.sending = w;
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

/* The delivery report of a ledger record (on_dr()). */
void ledger_report(struct relay *r, const struct pub_report *rep)
{
	uint64_t lsn = r->lg.sending;

	r->lg.sending = 0;
	/* An ack counts even while stopping: the final confirm needs it. */
	if (rep->ok) {
		if (lsn > r->lg.lsn)
			r->lg.lsn = lsn;
		return;
	}
	if (relay_stopping(r))
		return;
	/* Authorization, an unknown topic, a size limit: every replay would
	 * be refused the same way, so stop now and say what to grant or
	 * change (also from the teardown, where the report of a fatal
	 * producer error may only be served). A refusal that settles (a new
	 * topic's partitions not yet known everywhere) is written again in
	 * the next session instead; the backstop bounds how often. */
	if (pub_err_classify(rep->err) == PUB_ERR_PERMANENT &&
	    !pub_err_settles(rep->err)) {
		ledger_refused(r, rep);
		return;
	}
	if (r->tearing_down)
		return;
	backstop_note(r, rep->errstr, 200);
	log_error("kafka: writing the slot ledger failed: %s; the producer is "
	          "rebuilt and the slot replays", rep->errstr);
	session_end(r, true, "ledger record failed");
}

/* Exactly-once: the ledger's record is what Kafka holds, committed (the
 * read is read_committed, after the older producers were fenced). The
 * transactions up to the commit it names are skipped, whatever the slot
 * says (a commit whose confirm was lost, a crash between the two, is not
 * published again), but only once that commit shows up unchanged in
 * the stream: a database restored to an earlier copy has other
 * transactions there, and those must be published, not skipped (the
 * relay stops instead, exit 69). A record past the server's WAL end
 * says the same at once. */
bool ledger_skip_committed(struct relay *r, const struct ledger_entry *e)
{
	uint64_t slot = repl_slot(&r->rs)->confirmed_lsn;

	if (e->lsn > r->server_wal_end) {
		log_error("the slot ledger says Kafka holds the transactions of "
		          "slot \"%s\" up to " LSN_FMT " (recorded by %s at %s), "
		          "past this server's WAL end " LSN_FMT ": the database "
		          "went back in time (restored, or a standby that lacked "
		          "WAL was promoted). Kafka may hold events with commit "
		          "LSNs (pg_lsn header) above " LSN_FMT " that this "
		          "database never committed. Nothing was published or "
		          "confirmed (runbook: the database went back in time)",
		          r->cfg->slot_name, LSN_ARGS(e->lsn), e->by, e->at,
		          LSN_ARGS(r->server_wal_end), LSN_ARGS(r->server_wal_end));
		snprintf(r->reason, sizeof(r->reason), "the database went back in "
		         "time (see the log)");
		begin_stop(r, RELAY_EXIT_UNAVAILABLE);
		return false;
	}
	if (e->commit.end_lsn == 0) {
		/* Written by an at-least-once relay or the runbook: no commit
		 * to check the WAL against, so nothing is skipped on its
		 * word (at worst what it acked is published again). */
		if (e->lsn > slot)
			log_info("exactly-once: the slot ledger's record (by %s at %s) "
			         "names no commit: the transactions between the slot "
			         "(" LSN_FMT ") and " LSN_FMT " are published, not "
			         "skipped; a read_committed consumer may see those an "
			         "at-least-once relay published before", e->by, e->at,
			         LSN_ARGS(slot), LSN_ARGS(e->lsn));
		return true;
	}
	if (e->commit.end_lsn > slot)
		log_info("exactly-once: Kafka holds the transactions up to commit "
		         LSN_FMT " (xid %lld; slot ledger), the slot is at " LSN_FMT
		         ": they are skipped, not published again, once that "
		         "commit shows up unchanged in the stream",
		         LSN_ARGS(e->commit.end_lsn), (long long)e->commit.xid,
		         LSN_ARGS(slot));
	lsn_verify_commit(&r->lt, &(struct lsn_commit_id){
		.end_lsn = e->commit.end_lsn, .xid = e->commit.xid,
		.commit_ts_us = e->commit.commit_ts_us }, slot, e->lsn);
	return true;
}

/* Reads the slot's ledger record and checks the slot against it (see
 * ledger_session_start()). Returns false when the slot is refused (the
 * relay stops); a failed read returns true with lg.verified still false
 * and a retry scheduled: the session streams on, but nothing past the
 * slot's own position is confirmed before the check. */
bool ledger_verify(struct relay *r, int64_t now)
{
	struct ledger_entry e;
	char err[1024];

	if (r->lg.ledger == NULL &&
	    (r->lg.ledger = ledger_open(r->cfg, err, sizeof(err))) == NULL) {
		log_error("slot ledger: %s", err);
		begin_stop(r, RELAY_EXIT_CONFIG);
		return false;
	}
	if (ledger_read(r->lg.ledger, r->lg.key, true, &e, LEDGER_READ_TIMEOUT_MS,
	                err, sizeof(err)) < 0) {
		/* Exactly-once cannot publish before it knows what Kafka
		 * holds: the session starts again instead. */
		if (r->tx.on) {
			log_warn("%s; exactly-once publishes nothing before the "
			         "ledger is read: the session starts again", err);
			snprintf(r->reason, sizeof(r->reason), "the slot ledger "
			         "cannot be read (see the log)");
			session_end(r, false, "ledger unreadable");
			return false;
		}
		if (r->lg.retry_us == 0)
			log_warn("%s; streaming on, but nothing is confirmed past the "
			         "slot's position until the ledger can be read (retried "
			         "every %lld s)", err,
			         (long long)(LEDGER_RETRY_US / 1000000));
		r->lg.retry_us = now + LEDGER_RETRY_US;
		return true;
	}
	if (r->lg.retry_us != 0)
		log_info("slot ledger: read again");
	r->lg.retry_us = 0;
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
	if (e.found && e.lsn > r->lg.lsn)
		r->lg.lsn = e.lsn;
	else if (!e.found)
		r->lg.lsn = 0;
	r->lg.verified = true;
	if (r->tx.on && e.found && !ledger_skip_committed(r, &e))
		return false;
	return true;
}

/* The slot's ledger key, at the start of every session ("" while the
 * ledger is off); the check (ledger_verify()) follows. Returns false
 * when the session cannot go on. */
bool ledger_session_start(struct relay *r)
{
	r->lg.key[0] = '\0';
	r->lg.verified = false;
	r->lg.retry_us = 0;
	if (r->cfg->slot_ledger_topic[0] == '\0')
		return true;
	if (ledger_key(repl_system_id(&r->rs), repl_slot(&r->rs)->database,
	               r->cfg->slot_name, r->lg.key, sizeof(r->lg.key)) < 0) {
		log_error("slot ledger: key for slot \"%s\" too long",
		          r->cfg->slot_name);
		begin_stop(r, RELAY_EXIT_CONFIG);
		return false;
	}
	return true;
}

void send_status(struct relay *r, bool force_log)
{
	send_status_req(r, force_log, false);
}

/* ping: ask the server to answer at once (replyRequested), to learn
 * whether it is still there. */
void send_status_req(struct relay *r, bool force_log, bool ping)
{
	uint64_t confirmed = lsn_confirmed(&r->lt); /* the last one sent */
	uint64_t flush, recv;
	char err[512];

	if (!r->have_rs || !repl_in_copy(&r->rs))
		return;
	/* confirm_clamp() bounds it by the WAL end; reaching that bound is a
	 * bug in the books, so say so. */
	if (lsn_confirmable(&r->lt) > r->server_wal_end)
		log_error("internal: confirmable " LSN_FMT " is past the server's "
		          "WAL end " LSN_FMT "; sending the WAL end",
		          LSN_ARGS(lsn_confirmable(&r->lt)),
		          LSN_ARGS(r->server_wal_end));
	/* Nothing past what the slot ledger holds either: a slot moved past
	 * it is refused at the next start (a recreated slot). */
	flush = confirm_target(r);
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
		r->ctr.last_confirm_wall_us = now_wall_us();
	}
	lsn_mark_confirmed(&r->lt, flush);
	r->ctr.n_status++;
	r->reply_now = false;
	r->last_status_us = now_mono_us();
}
