/* SPDX-License-Identifier: Apache-2.0 */
/* state.c -- the relay's state machine: the table of allowed
 * transitions, the one function that changes state, and the stop.
 *
 * The relay's lifecycle is r->st.state and nothing else; every change goes
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
 *   tearing_down  the producer is inside kp->close(): its reports are
 *                 purges of that producer. It spans a state change (a
 *                 report served by the teardown may begin a stop), so it
 *                 cannot be a state of its own.
 *   have_pending  the reader holds one frame the producer had no room for;
 *                 only meaningful while STREAMING, dropped by restart().
 *   queue_full, iso_wait, reply_now, pinged, more_input  flow control of
 *                 one session, not lifecycle. */
#include "lib/log.h"
#include "health/notify.h"
#include "relay/relay_int.h"

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

const char *relay_state_name(enum relay_state s)
{
	return s < ST_COUNT ? state_name[s] : "?";
}

bool relay_transition_allowed(enum relay_state from, enum relay_state to)
{
	return from < ST_COUNT && to < ST_COUNT && (allowed[from] & (1u << to));
}

enum relay_phase state_phase_of(enum relay_state s)
{
	return state_phase[s];
}

bool relay_stopping(const struct relay *r)
{
	return r->st.state == ST_STOPPING || r->st.state == ST_FAIL_STOPPED ||
	       r->st.state == ST_EXITING;
}

/* The session ends at the end of this loop turn (with a restart, or with
 * the exit). Most of a turn's work is skipped then. */
bool session_ending(const struct relay *r)
{
	return r->st.state == ST_RESTARTING || r->st.state == ST_REBUILDING ||
	       r->st.state == ST_EXITING;
}

/* The one place r->st.state changes. A transition not in allowed[] is a
 * bug in the relay: it is logged as an error and made anyway, so a gap in
 * the table never changes what the relay does. */
void relay_goto(struct relay *r, enum relay_state to, const char *why)
{
	enum relay_state from = r->st.state;

	if (!relay_transition_allowed(from, to))
		log_error("internal: state transition %s -> %s (%s) is not in the "
		          "table", state_name[from], state_name[to], why);
	else
		log_debug("state: %s -> %s (%s)", state_name[from], state_name[to],
		          why);
	r->st.state = to;
	if (to <= ST_STREAMING)
		r->st.conn_state = to;
	if (r->st.on_goto != NULL)
		r->st.on_goto(r->st.on_goto_ctx, from, to);
}

/* The session ends at the end of this turn; kafka: the producer is
 * rebuilt too. While stopping, there is nothing left to ack: exit. */
void session_end(struct relay *r, bool kafka, const char *why)
{
	switch (r->st.state) {
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

/* The first stop decides the exit code. A session already ending goes to
 * EXITING: with it gone, nothing more can be acked. */
void begin_stop(struct relay *r, int code)
{
	if (relay_stopping(r))
		return;
	relay_goto(r, r->st.state == ST_RESTARTING || r->st.state == ST_REBUILDING
	                      ? ST_EXITING
	              : code == RELAY_EXIT_DATAERR ? ST_FAIL_STOPPED : ST_STOPPING,
	           "stop");
	r->st.exit_code = code;
	r->st.drain_deadline_us = now_mono_us() + r->cfg->shutdown_timeout_ms * 1000;
	notify_stopping(); /* systemd: STOPPING=1, whatever the cause */
}

/* The phase /readyz and /metrics show. */
enum relay_phase phase_of(const struct relay *r)
{
	switch (r->st.state) {
	case ST_RESTARTING:
	case ST_REBUILDING:
		return state_phase[r->st.conn_state];
	case ST_EXITING:
		return r->st.exit_code == RELAY_EXIT_DATAERR
		           ? RELAY_PHASE_FAIL_STOPPED : RELAY_PHASE_STOPPING;
	default:
		return state_phase[r->st.state];
	}
}
