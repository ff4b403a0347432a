/* SPDX-License-Identifier: Apache-2.0 */
/* notify.h -- tells systemd how the relay is doing (sd_notify): READY=1
 * once it streams or stands by, STATUS= with its state and lag,
 * WATCHDOG=1 while the loop turns, STOPPING=1 when it begins to stop.
 *
 * Every call is a no-op unless the service manager set NOTIFY_SOCKET
 * (Type=notify), and WATCHDOG=1 unless it set WATCHDOG_USEC
 * (WatchdogSec=). Called from the relay loop's thread only. */
#ifndef RELAY_NOTIFY_H
#define RELAY_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "health/health.h"

/* Once a loop turn: WATCHDOG=1 every half of WATCHDOG_USEC, so a loop
 * stuck for longer than WatchdogSec= gets the relay restarted. */
void notify_watchdog(int64_t now_mono_us);

/* With the loop's latest figures (a few times a second): READY=1 the
 * first time the state is streaming or standby, STATUS= whenever the
 * state changes and otherwise every few seconds. */
void notify_figures(const struct relay_figures *f, int64_t now_mono_us);

/* STOPPING=1, once: the relay stops reading and drains. */
void notify_stopping(void);

/* The STATUS= text for f (pure; now_wall_us dates the outbox lag), e.g.
 * "streaming: 3 events in flight, outbox lag 0.4 s, confirmed 0/16B3F00"
 * or "standby: slot active for PID 4242 (standby)". */
void notify_status_text(const struct relay_figures *f, int64_t now_wall_us,
                        char *out, size_t outlen);

#endif
