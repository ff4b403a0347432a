/* SPDX-License-Identifier: Apache-2.0 */
/* act_status.c -- --slot-status: one watchdog sample judged by the
 * relay's thresholds, as text or as the relay's /slot document; the exit
 * code is the state (0 ok, 1 warn, 2 critical, 3 fatal or unknown: the
 * Nagios convention). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_int.h"

/* A column of a newer version: "yes", "no", or NULL where absent. */
static const char *flag_text(enum slot_flag f)
{
	return f == SLOT_FLAG_TRUE ? "yes" : f == SLOT_FLAG_FALSE ? "no" : NULL;
}

/* "45 s", "12.5 min", "3.2 h". */
static void fmt_secs_short(char *buf, size_t len, double v)
{
	if (v < 120)
		snprintf(buf, len, "%.0f s", v);
	else if (v < 7200)
		snprintf(buf, len, "%.1f min", v / 60);
	else
		snprintf(buf, len, "%.1f h", v / 3600);
}

/* The columns of newer versions, each where the server has it. */
static void print_versioned(const struct health_snapshot *s)
{
	const struct slot_figures *f = &s->slot;
	char when[64], left[32];
	struct tm tm;
	time_t t;

	if (f->failover != SLOT_FLAG_ABSENT)
		printf("  failover: %s, synced: %s\n", flag_text(f->failover),
		       flag_text(f->synced) ? flag_text(f->synced) : "unknown");
	if (f->conflicting != SLOT_FLAG_ABSENT)
		printf("  conflicting: %s\n", flag_text(f->conflicting));
	if (f->invalidation_reason[0] != '\0')
		printf("  invalidation_reason: %.*s\n",
		       (int)sizeof(f->invalidation_reason), f->invalidation_reason);
	if (f->inactive_since_us > 0) {
		t = (time_t)(f->inactive_since_us / 1000000);
		if (gmtime_r(&t, &tm) == NULL ||
		    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
			snprintf(when, sizeof(when), "?");
		printf("  inactive since %s\n", when);
	}
	if (f->server_version >= SLOT_PG_IDLE_TIMEOUT) {
		if (f->idle_timeout_s <= 0)
			printf("  idle_replication_slot_timeout: off\n");
		else if (s->eval.idle_eta_seconds >= 0) {
			fmt_secs_short(left, sizeof(left), s->eval.idle_eta_seconds);
			printf("  idle_replication_slot_timeout %lld s: invalidated in "
			       "%s unless a relay streams from it\n",
			       (long long)f->idle_timeout_s, left);
		} else {
			printf("  idle_replication_slot_timeout %lld s\n",
			       (long long)f->idle_timeout_s);
		}
	}
}

/* plugin: the slot's (pg_replication_slots.plugin), "" unknown;
 * publication: slot.publication, NULL unless the slot is pgoutput's. */
static void print_text(const struct health_snapshot *s, const char *plugin,
                       const char *publication)
{
	const struct slot_figures *f = &s->slot;
	const char *ws = wal_status_name(f->wal_status);
	char a[32], b[32], reasons[2048];

	health_reasons_join(&s->eval, reasons, sizeof(reasons));
	printf("slot \"%s\": %s%s%s\n", s->slot_name,
	       health_state_name(s->eval.state), reasons[0] ? ": " : "", reasons);
	if (!f->slot_exists) {
		printf("  server WAL at " LSN_FMT "\n", LSN_ARGS(f->current_lsn));
		return;
	}
	if (plugin[0] != '\0')
		printf("  plugin %s%s%s\n", plugin,
		       publication ? ", publication " : "",
		       publication ? publication : "");
	printf("  active: %s", f->active ? "yes" : "no");
	if (f->active)
		printf(" (PID %d)", f->active_pid);
	printf(", wal_status: %s\n", ws[0] ? ws : "unknown");
	print_versioned(s);
	printf("  restart_lsn " LSN_FMT ", confirmed_flush_lsn " LSN_FMT
	       ", server WAL at " LSN_FMT "\n", LSN_ARGS(f->restart_lsn),
	       LSN_ARGS(f->confirmed_flush_lsn), LSN_ARGS(f->current_lsn));
	fmt_bytes(a, sizeof(a), (double)f->retained_bytes);
	fmt_bytes(b, sizeof(b), (double)f->confirmed_lag_bytes);
	printf("  retained WAL %s (%lld bytes), confirmed lag %s (%lld bytes)\n", a,
	       (long long)f->retained_bytes, b, (long long)f->confirmed_lag_bytes);
	if (f->max_slot_wal_keep_size < 0) {
		printf("  max_slot_wal_keep_size: unlimited\n");
	} else {
		fmt_bytes(a, sizeof(a), (double)f->max_slot_wal_keep_size);
		fmt_bytes(b, sizeof(b), (double)f->safe_wal_size);
		printf("  max_slot_wal_keep_size %s, safe_wal_size %s\n", a,
		       f->safe_wal_size == -1 ? "unknown" : b);
	}
	printf("  spilled %lld transactions (%lld bytes), decoded %lld "
	       "transactions\n", (long long)f->spill_txns,
	       (long long)f->spill_bytes, (long long)f->total_txns);
	if (f->oldest_xact_pid != 0)
		printf("  oldest transaction with an xid: PID %d, age %lld, %.0f s\n",
		       f->oldest_xact_pid, (long long)f->oldest_xact_age,
		       f->oldest_xact_seconds);
}

int act_slot_status(const struct relay_config *cfg, const struct cli_args *a)
{
	static const int codes[] = {
		[HEALTH_OK] = 0, [HEALTH_WARN] = 1, [HEALTH_CRITICAL] = 2,
		[HEALTH_FATAL] = 3,
	};
	struct health_snapshot *s = xcalloc(1, sizeof(*s));
	struct pgu_status st;
	struct slot_row row;
	char err[1400];
	PGconn *conn;
	int rc = 3;

	conn = cli_connect(cfg, false, 10000, err, sizeof(err));
	if (conn == NULL || slot_sample(conn, cfg->slot_name, cli_deadline(),
	                                &s->slot, &st, err, sizeof(err)) < 0) {
		/* Nagios UNKNOWN: nothing could be measured. */
		cli_err("slot \"%s\": unknown: %s", cfg->slot_name, err);
		goto out;
	}
	snprintf(s->slot_name, sizeof(s->slot_name), "%s", cfg->slot_name);
	health_thresholds_init(&s->thresholds, cfg);
	s->relay.state = RELAY_PHASE_NOT_RUNNING;
	snprintf(s->relay.reason, sizeof(s->relay.reason), "%s",
	         s->slot.active ? "outbox-relay --slot-status: one sample; the "
	                          "streaming relay's own figures are on its /slot"
	                        : "outbox-relay --slot-status: one sample; no "
	                          "process streams from the slot");
	s->relay.heartbeat_rtt_us = -1;
	s->relay.broker_rtt_us = -1;
	s->relay.kafka_queue_msgs = -1;
	s->relay.produce_requests = -1;
	s->relay.requests_in_flight = -1;
	s->relay.batch_msgs = -1;
	s->now_us = now_wall_us();
	/* One sample: no growth rate, hence no ETA. */
	health_evaluate(&s->slot, &s->relay, &s->thresholds, 0, s->now_us,
	                &s->eval);
	/* The plugin is not part of the sample; a second read names the
	 * slot's own (the relay's /slot shows the one it is configured
	 * with, which it has checked against the slot). */
	if (slot_read(conn, cfg->slot_name, cli_deadline(), &row, &st, err,
	              sizeof(err)) < 0 || !row.exists)
		row.plugin[0] = '\0';
	health_set_plugin(s, row.plugin, cfg->slot_publication);
	if (a->json) {
		char *body = health_render_slot_json(s, false);
		fputs(body, stdout);
		free(body);
	} else {
		print_text(s, s->plugin, s->publication[0] ? s->publication : NULL);
	}
	rc = codes[s->eval.state];
out:
	PQfinish(conn);
	free(s);
	return rc;
}
