/* SPDX-License-Identifier: Apache-2.0 */
/* check_health.c -- slot health: the rules and their thresholds, the ETA
 * arithmetic, the growth window, the /slot JSON read back with jansson and
 * the /metrics text read back by a strict exposition-format parser. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "health/health.h"

#define KiB ((int64_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define SEC ((int64_t)1000000)

/* 2023-11-14T22:13:20Z */
#define NOW_US ((int64_t)1700000000 * SEC)

/* ---- fixtures ---------------------------------------------------------- */

/* A healthy relay on a healthy slot: every rule quiet. */
static void base(struct slot_figures *sf, struct relay_figures *rf,
                 struct health_thresholds *th)
{
	memset(sf, 0, sizeof(*sf));
	sf->valid = true;
	sf->slot_exists = true;
	sf->sampled_at_us = NOW_US - 2 * SEC + 123456;
	sf->active = true;
	sf->active_pid = 4242;
	sf->restart_lsn = 0x16B2000000ull;
	sf->confirmed_flush_lsn = 0x16B3000000ull;
	sf->current_lsn = 0x16B374D848ull;
	sf->wal_status = WAL_STATUS_RESERVED;
	sf->safe_wal_size = -1;
	sf->max_slot_wal_keep_size = -1;
	sf->retained_bytes = 32 * MiB;
	sf->confirmed_lag_bytes = 16 * MiB;
	sf->spill_txns = 1;
	sf->spill_count = 2;
	sf->spill_bytes = 3000;
	sf->stream_txns = 4;
	sf->stream_count = 5;
	sf->stream_bytes = 6000;
	sf->total_txns = 7000;
	sf->total_bytes = 8000000;

	memset(rf, 0, sizeof(*rf));
	rf->state = RELAY_PHASE_STREAMING;
	rf->kafka_up = true;
	rf->received_lsn = 0x16B374D000ull;
	rf->confirmable_lsn = 0x16B3700000ull;
	rf->confirmed_lsn = 0x16B3000000ull;
	rf->events_received = 1000;
	rf->events_published = 990;
	rf->events_failed = 2;
	rf->bytes_published = 123456789;
	rf->inflight_events = 0;
	rf->inflight_bytes = 0;
	rf->last_ack_us = NOW_US - 250000;
	rf->last_confirm_us = NOW_US - 1 * SEC;
	rf->oldest_pending_commit_us = 0;
	rf->reconnects = 3;
	rf->poison_parked = 4;
	rf->poison_skipped = 2;
	rf->invalid_ops = 4;
	rf->producer_errors = 4;
	rf->heartbeat_rtt_us = -1;
	rf->heartbeats_seen = 17;
	rf->broker_rtt_us = -1;
	rf->kafka_queue_msgs = -1;
	rf->produce_requests = -1;
	rf->requests_in_flight = -1;
	rf->batch_msgs = -1;
	hist_reset(&rf->latency);

	memset(th, 0, sizeof(*th));
	th->retained_warn_bytes = 1 * GiB;
	th->retained_critical_bytes = 4 * GiB;
	th->lag_warn_bytes = 512 * MiB;
	th->lag_critical_bytes = 2 * GiB;
	th->outbox_lag_warn_s = 60;
	th->outbox_lag_critical_s = 300;
	th->eta_warn_s = 3600;
	th->eta_critical_s = 600;
	th->wal_budget_bytes = 0;
}

static struct slot_figures sf;
static struct relay_figures rf;
static struct health_thresholds th;
static struct health_eval ev;

static void setup(void)
{
	base(&sf, &rf, &th);
	memset(&ev, 0, sizeof(ev));
}

static void eval(double growth)
{
	health_evaluate(&sf, &rf, &th, growth, NOW_US, &ev);
}

static char joined[4096];

#define ck_state(want, text)                                                 \
	do {                                                                     \
		ck_assert_str_eq(health_state_name(ev.state), health_state_name(want)); \
		health_reasons_join(&ev, joined, sizeof(joined));                    \
		ck_assert_str_eq(joined, text);                                      \
	} while (0)

/* ---- states and thresholds --------------------------------------------- */

START_TEST(test_state_names)
{
	ck_assert_str_eq(health_state_name(HEALTH_OK), "ok");
	ck_assert_str_eq(health_state_name(HEALTH_WARN), "warn");
	ck_assert_str_eq(health_state_name(HEALTH_CRITICAL), "critical");
	ck_assert_str_eq(health_state_name(HEALTH_FATAL), "fatal");
	ck_assert_int_lt(HEALTH_OK, HEALTH_WARN);
	ck_assert_int_lt(HEALTH_WARN, HEALTH_CRITICAL);
	ck_assert_int_lt(HEALTH_CRITICAL, HEALTH_FATAL);
}
END_TEST

START_TEST(test_healthy_is_ok)
{
	eval(0);
	ck_state(HEALTH_OK, "");
	ck_assert_double_eq(ev.growth_bytes_per_s, 0);
	ck_assert_double_eq(ev.eta_seconds, -1);
	ck_assert_double_eq(ev.outbox_lag_seconds, 0);
	ck_assert_double_eq(ev.since_confirm_seconds, 0);
}
END_TEST

START_TEST(test_retained)
{
	sf.retained_bytes = 1 * GiB - 1;
	eval(0);
	ck_state(HEALTH_OK, "");

	sf.retained_bytes = 1 * GiB; /* at the threshold counts */
	eval(0);
	ck_state(HEALTH_WARN, "retained WAL 1.0 GiB >= warn 1.0 GiB");

	sf.retained_bytes = 1288490189; /* 1.2 GiB */
	eval(0);
	ck_state(HEALTH_WARN, "retained WAL 1.2 GiB >= warn 1.0 GiB");

	sf.retained_bytes = 4 * GiB;
	eval(0);
	ck_state(HEALTH_CRITICAL, "retained WAL 4.0 GiB >= critical 4.0 GiB");

	sf.retained_bytes = 5 * GiB;
	eval(0);
	ck_state(HEALTH_CRITICAL, "retained WAL 5.0 GiB >= critical 4.0 GiB");

	sf.retained_bytes = -1; /* unknown: no rule */
	eval(0);
	ck_state(HEALTH_OK, "");
}
END_TEST

START_TEST(test_confirmed_lag)
{
	sf.confirmed_lag_bytes = 600 * MiB;
	eval(0);
	ck_state(HEALTH_WARN, "confirmed lag 600.0 MiB >= warn 512.0 MiB");

	sf.confirmed_lag_bytes = 3 * GiB;
	eval(0);
	ck_state(HEALTH_CRITICAL, "confirmed lag 3.0 GiB >= critical 2.0 GiB");

	th.lag_warn_bytes = 1000;
	th.lag_critical_bytes = 0;
	sf.confirmed_lag_bytes = 1000;
	eval(0);
	ck_state(HEALTH_WARN, "confirmed lag 1000 B >= warn 1000 B");
}
END_TEST

START_TEST(test_outbox_lag)
{
	rf.inflight_events = 5;
	rf.last_confirm_us = NOW_US - 1 * SEC;

	rf.oldest_pending_commit_us = NOW_US - 59 * SEC;
	eval(0);
	ck_state(HEALTH_OK, "");
	ck_assert_double_eq(ev.outbox_lag_seconds, 59);

	rf.oldest_pending_commit_us = NOW_US - 75 * SEC;
	eval(0);
	ck_state(HEALTH_WARN, "outbox lag 75 s >= warn 60 s");
	ck_assert_double_eq(ev.outbox_lag_seconds, 75);

	rf.oldest_pending_commit_us = NOW_US - 600 * SEC;
	eval(0);
	ck_state(HEALTH_CRITICAL, "outbox lag 10.0 min >= critical 5.0 min");
	ck_assert_double_eq(ev.outbox_lag_seconds, 600);

	/* The commit time is the server's clock: a skew ahead reads as 0. */
	rf.oldest_pending_commit_us = NOW_US + 3 * SEC;
	eval(0);
	ck_state(HEALTH_OK, "");
	ck_assert_double_eq(ev.outbox_lag_seconds, 0);
}
END_TEST

START_TEST(test_since_confirm)
{
	rf.inflight_events = 3;
	rf.last_confirm_us = NOW_US - 90 * SEC - 250000;
	eval(0);
	ck_state(HEALTH_WARN,
	         "no confirm for 90 s with 3 events in flight > warn 60 s");
	ck_assert_double_eq(ev.since_confirm_seconds, 90.25);

	rf.last_confirm_us = NOW_US - 60 * SEC; /* strictly greater */
	eval(0);
	ck_state(HEALTH_OK, "");
	ck_assert_double_eq(ev.since_confirm_seconds, 60);

	/* Nothing pending: reported as 0, however old the last confirm. */
	rf.inflight_events = 0;
	rf.last_confirm_us = NOW_US - 3600 * SEC;
	eval(0);
	ck_state(HEALTH_OK, "");
	ck_assert_double_eq(ev.since_confirm_seconds, 0);

	/* A confirm stamped ahead of now (clock step): 0, not negative. */
	rf.inflight_events = 3;
	rf.last_confirm_us = NOW_US + 5 * SEC;
	eval(0);
	ck_assert_double_eq(ev.since_confirm_seconds, 0);

	/* Never confirmed: no point to count from (outbox lag covers it). */
	rf.inflight_events = 3;
	rf.last_confirm_us = 0;
	eval(0);
	ck_state(HEALTH_OK, "");
	ck_assert_double_eq(ev.since_confirm_seconds, 0);
}
END_TEST

START_TEST(test_wal_status)
{
	sf.wal_status = WAL_STATUS_RESERVED;
	eval(0);
	ck_state(HEALTH_OK, "");

	sf.wal_status = WAL_STATUS_EXTENDED;
	eval(0);
	ck_state(HEALTH_WARN, "wal_status extended: retained WAL past max_wal_size");

	sf.wal_status = WAL_STATUS_UNRESERVED;
	sf.max_slot_wal_keep_size = 2 * GiB;
	sf.safe_wal_size = -4096;
	eval(0);
	ck_state(HEALTH_CRITICAL,
	         "wal_status unreserved: retained WAL past max_slot_wal_keep_size "
	         "2.0 GiB, removed at the next checkpoint");

	sf.wal_status = WAL_STATUS_LOST;
	sf.safe_wal_size = -1;
	sf.retained_bytes = -1;
	eval(0);
	ck_state(HEALTH_FATAL,
	         "slot lost: WAL removed; the relay stops, the slot must be "
	         "recreated and the outbox re-published: see runbook");

	/* Not sampled yet (pre-PG13 or empty): no rule. */
	sf.wal_status = WAL_STATUS_UNKNOWN;
	eval(0);
	ck_state(HEALTH_OK, "");
}
END_TEST

START_TEST(test_slot_missing)
{
	sf.slot_exists = false;
	sf.retained_bytes = 100 * GiB; /* meaningless without a slot */
	sf.wal_status = WAL_STATUS_LOST;
	eval(1e6);
	ck_state(HEALTH_FATAL, "slot does not exist");
	ck_assert_double_eq(ev.eta_seconds, -1);
}
END_TEST

START_TEST(test_not_sampled)
{
	/* No sample yet: no slot rule at all, whatever the figures say. */
	sf.valid = false;
	sf.slot_exists = false;
	sf.retained_bytes = 100 * GiB;
	th.wal_budget_bytes = 1 * GiB;
	eval(1e6);
	ck_state(HEALTH_OK, "");
	ck_assert_double_eq(ev.eta_seconds, -1);
	ck_assert_double_eq(ev.growth_bytes_per_s, 1e6);
}
END_TEST

START_TEST(test_fail_stopped)
{
	rf.state = RELAY_PHASE_FAIL_STOPPED;
	snprintf(rf.reason, sizeof(rf.reason),
	         "poison event at 16/B3000000; topic missing");
	eval(0);
	/* The relay's own words, semicolon and all: one reason. */
	ck_state(HEALTH_CRITICAL,
	         "relay fail-stopped: poison event at 16/B3000000; topic missing");
	ck_assert_uint_eq(ev.nreasons, 1);

	rf.reason[0] = '\0';
	eval(0);
	ck_state(HEALTH_CRITICAL, "relay fail-stopped: no reason recorded");

	rf.state = RELAY_PHASE_BACKOFF;
	snprintf(rf.reason, sizeof(rf.reason), "connection refused");
	eval(0);
	ck_state(HEALTH_OK, "");
}
END_TEST

START_TEST(test_worst_wins_and_order)
{
	rf.inflight_events = 1;
	rf.oldest_pending_commit_us = NOW_US - 70 * SEC;   /* warn */
	sf.retained_bytes = 5 * GiB;                        /* critical */
	eval(0);
	ck_state(HEALTH_CRITICAL, "retained WAL 5.0 GiB >= critical 4.0 GiB; "
	                          "outbox lag 70 s >= warn 60 s");

	sf.wal_status = WAL_STATUS_LOST;  /* fatal */
	eval(0);
	ck_state(HEALTH_FATAL,
	         "slot lost: WAL removed; the relay stops, the slot must be "
	         "recreated and the outbox re-published: see runbook; "
	         "retained WAL 5.0 GiB >= critical 4.0 GiB; "
	         "outbox lag 70 s >= warn 60 s");
}
END_TEST

START_TEST(test_threshold_zero_disables)
{
	memset(&th, 0, sizeof(th));
	sf.retained_bytes = 1000 * GiB;
	sf.confirmed_lag_bytes = 1000 * GiB;
	sf.max_slot_wal_keep_size = 2 * GiB;
	sf.safe_wal_size = 1;
	rf.inflight_events = 9;
	rf.oldest_pending_commit_us = NOW_US - 86400 * SEC;
	rf.last_confirm_us = NOW_US - 86400 * SEC;
	eval(1e9);
	ck_state(HEALTH_OK, "");
	ck_assert_double_eq(ev.eta_seconds, 1e-9); /* computed, not judged */
	ck_assert_double_eq(ev.outbox_lag_seconds, 86400);
	ck_assert_double_eq(ev.since_confirm_seconds, 86400);

	/* Only the critical level off: the warn level still fires. */
	base(&sf, &rf, &th);
	th.retained_critical_bytes = 0;
	sf.retained_bytes = 100 * GiB;
	eval(0);
	ck_state(HEALTH_WARN, "retained WAL 100.0 GiB >= warn 1.0 GiB");

	/* Only the warn level off: below critical is ok. */
	base(&sf, &rf, &th);
	th.outbox_lag_warn_s = 0;
	rf.inflight_events = 1;
	rf.oldest_pending_commit_us = NOW_US - 200 * SEC;
	rf.last_confirm_us = NOW_US - 200 * SEC;
	eval(0);
	ck_state(HEALTH_OK, "");
}
END_TEST

/* Every reason fits its own slot (a reason longer than that is cut
 * there, never another dropped), worst first; only the one-line join
 * into a short buffer ends in "...". */
START_TEST(test_reasons_truncated)
{
	char *r, small[128];
	size_t n;

	rf.state = RELAY_PHASE_FAIL_STOPPED;
	memset(rf.reason, 'x', sizeof(rf.reason)); /* no NUL at all */
	sf.wal_status = WAL_STATUS_LOST;
	sf.retained_bytes = 5 * GiB;
	sf.confirmed_lag_bytes = 5 * GiB;
	rf.inflight_events = 1;
	rf.oldest_pending_commit_us = NOW_US - 600 * SEC;
	rf.last_confirm_us = NOW_US - 600 * SEC;
	eval(0);
	ck_assert_int_eq(ev.state, HEALTH_FATAL);
	ck_assert_uint_ge(ev.nreasons, 6);
	ck_assert_msg(strncmp(ev.reason[0], "slot lost:", 10) == 0, "%s",
	              ev.reason[0]);
	for (size_t i = 0; i < ev.nreasons; i++)
		ck_assert_uint_lt(strnlen(ev.reason[i], sizeof(ev.reason[i])),
		                  sizeof(ev.reason[i]));
	health_reasons_join(&ev, small, sizeof(small));
	r = small;
	n = strlen(r);
	ck_assert_uint_eq(n, sizeof(small) - 1);
	ck_assert_str_eq(r + n - 3, "...");
	ck_assert_msg(strncmp(r, "slot lost:", 10) == 0, "%s", r);
}
END_TEST

/* ---- ETA ---------------------------------------------------------------- */

START_TEST(test_eta_safe_wal_size)
{
	sf.max_slot_wal_keep_size = 1 * GiB;
	sf.safe_wal_size = 100 * MiB;
	th.wal_budget_bytes = 50 * GiB; /* ignored: the server limit wins */

	eval((double)MiB);
	ck_assert_double_eq(ev.eta_seconds, 100);
	ck_state(HEALTH_CRITICAL, "ETA to slot loss 100 s <= critical 10.0 min");

	eval((double)MiB / 10);
	ck_assert_double_eq_tol(ev.eta_seconds, 1000, 1e-9);
	ck_state(HEALTH_WARN, "ETA to slot loss 16.7 min <= warn 60.0 min");

	eval((double)MiB / 100);
	ck_assert_double_eq_tol(ev.eta_seconds, 10000, 1e-8);
	ck_state(HEALTH_OK, "");

	/* At the thresholds counts. */
	sf.safe_wal_size = 600 * MiB;
	eval((double)MiB);
	ck_assert_double_eq(ev.eta_seconds, 600);
	ck_state(HEALTH_CRITICAL, "ETA to slot loss 10.0 min <= critical 10.0 min");
	sf.safe_wal_size = 3600 * MiB;
	eval((double)MiB);
	ck_state(HEALTH_WARN, "ETA to slot loss 60.0 min <= warn 60.0 min");
	sf.safe_wal_size = 3601 * MiB;
	eval((double)MiB);
	ck_state(HEALTH_OK, "");
	sf.safe_wal_size = 100 * MiB;

	/* Past the limit safe_wal_size is negative: no time left. */
	sf.safe_wal_size = -5 * MiB;
	eval((double)MiB);
	ck_assert_double_eq(ev.eta_seconds, 0);
	ck_state(HEALTH_CRITICAL, "ETA to slot loss 0 s <= critical 10.0 min");
}
END_TEST

START_TEST(test_eta_budget)
{
	th.retained_warn_bytes = 0; /* the ETA rule alone */
	th.retained_critical_bytes = 0;
	th.wal_budget_bytes = 10 * GiB;
	sf.retained_bytes = 32 * MiB;
	eval((double)MiB);
	ck_assert_double_eq(ev.eta_seconds, 10 * 1024 - 32);
	ck_state(HEALTH_OK, "");

	sf.retained_bytes = 10 * GiB - 300 * MiB;
	eval((double)MiB);
	ck_assert_double_eq(ev.eta_seconds, 300);
	ck_state(HEALTH_CRITICAL,
	         "ETA to WAL budget 10.0 GiB 5.0 min <= critical 10.0 min");

	/* Budget used up: 0, never negative. */
	sf.retained_bytes = 11 * GiB;
	eval((double)MiB);
	ck_assert_double_eq(ev.eta_seconds, 0);
	ck_state(HEALTH_CRITICAL,
	         "ETA to WAL budget 10.0 GiB 0 s <= critical 10.0 min");

	/* max_slot_wal_keep_size set but safe_wal_size NULL: budget path. */
	sf.retained_bytes = 9 * GiB;
	sf.max_slot_wal_keep_size = 20 * GiB;
	sf.safe_wal_size = -1;
	eval((double)GiB / 1000);
	ck_assert_double_eq_tol(ev.eta_seconds, 1000, 1e-9);

	/* No budget, no limit: unknown. */
	th.wal_budget_bytes = 0;
	sf.max_slot_wal_keep_size = -1;
	eval((double)MiB);
	ck_assert_double_eq(ev.eta_seconds, -1);

	/* Retained unknown: unknown. */
	th.wal_budget_bytes = 10 * GiB;
	sf.retained_bytes = -1;
	eval((double)MiB);
	ck_assert_double_eq(ev.eta_seconds, -1);
}
END_TEST

START_TEST(test_eta_not_growing)
{
	sf.max_slot_wal_keep_size = 1 * GiB;
	sf.safe_wal_size = 1;
	th.wal_budget_bytes = 10 * GiB;
	eval(0);
	ck_assert_double_eq(ev.eta_seconds, -1);
	ck_state(HEALTH_OK, "");
	eval(-5000);
	ck_assert_double_eq(ev.eta_seconds, -1);
	eval(NAN);
	ck_assert_double_eq(ev.eta_seconds, -1);
	ck_assert_double_eq(ev.growth_bytes_per_s, 0);
}
END_TEST

/* ---- growth window -------------------------------------------------------- */

START_TEST(test_window_rate)
{
	struct health_window w;

	health_window_init(&w, 60 * SEC);
	ck_assert_double_eq(health_window_rate(&w), 0);
	health_window_add(&w, 0, 1000);
	ck_assert_double_eq(health_window_rate(&w), 0); /* one sample */
	health_window_add(&w, 30 * SEC, 4000);
	health_window_add(&w, 60 * SEC, 7000); /* age exactly the span: kept */
	ck_assert_uint_eq(w.len, 3);
	ck_assert_double_eq(health_window_rate(&w), 100);

	health_window_add(&w, 70 * SEC, 10000); /* t=0 now 70 s old: dropped */
	ck_assert_uint_eq(w.len, 3);
	ck_assert_double_eq(health_window_rate(&w), 150);

	health_window_add(&w, 80 * SEC, 1000); /* shrinking: 0 */
	ck_assert_double_eq(health_window_rate(&w), 0);

	/* A gap longer than the span leaves one sample. */
	health_window_add(&w, 500 * SEC, 50000);
	ck_assert_uint_eq(w.len, 1);
	ck_assert_double_eq(health_window_rate(&w), 0);
}
END_TEST

START_TEST(test_window_edges)
{
	struct health_window w;

	/* Full ring: the oldest go first. */
	health_window_init(&w, 1000 * SEC);
	for (int64_t i = 0; i < 100; i++)
		health_window_add(&w, i * SEC, i * i);
	ck_assert_uint_eq(w.len, HEALTH_WINDOW_MAX);
	/* Samples 36..99: (99^2 - 36^2) / 63 s. */
	ck_assert_double_eq(health_window_rate(&w), 135);

	/* Unknown sizes are not samples. */
	health_window_add(&w, 100 * SEC, -1);
	ck_assert_uint_eq(w.len, HEALTH_WINDOW_MAX);
	ck_assert_double_eq(health_window_rate(&w), 135);

	/* Same instant: replaced, not duplicated. */
	health_window_init(&w, 60 * SEC);
	health_window_add(&w, 0, 0);
	health_window_add(&w, 10 * SEC, 1000);
	health_window_add(&w, 10 * SEC, 2000);
	ck_assert_uint_eq(w.len, 2);
	ck_assert_double_eq(health_window_rate(&w), 200);

	/* Clock stepped back: start over. */
	health_window_add(&w, 5 * SEC, 9999);
	ck_assert_uint_eq(w.len, 1);
	ck_assert_double_eq(health_window_rate(&w), 0);
}
END_TEST

/* ---- /slot JSON ------------------------------------------------------------ */

static void full_snapshot(struct health_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->slot_name, sizeof(s->slot_name), "outbox_relay");
	base(&s->slot, &s->relay, &s->thresholds);
	s->now_us = NOW_US;
	s->ntopics = 0;
}

/* "relay.latency.count": object keys, or an array index. */
static json_t *jpath(json_t *root, const char *path)
{
	char key[64];
	const char *c = path;
	json_t *v = root;

	while (v != NULL && *c != '\0') {
		size_t n = strcspn(c, ".");
		snprintf(key, sizeof(key), "%.*s", (int)n, c);
		if (json_is_array(v))
			v = json_array_get(v, strtoul(key, NULL, 10));
		else
			v = json_object_get(v, key);
		c += n + (c[n] == '.');
	}
	ck_assert_msg(v != NULL, "missing %s", path);
	return v;
}

static void jstr(json_t *root, const char *path, const char *want)
{
	json_t *v = jpath(root, path);
	ck_assert_msg(json_is_string(v), "%s: not a string", path);
	ck_assert_msg(strcmp(json_string_value(v), want) == 0, "%s: %s != %s",
	              path, json_string_value(v), want);
}

static void jint(json_t *root, const char *path, json_int_t want)
{
	json_t *v = jpath(root, path);
	ck_assert_msg(json_is_integer(v), "%s: not an integer", path);
	ck_assert_msg(json_integer_value(v) == want, "%s: %lld != %lld", path,
	              (long long)json_integer_value(v), (long long)want);
}

static void jreal(json_t *root, const char *path, double want)
{
	json_t *v = jpath(root, path);
	ck_assert_msg(json_is_real(v), "%s: not a real", path);
	ck_assert_msg(json_real_value(v) == want, "%s: %.17g != %.17g", path,
	              json_real_value(v), want);
}

static void jnull(json_t *root, const char *path)
{
	ck_assert_msg(json_is_null(jpath(root, path)), "%s: not null", path);
}

static void jbool(json_t *root, const char *path, bool want)
{
	json_t *v = jpath(root, path);
	ck_assert_msg(json_is_boolean(v) && json_is_true(v) == want,
	              "%s: not %d", path, want);
}

static json_t *render_parse(const struct health_snapshot *s, bool pretty)
{
	char *txt = health_render_slot_json(s, pretty);
	json_error_t err;
	json_t *root;
	size_t n = strlen(txt);

	ck_assert_uint_gt(n, 2);
	ck_assert_int_eq(txt[n - 1], '\n');
	if (pretty)
		ck_assert_ptr_nonnull(strstr(txt, "{\n  \"slot\": \"outbox_relay\",\n"));
	else
		ck_assert_ptr_null(memchr(txt, '\n', n - 1));
	root = json_loads(txt, JSON_REJECT_DUPLICATES, &err);
	ck_assert_msg(root != NULL, "%s: %s", err.text, txt);
	free(txt);
	return root;
}

/* Every reason is one item, as written: a fail-stop reason keeps its
 * semicolons, and six long reasons at once are all there, none cut.
 * (They were joined with "; " into 512 bytes and split again: the
 * reason's ';' became ',' and the list ended in "..." here.) */
START_TEST(test_slot_json_reasons_whole)
{
	static struct health_snapshot s;
	static const char why[] = "kafka: event id e-1 at LSN 0/16B3F28 refused "
		"(Broker: Message size too large); set kafka.message.max.bytes "
		"above 1048588 or shrink the payload";
	char want[400];
	json_t *root, *r;
	size_t n;

	full_snapshot(&s);
	s.relay.state = RELAY_PHASE_FAIL_STOPPED;
	snprintf(s.relay.reason, sizeof(s.relay.reason), "%s", why);
	s.relay.kafka_failures = 3;
	s.relay.kafka_failures_max = 5;
	s.relay.kafka_failure_lsn = 0x16B3F28;
	s.slot.wal_status = WAL_STATUS_LOST;
	s.slot.retained_bytes = 5 * GiB;
	s.slot.confirmed_lag_bytes = 5 * GiB;
	s.relay.inflight_events = 1;
	s.relay.oldest_pending_commit_us = NOW_US - 600 * SEC;
	s.relay.last_confirm_us = NOW_US - 600 * SEC;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	root = render_parse(&s, false);
	jnull(root, "plugin"); /* unknown: null, not "" */
	jnull(root, "publication");
	r = jpath(root, "reasons");
	n = json_array_size(r);
	ck_assert_uint_ge(n, 6);
	/* Worst first. */
	ck_assert_int_eq(strncmp(json_string_value(json_array_get(r, 0)),
	                         "slot lost", 9), 0);
	snprintf(want, sizeof(want), "relay fail-stopped: %s", why);
	for (size_t i = 0; i < n; i++) {
		const char *it = json_string_value(json_array_get(r, i));
		size_t l = strlen(it);
		ck_assert_msg(l < 3 || strcmp(it + l - 3, "...") != 0, "cut: %s", it);
		if (strncmp(it, "relay fail-stopped", 18) == 0) {
			ck_assert_str_eq(it, want);
			want[0] = '\0';
		}
	}
	ck_assert_msg(want[0] == '\0', "no whole fail-stop reason");
	json_decref(root);
}
END_TEST

START_TEST(test_slot_json_fields)
{
	static struct health_snapshot s;
	static const char *const order[] = {
		"\"slot\"", "\"state\"", "\"reasons\"", "\"plugin\"",
		"\"publication\"", "\"thresholds\"", "\"server\"",
		"\"relay\"", "\"growth_bytes_per_second\"", "\"eta_seconds\"",
		"\"outbox_lag_seconds\"", "\"since_confirm_seconds\""
	};
	json_t *root, *r;
	char *txt;
	const char *prev;

	full_snapshot(&s);
	snprintf(s.plugin, sizeof(s.plugin), "pgoutput");
	snprintf(s.publication, sizeof(s.publication), "outbox_pub");
	s.slot.retained_bytes = 5 * GiB;
	s.relay.inflight_events = 2;
	s.relay.inflight_bytes = 2048;
	s.relay.oldest_pending_commit_us = NOW_US - 70 * SEC;
	for (int i = 0; i < 95; i++)
		hist_record(&s.relay.latency, 1000);
	for (int i = 0; i < 4; i++)
		hist_record(&s.relay.latency, 20000);
	hist_record(&s.relay.latency, 50000);
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 1048576.5, s.now_us,
	                &s.eval);

	/* Keys in a reading order, not sorted. */
	txt = health_render_slot_json(&s, false);
	ck_assert_msg(strncmp(txt, "{\"slot\":\"outbox_relay\",\"state\":", 31) == 0,
	              "%s", txt);
	prev = txt;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const char *at = strstr(txt, order[i]);
		ck_assert_msg(at != NULL && at >= prev, "%s out of order", order[i]);
		prev = at;
	}
	free(txt);

	for (int pretty = 0; pretty <= 1; pretty++) {
		root = render_parse(&s, pretty);
		jstr(root, "slot", "outbox_relay");
		jstr(root, "plugin", "pgoutput");
		jstr(root, "publication", "outbox_pub");
		jstr(root, "state", "critical");
		r = jpath(root, "reasons");
		ck_assert(json_is_array(r));
		ck_assert_uint_eq(json_array_size(r), 2);
		ck_assert_str_eq(json_string_value(json_array_get(r, 0)),
		                 "retained WAL 5.0 GiB >= critical 4.0 GiB");
		ck_assert_str_eq(json_string_value(json_array_get(r, 1)),
		                 "outbox lag 70 s >= warn 60 s");

		jint(root, "thresholds.retained_warn_bytes", 1 * GiB);
		jint(root, "thresholds.retained_critical_bytes", 4 * GiB);
		jint(root, "thresholds.lag_warn_bytes", 512 * MiB);
		jint(root, "thresholds.lag_critical_bytes", 2 * GiB);
		jint(root, "thresholds.outbox_lag_warn_seconds", 60);
		jint(root, "thresholds.outbox_lag_critical_seconds", 300);
		jint(root, "thresholds.eta_warn_seconds", 3600);
		jint(root, "thresholds.eta_critical_seconds", 600);
		jnull(root, "thresholds.wal_budget_bytes"); /* 0: disabled */

		jstr(root, "server.sampled_at", "2023-11-14T22:13:18.123Z");
		jbool(root, "server.slot_exists", true);
		jbool(root, "server.active", true);
		jint(root, "server.active_pid", 4242);
		jstr(root, "server.restart_lsn", "16/B2000000");
		jstr(root, "server.confirmed_flush_lsn", "16/B3000000");
		jstr(root, "server.current_lsn", "16/B374D848");
		jstr(root, "server.wal_status", "reserved");
		jnull(root, "server.safe_wal_size_bytes");
		jnull(root, "server.max_slot_wal_keep_size_bytes");
		jint(root, "server.retained_wal_bytes", 5 * GiB);
		jint(root, "server.confirmed_lag_bytes", 16 * MiB);
		jint(root, "server.spill_txns", 1);
		jint(root, "server.spill_count", 2);
		jint(root, "server.spill_bytes", 3000);
		jint(root, "server.stream_txns", 4);
		jint(root, "server.stream_count", 5);
		jint(root, "server.stream_bytes", 6000);
		jint(root, "server.total_txns", 7000);
		jint(root, "server.total_bytes", 8000000);
		jnull(root, "server.oldest_xact");

		jstr(root, "relay.state", "streaming");
		jstr(root, "relay.reason", "");
		jbool(root, "relay.kafka_up", true);
		jstr(root, "relay.received_lsn", "16/B374D000");
		jstr(root, "relay.confirmable_lsn", "16/B3700000");
		jstr(root, "relay.confirmed_lsn", "16/B3000000");
		jint(root, "relay.events_received", 1000);
		jint(root, "relay.events_published", 990);
		jint(root, "relay.events_failed", 2);
		jint(root, "relay.bytes_published", 123456789);
		jint(root, "relay.inflight_events", 2);
		jint(root, "relay.inflight_bytes", 2048);
		jstr(root, "relay.last_ack_at", "2023-11-14T22:13:19.750Z");
		jstr(root, "relay.last_confirm_at", "2023-11-14T22:13:19.000Z");
		jnull(root, "relay.heartbeat_rtt_seconds");
		jint(root, "relay.heartbeats_seen", 17);
		jint(root, "relay.reconnects", 3);
		jint(root, "relay.poison_parked", 4);
		jint(root, "relay.poison_skipped", 2);
		jint(root, "relay.invalid_ops", 4);
		jint(root, "relay.producer_errors", 4);
		jnull(root, "relay.kafka_broker_rtt_seconds");
		jnull(root, "relay.kafka_queue_messages");
		/* 1000 µs sits in the bucket [960, 1023], 20000 in [18432,
		 * 20479]: the top, capped at the largest value seen. */
		jreal(root, "relay.latency.p50_seconds", 0.001023);
		jreal(root, "relay.latency.p99_seconds", 0.020479);
		jreal(root, "relay.latency.max_seconds", 0.05);
		jint(root, "relay.latency.count", 100);

		jreal(root, "growth_bytes_per_second", 1048576.5);
		jnull(root, "eta_seconds");
		jreal(root, "outbox_lag_seconds", 70);
		jreal(root, "since_confirm_seconds", 1);
		json_decref(root);
	}
}
END_TEST

START_TEST(test_slot_json_optional_values)
{
	static struct health_snapshot s;
	json_t *root;

	full_snapshot(&s);
	s.slot.active = false;
	s.slot.active_pid = 0;
	s.slot.max_slot_wal_keep_size = 4 * GiB;
	s.slot.safe_wal_size = -123; /* negative, not unknown */
	s.slot.wal_status = WAL_STATUS_UNRESERVED;
	s.slot.oldest_xact_pid = 777;
	s.slot.oldest_xact_age = 123456;
	s.slot.oldest_xact_seconds = 42.25;
	s.relay.heartbeat_rtt_us = 1500;
	s.relay.broker_rtt_us = 2500;
	s.relay.kafka_queue_msgs = 12;
	s.relay.last_ack_us = 0;
	s.relay.received_lsn = 0;
	s.relay.bytes_published = UINT64_MAX;
	s.relay.state = RELAY_PHASE_FAIL_STOPPED;
	snprintf(s.relay.reason, sizeof(s.relay.reason), "poison \"event\"");
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 2048, s.now_us, &s.eval);

	root = render_parse(&s, false);
	jstr(root, "state", "critical");
	ck_assert_uint_eq(json_array_size(jpath(root, "reasons")), 3);
	jbool(root, "server.active", false);
	jnull(root, "server.active_pid");
	jint(root, "server.safe_wal_size_bytes", -123);
	jint(root, "server.max_slot_wal_keep_size_bytes", 4 * GiB);
	jstr(root, "server.wal_status", "unreserved");
	jint(root, "server.oldest_xact.pid", 777);
	jint(root, "server.oldest_xact.age", 123456);
	jreal(root, "server.oldest_xact.seconds", 42.25);
	jreal(root, "relay.heartbeat_rtt_seconds", 0.0015);
	jreal(root, "relay.kafka_broker_rtt_seconds", 0.0025);
	jint(root, "relay.kafka_queue_messages", 12);
	jnull(root, "relay.last_ack_at");
	jnull(root, "relay.received_lsn");
	jstr(root, "relay.state", "fail-stopped");
	jstr(root, "relay.reason", "poison \"event\"");
	jnull(root, "relay.latency.p50_seconds");
	jnull(root, "relay.latency.p99_seconds");
	jnull(root, "relay.latency.max_seconds");
	jint(root, "relay.latency.count", 0);
	jint(root, "relay.bytes_published", INT64_MAX); /* clamped */
	jreal(root, "growth_bytes_per_second", 2048);
	jreal(root, "eta_seconds", 0);
	json_decref(root);
}
END_TEST

START_TEST(test_slot_json_no_slot)
{
	static struct health_snapshot s;
	json_t *root;

	/* Never sampled: server is null. */
	full_snapshot(&s);
	s.slot.valid = false;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	root = render_parse(&s, true);
	jstr(root, "state", "ok");
	ck_assert_uint_eq(json_array_size(jpath(root, "reasons")), 0);
	jnull(root, "server");
	jnull(root, "eta_seconds");
	json_decref(root);

	/* Sampled, slot gone: the slot's figures are null, the server's not. */
	full_snapshot(&s);
	s.slot.slot_exists = false;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	root = render_parse(&s, false);
	jstr(root, "state", "fatal");
	ck_assert_uint_eq(json_array_size(jpath(root, "reasons")), 1);
	jstr(root, "reasons.0", "slot does not exist");
	jbool(root, "server.slot_exists", false);
	jbool(root, "server.active", false);
	jnull(root, "server.active_pid");
	jnull(root, "server.restart_lsn");
	jnull(root, "server.confirmed_flush_lsn");
	jstr(root, "server.current_lsn", "16/B374D848");
	jnull(root, "server.wal_status");
	jnull(root, "server.retained_wal_bytes");
	jnull(root, "server.confirmed_lag_bytes");
	jnull(root, "server.spill_bytes");
	jstr(root, "server.sampled_at", "2023-11-14T22:13:18.123Z");
	json_decref(root);
}
END_TEST

/* ---- strict Prometheus text parser ---------------------------------------- */

#define P_MAX_S 400
#define P_MAX_F 120

struct psample {
	char name[128];
	char labels[512]; /* canonical: sorted name="unescaped value", ',' */
	char le[32];      /* the le label as written, "" when none */
	double v;
	size_t fam;
};

struct pfamily {
	char name[128];
	char type[16];
	bool help, typed;
	size_t nsamples;
};

struct prom {
	struct psample s[P_MAX_S];
	size_t ns;
	struct pfamily f[P_MAX_F];
	size_t nf;
	char err[300];
};

static bool is_name_start(char c, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (colon && c == ':');
}

static bool is_name_char(char c, bool colon)
{
	return is_name_start(c, colon) || (c >= '0' && c <= '9');
}

/* Length of the name at s (metric names allow ':'), 0 if none. */
static size_t scan_name(const char *s, bool colon)
{
	size_t n = 0;

	if (!is_name_start(s[0], colon))
		return 0;
	while (is_name_char(s[n], colon))
		n++;
	return n;
}

/* A float as Go's ParseFloat takes it, minus hex and "inf" spellings. */
static bool parse_value(const char *s, double *v)
{
	const char *c = s;
	char *end;
	size_t digits = 0;

	if (strcmp(s, "+Inf") == 0 || strcmp(s, "-Inf") == 0 ||
	    strcmp(s, "NaN") == 0) {
		*v = strcmp(s, "NaN") == 0 ? NAN : s[0] == '+' ? INFINITY : -INFINITY;
		return true;
	}
	if (*c == '+' || *c == '-')
		c++;
	for (; *c >= '0' && *c <= '9'; c++)
		digits++;
	if (*c == '.')
		for (c++; *c >= '0' && *c <= '9'; c++)
			digits++;
	if (digits == 0)
		return false;
	if (*c == 'e' || *c == 'E') {
		c++;
		if (*c == '+' || *c == '-')
			c++;
		if (!(*c >= '0' && *c <= '9'))
			return false;
		while (*c >= '0' && *c <= '9')
			c++;
	}
	if (*c != '\0')
		return false;
	*v = strtod(s, &end);
	return *end == '\0';
}

static int perr(struct prom *p, int line, const char *msg, const char *ctx)
{
	snprintf(p->err, sizeof(p->err), "line %d: %s: %.200s", line, msg, ctx);
	return -1;
}

static struct pfamily *family_get(struct prom *p, const char *name, bool add)
{
	for (size_t i = 0; i < p->nf; i++)
		if (strcmp(p->f[i].name, name) == 0)
			return &p->f[i];
	if (!add || p->nf == P_MAX_F)
		return NULL;
	snprintf(p->f[p->nf].name, sizeof(p->f[0].name), "%s", name);
	return &p->f[p->nf++];
}

/* The family a sample belongs to: its own name, or for a histogram the
 * name without _bucket, _sum or _count. */
static long family_of(const struct prom *p, const char *name)
{
	static const char *const sfx[] = { "_bucket", "_sum", "_count" };
	size_t n = strlen(name);

	for (size_t i = 0; i < p->nf; i++) {
		size_t fl = strlen(p->f[i].name);
		if (strcmp(p->f[i].type, "histogram") != 0) {
			if (strcmp(p->f[i].name, name) == 0)
				return (long)i;
			continue;
		}
		for (size_t k = 0; k < 3; k++)
			if (n == fl + strlen(sfx[k]) &&
			    strncmp(name, p->f[i].name, fl) == 0 &&
			    strcmp(name + fl, sfx[k]) == 0)
				return (long)i;
	}
	return -1;
}

struct plabel {
	char name[64];
	char value[256];
};

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct plabel *)a)->name,
	              ((const struct plabel *)b)->name);
}

/* Parses {a="x",b="y"} at *s; fills the canonical label string. */
static int parse_labels(struct prom *p, int line, const char **s,
                        struct psample *out)
{
	struct plabel l[8];
	size_t nl = 0, used = 0;
	const char *c = *s + 1;

	for (;;) {
		size_t n = scan_name(c, false), vn = 0;
		if (n == 0 || n >= sizeof(l[0].name))
			return perr(p, line, "bad label name", c);
		if (nl == 8)
			return perr(p, line, "too many labels", c);
		if (c[0] == '_' && c[1] == '_')
			return perr(p, line, "reserved label name", c);
		memcpy(l[nl].name, c, n);
		l[nl].name[n] = '\0';
		c += n;
		if (c[0] != '=' || c[1] != '"')
			return perr(p, line, "expected =\"", c);
		c += 2;
		while (*c != '"') {
			char ch = *c;
			if (ch == '\0' || ch == '\n')
				return perr(p, line, "unterminated label value", c);
			if (ch == '\\') {
				c++;
				if (*c == '\\' || *c == '"')
					ch = *c;
				else if (*c == 'n')
					ch = '\n';
				else
					return perr(p, line, "bad escape in label value", c);
			}
			if (vn + 1 >= sizeof(l[0].value))
				return perr(p, line, "label value too long", c);
			l[nl].value[vn++] = ch;
			c++;
		}
		l[nl].value[vn] = '\0';
		nl++;
		c++;
		if (*c == '}')
			break;
		if (*c != ',')
			return perr(p, line, "expected , or }", c);
		c++;
	}
	*s = c + 1;
	qsort(l, nl, sizeof(l[0]), cmp_label);
	out->labels[0] = '\0';
	out->le[0] = '\0';
	for (size_t i = 0; i < nl; i++) {
		int w;
		if (i > 0 && strcmp(l[i].name, l[i - 1].name) == 0)
			return perr(p, line, "duplicate label", l[i].name);
		if (strcmp(l[i].name, "le") == 0)
			snprintf(out->le, sizeof(out->le), "%s", l[i].value);
		w = snprintf(out->labels + used, sizeof(out->labels) - used,
		             "%s%s=\"%s\"", i > 0 ? "," : "", l[i].name, l[i].value);
		if (w < 0 || (size_t)w >= sizeof(out->labels) - used)
			return perr(p, line, "labels too long", l[i].name);
		used += (size_t)w;
	}
	return 0;
}

static int parse_comment(struct prom *p, int line, const char *c)
{
	bool help = strncmp(c, "# HELP ", 7) == 0;
	bool type = strncmp(c, "# TYPE ", 7) == 0;
	struct pfamily *f;
	char name[128];
	size_t n;

	if (!help && !type)
		return c[1] == ' ' || c[1] == '\0' ? 0
		                                   : perr(p, line, "bad comment", c);
	c += 7;
	n = scan_name(c, true);
	if (n == 0 || n >= sizeof(name) || c[n] != ' ')
		return perr(p, line, "bad name in HELP/TYPE", c);
	memcpy(name, c, n);
	name[n] = '\0';
	c += n + 1;
	f = family_get(p, name, true);
	if (f == NULL)
		return perr(p, line, "too many families", name);
	if (f->nsamples > 0)
		return perr(p, line, "HELP/TYPE after the family's samples", name);
	if (help) {
		if (f->help)
			return perr(p, line, "second HELP", name);
		f->help = true;
		for (; *c != '\0'; c++)
			if (*c == '\\' && c[1] != '\\' && c[1] != 'n')
				return perr(p, line, "bad escape in HELP", c);
			else if (*c == '\\')
				c++;
		return 0;
	}
	if (f->typed)
		return perr(p, line, "second TYPE", name);
	if (strcmp(c, "counter") != 0 && strcmp(c, "gauge") != 0 &&
	    strcmp(c, "histogram") != 0 && strcmp(c, "summary") != 0 &&
	    strcmp(c, "untyped") != 0)
		return perr(p, line, "bad type", c);
	snprintf(f->type, sizeof(f->type), "%s", c);
	f->typed = true;
	return 0;
}

static int parse_sample(struct prom *p, int line, const char *c, long *cur)
{
	struct psample *smp;
	size_t n = scan_name(c, true);
	long fam;

	if (p->ns == P_MAX_S)
		return perr(p, line, "too many samples", c);
	smp = &p->s[p->ns];
	memset(smp, 0, sizeof(*smp));
	if (n == 0 || n >= sizeof(smp->name))
		return perr(p, line, "bad metric name", c);
	memcpy(smp->name, c, n);
	c += n;
	if (*c == '{' && parse_labels(p, line, &c, smp) < 0)
		return -1;
	if (*c != ' ')
		return perr(p, line, "expected one space before the value", c);
	c++;
	if (!parse_value(c, &smp->v))
		return perr(p, line, "bad value (or a timestamp)", c);

	fam = family_of(p, smp->name);
	if (fam < 0 || !p->f[fam].help || !p->f[fam].typed)
		return perr(p, line, "sample without HELP and TYPE", smp->name);
	if (fam != *cur && p->f[fam].nsamples > 0)
		return perr(p, line, "family not contiguous", smp->name);
	*cur = fam;
	for (size_t i = 0; i < p->ns; i++)
		if (strcmp(p->s[i].name, smp->name) == 0 &&
		    strcmp(p->s[i].labels, smp->labels) == 0)
			return perr(p, line, "duplicate series", smp->name);
	smp->fam = (size_t)fam;
	p->f[fam].nsamples++;
	p->ns++;
	return 0;
}

/* Buckets sorted by le and cumulative, +Inf last and equal to _count. */
static int check_histogram(struct prom *p, size_t fam)
{
	const char *fn = p->f[fam].name;
	double last_le = -INFINITY, last_v = 0, count = -1, inf = -1;
	bool sum = false;
	char want[160];

	for (size_t i = 0; i < p->ns; i++) {
		const struct psample *s = &p->s[i];
		double le;
		if (s->fam != fam)
			continue;
		snprintf(want, sizeof(want), "%s_bucket", fn);
		if (strcmp(s->name, want) == 0) {
			if (s->le[0] == '\0' || !parse_value(s->le, &le))
				return perr(p, 0, "bucket without a valid le", s->name);
			if (inf >= 0)
				return perr(p, 0, "bucket after +Inf", s->le);
			if (!(le > last_le))
				return perr(p, 0, "le not increasing", s->le);
			if (s->v < last_v)
				return perr(p, 0, "bucket counts not cumulative", s->le);
			if (s->v != floor(s->v))
				return perr(p, 0, "fractional bucket count", s->le);
			last_le = le;
			last_v = s->v;
			if (isinf(le))
				inf = s->v;
			continue;
		}
		if (s->le[0] != '\0')
			return perr(p, 0, "le outside _bucket", s->name);
		snprintf(want, sizeof(want), "%s_count", fn);
		if (strcmp(s->name, want) == 0)
			count = s->v;
		else
			sum = true;
	}
	if (inf < 0)
		return perr(p, 0, "no +Inf bucket", fn);
	if (count < 0 || !sum)
		return perr(p, 0, "no _count or _sum", fn);
	if (count != inf)
		return perr(p, 0, "+Inf bucket != _count", fn);
	return 0;
}

/* 0, or -1 with p->err set. */
static int prom_parse(struct prom *p, const char *text)
{
	const char *c = text;
	long cur = -1;
	int line = 0;

	memset(p, 0, sizeof(*p));
	if (*text == '\0' || text[strlen(text) - 1] != '\n')
		return perr(p, 0, "must end with a newline", "");
	while (*c != '\0') {
		const char *nl = strchr(c, '\n');
		char buf[1024];
		size_t n = (size_t)(nl - c);
		line++;
		if (n == 0)
			return perr(p, line, "empty line", "");
		if (n >= sizeof(buf))
			return perr(p, line, "line too long", "");
		memcpy(buf, c, n);
		buf[n] = '\0';
		if (strchr(buf, '\r') != NULL || strchr(buf, '\t') != NULL)
			return perr(p, line, "CR or tab", buf);
		if (buf[0] == '#' ? parse_comment(p, line, buf) < 0
		                  : parse_sample(p, line, buf, &cur) < 0)
			return -1;
		c = nl + 1;
	}
	for (size_t i = 0; i < p->nf; i++) {
		const char *fn = p->f[i].name;
		size_t fl = strlen(fn);
		bool total = fl > 6 && strcmp(fn + fl - 6, "_total") == 0;
		if (!p->f[i].help || !p->f[i].typed)
			return perr(p, 0, "family without both HELP and TYPE", fn);
		if (strcmp(p->f[i].type, "counter") == 0) {
			if (!total)
				return perr(p, 0, "counter not ending in _total", fn);
			for (size_t k = 0; k < p->ns; k++)
				if (p->s[k].fam == i && !(p->s[k].v >= 0))
					return perr(p, 0, "negative counter", fn);
		} else if (total) {
			return perr(p, 0, "_total on a non-counter", fn);
		}
		if (strcmp(p->f[i].type, "histogram") == 0 && check_histogram(p, i) < 0)
			return -1;
	}
	return 0;
}

static bool pfind(const struct prom *p, const char *name, const char *labels,
                  double *v)
{
	for (size_t i = 0; i < p->ns; i++)
		if (strcmp(p->s[i].name, name) == 0 &&
		    strcmp(p->s[i].labels, labels) == 0) {
			*v = p->s[i].v;
			return true;
		}
	return false;
}

#define PFX "outbox_relay_"

static void pval(const struct prom *p, const char *name, const char *labels,
                 double want)
{
	double v;
	ck_assert_msg(pfind(p, name, labels, &v), "no sample %s{%s}", name, labels);
	ck_assert_msg(v == want, "%s{%s} = %.17g, want %.17g", name, labels, v,
	              want);
}

static void pabsent(const struct prom *p, const char *name)
{
	for (size_t i = 0; i < p->ns; i++)
		ck_assert_msg(strcmp(p->s[i].name, name) != 0, "%s present", name);
}

static struct prom *render_prom(const struct health_snapshot *s)
{
	struct prom *p = calloc(1, sizeof(*p));
	char *txt = health_render_metrics(s);

	ck_assert_ptr_nonnull(p);
	if (prom_parse(p, txt) < 0) {
		fputs(txt, stderr); /* Check truncates long messages */
		ck_abort_msg("%s", p->err);
	}
	/* Every family, with or without samples, is announced. */
	ck_assert_uint_eq(p->nf, 63);
	for (size_t i = 0; i < p->nf; i++)
		ck_assert_msg(strncmp(p->f[i].name, PFX, strlen(PFX)) == 0, "%s",
		              p->f[i].name);
	free(txt);
	return p;
}

/* The parser rejects what it should: otherwise the tests above prove
 * nothing. */
START_TEST(test_prom_parser_rejects)
{
	static const char *const bad[] = {
		/* no trailing newline */
		"# HELP a_x x\n# TYPE a_x gauge\na_x 1",
		/* sample without HELP/TYPE */
		"a_x 1\n",
		"# TYPE a_x gauge\na_x 1\n",
		"# HELP a_x x\na_x 1\n",
		/* bad names and labels */
		"# HELP 1a x\n# TYPE 1a gauge\n1a 1\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x{1b=\"v\"} 1\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x{b=\"v\\t\"} 1\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x{b=\"v} 1\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x{b=v} 1\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x{b=\"v\",b=\"w\"} 1\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x{} 1\n",
		/* bad values */
		"# HELP a_x x\n# TYPE a_x gauge\na_x abc\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x inf\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x 1 1700000000\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x  1\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x\n",
		/* duplicates and grouping */
		"# HELP a_x x\n# TYPE a_x gauge\na_x 1\na_x 2\n",
		"# HELP a_x x\n# TYPE a_x gauge\n# HELP a_x y\na_x 1\n",
		"# HELP a_x x\n# TYPE a_x gauge\n# TYPE a_x gauge\na_x 1\n",
		"# HELP a_x x\n# TYPE a_x gauge\n# HELP a_y y\n# TYPE a_y gauge\n"
		"a_x{l=\"1\"} 1\na_y 1\na_x{l=\"2\"} 1\n",
		"# HELP a_x x\n# TYPE a_x gauge\na_x 1\n# HELP a_x x\n",
		"# HELP a_x x\n# TYPE a_x gauge\n\na_x 1\n",
		"# HELP a_x x\n# TYPE a_x bogus\na_x 1\n",
		/* naming */
		"# HELP a_x x\n# TYPE a_x counter\na_x 1\n",
		"# HELP a_total x\n# TYPE a_total gauge\na_total 1\n",
		"# HELP a_total x\n# TYPE a_total counter\na_total -1\n",
		/* histograms */
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
		"h_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n",
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"2\"} 1\n"
		"h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n",
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\n"
		"h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\n"
		"h_count 1\n",
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
		"# HELP h x\n# TYPE h histogram\nh_bucket 1\n"
		"h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
	};
	static const char good[] =
		"# HELP a_x x \\\\ \\n\n# TYPE a_x gauge\na_x{b=\"q\\\"\\\\\\n\"} -1.5e-3\n"
		"a_x{b=\"r\"} +Inf\n# a comment\n"
		"# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\n"
		"h_bucket{le=\"+Inf\"} 2\nh_sum 3.5\nh_count 2\n";
	struct prom *p = calloc(1, sizeof(*p));
	double v;

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(prom_parse(p, bad[i]) < 0, "accepted #%zu: %s", i,
		              bad[i]);
	ck_assert_msg(prom_parse(p, good) == 0, "%s", p->err);
	ck_assert(pfind(p, "a_x", "b=\"q\"\\\n\"", &v));
	ck_assert_double_eq(v, -1.5e-3);
	free(p);
}
END_TEST

START_TEST(test_metrics_values)
{
	static struct health_snapshot s;
	struct prom *p;

	full_snapshot(&s);
	s.slot.retained_bytes = 5 * GiB;
	s.slot.max_slot_wal_keep_size = 8 * GiB;
	s.slot.safe_wal_size = 3 * GiB;
	s.slot.wal_status = WAL_STATUS_EXTENDED;
	s.slot.oldest_xact_pid = 99;
	s.slot.oldest_xact_seconds = 12.5;
	s.relay.inflight_events = 7;
	s.relay.inflight_bytes = 7000;
	s.relay.oldest_pending_commit_us = NOW_US - 30 * SEC;
	s.relay.last_confirm_us = NOW_US - 20 * SEC;
	s.relay.heartbeat_rtt_us = 1500;
	s.relay.broker_rtt_us = 250;
	s.relay.kafka_queue_msgs = 33;
	s.relay.produce_requests = 1234;
	s.relay.requests_in_flight = 4;
	s.relay.batch_msgs = 640;
	s.relay.wait_pg_us = 2500000;
	s.relay.wait_kafka_us = 750000;
	s.ntopics = 2;
	snprintf(s.topics[0], sizeof(s.topics[0]), "orders");
	s.topic_events[0] = 900;
	snprintf(s.topics[1], sizeof(s.topics[1]), "we\"ird\\topic\nx");
	s.topic_events[1] = 90;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, (double)MiB, s.now_us,
	                &s.eval);
	ck_assert_int_eq(s.eval.state, HEALTH_CRITICAL); /* retained 5 GiB */

	p = render_prom(&s);
	pval(p, PFX "build_info", "version=\"" RELAY_VERSION "\"", 1);
	pval(p, PFX "health_state", "", 2);
	pval(p, PFX "kafka_up", "", 1);
	pval(p, PFX "events_received_total", "", 1000);
	pval(p, PFX "events_published_total", "", 990);
	pval(p, PFX "events_failed_total", "", 2);
	pval(p, PFX "bytes_published_total", "", 123456789);
	pval(p, PFX "events_published_by_topic_total", "topic=\"orders\"", 900);
	pval(p, PFX "events_published_by_topic_total",
	     "topic=\"we\"ird\\topic\nx\"", 90);
	pval(p, PFX "inflight_events", "", 7);
	pval(p, PFX "inflight_bytes", "", 7000);
	pval(p, PFX "received_lsn", "", (double)0x16B374D000ull);
	pval(p, PFX "confirmed_lsn", "", (double)0x16B3000000ull);
	pval(p, PFX "last_ack_timestamp_seconds", "", 1699999999.75);
	pval(p, PFX "outbox_lag_seconds", "", 30);
	pval(p, PFX "since_confirm_seconds", "", 20);
	pval(p, PFX "heartbeat_rtt_seconds", "", 0.0015);
	pval(p, PFX "heartbeats_total", "", 17);
	pval(p, PFX "reconnects_total", "", 3);
	pval(p, PFX "poison_parked_total", "", 4);
	pval(p, PFX "poison_skipped_total", "", 2);
	pval(p, PFX "invalid_ops_total", "", 4);
	pval(p, PFX "producer_errors_total", "", 4);
	pval(p, PFX "kafka_broker_rtt_seconds", "", 0.00025);
	pval(p, PFX "kafka_queue_messages", "", 33);
	pval(p, PFX "kafka_produce_requests_total", "", 1234);
	pval(p, PFX "kafka_requests_in_flight", "", 4);
	pval(p, PFX "kafka_batch_messages", "", 640);
	pval(p, PFX "wait_postgres_seconds_total", "", 2.5);
	pval(p, PFX "wait_kafka_seconds_total", "", 0.75);
	pval(p, PFX "slot_active", "", 1);
	pval(p, PFX "slot_wal_status", "status=\"reserved\"", 0);
	pval(p, PFX "slot_wal_status", "status=\"extended\"", 1);
	pval(p, PFX "slot_wal_status", "status=\"unreserved\"", 0);
	pval(p, PFX "slot_wal_status", "status=\"lost\"", 0);
	pval(p, PFX "slot_retained_wal_bytes", "", (double)(5 * GiB));
	pval(p, PFX "slot_confirmed_lag_bytes", "", (double)(16 * MiB));
	pval(p, PFX "slot_safe_wal_size_bytes", "", (double)(3 * GiB));
	pval(p, PFX "slot_wal_growth_bytes_per_second", "", (double)MiB);
	pval(p, PFX "slot_eta_to_loss_seconds", "", 3072);
	pval(p, PFX "slot_oldest_xact_seconds", "", 12.5);
	pval(p, PFX "slot_spill_txns_total", "", 1);
	pval(p, PFX "slot_spills_total", "", 2);
	pval(p, PFX "slot_spill_bytes_total", "", 3000);
	pval(p, PFX "slot_stream_txns_total", "", 4);
	pval(p, PFX "slot_streams_total", "", 5);
	pval(p, PFX "slot_stream_bytes_total", "", 6000);
	pval(p, PFX "slot_decoded_txns_total", "", 7000);
	pval(p, PFX "slot_decoded_bytes_total", "", 8000000);
	pval(p, PFX "commit_to_ack_seconds_count", "", 0);
	pval(p, PFX "commit_to_ack_seconds_bucket", "le=\"+Inf\"", 0);
	free(p);
}
END_TEST

/* The state set has exactly one series at 1, for every state the loop
 * can be in; pg_up, the contact age and the sample time are there. */
START_TEST(test_metrics_state_set)
{
	static const struct {
		const char *loop, *set;
	} cases[] = {
		{ "streaming", "streaming" }, { "standby", "standby" },
		{ "connecting", "backoff" }, { "backoff", "backoff" },
		{ "stopping", "stopped" }, { "fail-stopped", "stopped" },
	};
	static const char *const all[] = { "streaming", "standby", "backoff",
		                               "stopped" };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct health_snapshot s;
		struct prom *p;
		char lab[64];

		full_snapshot(&s);
		s.relay.state = relay_phase_parse(cases[i].loop);
		s.relay.pg_up = i % 2 == 0;
		s.relay.kafka_contact_age_us = 1500000;
		health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us,
		                &s.eval);
		p = render_prom(&s);
		for (size_t k = 0; k < 4; k++) {
			snprintf(lab, sizeof(lab), "state=\"%s\"", all[k]);
			pval(p, PFX "state", lab, strcmp(all[k], cases[i].set) == 0);
		}
		pval(p, PFX "pg_up", "", i % 2 == 0);
		pval(p, PFX "kafka_contact_age_seconds", "", 1.5);
		pval(p, PFX "slot_sample_timestamp_seconds", "",
		     (double)s.slot.sampled_at_us / 1e6);
		free(p);
	}
}
END_TEST

START_TEST(test_metrics_omitted)
{
	static struct health_snapshot s;
	struct prom *p;

	/* Unknowns are absent, not 0 or -1. */
	full_snapshot(&s);
	s.relay.last_ack_us = 0;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	p = render_prom(&s);
	pabsent(p, PFX "slot_safe_wal_size_bytes");
	pabsent(p, PFX "slot_eta_to_loss_seconds");
	pabsent(p, PFX "heartbeat_rtt_seconds");
	pabsent(p, PFX "kafka_broker_rtt_seconds");
	pabsent(p, PFX "kafka_queue_messages");
	pabsent(p, PFX "kafka_produce_requests_total");
	pabsent(p, PFX "kafka_requests_in_flight");
	pabsent(p, PFX "kafka_batch_messages");
	pabsent(p, PFX "last_ack_timestamp_seconds");
	pabsent(p, PFX "slot_oldest_xact_seconds");
	pabsent(p, PFX "events_published_by_topic_total");
	pval(p, PFX "health_state", "", 0);
	pval(p, PFX "slot_wal_status", "status=\"reserved\"", 1);
	pval(p, PFX "slot_wal_growth_bytes_per_second", "", 0);
	free(p);

	/* Slot gone: fatal, and no slot figures. */
	s.slot.slot_exists = false;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	p = render_prom(&s);
	pval(p, PFX "health_state", "", 3);
	pabsent(p, PFX "slot_active");
	pabsent(p, PFX "slot_wal_status");
	pabsent(p, PFX "slot_retained_wal_bytes");
	pabsent(p, PFX "slot_spill_bytes_total");
	free(p);

	/* Never sampled: not even the growth. */
	s.slot.valid = false;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	p = render_prom(&s);
	pval(p, PFX "health_state", "", 0);
	pabsent(p, PFX "slot_wal_growth_bytes_per_second");
	pabsent(p, PFX "slot_confirmed_lag_bytes");
	pval(p, PFX "events_received_total", "", 1000);
	free(p);
}
END_TEST

/* The columns of newer versions: absent where the server lacks them,
 * and 18's idle_timeout is a lost slot like removed WAL. */
START_TEST(test_metrics_versions)
{
	static struct health_snapshot s;
	struct prom *p;
	double v;

	/* 15: no failover, synced, conflicting, inactive_since; the only
	 * reason it can report is wal_removed (wal_status lost). */
	full_snapshot(&s);
	s.slot.server_version = 150014;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	p = render_prom(&s);
	pabsent(p, PFX "slot_failover");
	pabsent(p, PFX "slot_synced");
	pabsent(p, PFX "slot_conflicting");
	pabsent(p, PFX "slot_inactive_since_timestamp_seconds");
	pabsent(p, PFX "slot_eta_to_idle_timeout_seconds");
	pval(p, PFX "slot_invalidation_reason", "reason=\"wal_removed\"", 0);
	ck_assert(!pfind(p, PFX "slot_invalidation_reason",
	                 "reason=\"idle_timeout\"", &v));
	free(p);

	/* 18, the relay gone for 50 min of a one-hour timeout. */
	s.slot.server_version = 180004;
	s.slot.failover = SLOT_FLAG_TRUE;
	s.slot.synced = SLOT_FLAG_FALSE;
	s.slot.conflicting = SLOT_FLAG_FALSE;
	s.slot.active = false;
	s.slot.active_pid = 0;
	s.slot.inactive_since_us = NOW_US - 3000 * SEC;
	s.slot.idle_timeout_s = 3600;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	ck_assert_double_eq(s.eval.idle_eta_seconds, 600);
	p = render_prom(&s);
	pval(p, PFX "slot_failover", "", 1);
	pval(p, PFX "slot_synced", "", 0);
	pval(p, PFX "slot_conflicting", "", 0);
	pval(p, PFX "slot_inactive_since_timestamp_seconds", "",
	     (double)(NOW_US - 3000 * SEC) / 1e6);
	pval(p, PFX "slot_eta_to_idle_timeout_seconds", "", 600);
	pval(p, PFX "slot_invalidation_reason", "reason=\"idle_timeout\"", 0);
	pval(p, PFX "health_state", "", 2);
	free(p);

	/* Invalidated by it: fatal, and the reason set. */
	snprintf(s.slot.invalidation_reason, sizeof(s.slot.invalidation_reason),
	         "idle_timeout");
	s.slot.wal_status = WAL_STATUS_LOST;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	ck_assert_double_eq(s.eval.idle_eta_seconds, -1);
	ck_assert_str_eq(s.eval.reason[0], "slot lost: invalidated (idle_timeout); "
	                 "the relay stops, the slot must be recreated and the "
	                 "outbox re-published: see runbook");
	p = render_prom(&s);
	pval(p, PFX "health_state", "", 3);
	pval(p, PFX "slot_invalidation_reason", "reason=\"idle_timeout\"", 1);
	pval(p, PFX "slot_invalidation_reason", "reason=\"wal_removed\"", 0);
	pabsent(p, PFX "slot_eta_to_idle_timeout_seconds");
	free(p);
}
END_TEST

START_TEST(test_slot_json_versions)
{
	static struct health_snapshot s;
	json_t *root;

	full_snapshot(&s);
	s.slot.server_version = 160014;
	s.slot.conflicting = SLOT_FLAG_FALSE;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	root = render_parse(&s, false);
	jnull(root, "server.failover");
	jnull(root, "server.synced");
	jbool(root, "server.conflicting", false);
	jnull(root, "server.inactive_since");
	jnull(root, "server.invalidation_reason");
	jnull(root, "server.idle_replication_slot_timeout_seconds");
	jint(root, "server.server_version_num", 160014);
	jnull(root, "idle_timeout_eta_seconds");
	json_decref(root);

	s.slot.server_version = 180004;
	s.slot.failover = SLOT_FLAG_TRUE;
	s.slot.synced = SLOT_FLAG_FALSE;
	s.slot.active = false;
	s.slot.inactive_since_us = NOW_US - 60 * SEC;
	s.slot.idle_timeout_s = 86400;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	root = render_parse(&s, true);
	jbool(root, "server.failover", true);
	jbool(root, "server.synced", false);
	jstr(root, "server.inactive_since", "2023-11-14T22:12:20.000Z");
	jint(root, "server.idle_replication_slot_timeout_seconds", 86400);
	jreal(root, "idle_timeout_eta_seconds", 86340);
	jstr(root, "state", "ok"); /* 24 h left: above eta warn (1 h) */
	json_decref(root);
}
END_TEST

/* A synced copy on a 17 standby, 4096 bytes behind the primary's. */
static void standby_synced(struct health_snapshot *s)
{
	struct slot_standby *sb = &s->standby;

	memset(sb, 0, sizeof(*sb));
	sb->configured = true;
	sb->read = true;
	sb->reachable = true;
	sb->read_at_us = NOW_US;
	sb->server_version = 170006;
	sb->in_recovery = true;
	sb->slot_exists = true;
	sb->synced = SLOT_FLAG_TRUE;
	sb->failover = SLOT_FLAG_TRUE;
	sb->confirmed_flush_lsn = s->slot.confirmed_flush_lsn - 4096;
	sb->restart_lsn = s->slot.restart_lsn;
	sb->replay_lsn = s->slot.current_lsn;
	sb->receive_lsn = s->slot.current_lsn;
}

/* Not configured: null in /slot, no samples, no reason (the default
 * path is unchanged). */
START_TEST(test_standby_off)
{
	static struct health_snapshot s;
	struct health_eval before;
	struct prom *p;
	json_t *root;

	full_snapshot(&s);
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	before = s.eval;
	health_evaluate_standby(&s.standby, &s.eval);
	ck_assert(memcmp(&before, &s.eval, sizeof(before)) == 0);
	root = render_parse(&s, false);
	jnull(root, "standby");
	json_decref(root);
	p = render_prom(&s);
	pabsent(p, PFX "slot_standby_up");
	pabsent(p, PFX "slot_standby_synced");
	pabsent(p, PFX "slot_standby_lag_bytes");
	free(p);
}
END_TEST

START_TEST(test_standby_synced)
{
	static struct health_snapshot s;
	struct prom *p;
	json_t *root;

	full_snapshot(&s);
	standby_synced(&s);
	ck_assert_int_eq(slot_standby_lag(&s.slot, &s.standby), 4096);
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	health_evaluate_standby(&s.standby, &s.eval);
	ck_assert_int_eq(s.eval.state, HEALTH_OK);
	ck_assert_uint_eq(s.eval.nreasons, 0);
	root = render_parse(&s, false);
	jbool(root, "standby.reachable", true);
	jbool(root, "standby.synced", true);
	jbool(root, "standby.failover", true);
	jbool(root, "standby.slot_exists", true);
	jstr(root, "standby.confirmed_flush_lsn", "16/B2FFF000");
	jint(root, "standby.lag_bytes", 4096);
	jint(root, "standby.server_version_num", 170006);
	jstr(root, "standby.replay_lsn", "16/B374D848");
	jnull(root, "standby.invalidation_reason");
	jnull(root, "standby.error");
	json_decref(root);
	p = render_prom(&s);
	pval(p, PFX "slot_standby_up", "", 1);
	pval(p, PFX "slot_standby_synced", "", 1);
	pval(p, PFX "slot_standby_lag_bytes", "", 4096);
	free(p);

	/* Read a moment after the primary's sample: ahead is 0, not
	 * negative. */
	s.standby.confirmed_flush_lsn = s.slot.confirmed_flush_lsn + 8;
	ck_assert_int_eq(slot_standby_lag(&s.slot, &s.standby), 0);
	/* Not sync-ready yet (NULL confirmed_flush_lsn): unknown. */
	s.standby.confirmed_flush_lsn = LSN_INVALID;
	ck_assert_int_eq(slot_standby_lag(&s.slot, &s.standby), -1);
}
END_TEST

/* Each way the copy fails a failover: one warn reason, never worse, and
 * a worse reason of the primary's stays first. */
START_TEST(test_standby_rules)
{
	static struct health_snapshot s;
	struct prom *p;
	json_t *root;

	full_snapshot(&s);
	standby_synced(&s);
	s.standby.synced = SLOT_FLAG_FALSE;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	health_evaluate_standby(&s.standby, &s.eval);
	ck_assert_int_eq(s.eval.state, HEALTH_WARN);
	ck_assert_uint_eq(s.eval.nreasons, 1);
	ck_assert_str_eq(s.eval.reason[0], "standby: its copy of the slot is not "
	                 "synced (synced=false): a failover to it would lose the "
	                 "slot");
	p = render_prom(&s);
	pval(p, PFX "slot_standby_synced", "", 0);
	free(p);

	s.standby.synced = SLOT_FLAG_TRUE;
	snprintf(s.standby.invalidation_reason,
	         sizeof(s.standby.invalidation_reason), "rows_removed");
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	health_evaluate_standby(&s.standby, &s.eval);
	ck_assert_str_eq(s.eval.reason[0], "standby: its copy of the slot is "
	                 "invalidated (rows_removed): a failover to it would lose "
	                 "the slot");

	/* Missing: synced 0 (known), lag unknown. */
	standby_synced(&s);
	s.standby.slot_exists = false;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	health_evaluate_standby(&s.standby, &s.eval);
	ck_assert_int_eq(s.eval.state, HEALTH_WARN);
	ck_assert(strstr(s.eval.reason[0], "standby: the slot has no copy there")
	          == s.eval.reason[0]);
	root = render_parse(&s, false);
	jbool(root, "standby.slot_exists", false);
	jnull(root, "standby.synced");
	jnull(root, "standby.lag_bytes");
	json_decref(root);
	p = render_prom(&s);
	pval(p, PFX "slot_standby_up", "", 1);
	pval(p, PFX "slot_standby_synced", "", 0);
	pabsent(p, PFX "slot_standby_lag_bytes");
	free(p);

	/* A 15 standby: no synchronization; synced unknown. */
	s.standby.server_version = 150014;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	health_evaluate_standby(&s.standby, &s.eval);
	ck_assert_str_eq(s.eval.reason[0], "standby: PostgreSQL 15 synchronizes "
	                 "no slots (17 and later): a failover to it would lose "
	                 "the slot");
	p = render_prom(&s);
	pabsent(p, PFX "slot_standby_synced");
	free(p);

	/* Unreachable: up 0, the error shown, everything else unknown. */
	standby_synced(&s);
	s.standby.reachable = false;
	snprintf(s.standby.error, sizeof(s.standby.error), "connection refused");
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	health_evaluate_standby(&s.standby, &s.eval);
	ck_assert_int_eq(s.eval.state, HEALTH_WARN);
	ck_assert_str_eq(s.eval.reason[0], "standby: its copy of the slot cannot "
	                 "be read (connection refused): whether a failover to it "
	                 "would lose the slot is unknown");
	root = render_parse(&s, false);
	jbool(root, "standby.reachable", false);
	jstr(root, "standby.error", "connection refused");
	jnull(root, "standby.synced");
	jnull(root, "standby.lag_bytes");
	jnull(root, "standby.read_at");
	json_decref(root);
	p = render_prom(&s);
	pval(p, PFX "slot_standby_up", "", 0);
	pabsent(p, PFX "slot_standby_synced");
	pabsent(p, PFX "slot_standby_lag_bytes");
	free(p);

	/* Not read yet: nothing to say. */
	s.standby.read = false;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	health_evaluate_standby(&s.standby, &s.eval);
	ck_assert_int_eq(s.eval.state, HEALTH_OK);

	/* Behind a critical reason: the state stays critical, the warn
	 * comes after it. */
	standby_synced(&s);
	s.standby.synced = SLOT_FLAG_FALSE;
	s.slot.wal_status = WAL_STATUS_UNRESERVED;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	health_evaluate_standby(&s.standby, &s.eval);
	ck_assert_int_eq(s.eval.state, HEALTH_CRITICAL);
	ck_assert(strncmp(s.eval.reason[0], "wal_status unreserved", 21) == 0);
	ck_assert(strncmp(s.eval.reason[s.eval.nreasons - 1], "standby: ", 9) == 0);
}
END_TEST

START_TEST(test_metrics_topics_dedup)
{
	static struct health_snapshot s;
	struct prom *p;

	full_snapshot(&s);
	s.ntopics = 40; /* more than the array holds: clamped to 16 */
	for (int i = 0; i < 16; i++) {
		snprintf(s.topics[i], sizeof(s.topics[i]), "t%d", i % 3);
		s.topic_events[i] = 1;
	}
	memset(s.topics[15], 'z', sizeof(s.topics[15])); /* no NUL */
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	p = render_prom(&s);
	/* i % 3 over 0..14: 5 each; the 16th is its own. */
	pval(p, PFX "events_published_by_topic_total", "topic=\"t0\"", 5);
	pval(p, PFX "events_published_by_topic_total", "topic=\"t1\"", 5);
	pval(p, PFX "events_published_by_topic_total", "topic=\"t2\"", 5);
	{
		char lab[160];
		snprintf(lab, sizeof(lab), "topic=\"%.*s\"", 128,
		         "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
		         "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz");
		pval(p, PFX "events_published_by_topic_total", lab, 1);
	}
	free(p);
}
END_TEST

START_TEST(test_metrics_histogram)
{
	static struct health_snapshot s;
	static const char *const les[] = { "0.001", "0.005", "0.01", "0.025",
		                               "0.05",  "0.1",   "0.25", "0.5",
		                               "1",     "2.5",   "5",    "10" };
	/* 959 µs is a bucket's top ([896, 959]); 1000 µs sits in [960, 1023],
	 * above 0.001; 4607 tops [4096, 4607]; 4999 sits in [4608, 5119]. */
	static const double want[] = { 2, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7 };
	struct prom *p;
	char lab[32];

	full_snapshot(&s);
	hist_record(&s.relay.latency, 959);
	hist_record(&s.relay.latency, 959);
	for (int i = 0; i < 3; i++)
		hist_record(&s.relay.latency, 1000);
	hist_record(&s.relay.latency, 4607);
	hist_record(&s.relay.latency, 4999);
	hist_record(&s.relay.latency, 20 * SEC);
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us, &s.eval);
	p = render_prom(&s);
	for (size_t i = 0; i < 12; i++) {
		snprintf(lab, sizeof(lab), "le=\"%s\"", les[i]);
		pval(p, PFX "commit_to_ack_seconds_bucket", lab, want[i]);
	}
	pval(p, PFX "commit_to_ack_seconds_bucket", "le=\"+Inf\"", 8);
	pval(p, PFX "commit_to_ack_seconds_count", "", 8);
	pval(p, PFX "commit_to_ack_seconds_sum", "",
	     (double)(2 * 959 + 3 * 1000 + 4607 + 4999 + 20 * SEC) / 1e6);
	free(p);
}
END_TEST

/* Whatever the values, a bucket never counts a value above its le, and
 * misses only values within one sub-bucket (1/8) below it. */
START_TEST(test_metrics_histogram_conservative)
{
	static struct health_snapshot s;
	static const double les[] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
		                          0.25,  0.5,   1,    2.5,   5,    10 };
	static int64_t v[5000];
	struct prom *p;
	char lab[32];

	srandom(11);
	for (int round = 0; round < 5; round++) {
		full_snapshot(&s);
		for (size_t i = 0; i < 5000; i++) {
			v[i] = (int64_t)1 << (random() % 25);
			v[i] += random() % v[i];
			hist_record(&s.relay.latency, v[i]);
		}
		health_evaluate(&s.slot, &s.relay, &s.thresholds, 0, s.now_us,
		                &s.eval);
		p = render_prom(&s);
		for (size_t k = 0; k < 12; k++) {
			double got;
			int64_t le_us = (int64_t)(les[k] * 1e6 + 0.5);
			size_t at_most = 0, well_below = 0;
			for (size_t i = 0; i < 5000; i++) {
				at_most += v[i] <= le_us;
				well_below += v[i] * 9 <= le_us * 8;
			}
			snprintf(lab, sizeof(lab), "le=\"%g\"", les[k]);
			ck_assert(pfind(p, PFX "commit_to_ack_seconds_bucket", lab, &got));
			ck_assert_msg(got <= (double)at_most && got >= (double)well_below,
			              "le=%g got %g, true %zu, lower %zu", les[k], got,
			              at_most, well_below);
		}
		free(p);
	}
}
END_TEST

START_TEST(test_metrics_no_secrets_no_junk)
{
	static struct health_snapshot s;
	char *txt;

	full_snapshot(&s);
	s.relay.heartbeat_rtt_us = 1;
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 0.1, s.now_us, &s.eval);
	txt = health_render_metrics(&s);
	ck_assert_ptr_null(strstr(txt, "nan"));
	ck_assert_ptr_null(strstr(txt, " inf"));
	/* Shortest round-trip spelling: 0.1, not 0.10000000000000001. */
	ck_assert_ptr_nonnull(
		strstr(txt, "\n" PFX "slot_wal_growth_bytes_per_second 0.1\n"));
	ck_assert_ptr_nonnull(strstr(txt, "\n" PFX "heartbeat_rtt_seconds 1e-06\n"));
	free(txt);

	/* Needs more than 6 digits, and 17 would show noise. */
	health_evaluate(&s.slot, &s.relay, &s.thresholds, 1234567.1, s.now_us,
	                &s.eval);
	txt = health_render_metrics(&s);
	ck_assert_ptr_null(strstr(txt, "nan"));
	ck_assert_ptr_null(strstr(txt, " inf"));
	/* Shortest round-trip spelling: 0.1, not 0.10000000000000001. */
	ck_assert_ptr_nonnull(
		strstr(txt, "\n" PFX "slot_wal_growth_bytes_per_second 1234567.1\n"));
	free(txt);
}
END_TEST

/* The relay's phases are an enum across modules; the names are what
 * /slot, /readyz and the log print, and a stray value names nothing. */
START_TEST(test_relay_phase_names)
{
	static const char *const names[] = { "not running", "connecting",
		"backoff", "standby", "streaming", "stopping", "fail-stopped" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ck_assert_str_eq(relay_phase_name((enum relay_phase)i), names[i]);
		ck_assert_int_eq(relay_phase_parse(names[i]), (int)i);
	}
	ck_assert_str_eq(relay_phase_name((enum relay_phase)99), "?");
	ck_assert_int_eq(relay_phase_parse("bogus"), RELAY_PHASE_NOT_RUNNING);
}
END_TEST

Suite *health_suite(void)
{
	Suite *s = suite_create("health");
	TCase *tc = tcase_create("rules");
	TCase *tw = tcase_create("window");
	TCase *tj = tcase_create("slot_json");
	TCase *tm = tcase_create("metrics");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_state_names);
	tcase_add_test(tc, test_relay_phase_names);
	tcase_add_test(tc, test_healthy_is_ok);
	tcase_add_test(tc, test_retained);
	tcase_add_test(tc, test_confirmed_lag);
	tcase_add_test(tc, test_outbox_lag);
	tcase_add_test(tc, test_since_confirm);
	tcase_add_test(tc, test_wal_status);
	tcase_add_test(tc, test_slot_missing);
	tcase_add_test(tc, test_not_sampled);
	tcase_add_test(tc, test_fail_stopped);
	tcase_add_test(tc, test_worst_wins_and_order);
	tcase_add_test(tc, test_threshold_zero_disables);
	tcase_add_test(tc, test_reasons_truncated);
	tcase_add_test(tc, test_eta_safe_wal_size);
	tcase_add_test(tc, test_eta_budget);
	tcase_add_test(tc, test_eta_not_growing);
	suite_add_tcase(s, tc);

	tcase_add_test(tw, test_window_rate);
	tcase_add_test(tw, test_window_edges);
	suite_add_tcase(s, tw);

	tcase_add_test(tj, test_slot_json_fields);
	tcase_add_test(tj, test_slot_json_versions);
	tcase_add_test(tj, test_slot_json_reasons_whole);
	tcase_add_test(tj, test_slot_json_optional_values);
	tcase_add_test(tj, test_slot_json_no_slot);
	suite_add_tcase(s, tj);

	tcase_add_test(tm, test_prom_parser_rejects);
	tcase_add_test(tm, test_metrics_values);
	tcase_add_test(tm, test_metrics_omitted);
	tcase_add_test(tm, test_metrics_versions);
	tcase_add_test(tm, test_metrics_state_set);
	tcase_add_test(tm, test_metrics_topics_dedup);
	tcase_add_test(tm, test_standby_off);
	tcase_add_test(tm, test_standby_synced);
	tcase_add_test(tm, test_standby_rules);
	tcase_add_test(tm, test_metrics_histogram);
	tcase_add_test(tm, test_metrics_histogram_conservative);
	tcase_add_test(tm, test_metrics_no_secrets_no_junk);
	suite_add_tcase(s, tm);
	return s;
}
