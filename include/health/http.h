/* SPDX-License-Identifier: Apache-2.0 */
/* http.h -- the health endpoint (libmicrohttpd, its own thread).
 *
 * GET /livez (/healthz), /readyz, /slot[?pretty=1], /metrics. The relay
 * loop publishes snapshots and ticks; the HTTP thread only ever reads the
 * last published copy, so a slow client never touches the loop. Clients
 * are bounded (512 connections, 32 per address, a complete request due
 * within 3 s of accept): slow or idle clients on one address cannot lock
 * out probes from another. */
#ifndef RELAY_HTTP_H
#define RELAY_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "health/health.h"

struct http_server;

/* Starts listening on listen ("127.0.0.1:8080", "[::1]:8080"; port 0
 * picks a free one), with two threads: libmicrohttpd's and one that ends
 * connections past the request deadline. livez_timeout_ms: /livez fails
 * when the loop has not ticked for that long. Returns NULL with err
 * filled. */
struct http_server *http_start(const char *listen, int64_t livez_timeout_ms,
                               char *err, size_t errlen);

/* The port actually bound (useful with port 0). */
int http_port(const struct http_server *h);

/* Replaces the published snapshot (copied). Loop thread. */
void http_publish(struct http_server *h, const struct health_snapshot *s);

/* Marks the loop alive; now is now_mono_us(). Loop thread, lock-free. */
void http_tick(struct http_server *h, int64_t now_mono_us);

/* Stops the threads, closes every connection and frees h. NULL is a
 * no-op. */
void http_stop(struct http_server *h);

#endif
