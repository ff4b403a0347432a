/* SPDX-License-Identifier: Apache-2.0 */
/* monitor.h -- slot health as the relay loop sees it: runs the watchdog,
 * the HTTP endpoint and the webhook alerter, evaluates the state from
 * their figures and the loop's own, and reports state changes. */
#ifndef RELAY_MONITOR_H
#define RELAY_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "lib/config.h"
#include "health/health.h"

struct monitor;

/* Starts the watchdog thread, the endpoint (unless http.listen is empty)
 * and the alerter (when alert.webhook.url is set). cfg is borrowed for the
 * monitor's lifetime. Returns NULL with err filled. */
struct monitor *mon_start(const struct relay_config *cfg, char *err,
                          size_t errlen);

/* Every loop turn: marks the loop alive for /livez. Cheap. */
void mon_tick(struct monitor *m, int64_t now_mono_us);

/* True when a new snapshot is due (a few times a second). */
bool mon_due(const struct monitor *m, int64_t now_mono_us);

/* Makes the next snapshot due now: for a change the endpoint and the log
 * must show even when the next change follows it within one period. */
void mon_poke(struct monitor *m);

/* Evaluates rf with the latest watchdog sample, publishes the snapshot,
 * logs and posts state changes. Returns the state; when the slot is lost
 * or gone, *fatal_reason gets the runbook message and true is returned
 * through *fatal. */
enum health_state mon_update(struct monitor *m, const struct relay_figures *rf,
                             const char (*topics)[128],
                             const uint64_t *topic_events, size_t ntopics,
                             int64_t now_mono_us, bool *fatal,
                             char *fatal_reason, size_t reasonlen);

/* Stops everything (the alerter gets a moment to send what is queued). */
void mon_stop(struct monitor *m);

#endif
