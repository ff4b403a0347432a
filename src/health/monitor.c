/* SPDX-License-Identifier: Apache-2.0 */
/* monitor.c -- glue between the relay loop and the health pieces.
 *
 * The loop calls mon_update() a few times a second with its own figures;
 * this file adds the watchdog's latest slot sample, runs the pure
 * evaluation in health.c, hands the snapshot to the HTTP thread and turns
 * state changes into log lines and webhook posts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/alert.h"
#include "health/http.h"
#include "lib/log.h"
#include "health/monitor.h"
#include "health/watchdog.h"

#define MON_PERIOD_US (250 * 1000)

struct monitor {
	const struct relay_config *cfg;
	struct watchdog *wd;
	struct http_server *http;
	struct alerter *alert;
	struct health_window window;
	struct health_snapshot snap;
	uint64_t wd_seq;
	bool have_state;
	enum health_state state;
	int64_t next_us;
};

struct monitor *mon_start(const struct relay_config *cfg, char *err,
                          size_t errlen)
{
	struct monitor *m = xcalloc(1, sizeof(*m));
	struct wd_options wo = {
		.conninfo = cfg->pg_conninfo,
		.slot = cfg->slot_name,
		.interval_ms = cfg->watchdog_interval_ms,
		.heartbeat_ms = cfg->heartbeat_interval_ms,
		.heartbeat_prefix = cfg->heartbeat_prefix,
		.heartbeat_query = cfg->heartbeat_action_query,
		.standby_conninfo = cfg->slot_standby_conninfo,
	};

	m->cfg = cfg;
	health_window_init(&m->window, cfg->watchdog_window_ms * 1000);
	snprintf(m->snap.slot_name, sizeof(m->snap.slot_name), "%s", cfg->slot_name);
	health_set_plugin(&m->snap, cfg->slot_plugin, cfg->slot_publication);
	health_thresholds_init(&m->snap.thresholds, cfg);
	if (cfg->http_listen[0] != '\0') {
		m->http = http_start(cfg->http_listen, cfg->http_livez_timeout_ms,
		                     err, errlen);
		if (m->http == NULL)
			goto fail;
		log_info("health endpoint on http://%s (port %d): /livez /readyz "
		         "/slot /metrics", cfg->http_listen, http_port(m->http));
	}
	if (cfg->alert_webhook_url[0] != '\0') {
		m->alert = alert_start(cfg->alert_webhook_url, err, errlen);
		if (m->alert == NULL)
			goto fail;
	}
	m->wd = wd_start(&wo, err, errlen);
	if (m->wd == NULL)
		goto fail;
	return m;
fail:
	mon_stop(m);
	return NULL;
}

void mon_tick(struct monitor *m, int64_t now_mono_us)
{
	if (m->http != NULL)
		http_tick(m->http, now_mono_us);
}

bool mon_due(const struct monitor *m, int64_t now_mono_us)
{
	return now_mono_us >= m->next_us;
}

void mon_poke(struct monitor *m)
{
	m->next_us = 0;
}

/* A state change, both ways: one log line, one webhook post. */
static void report_change(struct monitor *m, enum health_state prev)
{
	const struct health_eval *e = &m->snap.eval;
	char reasons[2048];
	enum log_level lvl = e->state == HEALTH_OK ? LOG_LVL_INFO
	                     : e->state == HEALTH_WARN ? LOG_LVL_WARN
	                                               : LOG_LVL_ERROR;

	health_reasons_join(e, reasons, sizeof(reasons));
	log_msg(lvl, "slot health %s -> %s%s%s", health_state_name(prev),
	        health_state_name(e->state), reasons[0] ? ": " : "", reasons);
	if (m->alert != NULL) {
		char *body = alert_render(&m->snap, prev);
		alert_post(m->alert, body);
		free(body);
	}
}

enum health_state mon_update(struct monitor *m, const struct relay_figures *rf,
                             const char (*topics)[128],
                             const uint64_t *topic_events, size_t ntopics,
                             int64_t now_mono_us, bool *fatal,
                             char *fatal_reason, size_t reasonlen)
{
	struct health_snapshot *s = &m->snap;
	int64_t now = now_wall_us();
	uint64_t seq;

	*fatal = false;
	m->next_us = now_mono_us + MON_PERIOD_US;
	seq = wd_figures(m->wd, &s->slot);
	if (seq != m->wd_seq && s->slot.valid && s->slot.retained_bytes >= 0) {
		health_window_add(&m->window, s->slot.sampled_at_us,
		                  s->slot.retained_bytes);
		m->wd_seq = seq;
	}
	s->relay = *rf;
	s->now_us = now;
	{
		/* PostgreSQL answers: the stream is fresh, or (standby, backoff)
		 * the watchdog's latest sample worked and is recent. */
		char wderr[8];
		bool sample_ok = s->slot.valid &&
		                 now - s->slot.sampled_at_us <=
		                     3 * m->cfg->watchdog_interval_ms * 1000;
		wd_last_error(m->wd, wderr, sizeof(wderr));
		s->relay.pg_up = (rf->pg_rx_age_us >= 0 && !rf->pg_stale) ||
		                 (rf->pg_rx_age_us < 0 && sample_ok && wderr[0] == '\0');
	}
	s->ntopics = ntopics < 16 ? ntopics : 16;
	for (size_t i = 0; i < s->ntopics; i++) {
		memcpy(s->topics[i], topics[i], sizeof(s->topics[i]));
		s->topic_events[i] = topic_events[i];
	}
	wd_standby(m->wd, &s->standby);
	health_evaluate(&s->slot, &s->relay, &s->thresholds,
	                health_window_rate(&m->window), now, &s->eval);
	health_evaluate_standby(&s->standby, &s->eval);
	if (!m->have_state || s->eval.state != m->state) {
		enum health_state prev = m->have_state ? m->state : HEALTH_OK;
		if (m->have_state || s->eval.state != HEALTH_OK)
			report_change(m, prev);
		m->have_state = true;
		m->state = s->eval.state;
	}
	if (m->http != NULL)
		http_publish(m->http, s);

	/* The slot is gone or has lost WAL: every event not yet published may
	 * be missing from it. Never recreate; an operator decides. */
	if (s->slot.valid && (!s->slot.slot_exists ||
	                      slot_figures_invalidated(&s->slot))) {
		const char *why = s->slot.invalidation_reason;
		char what[160];
		/* wal_removed as before; 18's idle_timeout (nobody streamed
		 * from it for idle_replication_slot_timeout) named. */
		if (!s->slot.slot_exists)
			snprintf(what, sizeof(what), "no longer exists");
		else if (s->slot.conflicting != SLOT_FLAG_TRUE &&
		         (why[0] == '\0' || strcmp(why, "wal_removed") == 0))
			snprintf(what, sizeof(what), "is lost (wal_status=lost, its "
			         "WAL was removed)");
		else
			snprintf(what, sizeof(what), "is lost (invalidation_reason=%.*s)",
			         (int)sizeof(s->slot.invalidation_reason),
			         why[0] != '\0' ? why : "conflicting");
		*fatal = true;
		snprintf(fatal_reason, reasonlen,
		         "replication slot \"%s\" %s: events committed while it was "
		         "unusable may never be published; the relay stops and "
		         "will not recreate it (runbook: slot lost)",
		         m->cfg->slot_name, what);
	}
	return s->eval.state;
}

void mon_stop(struct monitor *m)
{
	if (m == NULL)
		return;
	wd_stop(m->wd);
	http_stop(m->http);
	alert_stop(m->alert, 2000);
	free(m);
}
