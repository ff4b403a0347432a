/* SPDX-License-Identifier: Apache-2.0 */
/* watchdog.h -- samples the slot over an ordinary connection and writes
 * heartbeats, in a thread of its own.
 *
 * The thread runs blocking libpq calls (with connect and statement
 * timeouts) so a slow database delays only the next sample, never the
 * replication loop, which reads the latest sample with wd_figures(). */
#ifndef RELAY_WATCHDOG_H
#define RELAY_WATCHDOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "health/health.h"

struct watchdog;

struct wd_options {
	const char *conninfo;        /* borrowed for the watchdog's lifetime */
	const char *slot;
	int64_t interval_ms;         /* sample period */
	int64_t heartbeat_ms;        /* 0: no heartbeats */
	const char *heartbeat_prefix;
	const char *heartbeat_query; /* "" or NULL: none */
	const char *standby_conninfo; /* slot.standby.conninfo, borrowed;
	                             * "" or NULL: no standby is read */
};

/* Starts the thread. Returns NULL with err filled. */
struct watchdog *wd_start(const struct wd_options *opt, char *err,
                          size_t errlen);

/* Copies the latest sample into out. Returns the sample's sequence number
 * (0 before the first sample), so the caller can tell a new one. */
uint64_t wd_figures(struct watchdog *w, struct slot_figures *out);

/* Copies the latest read of the slot's copy on the standby into out
 * (configured false when there is no standby). */
void wd_standby(struct watchdog *w, struct slot_standby *out);

/* The last connection or query error ("" when the last sample worked). */
void wd_last_error(struct watchdog *w, char *out, size_t outlen);

/* Stops and joins the thread (bounded by the libpq timeouts); frees w.
 * NULL is a no-op. */
void wd_stop(struct watchdog *w);

#endif
