/* SPDX-License-Identifier: Apache-2.0 */
/* health_int.h -- what health.c shares with its two renderings,
 * health_json.c (/slot) and health_metrics.c (/metrics), and nobody
 * else: the phases counted, and the table of pg_stat_replication_slots
 * figures that both render, so that a figure added there shows in both. */
#ifndef RELAY_HEALTH_INT_H
#define RELAY_HEALTH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "health/health.h"

/* How many relay phases there are (enum relay_phase ends with
 * RELAY_PHASE_FAIL_STOPPED); health.c names each one. */
#define HEALTH_NPHASES ((size_t)RELAY_PHASE_FAIL_STOPPED + 1)

/* pg_stat_replication_slots: the column (the /slot key) and the metric.
 * PostgreSQL resets them with pg_stat_reset_replication_slot(), which
 * Prometheus treats as a counter reset. */
struct health_stat {
	const char *col, *metric, *help;
	size_t off;                 /* of its int64_t in struct slot_figures */
};

extern const struct health_stat health_slot_stats[];
extern const size_t health_nslot_stats;

/* Figure i of health_slot_stats in sf. */
int64_t health_slot_stat(const struct slot_figures *sf, size_t i);

#endif
