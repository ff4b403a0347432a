/* SPDX-License-Identifier: Apache-2.0 */
/* health.c -- slot health: figures and thresholds to a state with reasons,
 * the retained-WAL growth window, and the /slot JSON and /metrics text.
 *
 * Pure: no I/O, no globals, no locks; the HTTP thread renders a copy. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "health/health.h"

static const char *const phase_names[] = {
	[RELAY_PHASE_NOT_RUNNING] = "not running",
	[RELAY_PHASE_CONNECTING] = "connecting",
	[RELAY_PHASE_BACKOFF] = "backoff",
	[RELAY_PHASE_STANDBY] = "standby",
	[RELAY_PHASE_STREAMING] = "streaming",
	[RELAY_PHASE_STOPPING] = "stopping",
	[RELAY_PHASE_FAIL_STOPPED] = "fail-stopped",
};
#define NPHASES (sizeof(phase_names) / sizeof(phase_names[0]))

const char *relay_phase_name(enum relay_phase p)
{
	/* A snapshot is copied between threads as bytes: never index past
	 * the table whatever it holds. */
	return (size_t)p < NPHASES ? phase_names[p] : "?";
}

enum relay_phase relay_phase_parse(const char *s)
{
	for (size_t i = 0; i < NPHASES; i++)
		if (strcmp(s, phase_names[i]) == 0)
			return (enum relay_phase)i;
	return RELAY_PHASE_NOT_RUNNING;
}

const char *health_state_name(enum health_state s)
{
	switch (s) {
	case HEALTH_OK:
		return "ok";
	case HEALTH_WARN:
		return "warn";
	case HEALTH_CRITICAL:
		return "critical";
	case HEALTH_FATAL:
		return "fatal";
	}
	return "unknown";
}

void health_thresholds_init(struct health_thresholds *th,
                            const struct relay_config *cfg)
{
	*th = (struct health_thresholds){
		.retained_warn_bytes = cfg->watchdog_retained_warn_bytes,
		.retained_critical_bytes = cfg->watchdog_retained_critical_bytes,
		.lag_warn_bytes = cfg->watchdog_lag_warn_bytes,
		.lag_critical_bytes = cfg->watchdog_lag_critical_bytes,
		.outbox_lag_warn_s = cfg->watchdog_outbox_lag_warn_ms / 1000,
		.outbox_lag_critical_s = cfg->watchdog_outbox_lag_critical_ms / 1000,
		.eta_warn_s = cfg->watchdog_eta_warn_ms / 1000,
		.eta_critical_s = cfg->watchdog_eta_critical_ms / 1000,
		.wal_budget_bytes = cfg->watchdog_wal_budget_bytes,
	};
}

/* ---- growth window ---------------------------------------------------- */

static size_t win_at(const struct health_window *w, size_t i)
{
	return (w->head + i) % HEALTH_WINDOW_MAX;
}

static void win_pop(struct health_window *w)
{
	w->head = (w->head + 1) % HEALTH_WINDOW_MAX;
	w->len--;
}

void health_window_init(struct health_window *w, int64_t span_us)
{
	memset(w, 0, sizeof(*w));
	w->span_us = span_us;
}

/* A negative byte count is "unknown" (SQL NULL) and is not a sample: one
 * would turn into a huge bogus rate once the figure is known again. A
 * clock that steps backwards restarts the window. */
void health_window_add(struct health_window *w, int64_t t_us, int64_t bytes)
{
	size_t i;

	if (bytes < 0)
		return;
	if (w->len > 0) {
		size_t last = win_at(w, w->len - 1);
		if (t_us == w->t_us[last]) {
			w->bytes[last] = bytes;
			return;
		}
		if (t_us < w->t_us[last])
			w->len = 0;
	}
	while (w->len > 0 && t_us - w->t_us[w->head] > w->span_us)
		win_pop(w);
	if (w->len == HEALTH_WINDOW_MAX)
		win_pop(w);
	i = win_at(w, w->len);
	w->t_us[i] = t_us;
	w->bytes[i] = bytes;
	w->len++;
}

double health_window_rate(const struct health_window *w)
{
	size_t o, n;
	int64_t dt, db;

	if (w->len < 2)
		return 0;
	o = win_at(w, 0);
	n = win_at(w, w->len - 1);
	dt = w->t_us[n] - w->t_us[o];
	db = w->bytes[n] - w->bytes[o];
	if (dt <= 0 || db <= 0)
		return 0;
	return (double)db * 1e6 / (double)dt;
}

/* ---- evaluation -------------------------------------------------------- */

/* "45 s", "5.0 min", "2.5 h", "3.0 d". */
static void fmt_secs(char *buf, size_t len, double s)
{
	if (s < 120)
		snprintf(buf, len, "%.0f s", s);
	else if (s < 7200)
		snprintf(buf, len, "%.1f min", s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%.1f h", s / 3600);
	else
		snprintf(buf, len, "%.1f d", s / 86400);
}

#define MAX_RULES 12

struct rules {
	enum health_state worst;
	size_t n;
	enum health_state sev[MAX_RULES];
	char text[MAX_RULES][320];
};

static void rule(struct rules *rs, enum health_state sev, const char *fmt, ...)
	RELAY_PRINTF(3, 4);

static void rule(struct rules *rs, enum health_state sev, const char *fmt, ...)
{
	va_list ap;

	if (sev > rs->worst)
		rs->worst = sev;
	if (rs->n == MAX_RULES)
		return;
	va_start(ap, fmt);
	vsnprintf(rs->text[rs->n], sizeof(rs->text[0]), fmt, ap);
	va_end(ap);
	rs->sev[rs->n++] = sev;
}

/* One figure against its critical and warn thresholds; 0 disables one.
 * Higher is worse ("figure >= critical threshold") unless lower is set
 * ("figure <= critical threshold", for an ETA). */
static void rule_level(struct rules *rs, const char *what, double v,
                       int64_t warn, int64_t crit, bool lower,
                       void (*fmt)(char *, size_t, double))
{
	const int64_t lim[2] = { crit, warn };
	char fv[32], ft[32];

	for (int i = 0; i < 2; i++) {
		double t = (double)lim[i];
		if (lim[i] <= 0 || (lower ? v > t : v < t))
			continue;
		fmt(fv, sizeof(fv), v);
		fmt(ft, sizeof(ft), t);
		rule(rs, i == 0 ? HEALTH_CRITICAL : HEALTH_WARN, "%s %s %s %s %s",
		     what, fv, lower ? "<=" : ">=", i == 0 ? "critical" : "warn", ft);
		return;
	}
}

/* Seconds until the slot is lost (safe_wal_size is what may still be
 * written) or, when max_slot_wal_keep_size is unlimited, until the
 * configured budget is used up. -1 when not growing or unknown.
 * *budget is set when the budget path was taken. */
static double eta_of(const struct slot_figures *sf,
                     const struct health_thresholds *th, double growth,
                     bool *budget)
{
	double eta;

	*budget = false;
	if (!(growth > 0))
		return -1;
	if (sf->max_slot_wal_keep_size != -1 && sf->safe_wal_size != -1) {
		/* safe_wal_size goes negative once the slot is unreserved. */
		eta = (double)sf->safe_wal_size / growth;
		return eta > 0 ? eta : 0;
	}
	if (th->wal_budget_bytes > 0 && sf->retained_bytes >= 0) {
		*budget = true;
		eta = (double)(th->wal_budget_bytes - sf->retained_bytes) / growth;
		return eta > 0 ? eta : 0;
	}
	return -1;
}

/* A fixed-size char field that may lack its NUL, as a C string. */
static void fixed_str(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	size_t n = strnlen(src, srclen);

	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void slot_rules(struct rules *rs, const struct slot_figures *sf,
                       const struct health_thresholds *th,
                       int64_t now_us, struct health_eval *out)
{
	char fb[32], why[SLOT_REASON_LEN + 1];
	bool budget;

	if (!sf->slot_exists) {
		rule(rs, HEALTH_FATAL, "slot does not exist");
		return;
	}
	fixed_str(why, sizeof(why), sf->invalidation_reason,
	          sizeof(sf->invalidation_reason));
	if (slot_figures_invalidated(sf) &&
	    (why[0] == '\0' || strcmp(why, "wal_removed") == 0) &&
	    sf->conflicting != SLOT_FLAG_TRUE) {
		rule(rs, HEALTH_FATAL,
		     "slot lost: WAL removed; the relay stops, the slot must be "
		     "recreated and the outbox re-published: see runbook");
	} else if (slot_figures_invalidated(sf)) {
		/* 18's idle_timeout, a standby's conflicts: lost all the same. */
		rule(rs, HEALTH_FATAL,
		     "slot lost: invalidated (%s); the relay stops, the slot must "
		     "be recreated and the outbox re-published: see runbook",
		     why[0] != '\0' ? why : "conflicting");
	} else if (sf->wal_status == WAL_STATUS_UNRESERVED) {
		if (sf->max_slot_wal_keep_size >= 0) {
			fmt_bytes(fb, sizeof(fb), (double)sf->max_slot_wal_keep_size);
			rule(rs, HEALTH_CRITICAL,
			     "wal_status unreserved: retained WAL past "
			     "max_slot_wal_keep_size %s, removed at the next checkpoint",
			     fb);
		} else {
			rule(rs, HEALTH_CRITICAL,
			     "wal_status unreserved: retained WAL removed at the next "
			     "checkpoint");
		}
	} else if (sf->wal_status == WAL_STATUS_EXTENDED) {
		rule(rs, HEALTH_WARN,
		     "wal_status extended: retained WAL past max_wal_size");
	}
	if (sf->retained_bytes >= 0)
		rule_level(rs, "retained WAL", (double)sf->retained_bytes,
		           th->retained_warn_bytes, th->retained_critical_bytes,
		           false, fmt_bytes);
	if (sf->confirmed_lag_bytes >= 0)
		rule_level(rs, "confirmed lag", (double)sf->confirmed_lag_bytes,
		           th->lag_warn_bytes, th->lag_critical_bytes, false,
		           fmt_bytes);

	out->eta_seconds = eta_of(sf, th, out->growth_bytes_per_s, &budget);
	if (out->eta_seconds >= 0) {
		char what[64] = "ETA to slot loss";
		if (budget) {
			fmt_bytes(fb, sizeof(fb), (double)th->wal_budget_bytes);
			snprintf(what, sizeof(what), "ETA to WAL budget %s", fb);
		}
		rule_level(rs, what, out->eta_seconds, th->eta_warn_s,
		           th->eta_critical_s, true, fmt_secs);
	}

	/* 18 invalidates a slot nobody streams from for
	 * idle_replication_slot_timeout (at a checkpoint after that): the
	 * time left, for a standby relay to see while the slot is idle. */
	if (!slot_figures_invalidated(sf) && !sf->active &&
	    sf->idle_timeout_s > 0 && sf->inactive_since_us > 0) {
		double left = (double)(sf->inactive_since_us - now_us) / 1e6 +
		              (double)sf->idle_timeout_s;
		out->idle_eta_seconds = left > 0 ? left : 0;
		rule_level(rs, "ETA to idle_replication_slot_timeout",
		           out->idle_eta_seconds, th->eta_warn_s, th->eta_critical_s,
		           true, fmt_secs);
	}
}

/* Worst first, so that the first reason explains the state and a
 * one-line rendering cut short loses the least important ones. */
static void sort_reasons(const struct rules *rs, struct health_eval *out)
{
	out->nreasons = 0;
	for (int sev = HEALTH_FATAL; sev > HEALTH_OK; sev--)
		for (size_t i = 0; i < rs->n; i++)
			if ((int)rs->sev[i] == sev)
				memcpy(out->reason[out->nreasons++], rs->text[i],
				       sizeof(out->reason[0]));
}

void health_reason_add(struct health_eval *ev, const char *fmt, ...)
{
	va_list ap;

	if (ev->nreasons >= HEALTH_MAX_REASONS)
		return;
	va_start(ap, fmt);
	vsnprintf(ev->reason[ev->nreasons], sizeof(ev->reason[0]), fmt, ap);
	va_end(ap);
	ev->nreasons++;
}

void health_reasons_join(const struct health_eval *ev, char *buf, size_t len)
{
	static const char ellipsis[] = "...";
	size_t used = 0, n = ev->nreasons;

	if (len == 0)
		return;
	buf[0] = '\0';
	if (n > HEALTH_MAX_REASONS)
		n = HEALTH_MAX_REASONS;
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + used, len - used, "%s%.*s",
		                 used > 0 ? "; " : "",
		                 (int)sizeof(ev->reason[0]), ev->reason[i]);
		if (w < 0 || (size_t)w >= len - used) {
			if (len >= sizeof(ellipsis))
				memcpy(buf + len - sizeof(ellipsis), ellipsis,
				       sizeof(ellipsis));
			return;
		}
		used += (size_t)w;
	}
}

void health_evaluate(const struct slot_figures *sf,
                     const struct relay_figures *rf,
                     const struct health_thresholds *th,
                     double growth_bytes_per_s, int64_t now_us,
                     struct health_eval *out)
{
	struct rules rs;
	char reason[sizeof(rf->reason) + 1];

	memset(&rs, 0, sizeof(rs));
	memset(out, 0, sizeof(*out));
	out->growth_bytes_per_s = isfinite(growth_bytes_per_s)
	                                  ? growth_bytes_per_s : 0;
	out->eta_seconds = -1;
	out->idle_eta_seconds = -1;

	if (rf->state == RELAY_PHASE_FAIL_STOPPED) {
		fixed_str(reason, sizeof(reason), rf->reason, sizeof(rf->reason));
		rule(&rs, HEALTH_CRITICAL, "relay fail-stopped: %s",
		     reason[0] != '\0' ? reason : "no reason recorded");
	}

	if (rf->kafka_failures > 0)
		rule(&rs, HEALTH_CRITICAL, "kafka: the transaction at LSN " LSN_FMT
		     " failed %" PRId64 " of %" PRId64 " times in a row; replaying "
		     "(exit 65 at the limit)", LSN_ARGS(rf->kafka_failure_lsn),
		     rf->kafka_failures, rf->kafka_failures_max);

	if (sf->valid)
		slot_rules(&rs, sf, th, now_us, out);

	/* The commit time comes from the server's clock: clamp a skew. */
	if (rf->oldest_pending_commit_us != 0 &&
	    now_us > rf->oldest_pending_commit_us)
		out->outbox_lag_seconds =
			(double)(now_us - rf->oldest_pending_commit_us) / 1e6;
	if (rf->oldest_pending_commit_us != 0)
		rule_level(&rs, "outbox lag", out->outbox_lag_seconds,
		           th->outbox_lag_warn_s, th->outbox_lag_critical_s, false,
		           fmt_secs);

	/* last_confirm_us == 0 (nothing confirmed yet) is left to the outbox
	 * lag rule: there is no point in time to count from. */
	if (rf->inflight_events > 0 && rf->last_confirm_us != 0 &&
	    now_us > rf->last_confirm_us)
		out->since_confirm_seconds =
			(double)(now_us - rf->last_confirm_us) / 1e6;
	if (th->outbox_lag_warn_s > 0 &&
	    out->since_confirm_seconds > (double)th->outbox_lag_warn_s) {
		char fv[32], ft[32];
		fmt_secs(fv, sizeof(fv), out->since_confirm_seconds);
		fmt_secs(ft, sizeof(ft), (double)th->outbox_lag_warn_s);
		rule(&rs, HEALTH_WARN,
		     "no confirm for %s with %" PRIu64 " events in flight > warn %s",
		     fv, rf->inflight_events, ft);
	}

	out->state = rs.worst;
	sort_reasons(&rs, out);
}

/* The first finding that makes the standby's copy useless after a
 * failover, in the order a fix would go: reach the standby, run 17 there,
 * have the copy, keep it valid, have it synced. */
void health_evaluate_standby(const struct slot_standby *sb,
                             struct health_eval *out)
{
	static const char lose[] = "a failover to it would lose the slot";
	char why[SLOT_REASON_LEN + 1];
	char err[sizeof(sb->error) + 1];
	size_t n = out->nreasons;

	if (!sb->configured || !sb->read)
		return;
	if (!sb->reachable) {
		fixed_str(err, sizeof(err), sb->error, sizeof(sb->error));
		health_reason_add(out, "standby: its copy of the slot cannot be "
		                  "read (%s): whether %s is unknown",
		                  err[0] != '\0' ? err : "no answer", lose);
	} else if (sb->server_version < SLOT_PG_FAILOVER) {
		health_reason_add(out, "standby: PostgreSQL %d synchronizes no "
		                  "slots (17 and later): %s",
		                  sb->server_version / 10000, lose);
	} else if (!sb->slot_exists) {
		health_reason_add(out, "standby: the slot has no copy there "
		                  "(slot.failover, sync_replication_slots: see the "
		                  "runbook, section \"failover\"): %s", lose);
	} else if (sb->invalidation_reason[0] != '\0') {
		fixed_str(why, sizeof(why), sb->invalidation_reason,
		          sizeof(sb->invalidation_reason));
		health_reason_add(out, "standby: its copy of the slot is "
		                  "invalidated (%s): %s", why, lose);
	} else if (sb->synced != SLOT_FLAG_TRUE) {
		health_reason_add(out, "standby: its copy of the slot is not "
		                  "synced (synced=%s): %s",
		                  sb->synced == SLOT_FLAG_FALSE ? "false" : "null",
		                  lose);
	}
	/* Appended last: a warn never goes before a worse reason. */
	if (out->nreasons > n && out->state < HEALTH_WARN)
		out->state = HEALTH_WARN;
}

/* ---- /slot JSON -------------------------------------------------------- */

/* pg_stat_replication_slots: the column (the /slot key) and the metric.
 * PostgreSQL resets them with pg_stat_reset_replication_slot(), which
 * Prometheus treats as a counter reset. */
static const struct {
	const char *col, *metric, *help;
	size_t off;
} slot_stats[] = {
#define ST(c, m, h) { #c, m, h, offsetof(struct slot_figures, c) }
	ST(spill_txns, "slot_spill_txns_total",
	   "Transactions spilled to disk while decoding "
	   "(pg_stat_replication_slots.spill_txns)."),
	ST(spill_count, "slot_spills_total",
	   "Times decoded transactions were spilled to disk (spill_count)."),
	ST(spill_bytes, "slot_spill_bytes_total",
	   "Decoded bytes spilled to disk (spill_bytes)."),
	ST(stream_txns, "slot_stream_txns_total",
	   "In-progress transactions streamed to the plugin (stream_txns)."),
	ST(stream_count, "slot_streams_total",
	   "Times in-progress transactions were streamed (stream_count)."),
	ST(stream_bytes, "slot_stream_bytes_total",
	   "Bytes of in-progress transactions streamed (stream_bytes)."),
	ST(total_txns, "slot_decoded_txns_total",
	   "Decoded transactions sent to the plugin (total_txns)."),
	ST(total_bytes, "slot_decoded_bytes_total",
	   "Decoded bytes sent to the plugin (total_bytes)."),
#undef ST
};

#define NSTATS (sizeof(slot_stats) / sizeof(slot_stats[0]))

static int64_t slot_stat(const struct slot_figures *sf, size_t i)
{
	int64_t v;

	memcpy(&v, (const char *)sf + slot_stats[i].off, sizeof(v));
	return v;
}

static json_t *j_u64(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* -1 (or any negative) is "unknown". */
static json_t *j_known(int64_t v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static json_t *j_real(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* "16/B374D848", as pg_replication_slots shows it; null for 0/0. */
static json_t *j_lsn(uint64_t lsn)
{
	char buf[32];

	if (lsn == LSN_INVALID)
		return json_null();
	snprintf(buf, sizeof(buf), LSN_FMT, LSN_ARGS(lsn));
	return json_string(buf);
}

/* RFC 3339 UTC with milliseconds; null for 0 (never). */
static json_t *j_time(int64_t us)
{
	char buf[48];
	struct tm tm;
	time_t t;
	size_t n;

	if (us <= 0)
		return json_null();
	t = (time_t)(us / 1000000);
	if (gmtime_r(&t, &tm) == NULL)
		return json_null();
	n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%03dZ",
	         (int)((us % 1000000) / 1000));
	return json_string(buf);
}

/* A threshold of 0 is "disabled": null, so that no client compares
 * against it. */
static json_t *j_threshold(int64_t v)
{
	return v > 0 ? json_integer(v) : json_null();
}

static json_t *j_str_fixed(const char *s, size_t cap)
{
	return json_stringn(s, strnlen(s, cap));
}

static json_t *thresholds_json(const struct health_thresholds *th)
{
	json_t *o = json_object();

	json_object_set_new(o, "retained_warn_bytes",
	                    j_threshold(th->retained_warn_bytes));
	json_object_set_new(o, "retained_critical_bytes",
	                    j_threshold(th->retained_critical_bytes));
	json_object_set_new(o, "lag_warn_bytes", j_threshold(th->lag_warn_bytes));
	json_object_set_new(o, "lag_critical_bytes",
	                    j_threshold(th->lag_critical_bytes));
	json_object_set_new(o, "outbox_lag_warn_seconds",
	                    j_threshold(th->outbox_lag_warn_s));
	json_object_set_new(o, "outbox_lag_critical_seconds",
	                    j_threshold(th->outbox_lag_critical_s));
	json_object_set_new(o, "eta_warn_seconds", j_threshold(th->eta_warn_s));
	json_object_set_new(o, "eta_critical_seconds",
	                    j_threshold(th->eta_critical_s));
	json_object_set_new(o, "wal_budget_bytes",
	                    j_threshold(th->wal_budget_bytes));
	return o;
}

/* A column of a newer version: null where the server has none. */
static json_t *j_flag(bool exists, enum slot_flag f)
{
	if (!exists || f == SLOT_FLAG_ABSENT)
		return json_null();
	return json_boolean(f == SLOT_FLAG_TRUE);
}

/* Figures that belong to the slot are null when it does not exist. */
static json_t *server_json(const struct slot_figures *sf)
{
	json_t *o = json_object();
	bool ex = sf->slot_exists;
	const char *ws = wal_status_name(sf->wal_status);

	json_object_set_new(o, "sampled_at", j_time(sf->sampled_at_us));
	json_object_set_new(o, "slot_exists", json_boolean(ex));
	json_object_set_new(o, "active", json_boolean(ex && sf->active));
	json_object_set_new(o, "active_pid",
	                    ex && sf->active_pid > 0 ? json_integer(sf->active_pid)
	                                             : json_null());
	json_object_set_new(o, "restart_lsn",
	                    j_lsn(ex ? sf->restart_lsn : LSN_INVALID));
	json_object_set_new(o, "confirmed_flush_lsn",
	                    j_lsn(ex ? sf->confirmed_flush_lsn : LSN_INVALID));
	json_object_set_new(o, "current_lsn", j_lsn(sf->current_lsn));
	json_object_set_new(o, "wal_status",
	                    ex && ws[0] != '\0' ? json_string(ws) : json_null());
	/* safe_wal_size is negative, not unknown, once past the limit. */
	json_object_set_new(o, "safe_wal_size_bytes",
	                    ex && sf->safe_wal_size != -1
	                            ? json_integer(sf->safe_wal_size)
	                            : json_null());
	json_object_set_new(o, "max_slot_wal_keep_size_bytes",
	                    j_known(sf->max_slot_wal_keep_size));
	json_object_set_new(o, "retained_wal_bytes",
	                    j_known(ex ? sf->retained_bytes : -1));
	json_object_set_new(o, "confirmed_lag_bytes",
	                    j_known(ex ? sf->confirmed_lag_bytes : -1));
	/* Columns of newer versions: null where the server has none. */
	json_object_set_new(o, "failover", j_flag(ex, sf->failover));
	json_object_set_new(o, "synced", j_flag(ex, sf->synced));
	json_object_set_new(o, "conflicting", j_flag(ex, sf->conflicting));
	json_object_set_new(o, "inactive_since",
	                    j_time(ex ? sf->inactive_since_us : 0));
	json_object_set_new(o, "invalidation_reason",
	                    ex && sf->invalidation_reason[0] != '\0'
	                        ? j_str_fixed(sf->invalidation_reason,
	                                      sizeof(sf->invalidation_reason))
	                        : json_null());
	json_object_set_new(o, "idle_replication_slot_timeout_seconds",
	                    sf->server_version >= SLOT_PG_IDLE_TIMEOUT
	                        ? json_integer(sf->idle_timeout_s) : json_null());
	json_object_set_new(o, "server_version_num",
	                    sf->server_version > 0
	                        ? json_integer(sf->server_version) : json_null());
	for (size_t i = 0; i < NSTATS; i++)
		json_object_set_new(o, slot_stats[i].col,
		                    j_known(ex ? slot_stat(sf, i) : -1));
	if (sf->oldest_xact_pid != 0) {
		json_t *x = json_object();
		json_object_set_new(x, "pid", json_integer(sf->oldest_xact_pid));
		json_object_set_new(x, "age", json_integer(sf->oldest_xact_age));
		json_object_set_new(x, "seconds", j_real(sf->oldest_xact_seconds));
		json_object_set_new(o, "oldest_xact", x);
	} else {
		json_object_set_new(o, "oldest_xact", json_null());
	}
	return o;
}

/* The standby's copy (slot_standby): figures null until a read worked
 * and where the version or the slot has none. */
static json_t *standby_json(const struct slot_figures *sf,
                            const struct slot_standby *sb)
{
	json_t *o = json_object();
	bool ok = sb->read && sb->reachable;
	bool ex = ok && sb->slot_exists;

	json_object_set_new(o, "reachable", json_boolean(ok));
	json_object_set_new(o, "read_at", j_time(ok ? sb->read_at_us : 0));
	json_object_set_new(o, "server_version_num",
	                    ok && sb->server_version > 0
	                        ? json_integer(sb->server_version) : json_null());
	json_object_set_new(o, "in_recovery",
	                    ok ? json_boolean(sb->in_recovery) : json_null());
	json_object_set_new(o, "slot_exists",
	                    ok ? json_boolean(sb->slot_exists) : json_null());
	json_object_set_new(o, "synced", j_flag(ex, sb->synced));
	json_object_set_new(o, "failover", j_flag(ex, sb->failover));
	json_object_set_new(o, "confirmed_flush_lsn",
	                    j_lsn(ex ? sb->confirmed_flush_lsn : LSN_INVALID));
	json_object_set_new(o, "restart_lsn",
	                    j_lsn(ex ? sb->restart_lsn : LSN_INVALID));
	json_object_set_new(o, "invalidation_reason",
	                    ex && sb->invalidation_reason[0] != '\0'
	                        ? j_str_fixed(sb->invalidation_reason,
	                                      sizeof(sb->invalidation_reason))
	                        : json_null());
	json_object_set_new(o, "replay_lsn",
	                    j_lsn(ok ? sb->replay_lsn : LSN_INVALID));
	json_object_set_new(o, "receive_lsn",
	                    j_lsn(ok ? sb->receive_lsn : LSN_INVALID));
	json_object_set_new(o, "lag_bytes", j_known(slot_standby_lag(sf, sb)));
	json_object_set_new(o, "error",
	                    sb->read && !sb->reachable
	                        ? j_str_fixed(sb->error, sizeof(sb->error))
	                        : json_null());
	return o;
}

static json_t *j_latency_s(const struct hist *h, uint64_t us)
{
	return h->count > 0 ? json_real((double)us / 1e6) : json_null();
}

static json_t *relay_json(const struct relay_figures *rf)
{
	json_t *o = json_object(), *lat = json_object();
	const struct hist *h = &rf->latency;

	json_object_set_new(o, "state", json_string(relay_phase_name(rf->state)));
	json_object_set_new(o, "reason",
	                    j_str_fixed(rf->reason, sizeof(rf->reason)));
	json_object_set_new(o, "kafka_up", json_boolean(rf->kafka_up));
	json_object_set_new(o, "received_lsn", j_lsn(rf->received_lsn));
	json_object_set_new(o, "confirmable_lsn", j_lsn(rf->confirmable_lsn));
	json_object_set_new(o, "confirmed_lsn", j_lsn(rf->confirmed_lsn));
	json_object_set_new(o, "events_received", j_u64(rf->events_received));
	json_object_set_new(o, "events_published", j_u64(rf->events_published));
	json_object_set_new(o, "events_failed", j_u64(rf->events_failed));
	json_object_set_new(o, "bytes_published", j_u64(rf->bytes_published));
	json_object_set_new(o, "inflight_events", j_u64(rf->inflight_events));
	json_object_set_new(o, "inflight_bytes", j_u64(rf->inflight_bytes));
	json_object_set_new(o, "last_ack_at", j_time(rf->last_ack_us));
	json_object_set_new(o, "last_confirm_at", j_time(rf->last_confirm_us));
	json_object_set_new(o, "heartbeat_rtt_seconds",
	                    rf->heartbeat_rtt_us < 0
	                            ? json_null()
	                            : json_real((double)rf->heartbeat_rtt_us / 1e6));
	json_object_set_new(o, "heartbeats_seen", j_u64(rf->heartbeats_seen));
	json_object_set_new(o, "reconnects", j_u64(rf->reconnects));
	json_object_set_new(o, "events_republished",
	                    j_u64(rf->events_republished));
	json_object_set_new(o, "failovers", j_u64(rf->failovers));
	json_object_set_new(o, "producer_errors", j_u64(rf->producer_errors));
	json_object_set_new(o, "kafka_broker_rtt_seconds",
	                    rf->broker_rtt_us < 0
	                            ? json_null()
	                            : json_real((double)rf->broker_rtt_us / 1e6));
	json_object_set_new(o, "kafka_queue_messages",
	                    j_known(rf->kafka_queue_msgs));
	json_object_set_new(lat, "p50_seconds",
	                    j_latency_s(h, hist_percentile(h, 0.50)));
	json_object_set_new(lat, "p99_seconds",
	                    j_latency_s(h, hist_percentile(h, 0.99)));
	json_object_set_new(lat, "max_seconds", j_latency_s(h, h->max_us));
	json_object_set_new(lat, "count", j_u64(h->count));
	json_object_set_new(o, "latency", lat);
	return o;
}

/* The string comes from jansson's allocator, which the process may have
 * replaced: copy it into ours, with a final newline for curl users. */
static char *dump_copy(const json_t *root, size_t flags)
{
	char *txt = json_dumps(root, flags), *out;
	size_t n;

	if (txt == NULL)
		abort(); /* only on out of memory, fatal as in xmalloc */
	n = strlen(txt);
	out = xmalloc(n + 2);
	memcpy(out, txt, n);
	out[n] = '\n';
	out[n + 1] = '\0';
	free(txt);
	return out;
}

void health_set_plugin(struct health_snapshot *s, const char *plugin,
                       const char *publication)
{
	snprintf(s->plugin, sizeof(s->plugin), "%s", plugin);
	snprintf(s->publication, sizeof(s->publication), "%s",
	         strcmp(plugin, "pgoutput") == 0 ? publication : "");
}

char *health_render_slot_json(const struct health_snapshot *s, bool pretty)
{
	const struct health_eval *ev = &s->eval;
	json_t *root = json_object(), *reasons = json_array();
	char *out;

	for (size_t i = 0; i < ev->nreasons && i < HEALTH_MAX_REASONS; i++)
		json_array_append_new(reasons, j_str_fixed(ev->reason[i],
		                                           sizeof(ev->reason[i])));

	json_object_set_new(root, "slot",
	                    j_str_fixed(s->slot_name, sizeof(s->slot_name)));
	json_object_set_new(root, "state",
	                    json_string(health_state_name(ev->state)));
	json_object_set_new(root, "reasons", reasons);
	json_object_set_new(root, "plugin",
	                    s->plugin[0] ? j_str_fixed(s->plugin, sizeof(s->plugin))
	                                 : json_null());
	json_object_set_new(root, "publication",
	                    s->publication[0]
	                        ? j_str_fixed(s->publication, sizeof(s->publication))
	                        : json_null());
	json_object_set_new(root, "thresholds", thresholds_json(&s->thresholds));
	json_object_set_new(root, "server",
	                    s->slot.valid ? server_json(&s->slot) : json_null());
	json_object_set_new(root, "standby",
	                    s->standby.configured
	                        ? standby_json(&s->slot, &s->standby)
	                        : json_null());
	json_object_set_new(root, "relay", relay_json(&s->relay));
	json_object_set_new(root, "growth_bytes_per_second",
	                    j_real(ev->growth_bytes_per_s));
	json_object_set_new(root, "eta_seconds",
	                    ev->eta_seconds < 0 ? json_null()
	                                        : j_real(ev->eta_seconds));
	json_object_set_new(root, "idle_timeout_eta_seconds",
	                    ev->idle_eta_seconds < 0
	                        ? json_null() : j_real(ev->idle_eta_seconds));
	json_object_set_new(root, "outbox_lag_seconds",
	                    j_real(ev->outbox_lag_seconds));
	json_object_set_new(root, "since_confirm_seconds",
	                    j_real(ev->since_confirm_seconds));
	json_object_set_new(root, "generated_at", j_time(s->now_us));

	/* Order is insertion order (JSON_PRESERVE_ORDER for jansson < 2.8);
	 * 15 significant digits print 0.1 as 0.1. */
	out = dump_copy(root, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15) |
	                              (pretty ? JSON_INDENT(2) : JSON_COMPACT));
	json_decref(root);
	return out;
}

/* ---- /metrics ---------------------------------------------------------- */

/* Prometheus text exposition format 0.0.4: families grouped, # HELP and
 * # TYPE before the first sample, base units, no timestamps. */

#define PFX "outbox_relay_"

struct mbuf {
	char *p;
	size_t len, cap;
};

static void mb_printf(struct mbuf *b, const char *fmt, ...) RELAY_PRINTF(2, 3);

static void mb_printf(struct mbuf *b, const char *fmt, ...)
{
	va_list ap, ap2;
	int n;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort(); /* a bad format: a bug */
	if ((size_t)n >= b->cap - b->len) {
		while ((size_t)n >= b->cap - b->len)
			b->cap *= 2;
		b->p = xrealloc(b->p, b->cap);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap2);
	}
	va_end(ap2);
	b->len += (size_t)n;
}

static void family(struct mbuf *b, const char *name, const char *type,
                   const char *help)
{
	mb_printf(b, "# HELP " PFX "%s %s\n# TYPE " PFX "%s %s\n", name, help,
	          name, type);
}

/* Shortest of %.15g / %.17g that reads back as the same double. */
static void fmt_double(char *buf, size_t len, double v)
{
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, "%s", v > 0 ? "+Inf" : "-Inf");
		return;
	}
	snprintf(buf, len, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, len, "%.17g", v);
}

static void sample_u(struct mbuf *b, const char *name, uint64_t v)
{
	mb_printf(b, PFX "%s %" PRIu64 "\n", name, v);
}

static void sample_i(struct mbuf *b, const char *name, int64_t v)
{
	mb_printf(b, PFX "%s %" PRId64 "\n", name, v);
}

static void sample_d(struct mbuf *b, const char *name, double v)
{
	char num[40];

	fmt_double(num, sizeof(num), v);
	mb_printf(b, PFX "%s %s\n", name, num);
}

/* Label values escape backslash, double quote and newline; s stops at n
 * bytes or at a NUL. */
static void label_value(struct mbuf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i] != '\0'; i++) {
		const char *esc = s[i] == '\\' ? "\\\\"
		                  : s[i] == '"'  ? "\\\""
		                  : s[i] == '\n' ? "\\n"
		                                 : NULL;
		if (esc != NULL)
			mb_printf(b, "%s", esc);
		else
			mb_printf(b, "%c", s[i]);
	}
}

static const struct {
	const char *le;
	uint64_t us;
} le_bounds[] = {
	{ "0.001", 1000 },     { "0.005", 5000 },     { "0.01", 10000 },
	{ "0.025", 25000 },    { "0.05", 50000 },     { "0.1", 100000 },
	{ "0.25", 250000 },    { "0.5", 500000 },     { "1", 1000000 },
	{ "2.5", 2500000 },    { "5", 5000000 },      { "10", 10000000 },
};

#define NLE (sizeof(le_bounds) / sizeof(le_bounds[0]))

static void latency_histogram(struct mbuf *b, const struct hist *h)
{
	uint64_t cum[NLE] = { 0 };
	const char *n = "commit_to_ack_seconds";

	family(b, n, "histogram",
	       "Commit (in PostgreSQL) to Kafka ack, per event. Derived from a "
	       "log-linear histogram: a recorded value counts toward le only when "
	       "its whole internal bucket (1/8 of a power of two wide) lies at or "
	       "below le, so each bucket count is a lower bound (values up to "
	       "12.5% below le may land in the next bucket); _sum and _count are "
	       "exact.");
	for (unsigned k = 0; k < HIST_BUCKETS; k++) {
		uint64_t up = hist_bucket_upper(k);
		if (h->bucket[k] == 0)
			continue;
		for (size_t i = 0; i < NLE; i++)
			if (up <= le_bounds[i].us)
				cum[i] += h->bucket[k];
	}
	for (size_t i = 0; i < NLE; i++)
		mb_printf(b, PFX "%s_bucket{le=\"%s\"} %" PRIu64 "\n", n,
		          le_bounds[i].le, cum[i] < h->count ? cum[i] : h->count);
	mb_printf(b, PFX "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", n, h->count);
	sample_d(b, "commit_to_ack_seconds_sum", (double)h->sum_us / 1e6);
	sample_u(b, "commit_to_ack_seconds_count", h->count);
}

static void topics(struct mbuf *b, const struct health_snapshot *s)
{
	size_t nt = s->ntopics < 16 ? s->ntopics : 16;

	family(b, "events_published_by_topic_total", "counter",
	       "Events acknowledged by Kafka, per topic (topics seen since start, "
	       "at most 16).");
	for (size_t i = 0; i < nt; i++) {
		size_t len = strnlen(s->topics[i], sizeof(s->topics[i]));
		uint64_t v = s->topic_events[i];
		bool dup = false;
		/* One series per topic, even if the snapshot repeats one. */
		for (size_t j = 0; j < i && !dup; j++)
			dup = strnlen(s->topics[j], sizeof(s->topics[j])) == len &&
			      memcmp(s->topics[j], s->topics[i], len) == 0;
		if (dup)
			continue;
		for (size_t j = i + 1; j < nt; j++)
			if (strnlen(s->topics[j], sizeof(s->topics[j])) == len &&
			    memcmp(s->topics[j], s->topics[i], len) == 0)
				v += s->topic_events[j];
		mb_printf(b, PFX "events_published_by_topic_total{topic=\"");
		label_value(b, s->topics[i], len);
		mb_printf(b, "\"} %" PRIu64 "\n", v);
	}
}

/* The invalidation reasons a server reports, from the version that
 * reports each (15 and 16 only through wal_status lost). */
static const struct {
	const char *name;
	int since;
} inval_reasons[] = {
	{ "wal_removed", 0 },
	{ "rows_removed", SLOT_PG_FAILOVER },
	{ "wal_level_insufficient", SLOT_PG_FAILOVER },
	{ "idle_timeout", SLOT_PG_IDLE_TIMEOUT },
};

#define NREASONS (sizeof(inval_reasons) / sizeof(inval_reasons[0]))

/* The slot's flags of newer versions, one gauge each: absent where the
 * server has no such column. */
struct flag_metric {
	const char *name, *help;
	size_t off;                 /* of the enum slot_flag in slot_figures */
};
static const struct flag_metric flag_metrics[] = {
	{ "slot_failover", "1 when the slot is a failover slot, synchronized to "
	  "standbys (pg_replication_slots.failover, PostgreSQL 17); absent "
	  "before.", offsetof(struct slot_figures, failover) },
	{ "slot_synced", "1 when the slot is a standby's synchronized copy of a "
	  "failover slot (pg_replication_slots.synced, PostgreSQL 17); absent "
	  "before.", offsetof(struct slot_figures, synced) },
	{ "slot_conflicting", "1 when a logical slot on a standby was invalidated "
	  "by a conflict with recovery (pg_replication_slots.conflicting, "
	  "PostgreSQL 16); absent before.",
	  offsetof(struct slot_figures, conflicting) },
};

static void slot_metrics(struct mbuf *b, const struct health_snapshot *s)
{
	static const enum wal_status statuses[] = {
		WAL_STATUS_RESERVED, WAL_STATUS_EXTENDED, WAL_STATUS_UNRESERVED,
		WAL_STATUS_LOST,
	};
	const struct slot_figures *sf = &s->slot;
	bool have = sf->valid && sf->slot_exists;

	/* The gauges below are as of this sample: stale while PostgreSQL
	 * cannot be reached, which this says (and pg_up). */
	family(b, "slot_sample_timestamp_seconds", "gauge",
	       "Unix time of the watchdog's latest successful slot sample; "
	       "absent before the first.");
	if (sf->valid)
		sample_d(b, "slot_sample_timestamp_seconds",
		         (double)sf->sampled_at_us / 1e6);

	family(b, "slot_active", "gauge",
	       "1 when a walsender is streaming from the slot "
	       "(pg_replication_slots.active).");
	if (have)
		sample_u(b, "slot_active", sf->active ? 1 : 0);

	family(b, "slot_wal_status", "gauge",
	       "pg_replication_slots.wal_status: 1 for the current status, 0 for "
	       "the others (extended: warn, unreserved: critical, lost: fatal).");
	if (have)
		for (size_t i = 0; i < 4; i++)
			mb_printf(b, PFX "slot_wal_status{status=\"%s\"} %d\n",
			          wal_status_name(statuses[i]), sf->wal_status == statuses[i]);

	/* Columns of newer versions: absent where the server has none. */
	for (size_t i = 0; i < sizeof(flag_metrics) / sizeof(flag_metrics[0]); i++) {
		const struct flag_metric *m = &flag_metrics[i];
		enum slot_flag v = *(const enum slot_flag *)((const char *)sf + m->off);
		family(b, m->name, "gauge", m->help);
		if (have && v != SLOT_FLAG_ABSENT)
			sample_u(b, m->name, v == SLOT_FLAG_TRUE);
	}
	family(b, "slot_invalidation_reason", "gauge",
	       "pg_replication_slots.invalidation_reason: 1 for the slot's reason, "
	       "0 for the others the server can report (15 and 16: wal_removed, "
	       "from wal_status lost; 18 adds idle_timeout); every one is fatal.");
	if (have)
		for (size_t i = 0; i < NREASONS; i++)
			if (sf->server_version >= inval_reasons[i].since)
				mb_printf(b, PFX "slot_invalidation_reason{reason=\"%s\"} "
				          "%d\n", inval_reasons[i].name,
				          strncmp(sf->invalidation_reason,
				                  inval_reasons[i].name,
				                  sizeof(sf->invalidation_reason)) == 0);
	family(b, "slot_inactive_since_timestamp_seconds", "gauge",
	       "Unix time since which no process streams from the slot "
	       "(pg_replication_slots.inactive_since, PostgreSQL 17); absent "
	       "while it is active and before 17.");
	if (have && sf->inactive_since_us > 0)
		sample_d(b, "slot_inactive_since_timestamp_seconds",
		         (double)sf->inactive_since_us / 1e6);
	family(b, "slot_eta_to_idle_timeout_seconds", "gauge",
	       "Time left until idle_replication_slot_timeout invalidates the "
	       "idle slot (inactive_since + timeout - now; PostgreSQL 18); absent "
	       "while the slot is active or no timeout is set.");
	if (have && s->eval.idle_eta_seconds >= 0)
		sample_d(b, "slot_eta_to_idle_timeout_seconds",
		         s->eval.idle_eta_seconds);

	family(b, "slot_retained_wal_bytes", "gauge",
	       "WAL the slot keeps on the server: pg_current_wal_lsn() - "
	       "restart_lsn.");
	if (have && sf->retained_bytes >= 0)
		sample_i(b, "slot_retained_wal_bytes", sf->retained_bytes);

	family(b, "slot_confirmed_lag_bytes", "gauge",
	       "pg_current_wal_lsn() - confirmed_flush_lsn.");
	if (have && sf->confirmed_lag_bytes >= 0)
		sample_i(b, "slot_confirmed_lag_bytes", sf->confirmed_lag_bytes);

	family(b, "slot_safe_wal_size_bytes", "gauge",
	       "pg_replication_slots.safe_wal_size: WAL that can still be written "
	       "before the slot is lost; absent when max_slot_wal_keep_size is "
	       "unlimited.");
	if (have && sf->safe_wal_size != -1)
		sample_i(b, "slot_safe_wal_size_bytes", sf->safe_wal_size);

	family(b, "slot_wal_growth_bytes_per_second", "gauge",
	       "Growth rate of the retained WAL over the watchdog window; 0 when "
	       "shrinking.");
	if (sf->valid)
		sample_d(b, "slot_wal_growth_bytes_per_second",
		         s->eval.growth_bytes_per_s);

	family(b, "slot_eta_to_loss_seconds", "gauge",
	       "Estimated time until the slot is lost (safe_wal_size / growth) "
	       "or, when max_slot_wal_keep_size is unlimited, until "
	       "watchdog.wal.budget.bytes is used up; absent when not growing or "
	       "unknown.");
	if (s->eval.eta_seconds >= 0)
		sample_d(b, "slot_eta_to_loss_seconds", s->eval.eta_seconds);

	family(b, "slot_oldest_xact_seconds", "gauge",
	       "Duration of the oldest running transaction with an xid, which "
	       "holds the slot back; absent when there is none.");
	if (sf->valid && sf->oldest_xact_pid != 0)
		sample_d(b, "slot_oldest_xact_seconds", sf->oldest_xact_seconds);

	for (size_t i = 0; i < NSTATS; i++) {
		family(b, slot_stats[i].metric, "counter", slot_stats[i].help);
		if (have && slot_stat(sf, i) >= 0)
			sample_i(b, slot_stats[i].metric, slot_stat(sf, i));
	}
}

/* The relay's plain uint64_t figures, each one sample. */
static const struct {
	const char *name, *type, *help;
	size_t off;
} relay_u64[] = {
#define RU(f, n, t, h) { n, t, h, offsetof(struct relay_figures, f) }
	RU(events_received, "events_received_total", "counter",
	   "Outbox events received from the slot."),
	RU(events_published, "events_published_total", "counter",
	   "Outbox events acknowledged by Kafka."),
	RU(events_failed, "events_failed_total", "counter",
	   "Outbox events whose delivery to Kafka failed."),
	RU(bytes_published, "bytes_published_total", "counter",
	   "Message bytes acknowledged by Kafka."),
	RU(inflight_events, "inflight_events", "gauge",
	   "Events handed to Kafka and not yet acknowledged."),
	RU(inflight_bytes, "inflight_bytes", "gauge",
	   "Bytes of the events in flight."),
	RU(received_lsn, "received_lsn", "gauge",
	   "Last LSN received from the slot, as a byte position."),
	RU(confirmed_lsn, "confirmed_lsn", "gauge",
	   "Last flush LSN confirmed to PostgreSQL, as a byte position."),
	RU(heartbeats_seen, "heartbeats_total", "counter",
	   "Own heartbeats recognised in the stream (never published)."),
	RU(reconnects, "reconnects_total", "counter",
	   "Reconnections of the replication stream."),
	RU(events_republished, "events_republished_total", "counter",
	   "Events produced again after a reconnect that an earlier session "
	   "had produced without an ack (duplicates at most)."),
	RU(failovers, "failovers_total", "counter",
	   "Promotions of a standby followed: new timelines that hold "
	   "everything published."),
	RU(producer_errors, "producer_errors_total", "counter",
	   "Errors reported by the Kafka producer."),
#undef RU
};

/* The standby's copy (slot.standby.conninfo): every sample absent when
 * it is not configured. */
static void standby_metrics(struct mbuf *b, const struct health_snapshot *s)
{
	const struct slot_standby *sb = &s->standby;
	bool ok = sb->configured && sb->read && sb->reachable;
	int64_t lag = slot_standby_lag(&s->slot, sb);

	family(b, "slot_standby_up", "gauge",
	       "1 when the watchdog's last read of the slot's copy on the standby "
	       "(slot.standby.conninfo) worked; absent when none is configured.");
	if (sb->configured)
		sample_u(b, "slot_standby_up", ok ? 1 : 0);
	family(b, "slot_standby_synced", "gauge",
	       "1 when the standby holds a synced copy of the slot "
	       "(pg_replication_slots.synced there, PostgreSQL 17), 0 when the "
	       "copy is missing or not synced; absent when unknown.");
	if (ok && sb->server_version >= SLOT_PG_FAILOVER &&
	    (!sb->slot_exists || sb->synced != SLOT_FLAG_ABSENT))
		sample_u(b, "slot_standby_synced",
		         sb->slot_exists && sb->synced == SLOT_FLAG_TRUE);
	family(b, "slot_standby_lag_bytes", "gauge",
	       "The slot's confirmed_flush_lsn minus its standby copy's: what a "
	       "relay would publish again after a failover to the standby; "
	       "absent when unknown.");
	if (ok && lag >= 0)
		sample_i(b, "slot_standby_lag_bytes", lag);
}

/* The relay's state as a Prometheus state set: one series per state,
 * exactly one of them 1. */
static void relay_state_set(struct mbuf *b, const struct relay_figures *rf)
{
	static const char *const series[] = { "streaming", "standby", "backoff",
		                              "stopped" };
	/* The series each phase sets; -1 none (no relay in this process). */
	static const int of_phase[NPHASES] = {
		[RELAY_PHASE_NOT_RUNNING] = -1,
		[RELAY_PHASE_CONNECTING] = 2,
		[RELAY_PHASE_BACKOFF] = 2,
		[RELAY_PHASE_STANDBY] = 1,
		[RELAY_PHASE_STREAMING] = 0,
		[RELAY_PHASE_STOPPING] = 3,
		[RELAY_PHASE_FAIL_STOPPED] = 3,
	};
	int on = (size_t)rf->state < NPHASES ? of_phase[rf->state] : -1;

	family(b, "state", "gauge",
	       "The relay's state, one series per state (a state set): "
	       "streaming, standby (another process holds the slot), backoff "
	       "(connecting or waiting to), stopped (stopping or fail-stopped).");
	for (int i = 0; i < (int)(sizeof(series) / sizeof(series[0])); i++)
		mb_printf(b, PFX "state{state=\"%s\"} %d\n", series[i], i == on);
}

char *health_render_metrics(const struct health_snapshot *s)
{
	const struct relay_figures *rf = &s->relay;
	struct mbuf b;

	b.cap = 8192;
	b.len = 0;
	b.p = xmalloc(b.cap);
	b.p[0] = '\0';

	family(&b, "build_info", "gauge",
	       "Always 1; the version is in the label.");
	mb_printf(&b, PFX "build_info{version=\"");
	label_value(&b, RELAY_VERSION, sizeof(RELAY_VERSION));
	mb_printf(&b, "\"} 1\n");

	family(&b, "health_state", "gauge",
	       "Slot health: 0 ok, 1 warn, 2 critical, 3 fatal (the reasons are "
	       "in /slot).");
	sample_u(&b, "health_state", (uint64_t)s->eval.state);

	family(&b, "kafka_up", "gauge",
	       "1 when the Kafka producer reports a broker up and one answered "
	       "within kafka.contact.timeout.ms.");
	sample_u(&b, "kafka_up", rf->kafka_up && !rf->kafka_stale ? 1 : 0);
	family(&b, "kafka_contact_age_seconds", "gauge",
	       "Time since a Kafka broker last answered (an ack or the relay's "
	       "metadata probe); absent without a producer.");
	if (rf->kafka_contact_age_us >= 0)
		sample_d(&b, "kafka_contact_age_seconds",
		         (double)rf->kafka_contact_age_us / 1e6);
	family(&b, "pg_up", "gauge",
	       "1 when PostgreSQL answers: the replication stream sent something "
	       "within half of pg.receive.timeout.ms, or (without a stream) the "
	       "watchdog's last sample worked.");
	sample_u(&b, "pg_up", rf->pg_up ? 1 : 0);
	relay_state_set(&b, rf);

	for (size_t i = 0; i < sizeof(relay_u64) / sizeof(relay_u64[0]); i++) {
		uint64_t v;
		memcpy(&v, (const char *)rf + relay_u64[i].off, sizeof(v));
		family(&b, relay_u64[i].name, relay_u64[i].type, relay_u64[i].help);
		sample_u(&b, relay_u64[i].name, v);
	}
	topics(&b, s);

	family(&b, "last_ack_timestamp_seconds", "gauge",
	       "Unix time of the last Kafka ack; absent before the first.");
	if (rf->last_ack_us > 0)
		sample_d(&b, "last_ack_timestamp_seconds",
		         (double)rf->last_ack_us / 1e6);

	family(&b, "outbox_lag_seconds", "gauge",
	       "Age of the oldest event received and not yet acknowledged (from "
	       "its commit time); 0 when none is pending.");
	sample_d(&b, "outbox_lag_seconds", s->eval.outbox_lag_seconds);
	family(&b, "since_confirm_seconds", "gauge",
	       "Time since the confirmed LSN last moved, while events are in "
	       "flight; 0 otherwise.");
	sample_d(&b, "since_confirm_seconds", s->eval.since_confirm_seconds);

	latency_histogram(&b, &rf->latency);

	family(&b, "heartbeat_rtt_seconds", "gauge",
	       "Last heartbeat round trip: written with pg_logical_emit_message() "
	       "to seen in the stream; absent before the first.");
	if (rf->heartbeat_rtt_us >= 0)
		sample_d(&b, "heartbeat_rtt_seconds",
		         (double)rf->heartbeat_rtt_us / 1e6);
	family(&b, "kafka_broker_rtt_seconds", "gauge",
	       "Broker round trip from librdkafka statistics; absent when "
	       "unknown.");
	if (rf->broker_rtt_us >= 0)
		sample_d(&b, "kafka_broker_rtt_seconds",
		         (double)rf->broker_rtt_us / 1e6);
	family(&b, "kafka_queue_messages", "gauge",
	       "Messages in the producer queue (librdkafka msg_cnt); absent "
	       "when unknown.");
	if (rf->kafka_queue_msgs >= 0)
		sample_i(&b, "kafka_queue_messages", rf->kafka_queue_msgs);

	slot_metrics(&b, s);
	standby_metrics(&b, s);
	return b.p;
}
