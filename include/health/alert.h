/* SPDX-License-Identifier: Apache-2.0 */
/* alert.h -- webhook alerts (libcurl, its own thread).
 *
 * alert_post() only queues; a worker thread POSTs each body as JSON and
 * retries with capped exponential backoff, so a slow or dead receiver
 * never blocks the relay loop. */
#ifndef RELAY_ALERT_H
#define RELAY_ALERT_H

#include <stddef.h>

#include "lib/common.h"
#include "health/health.h"

struct alerter;

/* Starts the worker for url (http:// or https://). Returns NULL with err
 * filled when url is unusable. */
struct alerter *alert_start(const char *url, char *err, size_t errlen);

/* Queues a copy of body. Never blocks: when the queue is full the oldest
 * body is dropped (and counted). NULL a is a no-op. */
void alert_post(struct alerter *a, const char *body);

/* The JSON body for a state change: slot, state, previous_state, reasons
 * and the figures. Returns a malloc'd string (caller frees). */
char *alert_render(const struct health_snapshot *s, enum health_state prev);

/* Bodies dropped because the queue was full, and POSTs that failed after
 * every retry. */
size_t alert_dropped(const struct alerter *a);

/* Gives queued bodies up to timeout_ms to go out, then stops and frees a.
 * NULL is a no-op. */
void alert_stop(struct alerter *a, int timeout_ms);

#ifdef OUTBOX_RELAY_TEST_HOOKS
/* The first backoff in milliseconds (default 500; 0 restores it), so a
 * unit test sees several attempts in well under a second. Only in the
 * test build (build/test/, make check): make and make install leave it
 * out. */
void alert_set_backoff_for_tests(int ms);
#endif

#endif
