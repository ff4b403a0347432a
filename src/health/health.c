/* SPDX-License-Identifier: Apache-2.0 */
/* health.c -- slot health: figures and thresholds to a state with reasons,
 * and the retained-WAL growth window. The /slot JSON (health_json.c) and
 * the /metrics text (health_metrics.c) render what is judged here.
 *
 * Pure: no I/O, no globals, no locks; the HTTP thread renders a copy. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/health.h"
#include "health_int.h"

static const char *const phase_names[] = {
	[RELAY_PHASE_NOT_RUNNING] = "not running",
	[RELAY_PHASE_CONNECTING] = "connecting",
	[RELAY_PHASE_BACKOFF] = "backoff",
	[RELAY_PHASE_STANDBY] = "standby",
	[RELAY_PHASE_STREAMING] = "streaming",
	[RELAY_PHASE_STOPPING] = "stopping",
	[RELAY_PHASE_FAIL_STOPPED] = "fail-stopped",
};

/* The renderings size their tables by health_int.h's count of the
 * phases, which must be this table's: a name added here without moving
 * the count fails the build. */
_Static_assert(sizeof(phase_names) / sizeof(phase_names[0]) == HEALTH_NPHASES,
               "phase_names[] and enum relay_phase disagree");

const char *relay_phase_name(enum relay_phase p)
{
	/* A snapshot is copied between threads as bytes: never index past
	 * the table whatever it holds. */
	return (size_t)p < HEALTH_NPHASES ? phase_names[p] : "?";
}

enum relay_phase relay_phase_parse(const char *s)
{
	for (size_t i = 0; i < HEALTH_NPHASES; i++)
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

/* ---- pg_stat_replication_slots ----------------------------------------- */

/* pg_stat_replication_slots: the column (the /slot key) and the metric.
 * PostgreSQL resets them with pg_stat_reset_replication_slot(), which
 * Prometheus treats as a counter reset. */
const struct health_stat health_slot_stats[] = {
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

const size_t health_nslot_stats =
	sizeof(health_slot_stats) / sizeof(health_slot_stats[0]);

int64_t health_slot_stat(const struct slot_figures *sf, size_t i)
{
	int64_t v;

	memcpy(&v, (const char *)sf + health_slot_stats[i].off, sizeof(v));
	return v;
}
