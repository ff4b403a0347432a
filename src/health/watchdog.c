/* SPDX-License-Identifier: Apache-2.0 */
/* watchdog.c -- slot sampling and heartbeats on a thread of their own.
 *
 * One ordinary (non-replication) connection, one query per sample that
 * returns every figure in a single row, and optional heartbeats written
 * with pg_logical_emit_message() so that an idle database on a busy
 * cluster still gives the slot something to move past.
 *
 * With slot.standby.conninfo, each sample also reads the slot's copy on
 * that standby, over a second connection: its failures are reported in
 * the figures and logged, and touch neither the primary's figures nor
 * pg_up. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "lib/log.h"
#include "pg/pgutil.h"
#include "pg/slot.h"
#include "health/watchdog.h"

/* Client-side bound of each watchdog query (statement_timeout is 5 s). */
#define WD_QUERY_TIMEOUT_US (10 * INT64_C(1000000))
#define WD_STATEMENT_TIMEOUT_MS 5000

struct watchdog {
	struct wd_options opt;      /* strings copied */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;                  /* under mu */
	uint64_t seq;               /* under mu */
	struct slot_figures figs;   /* under mu */
	char last_err[512];         /* under mu */
	struct slot_standby sb;     /* under mu */
	PGconn *conn;               /* thread only */
	PGconn *sconn;              /* thread only: the standby's */
	char standby_logged[600];   /* thread only: the error last logged
	                             * (as long as the one read, so that a
	                             * long one is not logged at every sample) */
};

static void set_last_error(struct watchdog *w, const char *fmt, ...)
	RELAY_PRINTF(2, 3);

static void set_last_error(struct watchdog *w, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	pthread_mutex_lock(&w->mu);
	if (strcmp(buf, w->last_err) != 0 && buf[0] != '\0')
		log_warn("watchdog: %s", buf); /* once per distinct error */
	snprintf(w->last_err, sizeof(w->last_err), "%s", buf);
	pthread_mutex_unlock(&w->mu);
}

/* The same connection defaults as the stream's (keepalives, timeouts,
 * pgutil.h), and server-side limits on top. */
static bool wd_connect(struct watchdog *w)
{
	enum pgu_class cls;
	char err[1024];

	w->conn = pgu_connect(w->opt.conninfo, "outbox-relay-watchdog", false,
	                      "-c statement_timeout=5000 -c lock_timeout=1000",
	                      &cls, err, sizeof(err));
	if (w->conn == NULL) {
		set_last_error(w, "%s", err);
		return false;
	}
	return true;
}

/* One query, bounded on the client side too: statement_timeout does not
 * help against a server (or a proxy) that stopped answering, and a
 * watchdog stuck in a query would freeze the slot figures and hold up
 * the relay's exit (wd_stop() joins this thread). */
static PGresult *wd_exec(struct watchdog *w, const char *sql, int nparams,
                         const char *const *params, const char *what)
{
	bool timed_out;
	PGresult *res = pgu_exec(w->conn, sql, nparams, params,
	                         now_mono_us() + WD_QUERY_TIMEOUT_US, &timed_out);
	char m[512];

	if (res != NULL && (PQresultStatus(res) == PGRES_TUPLES_OK ||
	                    PQresultStatus(res) == PGRES_COMMAND_OK))
		return res;
	if (timed_out)
		snprintf(m, sizeof(m), "no answer within %lld s",
		         (long long)(WD_QUERY_TIMEOUT_US / 1000000));
	else
		pgu_message(w->conn, res, m, sizeof(m));
	set_last_error(w, "%s failed: %s", what, m);
	PQclear(res);
	/* A timed-out connection may still owe the answer: never reuse it. */
	if (timed_out || PQstatus(w->conn) != CONNECTION_OK) {
		PQfinish(w->conn);
		w->conn = NULL;
	}
	return NULL;
}

/* One sample (slot.h), bounded like every watchdog query. */
static void sample(struct watchdog *w)
{
	struct slot_figures f;
	struct pgu_status st;
	char err[600];

	if (slot_sample(w->conn, w->opt.slot, now_mono_us() + WD_QUERY_TIMEOUT_US,
	                &f, &st, err, sizeof(err)) < 0) {
		set_last_error(w, "%s", err);
		/* A timed-out connection may still owe the answer: never reuse
		 * it. */
		if (st.outcome == PGU_Q_NO_ANSWER ||
		    PQstatus(w->conn) != CONNECTION_OK) {
			PQfinish(w->conn);
			w->conn = NULL;
		}
		return;
	}
	pthread_mutex_lock(&w->mu);
	w->figs = f;
	w->seq++;
	w->last_err[0] = '\0';
	pthread_mutex_unlock(&w->mu);
}

/* A standby read that failed: kept for /slot, logged once per distinct
 * error, the connection dropped when it cannot be trusted. */
static void standby_failed(struct watchdog *w, const char *err, bool drop)
{
	if (strcmp(err, w->standby_logged) != 0) {
		log_warn("watchdog: standby: %s", err);
		snprintf(w->standby_logged, sizeof(w->standby_logged), "%s", err);
	}
	if (drop) {
		PQfinish(w->sconn);
		w->sconn = NULL;
	}
	pthread_mutex_lock(&w->mu);
	w->sb.read = true;
	w->sb.reachable = false;
	snprintf(w->sb.error, sizeof(w->sb.error), "%s", err);
	pthread_mutex_unlock(&w->mu);
}

/* The slot's copy on the standby (slot.h), on a connection of its own
 * with the same defaults and bounds as the primary's. */
static void standby_sample(struct watchdog *w)
{
	struct slot_standby sb;
	struct pgu_status st;
	enum pgu_class cls;
	char err[600];

	if (w->opt.standby_conninfo[0] == '\0')
		return;
	if (w->sconn == NULL) {
		w->sconn = pgu_connect(w->opt.standby_conninfo,
		                       "outbox-relay-watchdog-standby", false,
		                       "-c statement_timeout=5000", &cls, err,
		                       sizeof(err));
		if (w->sconn == NULL) {
			standby_failed(w, err, false);
			return;
		}
	}
	memset(&sb, 0, sizeof(sb));
	if (slot_standby_read(w->sconn, w->opt.slot,
	                      now_mono_us() + WD_QUERY_TIMEOUT_US, &sb, &st, err,
	                      sizeof(err)) < 0) {
		/* A timed-out connection may still owe the answer. */
		standby_failed(w, err, st.outcome == PGU_Q_NO_ANSWER ||
		                       PQstatus(w->sconn) != CONNECTION_OK);
		return;
	}
	if (w->standby_logged[0] != '\0') {
		log_info("watchdog: standby: its copy of the slot can be read again");
		w->standby_logged[0] = '\0';
	}
	sb.configured = true;
	sb.read = true;
	sb.reachable = true;
	sb.read_at_us = now_wall_us();
	pthread_mutex_lock(&w->mu);
	w->sb = sb;
	pthread_mutex_unlock(&w->mu);
}

/* Non-transactional, so it is decoded at once and needs no commit; its
 * content is the wall clock at sending, for the round-trip figure. */
static void heartbeat(struct watchdog *w)
{
	char content[32];
	const char *params[2] = { w->opt.heartbeat_prefix, content };
	PGresult *res;

	snprintf(content, sizeof(content), "%lld", (long long)now_wall_us());
	res = wd_exec(w, "SELECT pg_catalog.pg_logical_emit_message(false, $1, $2)",
	              2, params, "heartbeat");
	PQclear(res);
	if (w->conn != NULL && w->opt.heartbeat_query != NULL &&
	    w->opt.heartbeat_query[0] != '\0') {
		res = wd_exec(w, w->opt.heartbeat_query, 0, NULL,
		              "heartbeat.action.query");
		PQclear(res);
	}
}

/* Sleeps until deadline (monotonic µs) or stop. Returns false on stop. */
static bool wait_until(struct watchdog *w, int64_t deadline)
{
	bool go = true;

	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		int64_t now = now_mono_us();
		struct timespec ts;
		if (now >= deadline)
			break;
		/* The condition variable runs on CLOCK_MONOTONIC (see wd_start). */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t wake = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 +
		               (deadline - now);
		ts.tv_sec = wake / 1000000;
		ts.tv_nsec = (wake % 1000000) * 1000;
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
	}
	go = !w->stop;
	pthread_mutex_unlock(&w->mu);
	return go;
}

static void *wd_main(void *arg)
{
	struct watchdog *w = arg;
	int64_t next_sample = now_mono_us();
	int64_t next_beat = w->opt.heartbeat_ms > 0 ? next_sample : INT64_MAX;

	for (;;) {
		int64_t next = next_sample < next_beat ? next_sample : next_beat;
		int64_t now;

		if (!wait_until(w, next))
			break;
		if (w->conn == NULL && !wd_connect(w)) {
			/* Retry at the next period; the error is in last_err. The
			 * standby is read all the same: it matters most when the
			 * primary is gone. */
			standby_sample(w);
			next_sample = now_mono_us() + w->opt.interval_ms * 1000;
			continue;
		}
		now = now_mono_us();
		if (now >= next_beat) {
			heartbeat(w);
			next_beat = now + w->opt.heartbeat_ms * 1000;
		}
		if (w->conn != NULL && now >= next_sample) {
			sample(w);
			standby_sample(w);
			next_sample = now + w->opt.interval_ms * 1000;
		}
	}
	PQfinish(w->conn);
	w->conn = NULL;
	PQfinish(w->sconn);
	w->sconn = NULL;
	return NULL;
}

struct watchdog *wd_start(const struct wd_options *opt, char *err,
                          size_t errlen)
{
	struct watchdog *w = xcalloc(1, sizeof(*w));
	pthread_condattr_t ca;
	int rc;

	w->opt = *opt;
	w->opt.conninfo = opt->conninfo; /* borrowed, see header */
	w->opt.slot = xstrdup(opt->slot);
	w->opt.heartbeat_prefix = xstrdup(opt->heartbeat_prefix ? opt->heartbeat_prefix : "");
	w->opt.heartbeat_query = xstrdup(opt->heartbeat_query ? opt->heartbeat_query : "");
	w->opt.standby_conninfo = opt->standby_conninfo != NULL
	                              ? opt->standby_conninfo : ""; /* borrowed */
	w->sb.configured = w->opt.standby_conninfo[0] != '\0';
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&w->thread, NULL, wd_main, w);
	if (rc != 0) {
		snprintf(err, errlen, "watchdog thread: %s", strerror(rc));
		free((char *)w->opt.slot);
		free((char *)w->opt.heartbeat_prefix);
		free((char *)w->opt.heartbeat_query);
		free(w);
		return NULL;
	}
	return w;
}

uint64_t wd_figures(struct watchdog *w, struct slot_figures *out)
{
	uint64_t seq;

	pthread_mutex_lock(&w->mu);
	*out = w->figs;
	seq = w->seq;
	pthread_mutex_unlock(&w->mu);
	return seq;
}

void wd_standby(struct watchdog *w, struct slot_standby *out)
{
	pthread_mutex_lock(&w->mu);
	*out = w->sb;
	pthread_mutex_unlock(&w->mu);
}

void wd_last_error(struct watchdog *w, char *out, size_t outlen)
{
	pthread_mutex_lock(&w->mu);
	snprintf(out, outlen, "%s", w->last_err);
	pthread_mutex_unlock(&w->mu);
}

void wd_stop(struct watchdog *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free((char *)w->opt.slot);
	free((char *)w->opt.heartbeat_prefix);
	free((char *)w->opt.heartbeat_query);
	free(w);
}
