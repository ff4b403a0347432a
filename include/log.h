/* SPDX-License-Identifier: Apache-2.0 */
/* log.h -- leveled logging to stderr. Never pass a secret to these. */
#ifndef RELAY_LOG_H
#define RELAY_LOG_H

#include "common.h"

enum log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

extern enum log_level log_current_level;

/* Returns 0 and sets *out for "error", "warn", "info", "debug"; else -1. */
int log_level_parse(const char *s, enum log_level *out) RELAY_MUSTCHECK;
void log_set_level(enum log_level lvl);
void log_msg(enum log_level lvl, const char *fmt, ...) RELAY_PRINTF(2, 3);

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)                                                   \
	do {                                                                 \
		if (__builtin_expect(log_current_level >= LOG_LVL_DEBUG, 0))     \
			log_msg(LOG_LVL_DEBUG, __VA_ARGS__);                         \
	} while (0)

#endif
