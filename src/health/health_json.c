/* SPDX-License-Identifier: Apache-2.0 */
/* health_json.c -- the /slot body: the snapshot (slot figures, the
 * verdict, the standby's copy, the relay's figures) as one JSON object
 * (health.h, health_render_slot_json()).
 *
 * Apart from health.c because rendering is not judging: the rules there
 * decide the state and its reasons, this file only writes them out, and
 * a key renamed here cannot change what the watchdog concludes. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "health/health.h"
#include "health_int.h"

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
	for (size_t i = 0; i < health_nslot_stats; i++)
		json_object_set_new(o, health_slot_stats[i].col,
		                    j_known(ex ? health_slot_stat(sf, i) : -1));
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
	json_object_set_new(o, "poison_parked", j_u64(rf->poison_parked));
	json_object_set_new(o, "poison_skipped", j_u64(rf->poison_skipped));
	json_object_set_new(o, "invalid_ops", j_u64(rf->invalid_ops));
	json_object_set_new(o, "kafka_transactions_committed",
	                    j_u64(rf->kafka_txn_committed));
	json_object_set_new(o, "kafka_transactions_aborted",
	                    j_u64(rf->kafka_txn_aborted));
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
