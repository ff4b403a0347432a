/* SPDX-License-Identifier: Apache-2.0 */
/* log.h -- leveled logging to stderr, as text or JSON lines. Never pass
 * a secret to these. */
#ifndef RELAY_LOG_H
#define RELAY_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"

enum log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };
enum log_format { LOG_FMT_TEXT = 0, LOG_FMT_JSON };

extern enum log_level log_current_level;

/* Returns 0 and sets *out for "error", "warn", "info", "debug"; else -1. */
int log_level_parse(const char *s, enum log_level *out) RELAY_MUSTCHECK;
void log_set_level(enum log_level lvl);
/* Returns 0 and sets *out for "text", "json"; else -1. */
int log_format_parse(const char *s, enum log_format *out) RELAY_MUSTCHECK;
/* Set before any thread logs (at start, like the level). */
void log_set_format(enum log_format fmt);
enum log_format log_get_format(void);
void log_msg(enum log_level lvl, const char *fmt, ...) RELAY_PRINTF(2, 3);

/* One JSON line (ending in a newline) for a message, into buf; returns
 * its length, 0 when buflen < LOG_JSON_MIN. Members, in this order: ts
 * (RFC 3339 UTC, milliseconds), level (error, warn, info, debug), then
 * those of slot, lsn, xid, event_id and topic that msg names the way the
 * relay words them (slot "NAME", LSN 0/16B3F00, xid 1234, event id ID,
 * topic NAME), then msg, the text the text format shows. A message too
 * long for buf is cut at a character; the line stays valid JSON. Pure. */
#define LOG_JSON_MIN 96
size_t log_render_json(enum log_level lvl, int64_t wall_us, const char *msg,
                       char *buf, size_t buflen);

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)                                                   \
	do {                                                                 \
		if (__builtin_expect(log_current_level >= LOG_LVL_DEBUG, 0))     \
			log_msg(LOG_LVL_DEBUG, __VA_ARGS__);                         \
	} while (0)

#endif
